"""CuPy in, CuPy out: every public estimator and transformer, one process, on the
strict CPU stand-in for CuPy (``tests/mpi_cases/_fake_cupy.py``).

Each case fits the estimator on CuPy rows (and CuPy labels or targets) and
the same estimator on the NumPy copies, then checks that the fit does not
raise, that every output of the usual methods (``predict``,
``predict_proba``, ``transform``, ``fit_predict``, ``inverse_transform``
...) is a CuPy array equal to the host one (rtol 1e-7, integers exactly),
that ``score`` agrees, and that the fitted array attributes are CuPy arrays
wherever ``docs/gpu.rst`` and the estimator's docstring say so. The
exceptions are in :data:`HOST_ATTRIBUTES`, each with its reason. The
GPU-vs-host comparisons across ranks and layouts are
``tests/mpi_cases/gpu_estimator_cases.py`` (``tests/test_device_path.py``).
"""

import inspect
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, clone
from sklearn.datasets import load_diabetes, load_iris

import mlmpi
import mlmpi.impute
import mlmpi.preprocessing

RTOL = 1e-7


def _data(kind):
    """``(X, y)`` on the host for a kind of data (y None where unsupervised)."""
    iris_X, iris_y = load_iris(return_X_y=True)
    if kind == "classes":  # integer labels 0, 1, 2
        return iris_X, iris_y.astype(np.int64)
    if kind == "scaled classes":  # well conditioned: the solver's paths agree to rounding
        return (iris_X - iris_X.mean(axis=0)) / iris_X.std(axis=0), iris_y.astype(np.int64)
    if kind == "binary":
        return iris_X, (iris_y > 0).astype(np.int64)
    if kind == "regression":
        X, y = load_diabetes(return_X_y=True)
        return X[:200], y[:200]
    if kind == "rows":
        return iris_X, None
    if kind == "categories":  # small integers stored as floats
        return np.round(iris_X), None
    if kind == "missing":
        X = iris_X.copy()
        X[::7, 1] = np.nan
        X[::11, 3] = np.nan
        return X, None
    if kind == "labels":  # an estimator fitted on y alone
        return None, iris_y.astype(np.int64) * 10
    raise ValueError(kind)


