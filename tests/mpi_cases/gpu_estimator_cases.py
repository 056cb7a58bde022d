"""Every estimator on CuPy arrays equals the same estimator on NumPy arrays.

Run by ``tests/test_estimators_gpu.py`` under mpiexec with ``MLMPI_COMMS``
set to ``self`` (1 rank), ``mpi`` (host staging, 1-4 ranks sharing the
GPUs there are) or ``nccl`` (one rank per GPU). Each case fits the NumPy and
the CuPy version on the same shard of the same global data, for every
layout (even, uneven, rank 0 empty), and checks that the CuPy one keeps its
arrays on the device, keeps the dtype, and agrees within float64 rtol 1e-7
or float32 rtol 1e-4.

With ``MLMPI_TEST_FAKE_CUPY=1`` the CuPy here is the strict CPU stand-in of
``_fake_cupy.py`` (``tests/test_device_path.py``): no GPU needed.
"""

from _fake_cupy import install_if_requested

install_if_requested()

import cupy  # noqa: E402
import numpy as np  # noqa: E402
from numpy.testing import assert_allclose, assert_array_equal
from shards import each_layout
from sklearn.datasets import make_blobs, make_classification, make_regression

import mlmpi.decomposition as dec
import mlmpi.ensemble as ens
import mlmpi.linear_model as lin
import mlmpi.mixture as mix
import mlmpi.neighbors as nbr
from mlmpi import KMeans, get_comms
from mlmpi.datasets import shard

RANKS = ()  # run with a GPU backend or the CuPy stand-in by their own test files
DTYPES = (np.float64, np.float32)


def _rtol(dtype):
    return 1e-7 if dtype == np.float64 else 1e-4


def _same(device, host, dtype, what, scale=1.0):
    """``device`` is a CuPy array (for an ndarray ``host``) equal to ``host``."""
    if isinstance(host, np.ndarray):
        assert isinstance(device, cupy.ndarray), (what, type(device))
        assert device.shape == host.shape, (what, device.shape, host.shape)
        if host.dtype.kind == "f":  # float32 stays float32, on the host and on the device
            assert device.dtype == host.dtype == dtype, (what, device.dtype, host.dtype)
    if isinstance(device, cupy.ndarray):  # also a 0-d array beside a host scalar (intercept_)
        device = cupy.asnumpy(device)
    rtol = _rtol(dtype)
    if np.asarray(host).dtype.kind in "iub":
        assert_array_equal(device, host, err_msg=what)
    else:
        assert_allclose(device, host, rtol=rtol, atol=rtol * scale, err_msg=what)


def _compare(make, X, y, dtype, attributes, methods, sample_weight=None):
    """Fit ``make()`` on NumPy and CuPy shards of ``X`` (and ``y``, ``sample_weight``)
    for every layout."""
    X = X.astype(dtype)
    weight = None if sample_weight is None else sample_weight.astype(dtype)
    for layout, (Xl, yl, wl) in each_layout(X, y, weight):
        data = [Xl] if y is None else [Xl, yl]
        weights = {} if wl is None else {"sample_weight": wl}
        on_host = make().fit(*data, **weights)
        on_device = make().fit(
            *(cupy.asarray(a) for a in data), **{k: cupy.asarray(v) for k, v in weights.items()}
        )
        for name in attributes:
            _same(getattr(on_device, name), getattr(on_host, name), dtype, f"{layout}: {name}")
        Xd = cupy.asarray(Xl)
        for method in methods:
            host_out = getattr(on_host, method)(Xl)
            values = np.asarray(host_out)
            scale = float(np.abs(values).max()) if values.size and values.dtype.kind == "f" else 1.0
            _same(getattr(on_device, method)(Xd), host_out, dtype, f"{layout}: {method}", scale)
        if y is not None:
            _same(on_device.score(Xd, cupy.asarray(yl)), on_host.score(Xl, yl), dtype, "score")


