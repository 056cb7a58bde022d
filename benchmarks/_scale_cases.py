"""The table of everything ``benchmarks/scale.py`` runs and ``benchmarks/cost_model.py`` models.

One :class:`Case` per estimator, transformer, metric, search or workflow:
its data, the collective call that is measured, what it returns to compare
across rank counts, and the terms its cost grows with. To add one (a new
estimator landing), append a row to :data:`CASES`: nothing else changes.

Every dataset is generated per *global* row (``mlmpi.datasets``), so the
global data is the same at every rank count and the results can be compared
with the 1-rank run's.

The cost terms are functions of ``(n, d, P)`` (global rows, features, ranks):
:data:`COMPUTE` for a rank's compute time, :data:`TRAFFIC` for the bytes a
rank sends and receives, :data:`CALLS` for the number of collectives it
starts. A case names those its algorithm has; ``cost_model.py`` fits one
non-negative coefficient per term to the measurements.
"""

from dataclasses import dataclass

import numpy as np

# -- cost terms: functions of (n global rows, d features, P ranks) ---------------------------
COMPUTE = {
    "fixed": lambda n, d, P: 1.0,  # per-fit work every rank does alike (validation, solves)
    "rows": lambda n, d, P: n / P,  # work per local row
    "rows_log": lambda n, d, P: n / P * np.log2(max(n, 2)),  # sort / tree build per local row
    # a tree of the rank's own rows (a region's k-d tree): log of the local rows
    "rows_log_local": lambda n, d, P: n / P * np.log2(max(n / P, 2)),
    "pairs": lambda n, d, P: n * n / P,  # every local row against every global row
    "global_rows": lambda n, d, P: float(n),  # replicated work over all rows (a ring's passes)
    # replicated work over all rows with a log factor (a tree over a gathered embedding)
    "global_rows_log": lambda n, d, P: n * np.log2(max(n, 2)),
    "cross": lambda n, d, P: n / P * (P - 1) / P,  # a local row's pairs with other ranks' rows
    "ranks": lambda n, d, P: float(P),  # per-rank work that grows with the ranks
}
TRAFFIC = {
    "fixed": lambda n, d, P: 1.0 * (P > 1),  # replicated statistics of a fixed size
    "ranks": lambda n, d, P: float(P) * (P > 1),  # one entry per rank (allgather of counts)
    "local_rows": lambda n, d, P: n / P * (P > 1),  # data proportional to this rank's rows
    "ring": lambda n, d, P: n * (P - 1) / P,  # every other rank's rows pass through once
    "cross": lambda n, d, P: n / P * (P - 1) / P,  # a local row's pairs with other ranks' rows
    "global_rows": lambda n, d, P: float(n) * (P > 1),  # O(n) per rank: must be explained
    # a record from every rank for each global row (one allgather per step of a loop over rows)
    "global_rows_ranks": lambda n, d, P: float(n) * P * (P > 1),
}
CALLS = {
    "fixed": lambda n, d, P: 1.0 * (P > 1),
    "log_ranks": lambda n, d, P: np.log2(P) if P > 1 else 0.0,  # rounds of a tree / FastSV
    "ranks": lambda n, d, P: float(P - 1),  # one hop per other rank (a ring)
    "ring_blocks": lambda n, d, P: (P - 1) * np.ceil(n / P / 4096) if P > 1 else 0.0,
    "global_rows": lambda n, d, P: float(n) * (P > 1),  # one collective per global row
}


