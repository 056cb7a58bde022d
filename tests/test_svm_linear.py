"""LinearSVC and LinearSVR on one rank against scikit-learn (liblinear) at tight
tolerance, and scikit-learn's parameter checks and errors."""

import re
import warnings

import numpy as np
import pytest
import sklearn.svm as sk
from scipy import sparse
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning

import mlmpi.svm as ml

TIGHT = {"tol": 1e-10, "max_iter": 100000}


def _classification(n_classes):
    X, y = make_classification(
        90, 5, n_informative=3, n_classes=n_classes, n_clusters_per_class=1, random_state=0
    )
    return X, y, np.random.RandomState(0).uniform(0.5, 2.0, size=90)


def _regression():
    X, y = make_regression(90, 5, noise=5.0, random_state=0)
    return X, y / 20, np.random.RandomState(1).uniform(0.5, 2.0, size=90)


def _reference(make, params, X, y, sample_weight):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # liblinear at tol=1e-10
        return make(**params, **TIGHT).fit(X, y, sample_weight=sample_weight)


def _assert_equal_fits(fitted, reference, atol=1e-6):
    for name in ("coef_", "intercept_"):
        expected, actual = getattr(reference, name), getattr(fitted, name)
        assert type(actual) is type(expected), name
        np.testing.assert_allclose(actual, expected, rtol=0, atol=atol, err_msg=name)


CLASSIFIERS = [
    ("binary", 2, {}, False, False),
    ("binary_class_weight", 2, {"class_weight": {0: 2.0, 1: 0.5}}, True, False),
    ("ovr", 3, {"C": 0.3}, False, False),
    ("ovr_balanced", 3, {"class_weight": "balanced"}, True, False),
    ("sparse_scaling", 3, {"intercept_scaling": 3.0}, False, True),
    ("no_intercept", 3, {"fit_intercept": False}, True, False),
    ("hinge", 3, {"loss": "hinge", "intercept_scaling": 2.0}, True, False),
    ("hinge_sparse", 2, {"loss": "hinge"}, False, True),
    ("l1", 3, {"penalty": "l1", "dual": False, "C": 0.2}, False, False),
    (
        "crammer_singer",
        3,
        {"multi_class": "crammer_singer", "class_weight": "balanced"},
        True,
        False,
    ),
    ("crammer_singer_binary", 2, {"multi_class": "crammer_singer"}, False, False),
]


@pytest.mark.parametrize(
    "n_classes, params, weighted, as_sparse",
    [case[1:] for case in CLASSIFIERS],
    ids=[case[0] for case in CLASSIFIERS],
)
def test_linear_svc_equals_liblinear(n_classes, params, weighted, as_sparse):
    X, y, weights = _classification(n_classes)
    sw = weights if weighted else None
    data = sparse.csr_matrix(X) if as_sparse else X
    reference = _reference(sk.LinearSVC, params, X, y, sw)
    fitted = ml.LinearSVC(**params, **TIGHT).fit(data, y, sample_weight=sw)
    _assert_equal_fits(fitted, reference)
    np.testing.assert_array_equal(fitted.classes_, reference.classes_)
    assert isinstance(fitted.n_iter_, int)
    np.testing.assert_allclose(
        fitted.decision_function(data), reference.decision_function(X), atol=1e-5
    )
    np.testing.assert_array_equal(fitted.predict(data), reference.predict(X))
    assert fitted.score(data, y) == pytest.approx(reference.score(X, y))


@pytest.mark.parametrize(
    "params, as_sparse",
    [
        ({"epsilon": 0.1}, False),
        ({"epsilon": 0.2, "fit_intercept": False, "C": 3.0}, True),
        ({"loss": "squared_epsilon_insensitive", "dual": False, "intercept_scaling": 2.0}, False),
        ({"loss": "squared_epsilon_insensitive", "epsilon": 0.3}, True),
    ],
)
def test_linear_svr_equals_liblinear(params, as_sparse):
    X, y, sw = _regression()
    data = sparse.csr_matrix(X) if as_sparse else X
    reference = _reference(sk.LinearSVR, params, X, y, sw)
    fitted = ml.LinearSVR(**params, **TIGHT).fit(data, y, sample_weight=sw)
    _assert_equal_fits(fitted, reference)
    np.testing.assert_allclose(fitted.predict(data), reference.predict(X), atol=1e-5)
    assert fitted.score(data, y) == pytest.approx(reference.score(X, y), rel=1e-8)


