"""Single-process sparse details: helpers, kernels against their dense twins,
files (the cupyx.scipy.sparse paths are in ``test_sparse_gpu.py``).

scikit-learn's sparse estimator checks run in ``test_decomposition.py`` and
``test_kmeans.py`` (the estimators' tags declare sparse support); the
multi-rank comparisons with scikit-learn are in ``mpi_cases/sparse_cases.py``.
"""

import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from _limbs_reference import grid_scales
from mlmpi.kernels.cpu import kmeans as dense_kmeans
from mlmpi.kernels.cpu import kmeans_sparse
from mlmpi.kernels.shared import decomposition as decomposition_kernels
from numpy.testing import assert_allclose, assert_array_equal

from mlmpi import PCA
from mlmpi._array import is_sparse, sparse_namespace, to_csr
from mlmpi.comms import SelfComms
from mlmpi.datasets import make_sparse_text
from mlmpi.io import load_npz
from mlmpi.io._numpy import _npz_slice
from mlmpi.utils._exact import carry


def _text(n=300, d=50, dtype=np.float64, seed=0):
    return make_sparse_text(n, d, nnz_per_row=6, random_state=seed, dtype=dtype, comms=SelfComms())[
        0
    ]


def test_array_helpers():
    X = sp.random(5, 4, density=0.5, format="coo", random_state=0)
    assert is_sparse(X) and is_sparse(sp.csr_array(X)) and not is_sparse(X.toarray())
    assert sparse_namespace(X) is sp
    csr = to_csr(X)
    assert csr.format == "csr" and to_csr(csr) is csr
    assert_array_equal(to_csr(X.toarray()).toarray(), X.toarray())


def test_make_sparse_text_rows_and_errors():
    X, y = make_sparse_text(
        200, 30, nnz_per_row=4, n_classes=3, random_state=0, dtype=np.float32, comms=SelfComms()
    )
    assert X.dtype == np.float32 and y.dtype.kind == "i" and set(np.unique(y)) == {0, 1, 2}
    lengths = np.diff(X.indptr)
    assert lengths.min() >= 1 and lengths.max() <= 7
    assert np.all(X.data >= 1) and np.all(X.data == np.round(X.data))  # word counts
    with pytest.raises(ValueError, match="nnz_per_row"):
        make_sparse_text(10, 5, nnz_per_row=0, random_state=0, comms=SelfComms())


@pytest.mark.parametrize("compressed", [True, False])
def test_npz_slice_reads_a_range(tmp_path, compressed):
    X = _text()
    path = tmp_path / "x.npz"
    sp.save_npz(path, X, compressed=compressed)
    with zipfile.ZipFile(path) as archive:
        assert_array_equal(_npz_slice(archive, "indices", 17, 95), X.indices[17:95])
        assert_array_equal(_npz_slice(archive, "data", 0, 0), X.data[:0])
    local = load_npz(path, SelfComms(), counts=[X.shape[0]])
    assert (local != X).nnz == 0
    with pytest.raises(ValueError, match="device"):
        load_npz(path, SelfComms(), device="tpu")


@pytest.mark.parametrize("center", [False, True])
def test_decomposition_kernels_sparse_equal_dense(monkeypatch, center):
    """Each kernel on CSR rows (implicit centring, several blocks) equals it on the dense rows."""
    monkeypatch.setattr(decomposition_kernels, "_SPARSE_BLOCK_ROWS", 37)
    X = _text()
    dense = X.toarray()
    c = dense.mean(axis=0) + 0.1 if center else None
    Q = np.random.RandomState(0).normal(size=(X.shape[1], 3))
    d = X.shape[1]
    for name, out_shape in (
        ("add_normal_product", Q.shape),
        ("add_squared_norms", (4,)),
        ("project", (X.shape[0], 3)),
    ):
        kernel = getattr(decomposition_kernels, name)
        got = kernel(X, c, Q, np.zeros(out_shape))
        expected = kernel(dense, c, Q, np.zeros(out_shape))
        assert_allclose(got, expected, rtol=1e-10, atol=1e-10, err_msg=name)
    for name, size in (("add_moments", 1 + d + d * d), ("column_sums", d)):
        kernel = getattr(decomposition_kernels, name)
        assert_allclose(kernel(X, np.zeros(size)), kernel(dense, np.zeros(size)), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeans_sparse_kernels_equal_dense(dtype):
    X = _text(dtype=dtype)
    dense = X.toarray()
    centers = dense[:5].copy()
    w = np.linspace(0.5, 1.5, X.shape[0]).astype(dtype)
    results = []
    scales = grid_scales(dense, w)
    for kernels, data in ((kmeans_sparse, X), (dense_kmeans, dense)):
        labels = np.full(X.shape[0], -1, dtype=np.int32)
        sums, weights = np.zeros((2, 5, X.shape[1]), np.int64), np.zeros((2, 5), np.int64)
        stats = np.zeros(1, np.int64)
        kernels.lloyd_step(data, w, centers, scales, labels, sums, weights, stats)
        distances = np.empty(X.shape[0], dtype=dtype)
        kernels.assigned_sq_distances(data, centers, labels, distances)
        results.append((labels, carry(sums), carry(weights), stats, distances))
    (l1, s1, w1, st1, d1), (l2, s2, w2, st2, d2) = results
    assert_array_equal(l1, l2)
    assert st1[0] == st2[0] == X.shape[0]
    assert_array_equal(s1, s2)  # exact sums: the same bits from either layout
    assert_array_equal(w1, w2)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    assert_allclose(d1, d2, rtol=rtol, atol=rtol)


def test_pca_sparse_partial_fit_is_dense_only():
    with pytest.raises(TypeError, match="dense data is required"):
        PCA(2).partial_fit(_text())
