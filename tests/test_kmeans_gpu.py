"""KMeans on CuPy arrays (single process): the same model as on NumPy arrays.

Skipped without CuPy or without a GPU (the ``cupy`` fixture).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import make_blobs

from mlmpi import KMeans

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("init", ["array", "k-means++", "k-means||", "random"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gpu_matches_cpu(cupy, init, dtype):
    cp = cupy
    X, _ = make_blobs(3000, n_features=6, centers=5, cluster_std=2.0, random_state=0)
    X = X.astype(dtype)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, len(X)).astype(dtype)
    init_param = X[:5].copy() if init == "array" else init
    cpu = KMeans(5, init=init_param, random_state=0).fit(X, sample_weight=weights)
    gpu = KMeans(5, init=init_param, random_state=0).fit(
        cp.asarray(X), sample_weight=cp.asarray(weights)
    )
    assert isinstance(gpu.cluster_centers_, cp.ndarray) and isinstance(gpu.labels_, cp.ndarray)
    assert gpu.labels_.dtype == cp.int32
    rtol = 1e-7 if dtype == np.float64 else 1e-4
    assert_allclose(cp.asnumpy(gpu.cluster_centers_), cpu.cluster_centers_, rtol=rtol, atol=rtol)
    assert_allclose(gpu.inertia_, cpu.inertia_, rtol=rtol)
    assert gpu.n_iter_ == cpu.n_iter_
    assert_array_equal(cp.asnumpy(gpu.labels_), cpu.labels_)
    X_gpu = cp.asarray(X)
    assert isinstance(gpu.predict(X_gpu), cp.ndarray)
    assert_array_equal(cp.asnumpy(gpu.predict(X_gpu)), cpu.predict(X))
    assert_allclose(cp.asnumpy(gpu.transform(X_gpu)), cpu.transform(X), rtol=rtol, atol=rtol)
    assert_allclose(gpu.score(X_gpu), cpu.score(X), rtol=rtol)
    assert gpu.predict(X_gpu[:0]).shape == (0,)
