"""Kernel SVMs on sparse rows (one process): the same model as scikit-learn's sparse
libsvm (with shrinking, tol=1e-6) and as mlmpi's dense fit, CSR support vectors and
dual coefficients as scikit-learn's, predictions on sparse and dense rows, and the
CSR layouts (unsorted columns, explicit zeros, duplicates, 64-bit indices, empty
rows) giving the same model."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from mlmpi.kernels import kernels_for
from mlmpi.kernels.cpu.svm import HEAD, INDEX, LOCAL
from sklearn import svm as sk

import mlmpi.svm as ml
from mlmpi.svm._smo import KernelRows, KernelSpec

ATOL = 1e-6


def _data(n=60, d=12, seed=0):
    """Rows with ~60% zeros (two empty rows), three classes, a real target."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1.0, 2.0, size=(n, d))
    X[rng.uniform(size=(n, d)) < 0.6] = 0.0
    X[[4, 31]] = 0.0
    y = np.repeat([0, 1, 2], [n // 3, n // 3, n - 2 * (n // 3)])
    X[:, 0] += np.where(X[:, 0] != 0, y * 0.8, 0.0)
    X[:, 1] += (y == 2) * 1.0
    weights = rng.uniform(0.1, 2.0, size=n)
    weights[::7] = 0.0
    target = 2 * X[:, 0] + np.sin(X[:, 1])
    return sp.csr_matrix(X), y, weights, target


def _dense(M):
    return M.toarray() if sp.issparse(M) else M


def _assert_model(fitted, reference):
    np.testing.assert_array_equal(fitted.support_, reference.support_)
    np.testing.assert_array_equal(fitted.n_support_, reference.n_support_)
    np.testing.assert_allclose(
        _dense(fitted.dual_coef_), _dense(reference.dual_coef_), rtol=0, atol=ATOL
    )
    np.testing.assert_allclose(fitted.intercept_, reference.intercept_, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(
        _dense(fitted.support_vectors_), _dense(reference.support_vectors_)
    )


def _assert_outputs(fitted, reference, X):
    """Every output of ``fitted`` on sparse and on dense rows against ``reference``'s on ``X``."""
    for method in ("decision_function", "predict", "score_samples"):
        if not hasattr(reference, method):
            continue
        expected = getattr(reference, method)(X)
        for rows in (X, X.toarray()):
            actual = getattr(fitted, method)(rows)
            if expected.dtype.kind == "f":
                np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-7)
            else:
                np.testing.assert_array_equal(actual, expected)


CASES = [
    ("SVC", {}),
    ("SVC", {"kernel": "linear", "C": 0.5}),
    ("SVC", {"kernel": "poly", "degree": 2, "gamma": 0.5, "coef0": 1.0}),
    ("SVC", {"kernel": "sigmoid", "gamma": "auto", "coef0": -0.5}),
    ("SVC", {"class_weight": "balanced", "decision_function_shape": "ovo"}),
    ("NuSVC", {"nu": 0.3}),
    ("SVR", {"C": 2.0}),
    ("SVR", {"kernel": "linear", "epsilon": 0.2}),
    ("NuSVR", {"nu": 0.4, "kernel": "poly", "degree": 2}),
    ("OneClassSVM", {"nu": 0.2}),
    ("OneClassSVM", {"kernel": "linear", "nu": 0.3}),
]


def _target(name, y, target):
    if name in ("SVC", "NuSVC"):
        return y
    return None if name == "OneClassSVM" else target


@pytest.mark.parametrize("name, params", CASES)
@pytest.mark.parametrize("weighted", [False, True])
def test_sparse_fit_equals_sklearn_sparse_fit(name, params, weighted):
    X, y, weights, target = _data()
    sw = weights if weighted else None
    yy = _target(name, y, target)
    fitted = getattr(ml, name)(tol=1e-6, **params).fit(X, yy, sample_weight=sw)
    reference = getattr(sk, name)(tol=1e-6, **params).fit(X, yy, sample_weight=sw)
    # scikit-learn's types: CSR support vectors and dual coefficients
    assert type(fitted.support_vectors_) is type(reference.support_vectors_)
    assert type(fitted.dual_coef_) is type(reference.dual_coef_)
    assert fitted.support_vectors_.shape == reference.support_vectors_.shape
    assert fitted.dual_coef_.shape == reference.dual_coef_.shape
    assert fitted._gamma == pytest.approx(reference._gamma, rel=1e-12)
    _assert_model(fitted, reference)
    np.testing.assert_array_equal(fitted.n_iter_, reference.n_iter_)
    assert fitted.shape_fit_ == reference.shape_fit_
    _assert_outputs(fitted, reference, X)
    if name == "OneClassSVM":
        np.testing.assert_allclose(fitted.offset_, reference.offset_, rtol=0, atol=ATOL)
    if params.get("kernel") == "linear":
        assert sp.issparse(fitted.coef_) and type(fitted.coef_) is type(reference.coef_)
        assert not fitted.coef_.data.flags.writeable
        np.testing.assert_allclose(
            fitted.coef_.toarray(), reference.coef_.toarray(), rtol=0, atol=ATOL
        )


@pytest.mark.parametrize("name, params", CASES)
def test_sparse_fit_equals_dense_fit(name, params):
    """Sparse and dense rows give the same model (same support set, dual
    coefficients to rounding) when gamma does not depend on the layout
    (scikit-learn's 'scale' uses another variance formula for sparse rows)."""
    X, y, weights, target = _data(seed=1)
    yy = _target(name, y, target)
    params = {**params, "gamma": params.get("gamma", 0.4)}
    if params["gamma"] == "auto":
        params["gamma"] = 0.4
    sparse = getattr(ml, name)(tol=1e-6, **params).fit(X, yy, sample_weight=weights)
    dense = getattr(ml, name)(tol=1e-6, **params).fit(X.toarray(), yy, sample_weight=weights)
    assert sp.issparse(sparse.support_vectors_) and not sp.issparse(dense.support_vectors_)
    _assert_model(sparse, dense)
    for method in ("decision_function", "predict"):
        if hasattr(dense, method):
            expected = getattr(dense, method)(X.toarray())
            for rows in (X, X.toarray()):
                np.testing.assert_allclose(getattr(sparse, method)(rows), expected, atol=1e-9)


def _scrambled(X):
    """``X`` with each row's stored values in reverse column order."""
    X = X.copy()
    for i in range(X.shape[0]):
        row = slice(X.indptr[i], X.indptr[i + 1])
        X.indices[row] = X.indices[row][::-1].copy()
        X.data[row] = X.data[row][::-1].copy()
    X.has_sorted_indices = False
    return X


def _with_duplicates(X):
    """``X`` with each stored value split into two entries of the same column
    (the same matrix, not in canonical format)."""
    data, indices, lengths = [], [], np.diff(X.indptr)
    for i in range(X.shape[0]):
        row = slice(X.indptr[i], X.indptr[i + 1])
        data += [X.data[row] * 0.25, X.data[row] * 0.75]
        indices += [X.indices[row], X.indices[row]]
    indptr = np.concatenate([[0], np.cumsum(2 * lengths)])
    return sp.csr_matrix((np.concatenate(data), np.concatenate(indices), indptr), shape=X.shape)


def _layouts(X):
    explicit = X.copy()
    explicit.data[::4] = 0.0  # explicit zeros (a different matrix: compared with its own)
    int64 = X.copy()
    int64.indices, int64.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    return {
        "unsorted": _scrambled(X),
        "int64": int64,
        "coo": X.tocoo(),
        "csc": X.tocsc(),
        "lil": X.tolil(),
        "csr_array": sp.csr_array(X),
        "float32": X.astype(np.float32),
        "explicit_zeros": explicit,
    }


@pytest.mark.parametrize(
    "layout",
    ["unsorted", "int64", "coo", "csc", "lil", "csr_array", "float32", "explicit_zeros"],
)
def test_csr_layouts_give_the_same_model(layout):
    X, y, _, _ = _data()
    rows = _layouts(X)[layout]
    before = rows.copy()
    if layout == "float32":
        X = sp.csr_matrix(X.astype(np.float32).astype(np.float64))
    if layout == "explicit_zeros":
        X = sp.csr_matrix(rows.toarray())  # the same matrix without the stored zeros
    expected = ml.SVC(tol=1e-6).fit(X, y)
    fitted = ml.SVC(tol=1e-6).fit(rows, y)
    np.testing.assert_array_equal(fitted.support_, expected.support_)
    np.testing.assert_array_equal(fitted.dual_coef_.toarray(), expected.dual_coef_.toarray())
    np.testing.assert_array_equal(fitted.intercept_, expected.intercept_)
    np.testing.assert_array_equal(fitted.decision_function(rows), expected.decision_function(X))
    assert fitted.support_vectors_.has_sorted_indices
    if layout != "float32":  # the caller's matrix is not sorted or converted in place
        assert (rows != before).nnz == 0
        if sp.issparse(rows) and rows.format in ("csr", "csc"):
            np.testing.assert_array_equal(rows.indices, before.indices)
    if layout == "explicit_zeros":  # kept in the support vectors, as scikit-learn's
        reference = sk.SVC(tol=1e-6).fit(rows, y)
        assert fitted.support_vectors_.nnz == reference.support_vectors_.nnz
        np.testing.assert_allclose(
            fitted.dual_coef_.toarray(), reference.dual_coef_.toarray(), rtol=0, atol=ATOL
        )


def test_duplicate_entries_are_summed():
    X, y, _, _ = _data()
    duplicated = _with_duplicates(X)
    assert not duplicated.has_canonical_format
    expected = ml.SVC(tol=1e-6, gamma=0.5).fit(X, y)
    fitted = ml.SVC(tol=1e-6, gamma=0.5).fit(duplicated, y)
    np.testing.assert_array_equal(fitted.support_, expected.support_)
    np.testing.assert_allclose(
        fitted.dual_coef_.toarray(), expected.dual_coef_.toarray(), rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(
        fitted.decision_function(duplicated), expected.decision_function(X), atol=1e-12
    )


def test_errors_and_edge_cases():
    X, y, _, _ = _data()
    with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported"):
        ml.SVC(kernel="precomputed").fit(sp.csr_matrix(np.eye(4)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="cannot use sparse input in 'SVC' trained on dense"):
        ml.SVC().fit(X.toarray(), y).predict(X)
    with pytest.raises(ValueError, match="cannot use sparse input in 'OneClassSVM'"):
        ml.OneClassSVM().fit(X.toarray()).decision_function(X)
    with pytest.raises(ValueError, match="X has 3 features"):
        ml.SVC().fit(X, y).predict(sp.csr_matrix(np.ones((2, 3))))
    # no support vectors (scikit-learn's #14893)
    rows = sp.csr_matrix(np.array([[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1.0]]))
    target = np.array([0.04, 0.04, 0.10, 0.16])
    fitted = ml.SVR(kernel="linear").fit(rows, target)
    reference = sk.SVR(kernel="linear").fit(rows, target)
    assert fitted.support_vectors_.shape == reference.support_vectors_.shape == (0, 4)
    assert fitted.dual_coef_.shape == reference.dual_coef_.shape == (1, 0)
    assert not fitted.support_vectors_.data.size and not fitted.dual_coef_.data.size
    np.testing.assert_allclose(fitted.predict(rows), reference.predict(rows))
    assert fitted.coef_.shape == (1, 4)
    # scikit-learn's sparse interface setting
    with sklearn.config_context(sparse_interface="sparray"):
        fitted = ml.SVC(kernel="linear").fit(X, y)
        reference = sk.SVC(kernel="linear").fit(X, y)
    for name in ("support_vectors_", "dual_coef_", "coef_"):
        assert type(getattr(fitted, name)) is type(getattr(reference, name)), name
    assert ml.SVC().__sklearn_tags__().input_tags.sparse
    assert not ml.SVC(kernel="precomputed").__sklearn_tags__().input_tags.sparse


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "sigmoid"])
def test_csr_kernels_equal_the_dense_kernels(kernel):
    """The CSR kernels add the same products in the same order as the dense
    ones without their zero products: the same values; kernel rows computed
    over a subset of the rows (shrinking) have the bits of whole ones."""
    rng = np.random.RandomState(3)
    X = rng.normal(size=(300, 40))
    X[rng.uniform(size=X.shape) < 0.7] = 0.0
    X[7] = 0.0
    S = sp.csr_matrix(X)
    spec = KernelSpec(kernels_for("svm", X).kernel_code(kernel), 0.3, 0.5, 3)
    dense = KernelRows(X, np.arange(300), spec, 1.0)
    sparse = KernelRows(S, np.arange(300), spec, 1.0)
    assert sp.issparse(sparse.X) and sparse.data()[3].shape == (300, 0)  # no dense copy
    np.testing.assert_array_equal(sparse.squares, dense.squares)
    np.testing.assert_array_equal(sparse.diagonal, dense.diagonal)
    records = np.zeros((3, sparse.width + HEAD))
    records[:, INDEX] = [0, 7, 250]  # a variable
    records[:, LOCAL] = [0, 7, 250]  # its variable (rows[t] = t)
    payloads = sparse.attach_rows(records, np.arange(300))
    subset = np.sort(rng.choice(300, size=90, replace=False))
    for t, payload in zip((0, 7, 250), payloads):
        expected = dense.row(t, dense.squares[t], X[t])
        np.testing.assert_array_equal(sparse.row(t, sparse.squares[t], payload[HEAD:]), expected)
        for rows, x in ((dense, X[t]), (sparse, payload[HEAD:])):
            part = rows.values(t + 1000, rows.squares[t], x, subset)  # a key not cached
            np.testing.assert_array_equal(part[subset], expected[subset])
    Q = sp.csr_matrix(rng.normal(size=(25, 40)) * (rng.uniform(size=(25, 40)) < 0.4))
    expected, actual = np.empty((25, 300)), np.empty((25, 300))
    kernels_for("svm", X).kernel_matrix(Q.toarray(), X, *spec, expected)
    kernels_for("svm", S).kernel_matrix_csr(
        Q.data, Q.indices, Q.indptr, S.data, S.indices, S.indptr, *spec, actual
    )
    np.testing.assert_array_equal(actual, expected)


def test_empty_shard_and_zero_width_rows():
    """A fit or predict on zero rows, and CSR rows without stored values."""
    X, y, _, _ = _data()
    fitted = ml.SVC(tol=1e-6).fit(X, y)
    assert fitted.predict(X[:0]).shape == (0,)
    assert fitted.decision_function(X[:0].toarray()).shape == (0, 3)
    empty = sp.csr_matrix((5, X.shape[1]))
    np.testing.assert_allclose(
        fitted.decision_function(empty),
        sk.SVC(tol=1e-6).fit(X, y).decision_function(empty),
        atol=1e-7,
    )


@pytest.mark.parametrize("sparse", [False, True])
def test_prediction_in_blocks_of_rows(monkeypatch, sparse):
    """Predictions by blocks of rows (K(rows, SV) kept small) equal those in one block."""
    from mlmpi.svm import _libsvm

    X, y, _, target = _data()
    X = X if sparse else X.toarray()
    classifier = ml.SVC(tol=1e-6).fit(X, y)
    regressor = ml.NuSVR(tol=1e-6).fit(X, target)
    whole = [classifier.decision_function(X), classifier.predict(X), regressor.predict(X)]
    monkeypatch.setattr(_libsvm, "_KERNEL_BLOCK", 7 * classifier.support_.shape[0])
    blocks = [classifier.decision_function(X), classifier.predict(X), regressor.predict(X)]
    for a, b in zip(whole, blocks):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
