"""Compile the numba kernels into their on-disk cache before the tests start.

Usage: ``python tests/_warm_kernels.py PART PARTS`` runs every PARTS-th
workload, starting at PART: tiny fits of every family in one process
(``SelfComms``), dense float64 and float32, CSR rows and missing values,
which compile the kernels' usual specializations (``cache=True`` writes them
next to the kernels' sources).

Why: on a fresh clone the cache is empty, and every process that reaches a
kernel first compiles it, each rank of an mpiexec job included: a cold 2-rank
case job measured 338 s against 157 s warm. :func:`warm` runs the parts in
parallel once, before the test workers start (``tests/conftest.py``); what it
misses is compiled by the tests, as without it.
"""

import subprocess
import sys
import warnings

import numpy as np
import scipy.sparse as sp


def _data(dtype=np.float64):
    X = np.random.RandomState(0).normal(size=(60, 4)).astype(dtype)
    return X, (X[:, 0] > 0).astype(np.int64), X[:, 1] * 2.0 + X[:, 0]


def _inputs():
    """(X, class labels, targets) for dense float64, float32 and CSR rows."""
    for dtype in (np.float64, np.float32):
        yield _data(dtype)
    X, y, t = _data()
    X[np.abs(X) < 0.7] = 0.0
    yield sp.csr_matrix(X), y, t


def _kmeans():
    from mlmpi import KMeans

    for X, _, _ in _inputs():
        for k in (3, 40):
            KMeans(n_clusters=k, n_init=1, random_state=0).fit(X).predict(X)


def _clusters():
    from mlmpi import DBSCAN, HDBSCAN

    for X, _, _ in _inputs():
        DBSCAN(eps=1.0).fit(X)
    X, _, _ = _data()
    HDBSCAN(min_cluster_size=5).fit(X)


def _linear():
    from mlmpi import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge

    for X, y, t in _inputs():
        Lasso(alpha=0.01).fit(X, t)
        ElasticNet(alpha=0.01).fit(X, t)
        Ridge().fit(X, t)
        LinearRegression().fit(X, t)
        LogisticRegression(penalty="l1", solver="saga").fit(X, y)
        LogisticRegression().fit(X, y).predict_proba(X)


def _decomposition():
    from mlmpi import PCA, TruncatedSVD

    for X, _, _ in _inputs():
        TruncatedSVD(n_components=2, random_state=0).fit_transform(X)
        if not sp.issparse(X):
            PCA(n_components=2).fit_transform(X)
            PCA(n_components=2, svd_solver="randomized", random_state=0).fit(X)


def _neighbors():
    from mlmpi import KNeighborsClassifier, KNeighborsRegressor, NearestNeighbors

    for X, y, t in _inputs():
        KNeighborsClassifier(n_neighbors=3).fit(X, y).predict(X)
        KNeighborsRegressor(n_neighbors=3).fit(X, t).predict(X)
        if not sp.issparse(X):
            NearestNeighbors(radius=1.0).fit(X).radius_neighbors(X)


def _level_rows():
    """Rows enough for the forests' level-wise search (nodes of more rows than
    a subtree takes, ``LOCAL_ROWS``): on fewer, a forest grows in the subtrees'
    kernel alone and the levels' kernels compile in the tests."""
    X = np.random.RandomState(1).normal(size=(20_000, 4))
    return X, (X[:, 0] > 0).astype(np.int64), np.abs(X[:, 1]) + X[:, 0] ** 2


def _each_criterion(forest, criteria, X, target):
    """A tree of each criterion (whose kernels are its own) on 60 rows, grown
    by the subtrees' kernel alone, and on all of ``X`` to ``max_depth=4``, by
    the levels' kernels."""
    for criterion in criteria:
        forest(n_estimators=1, criterion=criterion).fit(X[:60], target[:60])
        forest(n_estimators=1, max_depth=4, criterion=criterion).fit(X, target)


def _forest_classifiers():
    from mlmpi import ExtraTreesClassifier, RandomForestClassifier

    for X, y, _ in _inputs():
        for forest in (RandomForestClassifier, ExtraTreesClassifier):
            forest(n_estimators=2, random_state=0).fit(X, y).predict(X)
    X, y, _ = _data()
    X[::7, 1] = np.nan
    RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y).predict(X)
    X, y, _ = _level_rows()
    _each_criterion(RandomForestClassifier, ("gini", "entropy"), X, y)