@dataclass(frozen=True)
class Case:
    """One measured call.

    Attributes
    ----------
    name : str
        Row label, e.g. ``"KMeans"``.
    family : str
        cluster, linear, svm, decomposition, neighbors, naive_bayes, ensemble,
        preprocessing, metrics, model_selection.
    data : str
        Key of :data:`DATA` (what ``run`` receives).
    run : callable
        ``run(X, y, comms)`` makes the collective call(s) and returns
        ``(replicated, local)``: dicts of arrays to compare with the 1-rank
        run (``local`` ones are gathered in rank order first).
    n : int
        Global rows of the strong-scaling runs (``--size`` multiplies it),
        about a second of work at one rank; weak-scaling runs have ``n // 4``
        rows per rank.
    d : int
        Features.
    rtol, atol : float
        Tolerance of the comparison with the 1-rank result, as in the tests
        of this estimator: ``|a - b| <= atol + rtol * max(|a|, |b|)``
        (``rtol = 0``: exact).
    compute, traffic, calls : tuple of str
        The cost terms (keys of :data:`COMPUTE`, :data:`TRAFFIC`, :data:`CALLS`).
    note : str
        Why a term that grows with ``n`` or ``P`` per rank is there.
    draws : str
        The random-draw policy the call runs under (:func:`mlmpi.random.draws`):
        the cases that draw rows (bootstraps, splits, subsamples) run with
        ``"per-row"``, the policy above a million global rows, whose cost the
        projection to many ranks is about; ``"auto"`` for the others.
    """

    name: str
    family: str
    data: str
    run: object
    n: int = 1_000_000
    d: int = 16
    rtol: float = 1e-6
    atol: float = 0.0
    compute: tuple = ("fixed", "rows")
    traffic: tuple = ("fixed",)
    calls: tuple = ("fixed",)
    note: str = ""
    draws: str = "auto"


# -- data: (X, y) of this rank's rows of the global data --------------------------------------
def _blobs(n, d, comms, centers=4, std=2.0):
    from mlmpi.datasets import make_blobs

    return make_blobs(n, d, centers=centers, cluster_std=std, random_state=0, comms=comms)


def _classes(n, d, comms):
    X, y = _blobs(n, d, comms, centers=3, std=4.0)
    return X, y.astype(np.int64)


def _binary(n, d, comms):
    X, y = _blobs(n, d, comms, centers=2, std=6.0)
    return X, y.astype(np.int64)


def _regression(n, d, comms):
    X, _ = _blobs(n, d, comms, centers=1, std=1.0)
    w = np.linspace(-1.0, 2.0, d)
    return X, X @ w + 0.1 * np.sin(7.0 * X[:, 0])  # a deterministic function of each row


def _overlapping(n, d, comms):
    """Two blobs whose centres are close against their spread
    (``benchmarks/bench_svm.py``'s data): most rows end up support vectors
    (80-95%), so libsvm's SMO takes about one iteration per row: measured
    0.93-1.04 iterations per row at 400-6,400 rows x 50 (1.0-1.1 at 500-4,000
    x 16), 9,710 at 10,000 x 50 and 49,044 at 50,000 x 50."""
    from mlmpi.datasets import make_blobs

    X, y = make_blobs(
        n, d, centers=2, cluster_std=6.0, center_box=(-1.0, 1.0), random_state=0, comms=comms
    )
    return X, y.astype(np.int64)


def _counts(n, d, comms):
    X, y = _classes(n, d, comms)
    return np.floor(np.abs(X)), y


def _categories(n, d, comms):
    X, y = _classes(n, d, comms)
    return np.floor(np.clip(X, -3, 3)).astype(np.int64), y


def _missing(n, d, comms):
    X, y = _classes(n, d, comms)
    X = X.copy()
    X[(np.abs(X[:, :1]) < 0.3).repeat(d, axis=1) & (np.arange(d) % 3 == 0)] = np.nan
    return X, y


