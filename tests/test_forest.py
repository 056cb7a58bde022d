"""The forests in one process: scikit-learn's estimator checks, pickling,
parameters that scikit-learn rejects."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import parametrize_with_checks

from mlmpi.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

FORESTS = (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor)

# Bootstrap rows are Poisson draws per row: a weight of 2 is not the same
# as a repeated row (two independent draws), as in scikit-learn's forests.
EXPECTED_FAILED = {
    "check_sample_weight_equivalence_on_dense_data": (
        "bootstrap draws per row: an integer weight is not a repeated row"
    ),
}


def _expected_failed(estimator):
    return EXPECTED_FAILED if estimator.bootstrap else {}


@parametrize_with_checks(
    [cls(n_estimators=5, random_state=0) for cls in FORESTS],
    expected_failed_checks=_expected_failed,
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", FORESTS)
def test_pickled_forest_predicts_the_same(cls):
    X, y = load_iris(return_X_y=True)
    model = cls(n_estimators=10, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))


def test_oob_score_needs_bootstrap():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="Out of bag estimation only available"):
        ExtraTreesClassifier(oob_score=True).fit(X, y)
