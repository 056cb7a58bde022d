"""The CPU Lloyd kernel (SIMD lanes) against a frozen copy of itself from before
its faster argmin (``tests/_frozen_lloyd.py``): the same labels and count of
changed labels, bit for bit, for both dtypes, many shapes, unit and non-unit
weights, one and two threads, and data full of exact ties; and the sums of a
step from no labels equal to the exact sums on the grids (the frozen copy's
float sums are not the kernel's any more)."""

import numba
import numpy as np
import pytest
from _frozen_lloyd import reference_step
from _limbs_reference import exact_limb_sums, grid_scales
from mlmpi.kernels.cpu import kmeans
from numpy.testing import assert_array_equal

from mlmpi.utils._exact import carry


def _data(dtype, n, d, k, seed, unit_weights):
    """Rows half small integers (exact ties between centres abound), half normal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[: n // 2] = rng.integers(-2, 3, size=(n // 2, d))
    X = X.astype(dtype)
    if unit_weights:
        weight = np.ones(n, dtype=dtype)
    else:
        weight = rng.uniform(0.5, 2.0, n).astype(dtype)
        weight[::7] = 1  # unit weights inside blocks that are not all unit
    source = X if n else rng.normal(size=(k, d)).astype(dtype)
    centers = source[rng.integers(0, len(source), k)].copy()
    labels = rng.integers(-1, k, n).astype(np.int32)  # some already right
    return X, weight, centers, labels


def _lanes_step(X, weight, centers, labels, threads, monkeypatch):
    monkeypatch.setattr(kmeans, "GEMM_MIN_CENTRE_VALUES", 10**9)  # always the lanes
    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    k, d = centers.shape
    sums, weights = np.zeros((2, k, d), np.int64), np.zeros((2, k), np.int64)
    stats = np.zeros(1, np.int64)
    scales = grid_scales(X, weight)
    kmeans.lloyd_step(X, weight, centers, scales, labels, sums, weights, stats)
    return labels, carry(sums), carry(weights), stats, scales


def _assert_same_as_frozen(X, weight, centers, labels, threads, monkeypatch):
    k, d = centers.shape
    expected = (labels.copy(), np.zeros((k, d)), np.zeros(k), np.zeros(1))
    reference_step(X, weight, centers, *expected, groups=threads)
    got = _lanes_step(X, weight, centers, labels.copy(), threads, monkeypatch)
    assert_array_equal(got[0], expected[0], err_msg="labels")
    assert got[3][0] == expected[3][0], "changes"
    fresh = np.full(len(X), -1, dtype=np.int32)
    _, sums, weights, _, scales = _lanes_step(X, weight, centers, fresh, threads, monkeypatch)
    exact = exact_limb_sums(X, weight, expected[0], k, scales)
    assert_array_equal(sums, exact[0], err_msg="sums")
    assert_array_equal(weights, exact[1], err_msg="weights")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "k, d", [(1, 1), (5, 3), (16, 32), (16, 37), (17, 16), (256, 32), (40, 200), (1024, 7)]
)
@pytest.mark.parametrize("unit_weights", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_same_bits_as_frozen_kernel(dtype, k, d, unit_weights, threads, monkeypatch):
    # two full blocks and a partial one that is not a multiple of a tile
    n = 2 * kmeans.BLOCK_ROWS + 1037
    X, weight, centers, labels = _data(dtype, n, d, k, k * d, unit_weights)
    _assert_same_as_frozen(X, weight, centers, labels, threads, monkeypatch)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 7, 15, 16, 17, 40])
@pytest.mark.parametrize("k, d", [(16, 32), (33, 5)])
def test_same_bits_as_frozen_kernel_on_few_rows(dtype, n, k, d, monkeypatch):
    X, weight, centers, labels = _data(dtype, n, d, k, n, unit_weights=n % 2 == 0)
    _assert_same_as_frozen(X, weight, centers, labels, 1, monkeypatch)
