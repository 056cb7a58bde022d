"""Two-limb fixed-point sums (``mlmpi.kernels.shared.limbs``,
``mlmpi.utils._exact``): exact, so a sum does not depend on the order or the
split of its values. The kernels that fill them (dense and CSR, CPU and the
CuPy path run on NumPy) agree bit for bit, and a KMeans fit on the same rows
in another order is the same fit."""

import importlib
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp
from _limbs_reference import exact_limb_sums, grid_scales
from mlmpi.kernels.cpu import exact as cpu_exact
from mlmpi.kernels.cpu import kmeans_sparse as cpu_kmeans_sparse
from mlmpi.kernels.gpu import exact as device_exact
from mlmpi.kernels.shared.limbs import GRID_BITS, split
from numpy.testing import assert_allclose, assert_array_equal

from mlmpi import KMeans
from mlmpi.comms import SelfComms
from mlmpi.utils._exact import (
    carry,
    exact_column_sums,
    exact_moments,
    limb_exponents,
    limb_scales,
    limbs_to_float,
)


def test_grid_values_fit_their_bits():
    largest = np.array([3.0, 2.0**-1000, 1e300, 0.0, 1.0])
    exponents = limb_exponents(largest)
    scaled = largest * limb_scales(exponents)
    assert (np.abs(scaled) <= 2.0**GRID_BITS).all()
    assert (scaled[[0, 2, 4]] >= 2.0 ** (GRID_BITS - 1)).all()  # no bit wasted
    assert exponents[3] == 0 and exponents[1] == 1023  # zeros; the tiniest are capped


def test_carry_gives_one_form_of_a_total():
    rng = np.random.default_rng(0)
    q = rng.integers(-(2**50), 2**50, size=(3000, 4))
    whole = np.stack(split(q)).sum(axis=1)
    parts = sum(np.stack(split(part)).sum(axis=1) for part in np.array_split(q, 7))
    assert_array_equal(carry(whole.copy()), carry(parts.copy()))
    total = carry(whole.copy())
    assert [int(h) * 2**31 + int(lo) for h, lo in total.T] == [int(v) for v in q.sum(axis=0)]
    assert_allclose(limbs_to_float(total, np.zeros(4, np.int64)), q.sum(axis=0).astype(float))


def test_exact_column_sums_do_not_depend_on_the_order():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(5000, 3)) * [1.0, 1e6, 1e-6]
    sums = exact_column_sums(values, SelfComms())
    assert_array_equal(exact_column_sums(values[::-1].copy(), SelfComms()), sums)
    assert_allclose(sums, values.sum(axis=0), rtol=1e-12)
    assert exact_column_sums(values[:, 0].copy(), SelfComms()) == sums[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_moments(dtype):
    rng = np.random.default_rng(2)
    X = (rng.normal(size=(4000, 5)) * [1, 10, 1e-3, 0, 1] + [0, 1e4, 5, 2, -7]).astype(dtype)
    moments = exact_moments(X, len(X), SelfComms())
    X64 = X.astype(np.float64)
    assert_allclose(moments.mean, X64.mean(axis=0), rtol=1e-12)
    assert_allclose(moments.variance, X64.var(axis=0), rtol=1e-9, atol=1e-12)
    assert moments.variance[3] == 0
    assert_array_equal(moments.low, X64.min(axis=0))
    shuffled = exact_moments(X[rng.permutation(len(X))], len(X), SelfComms())
    for a, b in zip(moments, shuffled):
        assert_array_equal(a, b)
    csr = sp.csr_matrix(np.where(np.abs(X) > 1, X, 0))
    sparse = exact_moments(csr, len(X), SelfComms())
    dense = csr.toarray().astype(np.float64)
    assert_allclose(sparse.mean, dense.mean(axis=0), rtol=1e-12)
    # Not shifted: E[x²] - E[x]² loses digits where the mean dwarfs the spread.
    assert_allclose(sparse.variance, dense.var(axis=0), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_device_moment_kernels_match_cpu(dtype, monkeypatch):
    monkeypatch.setattr(device_exact, "block_rows", lambda xp, n_features: 100)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1001, 4)).astype(dtype) * 3
    shift = rng.normal(size=4)
    scales = limb_scales(limb_exponents(np.full(8, 40.0))).reshape(2, 4)
    found = []
    for kernels in (cpu_exact, device_exact):
        low, high = np.full(4, np.inf), np.full(4, -np.inf)
        kernels.column_extrema(X, low, high)
        limbs = np.zeros((2, 2, 4), np.int64)
        kernels.moment_limbs(X, shift, scales, limbs)
        found.append((low, high, carry(limbs)))
    for a, b in zip(*found):
        assert_array_equal(a, b)


