"""Kernel SVMs (mlmpi.svm.SVC, NuSVC, SVR, NuSVR, OneClassSVM) on one rank against
scikit-learn's libsvm, with and without shrinking, at tol=1e-6: the same support
vectors and iterations, dual coefficients and intercepts to 1e-6."""

import numpy as np
import pytest
from scipy import sparse
from sklearn import svm as sk
from sklearn.exceptions import ConvergenceWarning

import mlmpi.svm as ml

ATOL = 1e-6


def _data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 3))
    y = np.repeat(["a", "b", "c"], 20)
    X[:, 0] += (y == "b") * 1.5 + (y == "c") * 3.0
    weights = rng.uniform(0.1, 2.0, size=60)
    weights[::7] = 0.0
    target = 2 * X[:, 0] + np.sin(X[:, 1])
    return X, y, weights, target


def _assert_same(fitted, reference, X):
    np.testing.assert_array_equal(fitted.support_, reference.support_)
    np.testing.assert_array_equal(fitted.n_support_, reference.n_support_)
    np.testing.assert_allclose(fitted.dual_coef_, reference.dual_coef_, atol=ATOL)
    np.testing.assert_allclose(fitted.intercept_, reference.intercept_, atol=ATOL)
    np.testing.assert_allclose(fitted.support_vectors_, reference.support_vectors_)
    np.testing.assert_array_equal(fitted.n_iter_, reference.n_iter_)
    assert fitted.fit_status_ == reference.fit_status_
    assert fitted.shape_fit_ == reference.shape_fit_
    for method in ("decision_function", "predict", "score_samples"):
        if hasattr(reference, method):
            expected, actual = getattr(reference, method)(X), getattr(fitted, method)(X)
            if expected.dtype.kind == "f":
                np.testing.assert_allclose(actual, expected, atol=1e-9)
            else:
                np.testing.assert_array_equal(actual, expected)


CLASSIFIER_CASES = [
    ("SVC", {}),
    ("SVC", {"kernel": "linear", "C": 0.5}),
    ("SVC", {"kernel": "poly", "degree": 2, "gamma": 0.5, "coef0": 1.0}),
    ("SVC", {"kernel": "sigmoid", "gamma": "auto", "coef0": -0.5}),
    ("SVC", {"class_weight": {"a": 2.0, "c": 0.5}}),
    ("SVC", {"class_weight": "balanced", "decision_function_shape": "ovo"}),
    ("SVC", {"break_ties": True}),
    ("NuSVC", {}),
    ("NuSVC", {"nu": 0.3, "gamma": 0.5}),
]


