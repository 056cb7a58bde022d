"""The CPU Lloyd kernel's two ways to the block distances (SIMD lanes across
centres, and a BLAS GEMM for many centres with many features) against each
other, against the GEMM distances the kernel used before the lanes, against
the CSR kernel and against a direct float64 computation: same labels (first
centre on ties), same weighted sums."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from mlmpi.kernels import kernels_for
from mlmpi.kernels.cpu import kmeans, kmeans_sparse
from mlmpi.kernels.cpu.kmeans import LANES
from numpy.testing import assert_allclose, assert_array_equal


def _reference(X, weight, centers):
    X64, C64 = X.astype(np.float64), centers.astype(np.float64)
    dist = ((X64[:, None, :] - C64[None, :, :]) ** 2).sum(axis=2)
    labels = dist.argmin(axis=1)
    k = len(centers)
    sums = np.zeros((k, X.shape[1]))
    np.add.at(sums, labels, weight[:, None].astype(np.float64) * X64)
    return labels, sums, np.bincount(labels, weights=weight, minlength=k)


def _gemm_labels(X, centers):
    """argmin of ``||c||² + X · (-2 C)ᵀ`` by one BLAS GEMM in X's dtype."""
    return (np.einsum("ij,ij->i", centers, centers) + X @ (centers * -2).T).argmin(axis=1)


def _blockwise_sums(X, weight, labels, k):
    """The kernel's summation order on one thread: per block of rows, ``w·x``
    rounded to X's dtype and added row after row in X's dtype, each block then
    into float64."""
    sums = np.zeros((k, X.shape[1]))
    for start in range(0, len(X), kmeans.BLOCK_ROWS):
        rows = slice(start, start + kmeans.BLOCK_ROWS)
        block = np.zeros((k, X.shape[1]), dtype=X.dtype)
        np.add.at(block, labels[rows], weight[rows, None] * X[rows])
        sums += block
    return sums


def _step(step, X, weight, centers, update=True):
    n, k, d = X.shape[0], *centers.shape
    labels = np.full(n, -1, dtype=np.int32)
    labels[::3] = 0  # some unchanged labels: the count of changes must see them
    before = labels.copy()
    sums, weights, stats = np.zeros((k, d)), np.zeros(k), np.zeros(1)
    step(X, weight, centers, labels, sums, weights, stats, update_centers=update)
    assert stats[0] == np.count_nonzero(labels != before)
    return labels, sums, weights


def _data(dtype, n, d, k, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    weight = rng.uniform(0.5, 2.0, n).astype(dtype)
    centers = X[rng.choice(n, k, replace=False)].copy()
    centers[-1] = centers[1]  # a duplicate centre: ties go to the smaller index
    return X, weight, centers


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [3, LANES, 2 * LANES + 5])
def test_lanes_and_gemm_match_numpy_and_each_other(dtype, k, monkeypatch):
    monkeypatch.setattr(numba, "get_num_threads", lambda: 1)
    # more rows than one block, not a multiple of the block or of a tile
    n, d = 2 * kmeans.BLOCK_ROWS + 1000 + 37, LANES + 6  # a full and a partial chunk of features
    X, weight, centers = _data(dtype, n, d, k, seed=k)
    expected_labels, expected_sums, expected_weights = _reference(X, weight, centers)
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    results = []
    for crossover in (k * d + 1, k * d):  # lanes, then GEMM
        monkeypatch.setattr(kmeans, "GEMM_MIN_CENTRE_VALUES", crossover)
        labels, sums, weights = _step(kmeans.lloyd_step, X, weight, centers)
        assert_array_equal(labels, expected_labels)
        assert_allclose(sums, expected_sums, rtol=rtol, atol=rtol * n)
        assert_allclose(weights, expected_weights, rtol=rtol)
        results.append((labels, sums, weights))
        labels, sums, weights = _step(kmeans.lloyd_step, X, weight, centers, update=False)
        assert_array_equal(labels, expected_labels)
        assert not sums.any() and not weights.any()
    for lanes, gemm in zip(*results):
        # same dot products bit for bit, same rows in the same order per block
        assert_array_equal(lanes, gemm)
    assert_array_equal(results[0][1], _blockwise_sums(X, weight, expected_labels, k))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [LANES, 2 * LANES + 5])
def test_lanes_reproduce_gemm_distances_bit_for_bit(dtype, k):
    """On data with many near-ties, the lanes give the argmin of BLAS's GEMM
    distances (the kernel's result before the lanes), not just a close one."""
    n, d = 20_000, 32
    X, weight, centers = _data(dtype, n, d, k, seed=7)
    centers[: k // 2] = centers[k // 2 : 2 * (k // 2)] * (1 + 1e-6)  # near-duplicate centres
    labels, _, _ = _step(kmeans.lloyd_step, X, weight, centers)
    assert_array_equal(labels, _gemm_labels(X, centers))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_and_csr_kernels_agree(dtype):
    X, weight, centers = _data(dtype, 3000, 9, 21, seed=2)
    X[X < 0.3] = 0  # mostly zeros
    centers = X[:21].copy()
    dense = _step(kmeans.lloyd_step, X, weight, centers)
    csr = _step(kmeans_sparse.lloyd_step, sp.csr_matrix(X), weight, centers)
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    assert_array_equal(dense[0], csr[0])
    for a, b in zip(dense[1:], csr[1:]):
        assert_allclose(a, b, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("crossover", [1, 10**9])
def test_threads_split_blocks_without_changing_results(crossover, monkeypatch):
    """Several threads give the single-thread sums (fixed order of the groups' slices)."""
    monkeypatch.setattr(kmeans, "GEMM_MIN_CENTRE_VALUES", crossover)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5 * kmeans.BLOCK_ROWS + 11, 4))
    weight = np.ones(len(X))
    centers = X[:64].copy()
    one = _step(kmeans.lloyd_step, X, weight, centers)
    threads = numba.get_num_threads()
    monkeypatch.setattr(numba, "get_num_threads", lambda: max(2, threads))
    two = _step(kmeans.lloyd_step, X, weight, centers)
    for a, b in zip(one, two):
        assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "in place"])
def test_center_rows_is_numpys_subtraction(device, dtype, layout):
    rng = np.random.default_rng(2)
    X = (rng.standard_normal((1003, 37)) * 1e3 + 7).astype(dtype)
    X = {"C": X, "F": np.asfortranarray(X), "strided": X[::2], "in place": X}[layout]
    mean = X.mean(axis=0).astype(dtype)
    expected = X - mean
    out = X if layout == "in place" else np.empty_like(X)
    kernels_for("kmeans", X, device).center_rows(X, mean, out)
    assert_array_equal(out, expected)
