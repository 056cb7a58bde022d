"""Kernel SVMs on sparse rows under mpiexec: every case builds the same global CSR
data on every rank, fits scikit-learn's sparse libsvm (with shrinking, tol=1e-6) on
all of it and mlmpi on each split of it (even, uneven, rank 0 empty), and checks
the same support vectors, dual coefficients and intercepts (1e-6), CSR models
bit for bit identical at every layout, and local predictions."""

import numpy as np
import scipy.sparse as sp
import sklearn.svm as sk
from shards import each_layout, same_error_everywhere

import mlmpi.svm as ml
from mlmpi import get_comms
from mlmpi.datasets import shard

ATOL = 1e-6


def _data():
    """48 rows, 15 columns, ~70% zeros, empty rows; labels sorted by class, so
    at 3-4 ranks some shards lack some classes."""
    rng = np.random.RandomState(0)
    y = np.repeat([0, 1, 2], [18, 16, 14])
    X = rng.uniform(-1.0, 2.0, size=(48, 15))
    X[rng.uniform(size=X.shape) < 0.7] = 0.0
    X[[2, 20, 47]] = 0.0
    X[:, 0] += y * 0.9
    weights = rng.uniform(0.1, 2.0, size=48)
    weights[::5] = 0.0
    return sp.csr_matrix(X), y, weights, 2 * X[:, 0] + np.sin(X[:, 1])


def _model(fitted):
    sv = fitted.support_vectors_
    return (
        fitted.support_,
        fitted.dual_coef_.toarray(),
        fitted.intercept_,
        fitted.n_iter_,
        sv.data,
        sv.indices,
        sv.indptr,
    )


def _check(make_ml, make_sk, X, y, sw, *, predict=("decision_function", "predict"), rows=None):
    """``rows``: a function of this rank's CSR shard giving what it passes to fit."""
    reference = make_sk().fit(X, y, sample_weight=sw)
    models = []
    for _, (Xl, yl, swl) in each_layout(X, y, sw):
        fitted = make_ml().fit(Xl if rows is None else rows(Xl), yl, sample_weight=swl)
        assert sp.issparse(fitted.support_vectors_) and sp.issparse(fitted.dual_coef_)
        np.testing.assert_array_equal(fitted.support_, reference.support_)
        np.testing.assert_allclose(
            fitted.dual_coef_.toarray(), reference.dual_coef_.toarray(), rtol=0, atol=ATOL
        )
        np.testing.assert_allclose(fitted.intercept_, reference.intercept_, rtol=0, atol=ATOL)
        np.testing.assert_array_equal(
            fitted.support_vectors_.toarray(), reference.support_vectors_.toarray()
        )
        models.append(_model(fitted))
        for method in predict:
            actual = getattr(fitted, method)(Xl)
            if Xl.shape[0]:
                expected = getattr(reference, method)(Xl)
                np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-7)
                np.testing.assert_array_equal(getattr(fitted, method)(Xl.toarray()), actual)
    for model in models[1:]:  # identical whatever the layout
        for a, b in zip(model, models[0]):
            np.testing.assert_array_equal(a, b)
    return models[0]


def case_svc_binary_and_multiclass():
    X, y, weights, _ = _data()
    binary = y < 2
    _check(
        lambda: ml.SVC(tol=1e-6),
        lambda: sk.SVC(tol=1e-6),
        X[binary],
        y[binary],
        None,
    )
    _check(
        lambda: ml.SVC(kernel="poly", degree=2, coef0=1.0, tol=1e-6, class_weight="balanced"),
        lambda: sk.SVC(kernel="poly", degree=2, coef0=1.0, tol=1e-6, class_weight="balanced"),
        X,
        y,
        weights,
    )


def case_nu_and_regressors():
    X, y, weights, target = _data()
    _check(
        lambda: ml.NuSVC(nu=0.3, tol=1e-6),
        lambda: sk.NuSVC(nu=0.3, tol=1e-6),
        X,
        y,
        weights,
    )
    _check(
        lambda: ml.SVR(kernel="linear", C=2.0, tol=1e-6),
        lambda: sk.SVR(kernel="linear", C=2.0, tol=1e-6),
        X,
        target,
        weights,
        predict=("predict",),
    )
    _check(
        lambda: ml.NuSVR(nu=0.4, tol=1e-6),
        lambda: sk.NuSVR(nu=0.4, tol=1e-6),
        X,
        target,
        None,
        predict=("predict",),
    )


def case_one_class():
    X, _, weights, _ = _data()
    reference = sk.OneClassSVM(nu=0.2, tol=1e-6).fit(X, sample_weight=weights)
    models = []
    for _, (Xl, swl) in each_layout(X, weights):
        fitted = ml.OneClassSVM(nu=0.2, tol=1e-6).fit(Xl, sample_weight=swl)
        np.testing.assert_array_equal(fitted.support_, reference.support_)
        np.testing.assert_allclose(
            fitted.dual_coef_.toarray(), reference.dual_coef_.toarray(), rtol=0, atol=ATOL
        )
        np.testing.assert_allclose(fitted.offset_, reference.offset_, rtol=0, atol=ATOL)
        if Xl.shape[0]:
            np.testing.assert_array_equal(fitted.predict(Xl), reference.predict(Xl))
        models.append(_model(fitted))
    for model in models[1:]:
        for a, b in zip(model, models[0]):
            np.testing.assert_array_equal(a, b)


def _mixed(Xl):
    """Rank 0 passes dense rows (at 2 ranks or more: with one rank, a dense fit),
    the odd ranks and a single rank CSR with reversed (unsorted) columns, the
    others COO: the same global matrix."""
    comms = get_comms()
    if comms.rank == 0 and comms.size > 1:
        return Xl.toarray()
    if comms.rank % 2 == 1 or comms.size == 1:
        Xl = Xl.copy()
        for i in range(Xl.shape[0]):
            row = slice(Xl.indptr[i], Xl.indptr[i + 1])
            Xl.indices[row] = Xl.indices[row][::-1].copy()
            Xl.data[row] = Xl.data[row][::-1].copy()
        Xl.has_sorted_indices = False
        return Xl
    return Xl.tocoo()


def case_mixed_layouts_give_the_same_model():
    X, y, _, _ = _data()
    plain = _check(
        lambda: ml.SVC(tol=1e-6, gamma=0.3),
        lambda: sk.SVC(tol=1e-6, gamma=0.3),
        X,
        y,
        None,
    )
    mixed = _check(
        lambda: ml.SVC(tol=1e-6, gamma=0.3),
        lambda: sk.SVC(tol=1e-6, gamma=0.3),
        X,
        y,
        None,
        rows=_mixed,
    )
    for a, b in zip(plain, mixed):
        np.testing.assert_array_equal(a, b)


def case_errors_are_raised_on_every_rank():
    comms = get_comms()
    X, y, _, _ = _data()
    Xl, yl = shard(X, comms), shard(y, comms)
    K = sp.csr_matrix(np.eye(48))
    Kl = shard(K, comms)
    # sparse on the last rank only: every rank's rows are CSR, every rank refuses them
    rows = Kl if comms.rank == comms.size - 1 else Kl.toarray()
    same_error_everywhere(
        TypeError,
        "Sparse precomputed kernels are not supported",
        lambda: ml.SVC(kernel="precomputed").fit(rows, yl),
    )
    bad = Xl.copy()
    if comms.rank == comms.size - 1:
        bad.data[-1] = np.nan
    same_error_everywhere(ValueError, "Input X contains NaN", lambda: ml.SVC().fit(bad, yl))
