"""model_selection in one plain process (no mpiexec): joblib's pool is allowed
there; the splitters' warnings and errors are scikit-learn's."""

import warnings

import numpy as np
import pytest
import sklearn.model_selection as sk
from sklearn.datasets import load_diabetes

import mlmpi.model_selection as ms
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


SPLITTERS = {  # name -> scikit-learn's and mlmpi's splitter of 10 rows
    "KFold": {},
    "StratifiedKFold": {"n_splits": 2},
    "ShuffleSplit": {},
    "StratifiedShuffleSplit": {"test_size": 0.5},
    "TimeSeriesSplit": {},
    "GroupKFold": {"n_splits": 2},
    "StratifiedGroupKFold": {"n_splits": 2},
}
ROWS, LABELS, GROUPS = np.zeros((10, 1)), np.arange(10) % 2, np.arange(10) % 3


def _splitters(name):
    return getattr(sk, name)(**SPLITTERS[name]), getattr(ms, name)(**SPLITTERS[name])


@pytest.mark.parametrize("name", list(SPLITTERS))
def test_ignored_groups_warn_as_scikit_learn(name):
    messages = []
    for splitter in _splitters(name):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            splitter.split(ROWS, LABELS, GROUPS)  # at the call, before any split
        messages.append([(w.category, str(w.message)) for w in caught])
        if splitter.__module__.startswith("mlmpi"):  # pointed at the caller's line
            assert all(w.filename == __file__ for w in caught)
    assert messages[1] == messages[0]
    assert bool(messages[0]) == ("Group" not in name)


def _error(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize(
    "name", ["StratifiedKFold", "StratifiedShuffleSplit", "StratifiedGroupKFold"]
)
def test_split_without_y_raises_as_scikit_learn(name):
    groups = {"groups": GROUPS} if "Group" in name else {}
    reference, found = _splitters(name)
    for args in [(ROWS,), (ROWS, None)]:
        expected = _error(lambda: list(reference.split(*args, **groups)))
        assert _error(lambda: list(found.split(*args, **groups))) == expected
    if "Group" not in name:  # y is required: the TypeError comes at the call
        assert _error(lambda: found.split(ROWS)) == _error(lambda: reference.split(ROWS))
