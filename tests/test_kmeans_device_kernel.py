"""The device k-means kernel (``kernels/gpu/kmeans.py``) run on NumPy arrays.

The kernel is written against the arrays' namespace, so the very code that
runs on CuPy is checked here on the CPU: against the numba kernel, and as
the kernel of a whole KMeans fit against scikit-learn.
"""

import numpy as np
import pytest
from mlmpi.kernels import kernels_for
from mlmpi.kernels.cpu import kmeans as cpu_kernel
from mlmpi.kernels.gpu import kmeans as device_kernel
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs

from mlmpi import KMeans
from mlmpi.cluster import _init, _kmeans, _lloyd
from mlmpi.utils import _exact
from mlmpi.utils._exact import carry, limb_exponents, limb_scales


def _buffers(n, k, d):
    return (
        np.full(n, -1, dtype=np.int32),
        np.full((2, k, d), 7, dtype=np.int64),
        np.full((2, k), 7, dtype=np.int64),
        np.full(1, -1, dtype=np.int64),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("update", [True, False])
def test_lloyd_step_matches_cpu_kernel(monkeypatch, dtype, update):
    """Two steps (every row assigned, then the rows that change moved): the
    same labels and, to the last bit, the same sums as the numba kernel."""
    # Small chunks so that several chunks (and a ragged last one) are exercised.
    monkeypatch.setattr(device_kernel, "MIN_CHUNK_ROWS", 1)
    monkeypatch.setattr(device_kernel, "MAX_CHUNK_ROWS", 300)
    rng = np.random.default_rng(0)
    n, k, d = 1000, 7, 5
    X = rng.normal(size=(n, d)).astype(dtype)
    weight = rng.uniform(0.5, 2.0, n).astype(dtype)
    scales = limb_scales(limb_exponents(np.append(np.abs(X).max(axis=0) * 2.0, 2.0)))
    results = []
    for kernel in (cpu_kernel, device_kernel):
        labels, sums, weights, stats = _buffers(n, k, d)
        changes = []
        for seed in (1, 2):
            centers = X[np.random.default_rng(seed).choice(n, k, replace=False)].copy()
            kernel.lloyd_step(
                X, weight, centers, scales, labels, sums, weights, stats, update_centers=update
            )
            changes.append(int(stats[0]))
        results.append((labels, sums, weights, changes))
    (labels, sums, weights, changes), (dlabels, dsums, dweights, dchanges) = results
    assert_array_equal(dlabels, labels)
    assert dchanges == changes and changes[0] == n and 0 < changes[1] < n
    # The same totals; the limbs themselves agree once carried (their one form).
    assert_array_equal(carry(dsums), carry(sums))
    assert_array_equal(carry(dweights), carry(weights))
    if not update:
        assert (sums == 7).all() and (weights == 7).all()


def test_lloyd_step_ties_go_to_the_smaller_centre():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    centers = np.array([[1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    labels, sums, weights, stats = _buffers(3, 3, 2)
    weights[:] = 0
    device_kernel.lloyd_step(X, np.ones(3), centers, np.ones(3), labels, sums, weights, stats)
    assert_array_equal(labels, [0, 0, 0])
    assert_array_equal(weights, [[0, 0, 0], [3, 0, 0]])  # high and low limbs


def test_lloyd_step_empty_shard():
    labels, sums, weights, stats = _buffers(0, 3, 2)
    device_kernel.lloyd_step(
        np.empty((0, 2)), np.empty(0), np.ones((3, 2)), np.ones(3), labels, sums, weights, stats
    )
    assert (sums == 7).all() and stats[0] == 0


def test_assigned_sq_distances_matches_cpu_kernel(monkeypatch):
    monkeypatch.setattr(device_kernel, "MIN_CHUNK_ROWS", 1)
    monkeypatch.setattr(device_kernel, "MAX_CHUNK_ROWS", 70)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    centers = rng.normal(size=(6, 4)).astype(np.float32)
    labels = rng.integers(0, 6, 500).astype(np.int32)
    expected, out = np.empty(500, np.float32), np.empty(500, np.float32)
    cpu_kernel.assigned_sq_distances(X, centers, labels, expected)
    device_kernel.assigned_sq_distances(X, centers, labels, out)
    assert_allclose(out, expected, rtol=1e-6)


def test_chunk_rows_bounds_memory():
    rows = device_kernel.chunk_rows(256, 64, 4)
    assert rows * (4 * 256 + 8 * (256 + 4 * 64 + 4)) <= device_kernel.CHUNK_BYTES
    assert device_kernel.chunk_rows(10**6, 64, 8) == device_kernel.MIN_CHUNK_ROWS
    assert device_kernel.chunk_rows(2, 2, 4, budget=1 << 40) == device_kernel.MAX_CHUNK_ROWS


def test_device_chunks_take_a_quarter_of_the_free_memory(fake_cupy, monkeypatch):
    """On a GPU the chunks are as large as a quarter of the free memory allows
    (capped): small chunks made the loop launch-bound (0.66 s per iteration
    at 10M×64, k=256 on an H200)."""
    import _fake_cupy

    assert device_kernel._budget(np) == device_kernel.CHUNK_BYTES
    assert device_kernel._budget(fake_cupy) == _fake_cupy.FREE // 4
    monkeypatch.setattr(device_kernel, "DEVICE_CHUNK_BYTES", 1 << 20)
    assert device_kernel._budget(fake_cupy) == 1 << 20


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kmeans_fit_with_device_kernel_matches_sklearn(monkeypatch, dtype):
    for module in (_lloyd, _kmeans, _init, _exact):
        monkeypatch.setattr(
            module, "kernels_for", lambda family, X: kernels_for(family, X, device="gpu")
        )
    X, _ = make_blobs(2000, n_features=5, centers=6, cluster_std=3.0, random_state=0)
    X = X.astype(dtype)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, len(X)).astype(dtype)
    init = X[:6].copy()
    ours = KMeans(6, init=init, n_init=1).fit(X, sample_weight=weight)
    ref = SKKMeans(6, init=init, n_init=1).fit(X, sample_weight=weight)
    rtol = 1e-7 if dtype == np.float64 else 1e-4
    assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=rtol, atol=rtol)
    assert_allclose(ours.inertia_, ref.inertia_, rtol=rtol)
    assert ours.n_iter_ == ref.n_iter_
    assert_array_equal(ours.labels_, ref.labels_)
