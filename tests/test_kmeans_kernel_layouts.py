"""The CPU Lloyd kernel's two ways to the block distances (SIMD lanes across
centres, and a BLAS GEMM for many centres with many features) against each
other, against the GEMM distances the kernel used before the lanes, against
the CSR kernel and against a direct float64 computation: same labels (first
centre on ties), and the same weighted sums to the last bit: every ``w·x`` on
its grid, added exactly (``kernels/shared/limbs.py``), whatever the path, the
threads or the rows that moved since the last step."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from _limbs_reference import exact_limb_sums, grid_scales
from mlmpi.kernels.cpu import kmeans, kmeans_sparse
from mlmpi.kernels.cpu.kmeans import LANES
from numpy.testing import assert_array_equal

from mlmpi.utils._exact import carry


def _reference(X, weight, centers):
    X64, C64 = X.astype(np.float64), centers.astype(np.float64)
    dist = ((X64[:, None, :] - C64[None, :, :]) ** 2).sum(axis=2)
    return dist.argmin(axis=1)


def _gemm_labels(X, centers):
    """argmin of ``||c||² + X · (-2 C)ᵀ`` by one BLAS GEMM in X's dtype."""
    return (np.einsum("ij,ij->i", centers, centers) + X @ (centers * -2).T).argmin(axis=1)


def _step(step, X, weight, centers, scales=None, update=True):
    """Two steps from no labels: every row assigned (and added), then nothing
    moves (the sums stay). Returns the labels and the carried limbs."""
    n, k, d = X.shape[0], *centers.shape
    scales = grid_scales(X, weight) if scales is None else scales
    labels = np.full(n, -1, dtype=np.int32)
    sums, weights = np.zeros((2, k, d), np.int64), np.zeros((2, k), np.int64)
    stats = np.zeros(1, np.int64)
    step(X, weight, centers, scales, labels, sums, weights, stats, update_centers=update)
    assert stats[0] == n
    before = sums.copy(), weights.copy()
    step(X, weight, centers, scales, labels, sums, weights, stats, update_centers=update)
    assert stats[0] == 0
    assert_array_equal(sums, before[0]) and assert_array_equal(weights, before[1])
    return labels, carry(sums), carry(weights)


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
    expected_labels = _reference(X, weight, centers)
    expected = exact_limb_sums(X, weight, expected_labels, k, grid_scales(X, weight))
    for crossover in (k * d + 1, k * d):  # lanes, then GEMM
        monkeypatch.setattr(kmeans, "GEMM_MIN_CENTRE_VALUES", crossover)
        labels, sums, weights = _step(kmeans.lloyd_step, X, weight, centers)
        assert_array_equal(labels, expected_labels)
        assert_array_equal(sums, expected[0])
        assert_array_equal(weights, expected[1])
        labels, sums, weights = _step(kmeans.lloyd_step, X, weight, centers, update=False)
        assert_array_equal(labels, expected_labels)
        assert not sums.any() and not weights.any()


@pytest.mark.parametrize("crossover", [1, 10**9])
def test_moved_rows_give_the_sums_of_all_rows(crossover, monkeypatch):
    """From one set of centres to another, only the rows that change centre are
    moved; the sums are those of a step straight to the second set."""
    monkeypatch.setattr(kmeans, "GEMM_MIN_CENTRE_VALUES", crossover)
    X, weight, first = _data(np.float32, 3 * kmeans.BLOCK_ROWS + 5, 7, 9, seed=4)
    second = X[-9:].copy()
    scales = grid_scales(X, weight)
    labels = np.full(len(X), -1, dtype=np.int32)
    sums, weights = np.zeros((2, 9, 7), np.int64), np.zeros((2, 9), np.int64)
    stats = np.zeros(1, np.int64)
    for centers in (first, second):
        kmeans.lloyd_step(X, weight, centers, scales, labels, sums, weights, stats)
    assert 0 < stats[0] < len(X)
    direct = _step(kmeans.lloyd_step, X, weight, second, scales=scales)
    assert_array_equal(labels, direct[0])
    assert_array_equal(carry(sums), direct[1])
    assert_array_equal(carry(weights), direct[2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [LANES, 2 * LANES + 5])
def test_gemm_path_gives_the_lanes_labels_on_near_ties(dtype, k, monkeypatch):
    """On data with many near-ties, the GEMM path gives the lanes' labels bit for
    bit, whatever BLAS's order, and a row's label does not depend on where it
    sits in a block (on how the rows are split between ranks)."""
    n, d = 20_000, 32
    X, weight, centers = _data(dtype, n, d, k, seed=7)
    centers[: k // 2] = centers[k // 2 : 2 * (k // 2)] * (1 + 1e-6)  # near-duplicate centres
    lanes, _, _ = _step(kmeans.lloyd_step, X, weight, centers)
    monkeypatch.setattr(kmeans, "GEMM_MIN_CENTRE_VALUES", 1)
    assert_array_equal(_step(kmeans.lloyd_step, X, weight, centers)[0], lanes)
    shifted = 777  # not a multiple of a block, a tile or a GEMM edge
    tail = _step(kmeans.lloyd_step, np.ascontiguousarray(X[shifted:]), weight[shifted:], centers)
    assert_array_equal(tail[0], lanes[shifted:])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_and_csr_kernels_agree(dtype):
    X, weight, centers = _data(dtype, 3000, 9, 21, seed=2)
    X[X < 0.3] = 0  # mostly zeros
    centers = X[:21].copy()
    dense = _step(kmeans.lloyd_step, X, weight, centers)
    csr = _step(kmeans_sparse.lloyd_step, sp.csr_matrix(X), weight, centers, grid_scales(X, weight))
    for a, b in zip(dense, csr):
        assert_array_equal(a, b)


@pytest.mark.parametrize("crossover", [1, 10**9])
def test_threads_split_blocks_without_changing_results(crossover, monkeypatch):
    """Several threads give the single-thread sums, bit for bit (integer sums)."""
    monkeypatch.setattr(kmeans, "GEMM_MIN_CENTRE_VALUES", crossover)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5 * kmeans.BLOCK_ROWS + 11, 4))
    weight = rng.uniform(0.5, 2.0, len(X))
    centers = X[:64].copy()
    one = _step(kmeans.lloyd_step, X, weight, centers)
    threads = numba.get_num_threads()
    monkeypatch.setattr(numba, "get_num_threads", lambda: max(2, threads))
    two = _step(kmeans.lloyd_step, X, weight, centers)
    for a, b in zip(one, two):
        assert_array_equal(a, b)