@pytest.mark.parametrize("name, params", CLASSIFIER_CASES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shrinking", [True, False])
def test_classifiers_equal_libsvm(name, params, weighted, shrinking):
    X, y, weights, _ = _data()
    sw = weights if weighted else None
    fitted = getattr(ml, name)(tol=1e-6, shrinking=shrinking, **params)
    fitted.fit(X, y, sample_weight=sw)
    reference = getattr(sk, name)(tol=1e-6, shrinking=shrinking, **params)
    reference.fit(X, y, sample_weight=sw)
    _assert_same(fitted, reference, X)
    np.testing.assert_array_equal(fitted.classes_, reference.classes_)
    np.testing.assert_allclose(fitted.class_weight_, reference.class_weight_)
    assert fitted.score(X, y) == pytest.approx(reference.score(X, y))


def test_binary_and_linear_coef():
    X, y, _, _ = _data()
    X, y = X[y != "c"], y[y != "c"]
    fitted = ml.SVC(kernel="linear", tol=1e-6).fit(X, y)
    reference = sk.SVC(kernel="linear", tol=1e-6).fit(X, y)
    _assert_same(fitted, reference, X)
    np.testing.assert_allclose(fitted.coef_, reference.coef_, atol=ATOL)


def test_precomputed_kernel():
    X, y, _, _ = _data()
    K = X @ X.T
    fitted = ml.SVC(kernel="precomputed", tol=1e-6).fit(K, y)
    reference = sk.SVC(kernel="precomputed", tol=1e-6).fit(K, y)
    _assert_same(fitted, reference, K)
    assert fitted.support_vectors_.shape == reference.support_vectors_.shape


@pytest.mark.parametrize(
    "name, params",
    [
        ("SVR", {}),
        ("SVR", {"kernel": "linear", "C": 0.3, "epsilon": 0.2}),
        ("NuSVR", {}),
        ("NuSVR", {"nu": 0.3, "kernel": "poly", "degree": 2}),
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shrinking", [True, False])
def test_regressors_equal_libsvm(name, params, weighted, shrinking):
    X, _, weights, target = _data()
    sw = weights if weighted else None
    fitted = getattr(ml, name)(tol=1e-6, shrinking=shrinking, **params)
    fitted.fit(X, target, sample_weight=sw)
    reference = getattr(sk, name)(tol=1e-6, shrinking=shrinking, **params)
    reference.fit(X, target, sample_weight=sw)
    _assert_same(fitted, reference, X)


@pytest.mark.parametrize("params", [{}, {"nu": 0.2, "kernel": "linear"}])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shrinking", [True, False])
def test_one_class_equal_libsvm(params, weighted, shrinking):
    X, _, weights, _ = _data()
    sw = weights if weighted else None
    fitted = ml.OneClassSVM(tol=1e-6, shrinking=shrinking, **params).fit(X, sample_weight=sw)
    reference = sk.OneClassSVM(tol=1e-6, shrinking=shrinking, **params)
    reference.fit(X, sample_weight=sw)
    _assert_same(fitted, reference, X)
    np.testing.assert_allclose(fitted.offset_, reference.offset_, atol=ATOL)


def test_max_iter_warns_as_scikit_learn():
    X, y, _, _ = _data()
    with pytest.warns(ConvergenceWarning, match="Solver terminated early"):
        fitted = ml.SVC(max_iter=5).fit(X, y)
    assert fitted.fit_status_ == 1
    np.testing.assert_array_equal(fitted.n_iter_, [5, 5, 5])


def test_errors():
    X, y, weights, _ = _data()
    with pytest.raises(ValueError, match="has to be greater than one"):
        ml.SVC().fit(X, np.zeros(60))
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        ml.NuSVC(nu=0.9).fit(X[:25], y[:25])
    with pytest.raises(ValueError, match="Precomputed matrix must be a square matrix"):
        ml.SVC(kernel="precomputed").fit(X, y)
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):
        ml.SVR().fit(X, y == "a", sample_weight=np.zeros(60))
    with pytest.raises(ValueError, match="positive weights belong to the same class"):
        ml.SVC().fit(X, y, sample_weight=np.where(y == "a", 1.0, -1.0))
    with pytest.raises(ValueError, match="cannot use sparse input in 'SVC'"):
        ml.SVC().fit(X, y).predict(sparse.csr_matrix(X))
    altered = ml.SVC().fit(X, y)
    altered._n_support[0] += 1
    with pytest.raises(ValueError, match="internal representation of SVC was altered"):
        altered.predict(X)
    with pytest.raises(ValueError, match="'kernel' parameter"):
        ml.SVC(kernel="laplacian").fit(X, y)
    with pytest.raises(ValueError, match="expecting 60 features"):
        ml.SVC(kernel="precomputed").fit(X @ X.T, y).predict(X)
    with pytest.raises(AttributeError, match="only available when using a linear kernel"):
        _ = ml.SVC().fit(X, y).coef_
    with pytest.raises(ValueError, match="break_ties must be False"):
        ml.SVC(break_ties=True, decision_function_shape="ovo").fit(X, y).predict(X)


def test_negative_weights_drop_rows_as_libsvm():
    X, y, weights, target = _data()
    negative = np.where(weights == 0.0, -0.5, weights)
    for name in ("SVC", "NuSVC", "NuSVR"):
        labels = target if name == "NuSVR" else y
        fitted = getattr(ml, name)(tol=1e-6).fit(X, labels, sample_weight=negative)
        reference = getattr(sk, name)(tol=1e-6)
        _assert_same(fitted, reference.fit(X, labels, sample_weight=negative), X)


def test_probability_deprecated_as_scikit_learn():
    X, y, _, _ = _data()
    with pytest.warns(FutureWarning, match="`probability` parameter was deprecated"):
        fitted = ml.NuSVC(probability=False).fit(X, y)
    with pytest.warns(FutureWarning, match="Attribute `probA_` was deprecated"):
        assert fitted.probA_.shape == (0,)


def test_values_near_the_float_maximum_get_scikit_learns_error():
    # gamma='scale' does not overflow (0, as scikit-learn's X.var() is inf), then the
    # kernel values are not finite: scikit-learn's error, not a model of NaN or zeros
    X = np.finfo(np.float64).max * np.random.RandomState(0).uniform(size=(10, 2))
    for make, y in ((ml.SVR, np.arange(10.0)), (ml.SVC, np.arange(10) % 2)):
        with pytest.raises(ValueError, match="dual coefficients or intercepts are not finite"):
            make().fit(X, y)
    X = np.random.RandomState(1).normal(size=(30, 3)) * 1e-3
    y = np.arange(30.0)
    assert ml.SVR().fit(X, y)._gamma == sk.SVR().fit(X, y)._gamma


@pytest.mark.parametrize("shrinking", [True, False])
def test_tiny_cache_with_many_pairs_equals_libsvm(shrinking):
    # 15 one-vs-one pairs share a cache of three kernel rows: a pair's rows are
    # evicted by the other pairs' between its choice of i and its update
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 4))
    y = np.repeat(np.arange(6), 20)
    X[:, 0] += y
    fitted = ml.SVC(tol=1e-6, cache_size=1e-4, shrinking=shrinking).fit(X, y)
    _assert_same(fitted, sk.SVC(tol=1e-6, shrinking=shrinking).fit(X, y), X)