def _points(n, d, comms):
    """2-D blobs of about 250 points each: the density, and so the number of
    eps-neighbours of a point, stays the same as ``n`` grows (weak scaling
    adds blobs, not points to the same blobs)."""
    return _blobs(n, 2, comms, centers=max(4, n // 250), std=0.05)


def _text(n, d, comms):
    from mlmpi.datasets import make_sparse_text

    X, y = make_sparse_text(n, 20 * d, nnz_per_row=8, n_classes=3, random_state=0, comms=comms)
    return X, y


DATA = {
    "blobs": lambda n, d, comms: _blobs(n, d, comms),
    "classes": _classes,
    "binary": _binary,
    "overlapping": _overlapping,
    "regression": _regression,
    "counts": _counts,
    "categories": _categories,
    "missing": _missing,
    "points": _points,
    "text": _text,
}


# -- the calls ------------------------------------------------------------------------------
def _fitted(attributes, local=()):
    """``run`` that fits an estimator and returns its replicated ``attributes``
    and its ``local`` ones."""

    def build(make):
        def run(X, y, comms):
            model = make().fit(X, y)
            return (
                {a: np.asarray(getattr(model, a), dtype=np.float64) for a in attributes},
                {a: np.asarray(getattr(model, a)) for a in local},
            )

        return run

    return build


def _predicting(make, method="predict"):
    """``run`` that fits, then predicts its own rows (a local result)."""

    def run(X, y, comms):
        model = make().fit(X, y)
        return {}, {method: np.asarray(getattr(model, method)(X))}

    return run


def _kmeans():
    from mlmpi import KMeans

    return KMeans(n_clusters=8, n_init=1, max_iter=20, random_state=0)


def _dbscan(X, y, comms):
    from mlmpi import DBSCAN

    model = DBSCAN(eps=0.03, min_samples=10).fit(X)
    return {}, {"labels_": model.labels_}


def _hdbscan(X, y, comms):
    from mlmpi import HDBSCAN

    model = HDBSCAN(min_cluster_size=25, min_samples=10, copy=True).fit(X)
    return {}, {"labels_": model.labels_, "probabilities_": model.probabilities_}


def _tsne(X, y, comms):
    from mlmpi.manifold import TSNE

    model = TSNE(perplexity=30, max_iter=250, random_state=0).fit(X)
    return {"kl_divergence_": model.kl_divergence_}, {"embedding_": model.embedding_}


def _umap(X, y, comms):
    from mlmpi.manifold import UMAP

    model = UMAP(n_neighbors=15, n_epochs=100, random_state=0).fit(X)
    return {}, {"embedding_": model.embedding_}


def _every_eighth(X, comms):
    """The rows of global index 0, 8, 16, ... that this rank holds: the same
    global query set at every rank count."""
    offset, _ = comms.exclusive_scan_rows(X.shape[0])
    return X[(-offset) % 8 :: 8]


def _knn(X, y, comms):
    from mlmpi import NearestNeighbors

    dist, ind = NearestNeighbors(n_neighbors=5).fit(X).kneighbors(_every_eighth(X, comms))
    return {}, {"distances": dist, "indices": ind}


def _transformer(make, attributes):
    def run(X, y, comms):
        model = make().fit(X)
        return {a: np.asarray(getattr(model, a), dtype=np.float64) for a in attributes}, {}

    return run


def _encoder(make):
    def run(X, y, comms):
        model = make().fit(X)
        return {f"categories_{i}": np.asarray(c) for i, c in enumerate(model.categories_)}, {}

    return run


def _label_encoder(X, y, comms):
    from mlmpi.preprocessing import LabelEncoder

    return {"classes_": LabelEncoder().fit(y).classes_}, {}


def _metric(name, prediction="labels", **params):
    """``run`` of one metric on a fixed prediction of every row (no model fit)."""

    def run(X, y, comms):
        import mlmpi.metrics

        if prediction == "labels":
            guess = (y + (X[:, 0] > 1.0)) % 3
        elif prediction == "proba":
            scores = np.exp(X[:, :3] - X[:, :3].max(axis=1, keepdims=True))
            guess = scores / scores.sum(axis=1, keepdims=True)
        elif prediction == "binary_score":
            guess = X[:, 0]
        else:  # "values"
            guess = y + 0.1 * X[:, 0]
        truth = y if prediction != "binary_score" else y % 2
        value = getattr(mlmpi.metrics, name)(truth, guess, comms=comms, **params)
        return {name: np.asarray(value, dtype=np.float64)}, {}

    return run


def _silhouette(X, y, comms):
    from mlmpi.metrics import silhouette_score

    return {"silhouette": np.asarray(silhouette_score(X, y, comms=comms))}, {}


def _split(X, y, comms):
    from mlmpi.model_selection import train_test_split

    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    return {}, {"X_test": X_test, "y_train": y_train}


def _cross_val(X, y, comms):
    from mlmpi import LogisticRegression
    from mlmpi.model_selection import cross_val_score

    scores = cross_val_score(LogisticRegression(max_iter=50), X, y, cv=3)
    return {"scores": np.asarray(scores)}, {}


def _search(kind):
    def run(X, y, comms):
        from mlmpi import Ridge
        from mlmpi.model_selection import GridSearchCV, RandomizedSearchCV
        from mlmpi.pipeline import make_pipeline
        from mlmpi.preprocessing import StandardScaler

        pipe = make_pipeline(StandardScaler(), Ridge())
        grid = {"ridge__alpha": [0.01, 1.0, 100.0]}
        if kind == "grid":
            search = GridSearchCV(pipe, grid, cv=3)
        else:
            search = RandomizedSearchCV(pipe, grid, n_iter=2, cv=3, random_state=0)
        search.fit(X, y)
        return {
            "best_alpha": np.asarray(search.best_params_["ridge__alpha"]),
            "best_score": np.asarray(search.best_score_),
        }, {}

    return run


def _pipeline(X, y, comms):
    from mlmpi import LogisticRegression
    from mlmpi.pipeline import make_pipeline
    from mlmpi.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=50)).fit(X, y)
    return {"coef_": model[-1].coef_}, {}


