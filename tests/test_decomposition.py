"""Single-process checks of PCA and TruncatedSVD (SelfComms), GPU checks when CuPy has a device."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import load_digits
from sklearn.utils.estimator_checks import parametrize_with_checks

import mlmpi
from mlmpi.decomposition import PCA, TruncatedSVD

ESTIMATORS = [
    PCA(),
    PCA(n_components=2, svd_solver="full", whiten=True),
    PCA(n_components=2, svd_solver="randomized", random_state=0),
    PCA(n_components=0.9, svd_solver="covariance_eigh"),
    TruncatedSVD(random_state=0),
    TruncatedSVD(n_components=1, algorithm="arpack"),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_public_names():
    assert mlmpi.PCA is PCA and mlmpi.TruncatedSVD is TruncatedSVD


@pytest.mark.parametrize("solver", ["covariance_eigh", "full", "randomized"])
def test_blocked_kernels_match_unblocked(monkeypatch, solver):
    """Several row blocks per rank give the one-block answer."""
    from mlmpi.kernels.shared import decomposition as _local

    X = load_digits().data[:500]
    params = dict(n_components=6, svd_solver=solver, random_state=0)
    one_block = PCA(**params).fit(X)
    monkeypatch.setattr(_local, "_BLOCK_ROWS", 37)
    blocked = PCA(**params).fit(X)
    for name in ("components_", "explained_variance_", "explained_variance_ratio_", "mean_"):
        assert_allclose(getattr(blocked, name), getattr(one_block, name), rtol=1e-9, atol=1e-12)
    assert_allclose(blocked.transform(X), one_block.transform(X), rtol=1e-9, atol=1e-9)
    tsvd = TruncatedSVD(n_components=4, random_state=0)
    expected = tsvd.fit(X).explained_variance_ratio_
    monkeypatch.setattr(_local, "_BLOCK_ROWS", 4096)
    assert_allclose(tsvd.fit(X).explained_variance_ratio_, expected, rtol=1e-9)


def test_partial_fit_after_covariance_fit_continues():
    from sklearn.decomposition import PCA as SkPCA

    X = load_digits().data
    pca = PCA(n_components=5, svd_solver="covariance_eigh").fit(X[:700])
    pca.partial_fit(X[700:])
    ref = SkPCA(n_components=5, svd_solver="covariance_eigh").fit(X)
    assert pca.n_samples_ == X.shape[0]
    assert_allclose(pca.components_, ref.components_, rtol=1e-8, atol=1e-10)
    assert_allclose(pca.explained_variance_, ref.explained_variance_, rtol=1e-8)
    restarted = PCA(n_components=5, svd_solver="full").fit(X[:100])
    restarted.set_params(svd_solver="auto").partial_fit(X[100:])  # a new stream
    assert restarted.n_samples_ == X.shape[0] - 100


def _gpu():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "estimator",
    [
        PCA(n_components=8, svd_solver="full"),
        PCA(n_components=8, svd_solver="covariance_eigh", whiten=True),
        PCA(n_components=8, svd_solver="randomized", random_state=0),
        TruncatedSVD(n_components=8, random_state=0),
        TruncatedSVD(n_components=8, algorithm="arpack"),
    ],
)
def test_cupy_matches_numpy(estimator, dtype):
    cupy = _gpu()
    X = load_digits().data.astype(dtype)
    on_host = estimator.fit(X)
    host = {a: np.array(getattr(on_host, a)) for a in ("components_", "singular_values_")}
    host_out = on_host.transform(X)
    on_device = estimator.fit(cupy.asarray(X))
    assert isinstance(on_device.components_, cupy.ndarray)
    out = on_device.transform(cupy.asarray(X))
    assert isinstance(out, cupy.ndarray) and out.dtype == dtype
    assert isinstance(on_device.inverse_transform(out), cupy.ndarray)
    rtol = 1e-3 if dtype == np.float32 else 1e-8
    for name, value in host.items():
        assert_allclose(cupy.asnumpy(getattr(on_device, name)), value, rtol=rtol, atol=rtol)
    assert_allclose(cupy.asnumpy(out), host_out, rtol=rtol, atol=rtol * np.abs(host_out).max())