# (name, factory, data kind). Small settings: the comparisons are what matters.
CASES = [
    ("KMeans", lambda: mlmpi.KMeans(3, n_init=2, random_state=0), "rows"),
    ("DBSCAN", lambda: mlmpi.DBSCAN(eps=0.4, min_samples=4), "rows"),
    ("HDBSCAN", lambda: mlmpi.HDBSCAN(min_cluster_size=5, copy=True), "rows"),
    (
        "HDBSCAN",
        lambda: mlmpi.HDBSCAN(min_cluster_size=5, store_centers="both", copy=True),
        "rows",
    ),
    ("LinearRegression", lambda: mlmpi.LinearRegression(), "regression"),
    ("Ridge", lambda: mlmpi.Ridge(alpha=2.0), "regression"),
    ("RidgeCV", lambda: mlmpi.RidgeCV(alphas=(0.1, 1.0, 10.0)), "regression"),
    ("Lasso", lambda: mlmpi.Lasso(alpha=0.5), "regression"),
    ("ElasticNet", lambda: mlmpi.ElasticNet(alpha=0.5), "regression"),
    ("LassoCV", lambda: mlmpi.LassoCV(alphas=(0.1, 1.0, 10.0), cv=3), "regression"),
    ("ElasticNetCV", lambda: mlmpi.ElasticNetCV(alphas=(0.1, 1.0, 10.0), cv=3), "regression"),
    ("LogisticRegression", lambda: mlmpi.LogisticRegression(max_iter=500), "classes"),
    ("LogisticRegression", lambda: mlmpi.LogisticRegression(max_iter=500), "binary"),
    # Standardised rows: on raw iris with C up to 1e4 the L-BFGS paths of the host and
    # the device part at rounding level and stop within tol of each other (1e-6 apart).
    (
        "LogisticRegressionCV",
        lambda: mlmpi.LogisticRegressionCV(Cs=(0.1, 1.0), cv=3, tol=1e-10),
        "scaled classes",
    ),
    ("PCA", lambda: mlmpi.PCA(2), "rows"),
    ("PCA", lambda: mlmpi.PCA(2, whiten=True), "rows"),
    ("TruncatedSVD", lambda: mlmpi.TruncatedSVD(2, random_state=0), "rows"),
    ("NearestNeighbors", lambda: mlmpi.NearestNeighbors(n_neighbors=4), "rows"),
    ("KNeighborsClassifier", lambda: mlmpi.KNeighborsClassifier(5), "classes"),
    ("KNeighborsRegressor", lambda: mlmpi.KNeighborsRegressor(5), "regression"),
    ("GaussianNB", lambda: mlmpi.GaussianNB(), "classes"),
    ("MultinomialNB", lambda: mlmpi.MultinomialNB(), "classes"),
    ("BernoulliNB", lambda: mlmpi.BernoulliNB(binarize=3.0), "classes"),
    ("GaussianMixture", lambda: mlmpi.GaussianMixture(3, random_state=0), "rows"),
    (
        "BayesianGaussianMixture",
        lambda: mlmpi.BayesianGaussianMixture(n_components=3, random_state=0, max_iter=200),
        "rows",
    ),
    (
        "RandomForestClassifier",
        lambda: mlmpi.RandomForestClassifier(n_estimators=5, random_state=0),
        "classes",
    ),
    (
        "RandomForestRegressor",
        lambda: mlmpi.RandomForestRegressor(n_estimators=5, random_state=0),
        "regression",
    ),
    (
        "ExtraTreesClassifier",
        lambda: mlmpi.ExtraTreesClassifier(n_estimators=5, random_state=0),
        "classes",
    ),
    (
        "ExtraTreesRegressor",
        lambda: mlmpi.ExtraTreesRegressor(n_estimators=5, random_state=0),
        "regression",
    ),
    (
        "HistGradientBoostingClassifier",
        lambda: mlmpi.HistGradientBoostingClassifier(max_iter=5, random_state=0),
        "classes",
    ),
    (
        "HistGradientBoostingRegressor",
        lambda: mlmpi.HistGradientBoostingRegressor(max_iter=5, random_state=0),
        "regression",
    ),
    ("StandardScaler", lambda: mlmpi.preprocessing.StandardScaler(), "rows"),
    ("MinMaxScaler", lambda: mlmpi.preprocessing.MinMaxScaler(), "rows"),
    ("MaxAbsScaler", lambda: mlmpi.preprocessing.MaxAbsScaler(), "rows"),
    ("RobustScaler", lambda: mlmpi.preprocessing.RobustScaler(), "rows"),
    ("Normalizer", lambda: mlmpi.preprocessing.Normalizer(), "rows"),
    (
        "QuantileTransformer",
        lambda: mlmpi.preprocessing.QuantileTransformer(n_quantiles=50),
        "rows",
    ),
    ("PolynomialFeatures", lambda: mlmpi.preprocessing.PolynomialFeatures(2), "rows"),
    (
        "OneHotEncoder",
        lambda: mlmpi.preprocessing.OneHotEncoder(sparse_output=False),
        "categories",
    ),
    ("OrdinalEncoder", lambda: mlmpi.preprocessing.OrdinalEncoder(), "categories"),
    ("LabelEncoder", lambda: mlmpi.preprocessing.LabelEncoder(), "labels"),
    ("SimpleImputer", lambda: mlmpi.impute.SimpleImputer(add_indicator=True), "missing"),
    (
        "SimpleImputer",
        lambda: mlmpi.impute.SimpleImputer(strategy="median", add_indicator=True),
        "missing",
    ),
    ("LinearSVC", lambda: mlmpi.LinearSVC(), "scaled classes"),
    ("LinearSVR", lambda: mlmpi.LinearSVR(), "regression"),
    ("SVC", lambda: mlmpi.SVC(), "classes"),
    ("NuSVC", lambda: mlmpi.NuSVC(), "classes"),
    ("SVR", lambda: mlmpi.SVR(), "regression"),
    ("NuSVR", lambda: mlmpi.NuSVR(), "regression"),
    ("OneClassSVM", lambda: mlmpi.OneClassSVM(), "rows"),
    # docs/user_guide/manifold.rst: computed on the host, embedding_ goes back to the device
    ("TSNE", lambda: mlmpi.TSNE(perplexity=10, max_iter=250, random_state=0), "rows"),
    ("UMAP", lambda: mlmpi.UMAP(n_neighbors=5, n_epochs=20, random_state=0), "rows"),
]

