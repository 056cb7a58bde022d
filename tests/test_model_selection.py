"""model_selection in one plain process (no mpiexec): joblib's pool is allowed there."""

import numpy as np
from sklearn.datasets import load_diabetes

from mlmpi import Ridge
from mlmpi.model_selection import GridSearchCV, cross_val_score


def test_n_jobs_runs_joblib_outside_mpiexec():
    X, y = load_diabetes(return_X_y=True)
    np.testing.assert_allclose(
        cross_val_score(Ridge(), X, y, cv=3, n_jobs=2),
        cross_val_score(Ridge(), X, y, cv=3),
        rtol=1e-12,
    )
    grid = {"alpha": [0.01, 1.0]}
    parallel = GridSearchCV(Ridge(), grid, cv=3, n_jobs=2).fit(X, y)
    assert parallel.best_params_ == GridSearchCV(Ridge(), grid, cv=3).fit(X, y).best_params_
