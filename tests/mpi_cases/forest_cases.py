"""Forests under mpiexec: the same global data split every way (even, uneven,
rank 0 empty; rows sorted by class so that ranks miss classes) gives the
forest of one process, and the accuracy is scikit-learn's at equal depth and
tree count."""

import numpy as np
import sklearn.ensemble as sk
from shards import each_layout, layouts
from sklearn.datasets import (
    load_diabetes,
    load_digits,
    make_classification,
    make_regression,
)
from sklearn.model_selection import train_test_split

import mlmpi.ensemble as ml
from mlmpi import SelfComms, get_comms
from mlmpi.datasets import shard

_FOREST_ARRAYS = (
    "feature",
    "threshold",
    "children_left",
    "children_right",
    "value",
    "n_node_samples",
    "roots",
)


def _digits_sorted_by_class():
    X, y = load_digits(return_X_y=True)
    order = np.argsort(y[:500], kind="stable")
    weights = np.random.RandomState(0).randint(1, 4, size=order.shape[0]).astype(np.float64)
    return X[order], y[order], weights


def _diabetes():
    X, y = load_diabetes(return_X_y=True)  # integer targets: the sums are exact
    weights = np.random.RandomState(1).randint(1, 4, size=y.shape[0]).astype(np.float64)
    return X[:300], y[:300], weights[:300]


def _assert_close(actual, expected, err_msg=""):
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-14, err_msg=err_msg)


def _assert_same_forest(fitted, reference, X_local, offset):
    """The same trees; values equal up to the rounding of sums of non-integer weights."""
    for name in _FOREST_ARRAYS:
        assert_equal = np.testing.assert_array_equal if name != "value" else _assert_close
        assert_equal(getattr(fitted.forest_, name), getattr(reference.forest_, name), err_msg=name)
    _assert_close(fitted.feature_importances_, reference.feature_importances_)
    if X_local.shape[0]:
        np.testing.assert_array_equal(fitted.predict(X_local), reference.predict(X_local))
    for name in ("oob_decision_function_", "oob_prediction_"):
        if hasattr(reference, name):
            local = getattr(reference, name)[offset : offset + X_local.shape[0]]
            _assert_close(getattr(fitted, name), local, err_msg=name)
    if hasattr(reference, "oob_score_"):
        assert np.isclose(fitted.oob_score_, reference.oob_score_, rtol=1e-12, atol=0)


def _check_identical(make, X, y, weights):
    comms = get_comms()
    reference = make(SelfComms()).fit(X, y, sample_weight=weights)
    assert len(np.unique(reference.forest_.feature)) > 3  # the trees did split
    for name, (Xl, yl, wl) in each_layout(X, y, weights):
        counts = layouts(X.shape[0], comms.size)[name]
        fitted = make(None).fit(Xl, yl, sample_weight=wl)
        _assert_same_forest(fitted, reference, Xl, int(sum(counts[: comms.rank])))


def case_classifiers_identical_at_every_layout_with_missing_classes():
    X, y, weights = _digits_sorted_by_class()
    settings = [
        (ml.RandomForestClassifier, {"oob_score": True, "class_weight": "balanced"}),
        (
            ml.RandomForestClassifier,
            {
                "criterion": "entropy",
                "class_weight": "balanced_subsample",
                "max_depth": 6,
                "min_samples_leaf": 2,
                "max_samples": 0.7,
            },
        ),
        (ml.ExtraTreesClassifier, {"max_features": 0.3, "min_samples_split": 4}),
    ]
    for cls, params in settings:
        _check_identical(
            lambda comms, cls=cls, params=params: cls(
                n_estimators=4, random_state=3, comms=comms, **params
            ),
            X,
            y,
            weights,
        )


def case_regressors_identical_at_every_layout():
    X, y, weights = _diabetes()
    settings = [
        (ml.RandomForestRegressor, {"oob_score": True, "max_features": "sqrt", "max_depth": 8}),
        (
            ml.ExtraTreesRegressor,
            {"min_weight_fraction_leaf": 0.01, "bootstrap": True, "max_samples": 150},
        ),
    ]
    for cls, params in settings:
        _check_identical(
            lambda comms, cls=cls, params=params: cls(
                n_estimators=4, random_state=5, comms=comms, **params
            ),
            X,
            y,
            weights,
        )


def _compare_scores(pairs, X, y, *, trees, tolerance, seeds=(0, 1)):
    """Mean test score over ``seeds`` within ``tolerance`` of scikit-learn's."""
    comms = get_comms()
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    for ours, theirs in pairs:
        mine, peer = [], []
        for seed in seeds:
            model = ours(n_estimators=trees, random_state=seed).fit(
                shard(X_train, comms), shard(y_train, comms)
            )
            mine.append(model.score(shard(X_test, comms), shard(y_test, comms)))
            score = None
            if comms.rank == 0:  # one scikit-learn fit, not one per rank
                score = (
                    theirs(n_estimators=trees, random_state=seed)
                    .fit(X_train, y_train)
                    .score(X_test, y_test)
                )
            peer.append(comms.bcast_object(score, root=0))
        assert np.mean(mine) >= np.mean(peer) - tolerance, (ours.__name__, mine, peer)


def case_accuracy_of_scikit_learn_on_digits_and_synthetic_classes():
    pairs = [
        (ml.RandomForestClassifier, sk.RandomForestClassifier),
        (ml.ExtraTreesClassifier, sk.ExtraTreesClassifier),
    ]
    _compare_scores(pairs, *load_digits(return_X_y=True), trees=30, tolerance=0.01)
    X, y = make_classification(3000, 20, n_informative=8, n_classes=3, random_state=0)
    _compare_scores(pairs, X, y, trees=30, tolerance=0.01)


def case_r2_of_scikit_learn_on_synthetic_regression():
    pairs = [
        (ml.RandomForestRegressor, sk.RandomForestRegressor),
        (ml.ExtraTreesRegressor, sk.ExtraTreesRegressor),
    ]
    X, y = make_regression(2000, 10, n_informative=6, noise=20, random_state=0)
    _compare_scores(pairs, X, y, trees=30, tolerance=0.01)
