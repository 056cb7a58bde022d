"""The CPU Lloyd kernel's two layouts of the block distances (rows for few
centres, columns for many) against each other and against a direct NumPy
computation: same labels (first centre on ties), same weighted sums."""

import numpy as np
import pytest
from mlmpi.kernels.cpu import kmeans
from numpy.testing import assert_allclose, assert_array_equal


def _reference(X, weight, centers):
    X64, C64 = X.astype(np.float64), centers.astype(np.float64)
    dist = ((X64[:, None, :] - C64[None, :, :]) ** 2).sum(axis=2)
    labels = dist.argmin(axis=1)
    k = len(centers)
    sums = np.zeros((k, X.shape[1]))
    np.add.at(sums, labels, weight[:, None].astype(np.float64) * X64)
    return labels, sums, np.bincount(labels, weights=weight, minlength=k)


def _step(X, weight, centers, crossover, monkeypatch, update=True):
    monkeypatch.setattr(kmeans, "COLUMN_MIN_CLUSTERS", crossover)
    n, k, d = len(X), *centers.shape
    labels = np.full(n, -1, dtype=np.int32)
    labels[::3] = 0  # some unchanged labels: the count of changes must see them
    before = labels.copy()
    sums, weights, stats = np.zeros((k, d)), np.zeros(k), np.zeros(1)
    kmeans.lloyd_step(X, weight, centers, labels, sums, weights, stats, update_centers=update)
    assert stats[0] == np.count_nonzero(labels != before)
    return labels, sums, weights


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [5, 70])
def test_rows_and_columns_layouts_match_numpy(dtype, k, monkeypatch):
    rng = np.random.default_rng(k)
    # more rows than one block, not a multiple of the block or GEMM rows
    n, d = 2 * kmeans.BLOCK_ROWS + kmeans.GEMM_ROWS + 37, 6
    X = rng.normal(size=(n, d)).astype(dtype)
    weight = rng.uniform(0.5, 2.0, n).astype(dtype)
    centers = X[rng.choice(n, k, replace=False)].copy()
    centers[-1] = centers[1]  # a duplicate centre: ties go to the smaller index
    expected_labels, expected_sums, expected_weights = _reference(X, weight, centers)
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    results = []
    for crossover in (k + 1, k):  # rows, then columns
        labels, sums, weights = _step(X, weight, centers, crossover, monkeypatch)
        assert_array_equal(labels, expected_labels)
        assert_allclose(sums, expected_sums, rtol=rtol, atol=rtol * n)
        assert_allclose(weights, expected_weights, rtol=rtol)
        results.append((labels, sums, weights))
    (labels_r, sums_r, weights_r), (labels_c, sums_c, weights_c) = results
    assert_array_equal(labels_c, labels_r)
    assert_array_equal(sums_c, sums_r)  # same rows in the same order, in X's dtype per block
    assert_array_equal(weights_c, weights_r)
    labels, sums, weights = _step(X, weight, centers, k, monkeypatch, update=False)
    assert_array_equal(labels, expected_labels)
    assert not sums.any() and not weights.any()


def test_threads_split_blocks_without_changing_results(monkeypatch):
    """Several threads give the single-thread sums (fixed order of the groups' slices)."""
    import numba

    rng = np.random.default_rng(1)
    X = rng.normal(size=(5 * kmeans.BLOCK_ROWS + 11, 4))
    weight = np.ones(len(X))
    centers = X[:64].copy()
    one = _step(X, weight, centers, 48, monkeypatch)
    threads = numba.get_num_threads()
    monkeypatch.setattr(numba, "get_num_threads", lambda: max(2, threads))
    two = _step(X, weight, centers, 48, monkeypatch)
    for a, b in zip(one, two):
        assert_allclose(a, b, rtol=1e-12)
