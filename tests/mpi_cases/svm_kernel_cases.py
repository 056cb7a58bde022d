"""Kernel SVMs under mpiexec: every case builds the same global data on every
rank, fits scikit-learn's libsvm (tol=1e-6, shrinking as mlmpi's) on all of it
and mlmpi on each split of it (even, uneven, rank 0 empty), and checks the same
support vectors and iterations, dual coefficients and intercepts (1e-6), and a
model identical at every layout."""

import numpy as np
import pytest
import sklearn.svm as sk
from shards import each_layout, same_error_everywhere

import mlmpi.svm as ml
from mlmpi import get_comms
from mlmpi.datasets import shard

ATOL = 1e-6


def _data():
    """Labels sorted by class, so at 3-4 ranks some shards lack some classes."""
    rng = np.random.RandomState(0)
    y = np.repeat([0, 1, 2], [16, 14, 12])
    X = rng.normal(size=(42, 3))
    X[:, 0] += y * 1.5
    weights = rng.uniform(0.1, 2.0, size=42)
    weights[::5] = 0.0
    return X, y, weights, 2 * X[:, 0] + np.sin(X[:, 1])


def _model(fitted):
    return (fitted.support_, fitted.dual_coef_, fitted.intercept_, fitted.n_iter_)


def _check(make_ml, make_sk, X, y, sw, *, predict=("decision_function", "predict")):
    reference = make_sk().fit(X, y, sample_weight=sw)
    models = []
    for _, (Xl, yl, swl) in each_layout(X, y, sw):
        fitted = make_ml().fit(Xl, yl, sample_weight=swl)
        np.testing.assert_array_equal(fitted.support_, reference.support_)
        np.testing.assert_array_equal(fitted.n_iter_, reference.n_iter_)
        np.testing.assert_allclose(fitted.dual_coef_, reference.dual_coef_, atol=ATOL)
        np.testing.assert_allclose(fitted.intercept_, reference.intercept_, atol=ATOL)
        np.testing.assert_allclose(fitted.support_vectors_, reference.support_vectors_)
        models.append(_model(fitted))
        rows = Xl if Xl.shape[0] else X[:0]
        for method in predict:
            expected = getattr(reference, method)(Xl) if len(Xl) else None
            actual = getattr(fitted, method)(rows)
            if expected is not None:
                np.testing.assert_allclose(actual, expected, atol=1e-9)
    for model in models[1:]:  # identical whatever the layout
        for a, b in zip(model, models[0]):
            np.testing.assert_array_equal(a, b)
    return models[0]


def case_svc_rbf_and_linear():
    X, y, weights, _ = _data()
    binary = y < 2
    for kernel, shrinking in (("rbf", True), ("rbf", False), ("linear", True)):
        _check(
            lambda: ml.SVC(kernel=kernel, tol=1e-6, shrinking=shrinking),
            lambda: sk.SVC(kernel=kernel, tol=1e-6, shrinking=shrinking),
            X[binary],
            y[binary],
            None,
        )


def case_svc_multiclass_weights_kernels():
    X, y, weights, _ = _data()
    for params, sw in (
        ({"class_weight": {0: 2.0, 2: 0.5}}, None),
        ({"class_weight": "balanced"}, weights),
        ({"kernel": "poly", "degree": 2, "coef0": 1.0}, None),
        ({"kernel": "sigmoid", "gamma": 0.1}, weights),
    ):
        _check(
            lambda: ml.SVC(tol=1e-6, **params),
            lambda: sk.SVC(tol=1e-6, **params),
            X,
            y,
            sw,
        )


def case_svc_precomputed():
    X, y, _, _ = _data()
    K = X @ X.T
    _check(
        lambda: ml.SVC(kernel="precomputed", tol=1e-6),
        lambda: sk.SVC(kernel="precomputed", tol=1e-6),
        K,
        y,
        None,
    )


def case_regressors_and_nu():
    X, y, weights, target = _data()
    _check(
        lambda: ml.SVR(tol=1e-6, C=2.0),
        lambda: sk.SVR(tol=1e-6, C=2.0),
        X,
        target,
        weights,
        predict=("predict",),
    )
    _check(
        lambda: ml.NuSVR(tol=1e-6, nu=0.3, shrinking=False),
        lambda: sk.NuSVR(tol=1e-6, nu=0.3, shrinking=False),
        X,
        target,
        weights,
        predict=("predict",),
    )
    _check(
        lambda: ml.NuSVC(tol=1e-6, nu=0.3),
        lambda: sk.NuSVC(tol=1e-6, nu=0.3),
        X,
        y,
        weights,
    )


def case_one_class():
    X, _, weights, _ = _data()
    reference = sk.OneClassSVM(tol=1e-6, nu=0.2).fit(X, sample_weight=weights)
    models = []
    for _, (Xl, swl) in each_layout(X, weights):
        fitted = ml.OneClassSVM(tol=1e-6, nu=0.2).fit(Xl, sample_weight=swl)
        np.testing.assert_array_equal(fitted.support_, reference.support_)
        np.testing.assert_allclose(fitted.dual_coef_, reference.dual_coef_, atol=ATOL)
        np.testing.assert_allclose(fitted.offset_, reference.offset_, atol=ATOL)
        if len(Xl):
            np.testing.assert_array_equal(fitted.predict(Xl), reference.predict(Xl))
        models.append(_model(fitted))
    for model in models[1:]:
        for a, b in zip(model, models[0]):
            np.testing.assert_array_equal(a, b)


def case_errors_are_raised_on_every_rank():
    comms = get_comms()
    X, y, _, _ = _data()
    Xl, yl = shard(X, comms), shard(y, comms)
    bad = Xl.copy()
    if comms.rank == comms.size - 1:
        bad[-1, 0] = np.nan
    same_error_everywhere(ValueError, "Input X contains NaN", lambda: ml.SVC().fit(bad, yl))
    same_error_everywhere(
        ValueError, "specified nu is infeasible", lambda: ml.NuSVC(nu=0.95).fit(Xl, yl)
    )
    with pytest.raises(ValueError, match="has to be greater than one"):
        ml.SVC().fit(Xl, np.zeros(len(yl)))