#: Public classes that are not estimators fitted on arrays (left out).
NOT_ESTIMATORS = {
    "MPIComms",  # communicators
    "SelfComms",
    "NCCLComms",
    "HistogramForest",  # a fitted forest's arrays, not an estimator
}

#: Every fitted attribute of these estimators stays on the host: only their outputs
#: are checked. The transformers of mlmpi.preprocessing and mlmpi.impute extend
#: scikit-learn's classes and keep scikit-learn's fitted attributes, which scikit-learn's
#: local methods read (docs/user_guide/preprocessing.rst; CuPy rows are transformed on
#: the host and the results go back to the device).
HOST_ONLY = {
    "StandardScaler",
    "MinMaxScaler",
    "MaxAbsScaler",
    "RobustScaler",
    "Normalizer",
    "QuantileTransformer",
    "PolynomialFeatures",
    "OneHotEncoder",
    "OrdinalEncoder",
    "LabelEncoder",
    "SimpleImputer",
    # docs/user_guide/svm.rst: the SMO runs on the host; CuPy rows are fitted and
    # predicted there and the outputs go back to the device.
    "SVC",
    "NuSVC",
    "SVR",
    "NuSVR",
    "OneClassSVM",
}

#: Fitted array attributes that stay on the host by design, per estimator.
HOST_ATTRIBUTES = {
    # docs/gpu.rst: LogisticRegression.classes_ stays NumPy because labels may be
    # strings; the same holds for every classifier (the naive Bayes docstrings say "host").
    "*": {"classes_"},
    # Docstring: "Singular values of the centred (weighted) X (host)".
    "LinearRegression": {"singular_"},
    # Docstring: n_iter_ is the host solver's count (host).
    "LogisticRegression": {"n_iter_"},
    # Docstrings: only the model (coef_, intercept_) follows X; the search's grid,
    # held-out errors and counts are host arrays.
    "LogisticRegressionCV": {"Cs_", "C_", "n_iter_", "l1_ratio_", "l1_ratios_"},
    "LassoCV": {"mse_path_", "alphas_"},
    "ElasticNetCV": {"mse_path_", "alphas_"},
    # Docstrings: the count-based naive Bayes models keep their statistics on the
    # host ("Replicated (host)"); only GaussianNB's follow X.
    "MultinomialNB": {"class_count_", "class_log_prior_", "feature_count_", "feature_log_prob_"},
    "BernoulliNB": {"class_count_", "class_log_prior_", "feature_count_", "feature_log_prob_"},
    # The boosting loop's per-iteration scores (scikit-learn's ndarrays); the GPU
    # part of the docstring and of docs/user_guide/boosting.rst is prediction only.
    "HistGradientBoostingClassifier": {"train_score_", "validation_score_"},
    "HistGradientBoostingRegressor": {"train_score_", "validation_score_"},
}

#: Methods whose outputs are checked, when the estimator has them.
METHODS = (
    "predict",
    "predict_proba",
    "predict_log_proba",
    "predict_joint_log_proba",
    "decision_function",
    "score_samples",
    "transform",
    "kneighbors",
    "approximate_predict",
)


def _public_estimators():
    names = set(mlmpi.__all__) | set(mlmpi.preprocessing.__all__) | set(mlmpi.impute.__all__)
    for module in ("cluster", "decomposition", "ensemble", "linear_model", "mixture"):
        names |= set(getattr(mlmpi, module).__all__)
    names |= set(mlmpi.neighbors.__all__) | set(mlmpi.naive_bayes.__all__)
    return {n for n in names if inspect.isclass(_public_class(n))}