def _import(module, name):
    def make(**params):
        import importlib

        return getattr(importlib.import_module(module), name)(**params)

    return make


def _make(module, name, **params):
    return lambda: _import(module, name)(**params)


_ALLGATHER = ("fixed", "ranks")  # statistics gathered per rank (one row per rank)
#: Exact searches over row shards: every rank's rows (or queries) meet every rank.
_RING = dict(
    compute=("fixed", "pairs"),
    traffic=("fixed", "ranks", "ring"),
    calls=("fixed", "ring_blocks"),
    note="exact search over row shards: the index (or the queries) must meet every rank "
    "once; the smaller of the two travels",
)
#: Trees on global histograms (forests and boosting): each node's histograms are
#: reduce-scattered in blocks of features (a fixed size per node, whatever n), each
#: rank searches its block and one allgather of every feature's best split decides.
_TREE_COSTS = dict(compute=("fixed", "rows"), traffic=("fixed", "ranks"), calls=("fixed",))
_BOOTSTRAPPED = dict(
    _TREE_COSTS,
    draws="per-row",
    note="per-row draws: each tree's bootstrap counts of the rank's rows come from binomial "
    "splits down a fixed tree of global row ranges (no communication); scikit-learn's draws "
    "(up to a million rows) would replay the whole bootstrap sequence on every rank",
)
_BOOSTED = dict(
    _TREE_COSTS,
    traffic=("fixed", "ranks", "local_rows"),
    draws="per-row",
    note="per-row draws: early stopping's validation rows come from a distributed shuffle "
    "(a sort of per-row keys: local_rows traffic), the binning subsample from hypergeometric "
    "splits; scikit-learn's draws (up to a million rows) would replay the permutation of "
    "the n global rows on every rank",
)
#: The linear tests' absolute tolerance where a coefficient may be near zero
#: (tests/mpi_cases/linear_cases.py: rtol=1e-8, atol=1e-8). The intercept here
#: is about 5e-5 (the data are centred): a difference of O(1) terms, which
#: agrees to about 5e-13 between rank counts, 1e-8 of its own size.
_NEAR_ZERO = 1e-8
_FOREST = dict(n_estimators=5, max_depth=8, random_state=0)
_BOOSTING = dict(max_iter=20, random_state=0)  # early stopping on ("auto": over 10,000 rows)