def test_default_tolerance_is_close_to_liblinear():
    X, y, _ = _classification(3)
    fitted, reference = ml.LinearSVC().fit(X, y), sk.LinearSVC().fit(X, y)
    np.testing.assert_allclose(fitted.coef_, reference.coef_, atol=1e-2)  # liblinear stops early


def test_sparsify_and_densify():
    X, y, _ = _classification(2)
    fitted = ml.LinearSVC(penalty="l1", dual=False, C=0.05).fit(X, y)
    dense = fitted.predict(X)
    assert sparse.issparse(fitted.sparsify().coef_)
    np.testing.assert_array_equal(fitted.predict(X), dense)
    assert isinstance(fitted.densify().coef_, np.ndarray)


@pytest.mark.parametrize(
    "make_ml, make_sk, params",
    [
        (ml.LinearSVC, sk.LinearSVC, {"penalty": "l1", "loss": "hinge"}),
        (ml.LinearSVC, sk.LinearSVC, {"penalty": "l1", "dual": True}),
        (ml.LinearSVC, sk.LinearSVC, {"loss": "hinge", "dual": False}),
        (ml.LinearSVR, sk.LinearSVR, {"dual": False}),
        (ml.LinearSVC, sk.LinearSVC, {"C": 0.0}),
        (ml.LinearSVC, sk.LinearSVC, {"multi_class": "ovo"}),
        (ml.LinearSVR, sk.LinearSVR, {"loss": "hinge"}),
        (ml.LinearSVC, sk.LinearSVC, {"class_weight": {7: 1.0}}),
    ],
)
def test_errors_are_scikit_learns(make_ml, make_sk, params):
    X, y, _ = _classification(2)
    with pytest.raises(ValueError) as expected:
        make_sk(**params).fit(X, y)
    with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
        make_ml(**params).fit(X, y)


def test_one_class_is_an_error():
    X, _, _ = _classification(2)
    with pytest.raises(ValueError, match="at least 2 classes"):
        ml.LinearSVC().fit(X, np.zeros(len(X)))


def test_dual_auto_follows_the_global_shape():
    X, y, _ = _classification(2)
    wide = np.hstack([X[:4]] * 2)  # 4 rows, 10 features: auto picks the dual
    ml.LinearSVC(penalty="l1", dual="auto").fit(wide, y[:4] if len(set(y[:4])) > 1 else [0, 1] * 2)
    ml.LinearSVR(loss="squared_epsilon_insensitive").fit(wide, np.arange(4.0))


def test_max_iter_warns():
    X, y, _ = _classification(3)
    for params in ({}, {"loss": "hinge"}, {"multi_class": "crammer_singer"}):
        with pytest.warns(ConvergenceWarning, match="Liblinear failed to converge"):
            ml.LinearSVC(max_iter=1, **params).fit(X, y)


def test_parameters_and_attributes_follow_scikit_learn():
    for ours, theirs in ((ml.LinearSVC, sk.LinearSVC), (ml.LinearSVR, sk.LinearSVR)):
        expected = theirs().get_params()
        params = ours().get_params()
        assert params.pop("comms") is None
        assert params == expected
        constraints = dict(ours._parameter_constraints)
        constraints.pop("comms")
        assert constraints.keys() == theirs._parameter_constraints.keys()
    X, y, _ = _classification(3)
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    fitted = ml.LinearSVC().fit(frame, y)
    assert fitted.n_features_in_ == 5
    assert list(fitted.feature_names_in_) == list(frame.columns)