def _public_class(name):
    for module in (
        mlmpi,
        mlmpi.preprocessing,
        mlmpi.impute,
        mlmpi.ensemble,
        mlmpi.cluster,
        mlmpi.mixture,
    ):
        value = getattr(module, name, None)
        if value is not None:
            return value
    return None


def test_every_public_estimator_has_a_case():
    classes = _public_estimators() - NOT_ESTIMATORS
    assert all(issubclass(_public_class(n), BaseEstimator) for n in classes)
    assert classes == {name for name, _, _ in CASES}


def _same(device, host, cupy, what):
    """``device`` is a CuPy array (for an ndarray ``host``) equal to ``host``."""
    if isinstance(host, tuple):
        assert isinstance(device, tuple) and len(device) == len(host), what
        for i, (d, h) in enumerate(zip(device, host)):
            _same(d, h, cupy, f"{what}[{i}]")
        return
    assert isinstance(host, np.ndarray), (what, type(host))
    assert isinstance(device, cupy.ndarray), (what, type(device))
    device = cupy.asnumpy(device)
    assert device.shape == host.shape, (what, device.shape, host.shape)
    assert device.dtype == host.dtype, (what, device.dtype, host.dtype)
    if host.dtype.kind in "iub":
        assert_array_equal(device, host, err_msg=what)
    else:
        assert_allclose(device, host, rtol=RTOL, atol=RTOL * 1e-3, err_msg=what)


def _scalar(value, cupy):
    if isinstance(value, cupy.ndarray):
        assert value.shape == (), value.shape
        return float(cupy.asnumpy(value))
    return float(value)


def _fit_args(X, y, xp):
    if X is None:
        return (xp.asarray(y),)
    return (xp.asarray(X),) if y is None else (xp.asarray(X), xp.asarray(y))


@pytest.mark.parametrize(
    ("name", "make", "kind"),
    CASES,
    ids=[f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)],
)
def test_cupy_in_cupy_out(fake_cupy, name, make, kind):
    cupy = fake_cupy
    X, y = _data(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_host = make().fit(*_fit_args(X, y, np))
        on_device = make().fit(*_fit_args(X, y, cupy))
    Xh = y if X is None else X  # LabelEncoder's methods take labels
    Xd = cupy.asarray(Xh)

    host_only = HOST_ATTRIBUTES["*"] | HOST_ATTRIBUTES.get(name, set())
    for attribute, host in vars(on_host).items():
        if attribute.startswith("_") or not attribute.endswith("_"):
            continue
        if not isinstance(host, np.ndarray) or host.dtype.kind not in "fiub":
            continue
        device = getattr(on_device, attribute)
        if attribute in host_only or name in HOST_ONLY:
            assert_array_equal(np.asarray(device), host, err_msg=attribute)
        else:
            _same(device, host, cupy, f"attribute {attribute}")

    for method in METHODS:
        if not hasattr(on_host, method):
            continue
        host_out = getattr(on_host, method)(Xh)
        _same(getattr(on_device, method)(Xd), host_out, cupy, method)
        if method == "transform" and hasattr(on_host, "inverse_transform"):
            _same(
                on_device.inverse_transform(getattr(on_device, method)(Xd)),
                on_host.inverse_transform(host_out),
                cupy,
                "inverse_transform",
            )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("fit_predict", "fit_transform"):
            if hasattr(on_host, method):
                host_out = getattr(clone(on_host), method)(*_fit_args(X, y, np))
                device_out = getattr(clone(on_device), method)(*_fit_args(X, y, cupy))
                _same(device_out, host_out, cupy, method)

    if hasattr(on_host, "dbscan_clustering"):
        _same(on_device.dbscan_clustering(0.3), on_host.dbscan_clustering(0.3), cupy, "dbscan")
    if hasattr(on_host, "score") and X is not None:
        host_score = on_host.score(*_fit_args(X, y, np))
        device_score = on_device.score(*_fit_args(X, y, cupy))
        assert_allclose(_scalar(device_score, cupy), _scalar(host_score, cupy), rtol=RTOL)
