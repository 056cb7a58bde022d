"""Forests under mpiexec: the same global data split every way (even, uneven,
rank 0 empty; rows sorted by target so that ranks miss classes) gives the
forest of one process, for every criterion, sparse and missing values,
several outputs, max_leaf_nodes and a warm start. The accuracy against
scikit-learn's is in forest_quality_cases.py."""

import itertools
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from shards import each_layout, layouts
from sklearn.datasets import (
    load_diabetes,
    load_digits,
    make_classification,
)
from sklearn.metrics import f1_score

import mlmpi.ensemble as ml
from mlmpi import SelfComms, get_comms
from mlmpi.ensemble import _subtrees
from mlmpi.random import draws
from mlmpi.random._tree import LEAF

_FOREST_ARRAYS = (
    "feature",
    "threshold",
    "missing_left",
    "children_left",
    "children_right",
    "value",
    "n_node_samples",
    "roots",
)
_TREE_ARRAYS = ("feature", "threshold", "missing_go_to_left", "impurity", "value")


def _digits_sorted_by_class():
    X, y = load_digits(return_X_y=True)
    order = np.argsort(y[:400], kind="stable")
    weights = np.random.RandomState(0).uniform(0.3, 3.0, size=order.shape[0])
    return X[order], y[order], weights


def _diabetes():
    X, y = load_diabetes(return_X_y=True)
    order = np.argsort(y[:300], kind="stable")
    weights = np.random.RandomState(1).uniform(0.3, 3.0, size=order.shape[0])
    # targets and weights that are not integers: their float sums would depend on
    # the order of the additions
    return X[order], y[order] / 7.3, weights[order]


def _assert_close(actual, expected, err_msg="", tolerance=1e-12):
    np.testing.assert_allclose(actual, expected, rtol=tolerance, atol=tolerance, err_msg=err_msg)


def _assert_same_forest(fitted, reference, X_local, offset):
    """The same trees, bit for bit (the histograms' sums are exact in any order)."""
    for name in _FOREST_ARRAYS:
        np.testing.assert_array_equal(
            getattr(fitted.forest_, name), getattr(reference.forest_, name), err_msg=name
        )
    assert len(fitted.estimators_) == len(reference.estimators_)
    for mine, theirs in zip(fitted.estimators_, reference.estimators_):
        assert mine.random_state == theirs.random_state
        for name in _TREE_ARRAYS:
            np.testing.assert_array_equal(
                getattr(mine.tree_, name), getattr(theirs.tree_, name), name
            )
    np.testing.assert_array_equal(fitted.feature_importances_, reference.feature_importances_)
    if X_local.shape[0]:
        np.testing.assert_array_equal(fitted.predict(X_local), reference.predict(X_local))
        np.testing.assert_array_equal(fitted.apply(X_local), reference.apply(X_local))
    for name in ("oob_decision_function_", "oob_prediction_"):
        if hasattr(reference, name):
            local = getattr(reference, name)[offset : offset + X_local.shape[0]]
            _assert_close(getattr(fitted, name), local, err_msg=name)
    if hasattr(reference, "oob_score_"):
        assert np.isclose(fitted.oob_score_, reference.oob_score_, rtol=1e-12, atol=0)
    if reference.bootstrap:
        for mine, theirs in zip(fitted.estimators_samples_, reference.estimators_samples_):
            rows = theirs[(theirs >= offset) & (theirs < offset + X_local.shape[0])] - offset
            np.testing.assert_array_equal(mine, rows)


def _check_identical(make, X, y, weights=None, fit=None):
    """``make(comms)`` fitted on every layout of the rows equals the one-process fit."""
    fit = fit or (lambda model, X, y, w: model.fit(X, y, sample_weight=w))
    comms = get_comms()
    reference = fit(make(SelfComms()), X, y, weights)
    assert len(np.unique(reference.forest_.feature)) > 3  # the trees did split
    for name, (Xl, yl, wl) in each_layout(X, y, weights):
        counts = layouts(X.shape[0], comms.size)[name]
        fitted = fit(make(None), Xl, yl, wl)
        _assert_same_forest(fitted, reference, Xl, int(sum(counts[: comms.rank])))


# Global rows up to which a node's subtree grows on one rank, each setting the
# next in turn (the same on every rank): none (level by level), a few dozen
# (both, handed over at every depth), the default (whole trees of these sets)
_LOCAL_ROWS = itertools.cycle((0, 40, _subtrees.LOCAL_ROWS))


@contextmanager
def _local_rows(rows):
    default, _subtrees.LOCAL_ROWS = _subtrees.LOCAL_ROWS, rows
    try:
        yield
    finally:
        _subtrees.LOCAL_ROWS = default


def _check_settings(settings, X, y, weights=None, **common):
    for cls, params in settings:
        with _local_rows(next(_LOCAL_ROWS)):
            _check_identical(
                lambda comms, cls=cls, params=params: cls(comms=comms, **common, **params),
                X,
                y,
                weights,
            )


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
        (
            ml.ExtraTreesClassifier,
            {"bootstrap": True, "oob_score": f1_score, "class_weight": {False: 1.0, True: 3.0}},
        ),
    ]
    binary = y < 5
    _check_settings(settings[:3], X, y, weights, n_estimators=2, random_state=3)
    _check_settings(settings[3:], X, binary, weights, n_estimators=2, random_state=3)


