"""cupyx.scipy.sparse CSR rows on the GPU (single process): the same models
as on SciPy CSR rows. Skipped without CuPy or without a CUDA device."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from mlmpi import PCA, KMeans, TruncatedSVD
from mlmpi.comms import SelfComms
from mlmpi.datasets import make_sparse_text

cupy = pytest.importorskip("cupy")
cusp = pytest.importorskip("cupyx.scipy.sparse")


def _device_count():
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        return 0


pytestmark = pytest.mark.skipif(_device_count() == 0, reason="no CUDA device")


def _text():
    return make_sparse_text(300, 50, nnz_per_row=6, random_state=0, comms=SelfComms())[0]


@pytest.mark.parametrize(
    "estimator",
    [
        TruncatedSVD(n_components=4, random_state=0),
        TruncatedSVD(n_components=4, algorithm="arpack", random_state=0),
        PCA(n_components=4, svd_solver="arpack", random_state=0),
        PCA(n_components=4, svd_solver="covariance_eigh"),
    ],
)
def test_cupyx_sparse_decomposition_matches_host(estimator):
    X = _text()
    host = estimator.fit(X)
    host_values, host_out = np.array(host.singular_values_), host.transform(X)
    device = estimator.fit(cusp.csr_matrix(X))
    assert isinstance(device.components_, cupy.ndarray)
    out = device.transform(cusp.csr_matrix(X))
    assert isinstance(out, cupy.ndarray)
    assert_allclose(cupy.asnumpy(device.singular_values_), host_values, rtol=1e-8)
    assert_allclose(np.abs(cupy.asnumpy(out)), np.abs(host_out), atol=1e-8)


def test_cupyx_sparse_kmeans_matches_host():
    X = _text()
    init = X[:4].toarray()
    host = KMeans(4, init=init, n_init=1).fit(X)
    device = KMeans(4, init=cupy.asarray(init), n_init=1).fit(cusp.csr_matrix(X))
    assert isinstance(device.cluster_centers_, cupy.ndarray)
    assert device.n_iter_ == host.n_iter_
    assert_allclose(cupy.asnumpy(device.cluster_centers_), host.cluster_centers_, atol=1e-8)
    assert_array_equal(cupy.asnumpy(device.labels_), host.labels_)
    assert_array_equal(cupy.asnumpy(device.predict(cusp.csr_matrix(X))), host.labels_)


def test_cupyx_sparse_validation_nan_and_formats():
    X = cusp.csr_matrix(_text())
    assert TruncatedSVD(2, random_state=0).fit(X.tocsc()).components_.shape == (2, X.shape[1])
    X.data[0] = cupy.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        TruncatedSVD(2).fit(X)