CASES = [
    # -- clustering
    Case(
        "KMeans",
        "cluster",
        "blobs",
        _fitted(("cluster_centers_", "inertia_"), ("labels_",))(_kmeans),
        calls=("fixed", "log_ranks"),
    ),
    Case(
        "DBSCAN",
        "cluster",
        "points",
        _dbscan,
        n=2_000_000,  # 200,000 rows at --size 0.1: the per-row terms above the fixed costs
        d=2,
        rtol=0,
        compute=("fixed", "rows_log_local", "cross"),
        traffic=("fixed", "ranks", "cross"),
        calls=("fixed", "log_ranks"),
        note="by space: rows move to the rank owning their region (a k-d bisection of the "
        "ranks cut at the quantiles of a sample gathered on every rank, 1,024 rows per rank up "
        "to 262,144 in all: bounded work) with a halo eps wide, and are clustered there (k-d "
        "trees of the region's n/P rows); the pieces linked across regions merge by FastSV and "
        "each row's core flag and component go back to its rank: the cross terms, the rows "
        "that change rank, (P-1)/P of them",
    ),
    Case(
        "HDBSCAN",
        "cluster",
        "points",
        _hdbscan,
        n=50_000,
        d=2,
        rtol=0,
        compute=("fixed", "pairs", "global_rows"),
        traffic=("fixed", "ring", "global_rows_ranks"),
        calls=("fixed", "ring_blocks", "global_rows"),
        note="scikit-learn's Prim loop, step by step: every step updates the local rows against "
        "the node just added (n^2/P in all) and one allgather of a small record per rank picks "
        "the next node (n collectives of P records: latency-bound); every rank then runs "
        "scikit-learn's tree code on the n - 1 edges (O(n) per rank); the core distances take "
        "one pass of every row round the ring",
    ),
    Case(
        "TSNE",
        "manifold",
        "blobs",
        _tsne,
        n=40_000,  # 4,000 rows at --size 0.1
        rtol=0,
        compute=("fixed", "pairs", "rows_log", "global_rows_log"),
        traffic=("fixed", "ring", "global_rows"),
        calls=("fixed", "ring_blocks"),
        note="the exact neighbour search (every local row against every row: n^2/P, the rows "
        "passing round the ring), then 250 iterations that each gather the embedding on every "
        "rank (n values per rank: the global_rows traffic) and build the same Barnes-Hut tree "
        "over it on every rank (n log n, replicated), each rank moving its rows against it",
    ),
    Case(
        "UMAP",
        "manifold",
        "blobs",
        _umap,
        n=40_000,  # 4,000 rows at --size 0.1
        rtol=0,
        compute=("fixed", "pairs", "rows", "global_rows"),
        traffic=("fixed", "ring", "global_rows"),
        calls=("fixed", "ring_blocks"),
        note="the exact neighbour search (n^2/P, the rows passing round the ring), the spectral "
        "start (each LOBPCG product gathers an n x 4 block) and 100 epochs that each gather the "
        "embedding (n values per rank: the global_rows traffic and copies) while each rank "
        "moves its rows through their edges",
    ),
    Case(
        "GaussianMixture",
        "cluster",
        "blobs",
        _fitted(("weights_", "means_", "covariances_", "lower_bound_"))(
            _make("mlmpi", "GaussianMixture", n_components=4, max_iter=10, random_state=0)
        ),
        rtol=1e-6,
        atol=_NEAR_ZERO,
        calls=("fixed", "log_ranks"),
    ),
    # -- linear models
    Case(
        "LinearRegression",
        "linear",
        "regression",
        _fitted(("coef_", "intercept_"))(_make("mlmpi", "LinearRegression")),
        rtol=1e-8,
        atol=_NEAR_ZERO,
        traffic=_ALLGATHER,
        note="the exact QR gathers each rank's R factor (d x d per rank)",
    ),
    Case(
        "Ridge",
        "linear",
        "regression",
        _fitted(("coef_", "intercept_"))(_make("mlmpi", "Ridge", alpha=1.0)),
        rtol=1e-8,
        atol=_NEAR_ZERO,
        traffic=_ALLGATHER,
    ),
    Case(
        "Lasso",
        "linear",
        "regression",
        _fitted(("coef_", "intercept_"))(_make("mlmpi", "Lasso", alpha=0.01)),
        traffic=_ALLGATHER,
    ),
    Case(
        "ElasticNet",
        "linear",
        "regression",
        _fitted(("coef_", "intercept_"))(_make("mlmpi", "ElasticNet", alpha=0.01)),
        traffic=_ALLGATHER,
    ),
    Case(
        "LogisticRegression",
        "linear",
        "classes",
        _fitted(("coef_", "intercept_"))(_make("mlmpi", "LogisticRegression", max_iter=50)),
        rtol=1e-5,
        calls=("fixed",),
    ),
    # -- support vector machines
    Case(
        "LinearSVC",
        "svm",
        "binary",
        _fitted(("coef_", "intercept_", "n_iter_"))(_make("mlmpi", "LinearSVC")),
        rtol=1e-8,
        atol=_NEAR_ZERO,
        note="finite Newton: one allreduce of the gradient and the generalised Hessian "
        "((d+1)^2 numbers) per step, a Cholesky on every rank; the steps (11-12 here) do not "
        "grow with n",
    ),
    Case(
        "SVC (rbf)",
        "svm",
        "overlapping",
        _fitted(("support_", "dual_coef_", "intercept_", "n_iter_"))(
            _make("mlmpi", "SVC", kernel="rbf")
        ),
        # Run at --size 0.5 and 1-8 ranks (scale.json's reruns): 8,000 rows, about one SMO
        # iteration per row with two collectives each. At --size 0.1 (1,600 rows) the kernel
        # rows were too small beside an iteration's replicated work for the fit to find
        # them; at 16 ranks (8 per core, ~1.7 ms per collective) the weak run alone would
        # take over ten minutes. bench_svm.py's 50 features.
        n=16_000,
        d=50,
        rtol=0,
        compute=("fixed", "global_rows", "pairs"),
        traffic=("fixed", "global_rows", "global_rows_ranks"),
        calls=("fixed", "global_rows"),
        note="libsvm's SMO with its shrinking: on overlapping classes most rows are support "
        "vectors and the iterations grow as n (about one per row here). Each iteration makes "
        "two small allgathers (a record of 14 + d numbers per rank and candidate: P records "
        "received, latency-bound), replicated selection work on every rank (global_rows), and "
        "kernel rows and a pass over the n/P local rows (n^2/P in all: pairs); the support "
        "vectors, gathered on every rank at the end, are O(n) too",
    ),
    # -- decomposition
    Case(
        "PCA",
        "decomposition",
        "blobs",
        _fitted(("explained_variance_",))(_make("mlmpi", "PCA", n_components=4)),
        rtol=1e-8,
        traffic=_ALLGATHER,
    ),
    Case(
        "PCA full",
        "decomposition",
        "blobs",
        _fitted(("explained_variance_",))(_make("mlmpi", "PCA", n_components=4, svd_solver="full")),
        rtol=1e-8,
        traffic=_ALLGATHER,
    ),
    Case(
        "TruncatedSVD",
        "decomposition",
        "blobs",
        _fitted(("singular_values_",))(
            _make("mlmpi", "TruncatedSVD", n_components=4, random_state=0)
        ),
        rtol=1e-6,
    ),
    # -- neighbours: every rank's index rows pass every rank (the ring)
    Case(
        "NearestNeighbors",
        "neighbors",
        "blobs",
        _knn,
        n=40_000,
        rtol=1e-6,
        **_RING,
    ),
    Case(
        "NearestNeighbors (CSR)",
        "neighbors",
        "text",
        _knn,
        n=20_000,
        rtol=1e-6,
        compute=("fixed", "pairs"),
        traffic=("fixed", "ranks", "ring"),
        calls=("fixed", "ranks"),
        note="the query batches travel round the ring with their top-k lists",
    ),
    Case(
        "KNeighborsClassifier",
        "neighbors",
        "classes",
        _predicting(_make("mlmpi", "KNeighborsClassifier", n_neighbors=5)),
        n=40_000,
        rtol=0,
        **_RING,
    ),
    Case(
        "KNeighborsRegressor",
        "neighbors",
        "regression",
        _predicting(_make("mlmpi", "KNeighborsRegressor", n_neighbors=5)),
        n=40_000,
        **_RING,
    ),
    # -- naive Bayes
    Case(
        "GaussianNB",
        "naive_bayes",
        "classes",
        _fitted(("theta_", "var_", "class_prior_"))(_make("mlmpi", "GaussianNB")),
        rtol=1e-9,
    ),
    Case(
        "MultinomialNB",
        "naive_bayes",
        "counts",
        _fitted(("feature_log_prob_",))(_make("mlmpi", "MultinomialNB")),
        rtol=1e-9,
    ),
    Case(
        "BernoulliNB",
        "naive_bayes",
        "classes",
        _fitted(("feature_log_prob_",))(_make("mlmpi", "BernoulliNB")),
        rtol=1e-9,
    ),
    # -- ensembles
    *(
        Case(
            name,
            "ensemble",
            data,
            _predicting(_make("mlmpi", name, **params)),
            rtol=rtol,
            **costs,
        )
        for name, data, rtol, params, costs in (
            ("RandomForestClassifier", "classes", 0, _FOREST, _BOOTSTRAPPED),
            ("RandomForestRegressor", "regression", 1e-6, _FOREST, _BOOTSTRAPPED),
            ("ExtraTreesClassifier", "classes", 0, _FOREST, _TREE_COSTS),
            ("ExtraTreesRegressor", "regression", 1e-6, _FOREST, _TREE_COSTS),
            ("HistGradientBoostingClassifier", "classes", 0, _BOOSTING, _BOOSTED),
            ("HistGradientBoostingRegressor", "regression", 0, _BOOSTING, _BOOSTED),
        )
    ),
    # -- preprocessing
    Case(
        "StandardScaler",
        "preprocessing",
        "blobs",
        _transformer(_make("mlmpi.preprocessing", "StandardScaler"), ("mean_", "scale_")),
        rtol=1e-9,
        traffic=_ALLGATHER,
    ),
    Case(
        "MinMaxScaler",
        "preprocessing",
        "blobs",
        _transformer(_make("mlmpi.preprocessing", "MinMaxScaler"), ("data_min_", "data_max_")),
        rtol=0,
    ),
    Case(
        "MaxAbsScaler",
        "preprocessing",
        "blobs",
        _transformer(_make("mlmpi.preprocessing", "MaxAbsScaler"), ("max_abs_",)),
        rtol=0,
    ),
    Case(
        "RobustScaler",
        "preprocessing",
        "blobs",
        _transformer(_make("mlmpi.preprocessing", "RobustScaler"), ("center_", "scale_")),
        rtol=0,
        compute=("fixed", "rows"),
        calls=("fixed", "log_ranks"),
    ),
    Case(
        "QuantileTransformer",
        "preprocessing",
        "blobs",
        _transformer(
            _make("mlmpi.preprocessing", "QuantileTransformer", subsample=None), ("quantiles_",)
        ),
        rtol=0,
        compute=("fixed", "rows_log"),
        traffic=("fixed", "ranks", "local_rows"),
        note="the values of the buckets that hold a wanted quantile move (a few per "
        "quantile, about n * 16 / 1000 per column): less than the rows, but proportional",
    ),
    Case(
        "SimpleImputer (median)",
        "preprocessing",
        "missing",
        _transformer(_make("mlmpi.impute", "SimpleImputer", strategy="median"), ("statistics_",)),
        rtol=0,
        calls=("fixed", "log_ranks"),
    ),
    Case(
        "OneHotEncoder",
        "preprocessing",
        "categories",
        _encoder(_make("mlmpi.preprocessing", "OneHotEncoder")),
        rtol=0,
        traffic=_ALLGATHER,
    ),
    Case(
        "OrdinalEncoder",
        "preprocessing",
        "categories",
        _encoder(_make("mlmpi.preprocessing", "OrdinalEncoder")),
        rtol=0,
        traffic=_ALLGATHER,
    ),
    Case("LabelEncoder", "preprocessing", "classes", _label_encoder, rtol=0, traffic=_ALLGATHER),
    Case(
        "PolynomialFeatures",
        "preprocessing",
        "blobs",
        _transformer(_make("mlmpi.preprocessing", "PolynomialFeatures"), ("powers_",)),
        rtol=0,
    ),
    Case(
        "Normalizer",
        "preprocessing",
        "blobs",
        _transformer(_make("mlmpi.preprocessing", "Normalizer"), ("n_features_in_",)),
        rtol=0,
    ),
    # -- metrics
    Case("accuracy_score", "metrics", "classes", _metric("accuracy_score"), rtol=1e-12),
    Case(
        "balanced_accuracy_score",
        "metrics",
        "classes",
        _metric("balanced_accuracy_score"),
        rtol=1e-12,
    ),
    Case("confusion_matrix", "metrics", "classes", _metric("confusion_matrix"), rtol=0),
    Case(
        "f1_score (macro)",
        "metrics",
        "classes",
        _metric("f1_score", average="macro"),
        rtol=1e-12,
    ),
    Case("log_loss", "metrics", "classes", _metric("log_loss", prediction="proba"), rtol=1e-9),
    Case(
        "roc_auc_score",
        "metrics",
        "binary",
        _metric("roc_auc_score", prediction="binary_score"),
        rtol=1e-12,
        compute=("fixed", "rows_log"),
        traffic=("fixed", "ranks", "local_rows"),
        calls=("fixed", "ranks"),
        note="an exact rank statistic: the scores pass round the ring of ranks",
    ),
    Case("r2_score", "metrics", "regression", _metric("r2_score", prediction="values")),
    Case(
        "mean_squared_error",
        "metrics",
        "regression",
        _metric("mean_squared_error", prediction="values"),
    ),
    Case(
        "mean_absolute_error",
        "metrics",
        "regression",
        _metric("mean_absolute_error", prediction="values"),
    ),
    Case("adjusted_rand_score", "metrics", "classes", _metric("adjusted_rand_score"), rtol=1e-12),
    Case(
        "silhouette_score",
        "metrics",
        "classes",
        _silhouette,
        n=20_000,
        compute=("fixed", "pairs"),
        traffic=("fixed", "ranks", "ring"),
        calls=("fixed", "ring_blocks"),
        note="every pairwise distance: the rows pass round the ring",
    ),
    # -- model selection and pipelines
    Case(
        "train_test_split",
        "model_selection",
        "classes",
        _split,
        rtol=0,
        traffic=("fixed", "ranks", "local_rows"),
        draws="per-row",
        note="per-row draws: a distributed sort of per-row keys gives each row its position; "
        "the rows move to their rank in that order (balanced counts)",
    ),
    Case(
        "cross_val_score",
        "model_selection",
        "classes",
        _cross_val,
        n=200_000,
        rtol=1e-5,
    ),
    Case("GridSearchCV", "model_selection", "regression", _search("grid"), n=200_000, rtol=1e-8),
    Case(
        "RandomizedSearchCV",
        "model_selection",
        "regression",
        _search("random"),
        n=200_000,
        rtol=1e-8,
    ),
    Case("Pipeline", "model_selection", "classes", _pipeline, n=200_000, rtol=1e-5),
]