def case_per_row_bootstrap_identical_at_every_layout():
    X, y = make_classification(n_samples=LEAF + 900, n_features=6, random_state=0)
    weights = np.random.RandomState(2).uniform(0.0, 2.0, size=y.shape[0])
    settings = [
        (ml.RandomForestClassifier, {"oob_score": True}),
        (ml.RandomForestRegressor, {"max_samples": 0.4}),
    ]
    with draws("per-row"):
        _check_settings(settings, X, y, None, n_estimators=2, max_depth=4, random_state=1)
        _check_settings(settings, X, y, weights, n_estimators=2, max_depth=4, random_state=1)
        assert _one_tree().fit(X[:50], y[:50]).random_draws_ == "per-row"
    assert _one_tree().fit(X[:50], y[:50]).random_draws_ == "scikit-learn"


def _one_tree():
    return ml.RandomForestRegressor(n_estimators=1, comms=SelfComms())


def case_regressors_identical_at_every_layout_for_every_criterion():
    X, y, weights = _diabetes()
    settings = [
        (ml.RandomForestRegressor, {"oob_score": True, "max_features": "sqrt", "max_depth": 8}),
        (
            ml.ExtraTreesRegressor,
            {"min_weight_fraction_leaf": 0.01, "bootstrap": True, "max_samples": 150},
        ),
        (ml.RandomForestRegressor, {"criterion": "poisson", "max_features": 0.5}),
        (ml.ExtraTreesRegressor, {"criterion": "poisson", "max_depth": 6}),
        (
            ml.RandomForestRegressor,
            {"criterion": "absolute_error", "max_features": 0.5, "max_bins": 16},
        ),
        (ml.ExtraTreesRegressor, {"criterion": "absolute_error", "max_bins": 16, "max_depth": 5}),
    ]
    _check_settings(settings, X, y, weights, n_estimators=3, random_state=5)


def case_sparse_missing_values_outputs_leaf_limit_and_warm_start_identical():
    X, y = make_classification(240, 12, n_informative=5, n_classes=3, random_state=0)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    X[np.abs(X) < 0.4] = 0.0
    sparse = sp.csr_matrix(X)
    missing = X.copy()
    missing[np.random.RandomState(2).rand(*X.shape) < 0.1] = np.nan
    both = np.stack([y, (X[:, 0] > 0).astype(int)], axis=1)
    targets = np.stack([np.round(X[:, 1] * 3) + y, np.round(X[:, 2] * 10)], axis=1)
    for cls in (ml.RandomForestClassifier, ml.ExtraTreesClassifier):
        _check_settings([(cls, {"max_depth": 6})], sparse, y, n_estimators=3, random_state=1)
        _check_settings(
            [(cls, {"oob_score": True, "bootstrap": True})],
            missing,
            y,
            n_estimators=3,
            random_state=1,
        )
        _check_settings(
            [(cls, {"class_weight": [{0: 1, 1: 2, 2: 1}, {0: 1, 1: 3}], "max_leaf_nodes": 9})],
            X,
            both,
            n_estimators=3,
            random_state=1,
        )
    for cls in (ml.RandomForestRegressor, ml.ExtraTreesRegressor):
        _check_settings(
            [(cls, {"max_leaf_nodes": 12, "oob_score": True, "bootstrap": True})],
            missing,
            targets,
            n_estimators=3,
            random_state=1,
        )

    def warm(model, X, y, w):  # 2 trees, then 4 more
        model.set_params(n_estimators=2, warm_start=True).fit(X, y)
        return model.set_params(n_estimators=6).fit(X, y)

    _check_identical(
        lambda comms: ml.RandomForestClassifier(random_state=0, max_depth=4, comms=comms),
        sparse,
        y,
        fit=warm,
    )


def case_weights_on_some_ranks_only_are_ones_on_the_others():
    """sample_weight=None on some ranks and arrays on others (this used to hang:
    only the weighted ranks entered the weighted bootstrap's collectives)."""
    comms = get_comms()
    if comms.size == 1:
        return  # None alone is the unweighted fit (another bootstrap, as in scikit-learn)
    X, y, _ = _diabetes()
    ones = np.ones(X.shape[0])
    reference = ml.RandomForestRegressor(
        n_estimators=2, max_depth=5, random_state=0, comms=SelfComms()
    )
    reference.fit(X, y, sample_weight=ones)
    for name, (Xl, yl, wl) in each_layout(X, y, ones):
        counts = layouts(X.shape[0], comms.size)[name]
        weights = None if comms.rank % 2 == 0 else wl  # rank 0 (and every other) passes None
        fitted = ml.RandomForestRegressor(n_estimators=2, max_depth=5, random_state=0)
        fitted.fit(Xl, yl, sample_weight=weights)
        _assert_same_forest(fitted, reference, Xl, int(sum(counts[: comms.rank])))