def _weights(n):
    return np.random.RandomState(7).uniform(0.5, 2.0, n)


def case_kmeans():
    X, _ = make_blobs(1200, n_features=6, centers=5, cluster_std=2.0, random_state=0)
    for dtype in DTYPES:
        for init in ("k-means++", "k-means||", "random", X[:5].astype(dtype)):
            _compare(
                lambda: KMeans(5, init=init, n_init=1, random_state=0),
                X,
                None,
                dtype,
                ["cluster_centers_", "inertia_", "n_iter_", "labels_"],
                ["predict", "transform", "score"],
                sample_weight=_weights(len(X)),
            )


def case_kmeans_is_the_same_fit_at_any_rank_count():
    """Overlapping clusters on the device: every layout gives the one-process
    fit bit for bit (the sums are exact there too)."""
    from kmeans_invariance_cases import K, check_every_layout, overlapping_clusters

    for dtype in DTYPES:
        X, weights = overlapping_clusters(dtype, n=1500)
        for init in ("k-means++", "k-means||"):
            params = dict(n_clusters=K, init=init, n_init=1, max_iter=20, tol=1e-4, random_state=0)
            check_every_layout(X, weights, params, device=cupy.asarray)


def case_linear_regression_and_ridge():
    X, y = make_regression(900, 12, n_targets=2, noise=5.0, random_state=0)
    for dtype in DTYPES:
        for make in (
            lambda: lin.LinearRegression(),
            lambda: lin.Ridge(alpha=3.0),
            lambda: lin.Ridge(alpha=3.0, solver="svd"),
        ):
            for weight in (None, _weights(len(X))):
                _compare(
                    make, X, y.astype(dtype), dtype, ["coef_", "intercept_"], ["predict"], weight
                )


def case_logistic_regression():
    X, y = make_classification(
        600, 10, n_informative=6, n_classes=3, n_clusters_per_class=1, random_state=0
    )
    for dtype in DTYPES:
        for labels in (y, (y > 0).astype(np.int64)):
            _compare(
                lambda: lin.LogisticRegression(C=0.5, tol=1e-10, max_iter=500),
                X,
                labels,
                dtype,
                ["coef_", "intercept_"],  # classes_ stays NumPy: labels may be strings
                ["predict", "predict_proba", "decision_function"],
            )


def case_lasso_and_elastic_net():
    X, y = make_regression(900, 12, noise=5.0, random_state=1)
    for dtype in DTYPES:
        for make in (lambda: lin.Lasso(alpha=0.5), lambda: lin.ElasticNet(alpha=0.5)):
            _compare(make, X, y.astype(dtype), dtype, ["coef_", "intercept_"], ["predict"])


def case_pca_and_truncated_svd():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(900, 10)) @ rng.normal(size=(10, 10)) + 3.0
    for dtype in DTYPES:
        for solver in ("covariance_eigh", "full", "randomized"):
            for whiten in (False, True):
                _compare(
                    lambda: dec.PCA(4, svd_solver=solver, whiten=whiten, random_state=0),
                    X,
                    None,
                    dtype,
                    [
                        "components_",
                        "explained_variance_",
                        "singular_values_",
                        "mean_",
                        "noise_variance_",
                    ],
                    ["transform", "score_samples", "score"],
                )
        X_host = shard(X.astype(dtype), get_comms())
        X_local = cupy.asarray(X_host)
        on_host, on_device = (dec.PCA(4, whiten=True).fit(a) for a in (X_host, X_local))
        back = on_host.inverse_transform(on_host.transform(X_host))
        for what, device, host in (
            ("get_covariance", on_device.get_covariance(), on_host.get_covariance()),
            ("get_precision", on_device.get_precision(), on_host.get_precision()),
            ("inverse_transform", on_device.inverse_transform(on_device.transform(X_local)), back),
        ):
            _same(device, host, dtype, what, float(np.abs(host).max()))
        for algorithm in ("arpack", "randomized"):
            _compare(
                lambda: dec.TruncatedSVD(4, algorithm=algorithm, random_state=0),
                X,
                None,
                dtype,
                ["components_", "explained_variance_", "singular_values_"],
                ["transform"],
            )