def _forest_regressors():
    from mlmpi import ExtraTreesRegressor, RandomForestRegressor

    for X, _, t in _inputs():
        for forest in (RandomForestRegressor, ExtraTreesRegressor):
            forest(n_estimators=2, random_state=0).fit(X, t).predict(X)
    X, _, t = _level_rows()
    _each_criterion(RandomForestRegressor, ("squared_error", "poisson", "absolute_error"), X, t)


def _boosting():
    from mlmpi import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    for X, y, t in _inputs():
        if sp.issparse(X):
            continue
        X = X.copy()
        X[::7, 1] = np.nan
        HistGradientBoostingRegressor(max_iter=3).fit(X, t).predict(X)
        HistGradientBoostingClassifier(max_iter=3).fit(X, y).predict_proba(X)
        three = (X[:, 2] > 0.5).astype(np.int64) + y
        HistGradientBoostingClassifier(max_iter=3).fit(X, three).predict(X)
    X, y, _ = _data()
    X[:, 3] = np.arange(len(X)) % 4
    HistGradientBoostingClassifier(max_iter=3, categorical_features=[3]).fit(X, y)


def _svm():
    from mlmpi import SVC, SVR, LinearSVC, NuSVC

    for X, y, t in _inputs():
        SVC(kernel="rbf").fit(X, y).decision_function(X)
        SVC(kernel="linear").fit(X, y).predict(X)
        SVR().fit(X, t).predict(X)
        NuSVC().fit(X, y)
        LinearSVC().fit(X, y)


def _preprocessing_and_metrics():
    from mlmpi.metrics import r2_score, roc_auc_score
    from mlmpi.preprocessing import QuantileTransformer, RobustScaler, StandardScaler

    for X, _, _ in _inputs():
        StandardScaler(with_mean=not sp.issparse(X)).fit(X)
        RobustScaler(with_centering=not sp.issparse(X)).fit(X)
        QuantileTransformer(n_quantiles=10).fit(abs(X)).transform(abs(X))
    X, y, t = _data()
    r2_score(t, t + X[:, 2])
    roc_auc_score(y, X[:, 0])


def _mixtures_and_bayes():
    from mlmpi import GaussianMixture, GaussianNB

    for X, y, _ in _inputs():
        if not sp.issparse(X):
            GaussianMixture(n_components=2, random_state=0).fit(X)
            GaussianNB().fit(X, y)


def _embeddings():
    from mlmpi.manifold import TSNE, UMAP

    X, _, _ = _data()
    for method in ("barnes_hut", "exact"):
        TSNE(perplexity=5, method=method, max_iter=250, random_state=0).fit(X)
    UMAP(n_neighbors=5, n_epochs=20, random_state=0).fit(X).transform(X[:5])


#: The costliest first, in an order where every ``parts``-th from each start
#: shares the work about evenly. Cold (an empty cache), two parts side by side
#: on a 2-core machine: the forest classifiers 102 s and regressors 111 s
#: (each criterion's kernels are their own), the embeddings 28, boosting 18,
#: SVMs 14, k-means 12, linear models 6, clusters 4, the others under a second.
WORKLOADS = (
    _forest_classifiers,
    _forest_regressors,
    _embeddings,
    _boosting,
    _kmeans,
    _svm,
    _linear,
    _neighbors,
    _preprocessing_and_metrics,
    _clusters,
    _decomposition,
    _mixtures_and_bayes,
)


def run(part, parts):
    """Run every ``parts``-th workload from ``part``; a failure only warns (the
    tests report it)."""
    for workload in WORKLOADS[part::parts]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                workload()
        except Exception as exc:  # noqa: BLE001 - warming is best effort
            print(f"{workload.__name__}: {type(exc).__name__}: {exc}", file=sys.stderr)


def cache_is_cold():
    """Whether no kernel of ``mlmpi.kernels.cpu`` has a cache index yet (a fresh
    clone or install): an edited kernel in a warm cache recompiles lazily."""
    from importlib.util import find_spec
    from pathlib import Path

    cache = Path(find_spec("mlmpi.kernels.cpu").origin).parent / "__pycache__"
    return not any(cache.glob("*.nbi"))


def warm(parts, timeout=600):
    """Run the workloads in ``parts`` processes at once; wait for them."""
    argv = [sys.executable, __file__]
    processes = [subprocess.Popen(argv + [str(p), str(parts)]) for p in range(parts)]
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()


if __name__ == "__main__":
    run(int(sys.argv[1]), int(sys.argv[2]))