@pytest.fixture
def numpy_as_cupy(monkeypatch):
    """``cupy`` and ``cupyx`` modules that are NumPy (``scatter_*`` as ``ufunc.at``),
    so that the CuPy CSR kernels run on SciPy matrices."""
    cupy = types.ModuleType("cupy")
    cupy.__getattr__ = lambda name: getattr(np, name)
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add, cupyx.scatter_min = np.add.at, np.minimum.at
    cupyx.scatter_max = np.maximum.at
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.delitem(sys.modules, "mlmpi.kernels.gpu.kmeans_sparse", raising=False)
    yield importlib.import_module("mlmpi.kernels.gpu.kmeans_sparse")
    sys.modules.pop("mlmpi.kernels.gpu.kmeans_sparse", None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_device_csr_kernels_match_cpu(numpy_as_cupy, dtype, monkeypatch):
    """The CuPy CSR k-means step (two steps: the second moves some rows) and
    moment kernels, run on NumPy: the same labels and the same exact sums."""
    monkeypatch.setattr(numpy_as_cupy, "BLOCK_ROWS", 150)
    rng = np.random.default_rng(4)
    dense = rng.normal(size=(700, 6)).astype(dtype)
    dense[rng.random(dense.shape) < 0.5] = 0
    X = sp.csr_matrix(dense)
    w = rng.uniform(0.5, 2, 700).astype(dtype)
    scales = grid_scales(dense, w)
    found = []
    for kernel in (cpu_kmeans_sparse, numpy_as_cupy):
        labels = np.full(700, -1, np.int32)
        sums, weights = np.zeros((2, 5, 6), np.int64), np.zeros((2, 5), np.int64)
        stats = np.zeros(1, np.int64)
        for start in (0, 5):
            kernel.lloyd_step(X, w, dense[start : start + 5], scales, labels, sums, weights, stats)
        found.append((labels, carry(sums), carry(weights), int(stats[0])))
    for a, b in zip(*found):
        assert_array_equal(a, b)
    exact = exact_limb_sums(dense, w, found[0][0], 5, scales)
    assert_array_equal(found[0][1], exact[0])
    assert 0 < found[0][3] < 700
    low, high = np.full(6, np.inf), np.full(6, -np.inf)
    device_exact.column_extrema(X, low, high)
    assert_array_equal(low, np.minimum(dense.min(axis=0), 0))
    limbs = [np.zeros((2, 2, 6), np.int64) for _ in range(2)]
    moment_scales = np.ones((2, 6)) * 2.0**40
    cpu_exact.moment_limbs(X, np.zeros(6), moment_scales, limbs[0])
    device_exact.moment_limbs(X, np.zeros(6), moment_scales, limbs[1])
    assert_array_equal(carry(limbs[0]), carry(limbs[1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeans_on_reordered_rows_is_the_same_fit(dtype):
    """Overlapping clusters, one process: the rows in another order give the
    same centres, inertia and iterations, bit for bit (a float sum in row order
    would not), and each row keeps its label."""
    rng = np.random.default_rng(5)
    X = rng.normal(scale=0.4, size=(6, 4))[rng.integers(6, size=3000)] + rng.normal(size=(3000, 4))
    X = X.astype(dtype)
    order = rng.permutation(len(X))
    params = dict(n_clusters=6, init=X[:6].copy(), n_init=1, max_iter=50, tol=0, comms=SelfComms())
    one = KMeans(**params).fit(X)
    other = KMeans(**params).fit(X[order])
    assert_array_equal(other.cluster_centers_, one.cluster_centers_)
    assert other.inertia_ == one.inertia_ and other.n_iter_ == one.n_iter_ > 5
    assert_array_equal(other.labels_, one.labels_[order])