def case_hist_gradient_boosting():
    """The model fitted on device rows is the one fitted on host rows; predictions
    of device rows come back on the device."""
    X, y = make_classification(400, 6, n_informative=4, n_classes=3, random_state=0)
    X[::9, 1] = np.nan
    small = {"max_iter": 3, "max_leaf_nodes": 6, "random_state": 0}
    settings = [
        (ens.HistGradientBoostingClassifier, {"early_stopping": True, **small}, y),
        (ens.HistGradientBoostingRegressor, {"loss": "absolute_error", **small}, X[:, 2] * 3),
    ]
    for cls, params, target in settings:
        for layout, (Xl, yl) in each_layout(X, target):
            on_host = cls(**params).fit(Xl, yl)
            on_device = cls(**params).fit(cupy.asarray(Xl), cupy.asarray(yl))
            for a, b in zip(on_host._predictors, on_device._predictors):
                assert a[0].nodes.tobytes() == b[0].nodes.tobytes(), layout
            assert on_host.n_iter_ == on_device.n_iter_
            Xd = cupy.asarray(Xl)
            methods = ["predict"] + (["predict_proba"] if hasattr(on_host, "classes_") else [])
            for method in methods:
                out = getattr(on_device, method)(Xd)
                assert isinstance(out, cupy.ndarray), (layout, method)
                assert_allclose(cupy.asnumpy(out), getattr(on_host, method)(Xl), rtol=1e-12)


def case_neighbors():
    """Each rank queries its own rows against the global index: distances and
    indices of device queries come back on the device, equal to the host's."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(700, 5))
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5)
    for dtype in DTYPES:
        for layout, (Xl, yl, tl) in each_layout(X.astype(dtype), y, X[:, 2].astype(dtype)):
            Xd = cupy.asarray(Xl)
            host = nbr.NearestNeighbors(n_neighbors=6).fit(Xl).kneighbors(Xl)
            device = nbr.NearestNeighbors(n_neighbors=6).fit(Xd).kneighbors(Xd)
            _same(device[0], host[0], dtype, f"{layout}: kneighbors distances")
            _same(device[1], host[1], dtype, f"{layout}: kneighbors indices")
            host = nbr.KNeighborsClassifier(5).fit(Xl, yl)
            device = nbr.KNeighborsClassifier(5).fit(Xd, cupy.asarray(yl))
            _same(device.predict(Xd), host.predict(Xl), dtype, f"{layout}: predict")
            # float64 probabilities and distance-weighted means for any X, as scikit-learn's
            _same(device.predict_proba(Xd), host.predict_proba(Xl), np.float64, "predict_proba")
            host = nbr.KNeighborsRegressor(5, weights="distance").fit(Xl, tl)
            device = nbr.KNeighborsRegressor(5, weights="distance").fit(Xd, cupy.asarray(tl))
            _same(device.predict(Xd), host.predict(Xl), np.float64, f"{layout}: regressor")


def case_gaussian_mixture():
    X, _ = make_blobs(900, n_features=4, centers=3, cluster_std=[1.0, 1.5, 0.7], random_state=2)
    attributes = ["weights_", "means_", "covariances_", "precisions_cholesky_"]
    methods = ["predict", "predict_proba", "score_samples"]
    for dtype in DTYPES:
        for covariance_type in ("full", "tied", "diag", "spherical"):
            _compare(
                lambda: mix.GaussianMixture(3, covariance_type=covariance_type, random_state=0),
                X,
                None,
                dtype,
                attributes + ["n_iter_", "lower_bound_"],
                methods,
            )
        _compare(
            lambda: mix.BayesianGaussianMixture(n_components=3, random_state=0, max_iter=200),
            X,
            None,
            dtype,
            attributes,
            methods,
        )
