"""What the distributed neighbour estimators share: parameters, ``fit`` of
the sharded index, validation of the queries, and the collective searches
(``kneighbors``, ``radius_neighbors`` and their graphs)."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, is_device_array, is_sparse, on_host, to_csr, to_host
from .._contract import collective_method
from .._sklearn_compat import Interval, StrOptions
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..utils._global_rows import fetch_rows
from ..utils._offsets import group_starts
from ..utils.validation import agree, agree_on_errors, check_local, validate_fit_data
from . import _precomputed, _ring, _sparse

# Every name scikit-learn accepts for a metric the search computes, and that metric.
# 'p' and 'infinity' are tree-only names (scikit-learn's 'auto' accepts them, 'brute' does not).
METRICS = {
    "euclidean": "euclidean",
    "l2": "euclidean",
    "sqeuclidean": "sqeuclidean",
    "cosine": "cosine",
    "manhattan": "manhattan",
    "cityblock": "manhattan",
    "l1": "manhattan",
    "chebyshev": "chebyshev",
    "infinity": "chebyshev",
    "minkowski": "minkowski",
    "p": "minkowski",
    "precomputed": "precomputed",
}
_TREE_METRICS = set(METRICS) - {"sqeuclidean", "cosine", "precomputed"}
VALID_METRICS = {
    "brute": set(METRICS) - {"p", "infinity"},
    "kd_tree": _TREE_METRICS,
    "ball_tree": _TREE_METRICS,
}

DISTRIBUTED_DOC = """
    The index is **distributed**: each rank keeps the rows it passed to
    :meth:`fit` and nothing is gathered onto one rank. Queries stay on their
    rank; the index blocks travel round a ring of ranks (``sendrecv``), each
    block meeting each query batch once: one GEMM per (query batch, index
    block) for euclidean/sqeuclidean/cosine, a compiled loop for the other
    metrics, a running top-k per query. The k-th neighbours are recomputed
    exactly from the rows wherever the GEMM's rounding could reorder them,
    and equal distances go to the smaller global index, so the result does
    not depend on the number of ranks or the shards.

    ``metric='precomputed'``: each rank passes its rows of the distance
    matrix, at ``fit`` its rows of the (n_samples_fit, n_samples_fit) train
    distances, when querying its queries' distances to every fitted row
    (columns in global row order); the selection is then local. CSR rows
    (euclidean, cosine; host only) are searched by gathering the queries in
    batches, finding each shard's best k from sparse products, and merging
    the partial lists at the queries' owners; ``radius_neighbors`` does not
    take CSR rows yet.

    Pickling a fitted model keeps this rank's shard (``_fit_X``) and the
    global layout (``shard_counts_``); it must be searched on the same number
    of ranks, each rank with the pickle it wrote (anything else raises a
    ValueError saying so on every rank). To gather the whole index on every rank:
    ``comms.allgatherv(model._fit_X)`` (row ``g`` of the result is global
    index ``g``).
"""
SUPERVISED_PARAMETERS_DOC = """\
    n_neighbors : int, default=5
        Number of neighbours.
    weights : {'uniform', 'distance'}, callable or None, default='uniform'
        'uniform': equal weights; 'distance': inverse distance (a query with
        neighbours at distance zero gets those only); a callable maps the
        distances to weights.
    algorithm : {'auto', 'ball_tree', 'kd_tree', 'brute'}, default='auto'
        Accepted for compatibility; exact brute force runs whatever the value.
    leaf_size : int, default=30
        Accepted for compatibility; unused.
    p : float, default=2
        Power of the Minkowski metric (> 0).
    metric : {'minkowski', 'euclidean', 'l2', 'sqeuclidean', 'cosine', 'manhattan', \
'cityblock', 'l1', 'chebyshev', 'infinity', 'p', 'precomputed'}, default='minkowski'
        Distance metric, with scikit-learn's aliases ('p' and 'infinity' are
        refused with ``algorithm='brute'``, as scikit-learn does); 'precomputed':
        X holds distances (see above).
    metric_params : dict, default=None
        Only ``{'p': value}`` (and ``'w': None``) is supported.
    n_jobs : int, default=None
        Accepted for compatibility; unused.
    batch_size : int, default=None
        Rows of a query batch and of an index block; None: 768 on the host,
        8192 on a GPU.
    comms : Comms, default=None
        The ranks that hold the data; None means :func:`mlmpi.get_comms`.
"""
#: Rows per index block (host, device). Not 1024 on the host: rows of a
#: power-of-two length put the distance block's rows 4 KiB apart, and
#: OpenBLAS's GEMM into a 1 MiB block of them ran at 74 GFLOP/s against 90
#: with 768 (one core, 64 features); ``benchmarks/bench_knn.py``'s 10k-query
#: search went from 10.1 to 8.2 s.
DEFAULT_BATCH = {False: 768, True: 8192}


def effective_metric(metric, p, metric_params, algorithm="auto"):
    """scikit-learn's ``effective_metric_`` and ``effective_metric_params_``,
    with its checks of the metric against ``algorithm`` and its warnings."""
    if algorithm != "auto" and metric not in VALID_METRICS[algorithm]:
        raise ValueError(
            f"Metric '{metric}' not valid. Use sorted(sklearn.neighbors.VALID_METRICS"
            f"['{algorithm}']) to get valid options. Metric can also be a callable function."
        )
    params = dict(metric_params or {})
    unknown = set(params) - {"p", "w"}
    if unknown or params.get("w") is not None:
        raise ValueError(
            f"metric_params {sorted(params)} are not supported (only 'p', and 'w': None)."
        )
    if "p" in params and p is not None:
        warnings.warn(
            "Parameter p is found in metric_params. The corresponding parameter from "
            "__init__ is ignored.",
            SyntaxWarning,
            stacklevel=4,
        )
    if metric != "minkowski":
        return metric, params
    p = params.pop("p", p if p is not None else 2)
    params.pop("w", None)
    if p == 1:
        return "manhattan", params
    if p == 2:
        return "euclidean", params
    if np.isinf(p):
        return "chebyshev", params
    if p < 1:
        if algorithm in ("kd_tree", "ball_tree"):
            raise ValueError(
                f'algorithm="{algorithm}" does not support 0 < p < 1 for the Minkowski '
                'metric. To resolve this problem either set p >= 1 or algorithm="brute".'
            )
        warnings.warn(
            "Mind that for 0 < p < 1, Minkowski metrics are not distance metrics. "
            "Continuing the execution with `algorithm='brute'`.",
            stacklevel=4,
        )
    return "minkowski", {"p": p, "w": None}


def search_metric(metric, params):
    """The metric the search computes for an effective metric and its
    parameters, and its power (2 unless Minkowski)."""
    search = METRICS[metric]
    return search, params.get("p", 2) if search == "minkowski" else 2


def neighbour_weights(dist, weights):
    """scikit-learn's neighbour weights: None (uniform), 1/distance (a row with
    a zero distance weights its zero-distance neighbours only), or a callable."""
    if weights in (None, "uniform"):
        return None
    if weights == "distance":
        with np.errstate(divide="ignore"):
            inverse = 1.0 / dist
        inf_mask = np.isinf(inverse)
        inf_row = np.any(inf_mask, axis=1)
        inverse[inf_row] = inf_mask[inf_row]
        return inverse
    return weights(dist)


def _sparse_module(xp):
    if xp is np:
        import scipy.sparse

        return scipy.sparse
    import cupyx.scipy.sparse

    return cupyx.scipy.sparse


class NeighborsBase(DistributedEstimatorMixin, BaseEstimator):
    """Parameters, ``fit`` and the collective searches of the neighbour estimators.

    The fitted index is *distributed*: each rank keeps the rows it passed to
    ``fit`` (``_fit_X``, local) and every rank knows the global layout
    (``n_samples_fit_``, ``shard_counts_``, replicated). Global row indices
    count rows in the concatenation of all shards, rank 0 first.
    """

    _parameter_constraints: dict = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left"), None],
        "radius": [Interval(Real, 0, None, closed="neither"), None],
        "algorithm": [StrOptions({"auto", "ball_tree", "kd_tree", "brute"})],
        "leaf_size": [Interval(Integral, 1, None, closed="left")],
        "p": [Interval(Real, 0, None, closed="right"), None],
        "metric": [StrOptions(set(METRICS))],
        "metric_params": [dict, None],
        "n_jobs": [Integral, None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "comms": [None, Comms],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # scikit-learn's cross-validation then splits a precomputed matrix's
        # columns as well as its rows
        tags.input_tags.pairwise = self.metric == "precomputed"
        return tags

    # -- fit ------------------------------------------------------------------
    def _fit_index(self, X, y=None, **y_params):
        """Validate the shards, keep this rank's rows; returns ``(y, layout)``.

        This method is collective.
        """
        comms = self._get_comms()
        X, y, _, layout = validate_fit_data(
            self, X, y, comms=comms, order="C", accept_sparse="csr", **y_params
        )
        if self.metric == "precomputed":
            if X.shape[1] != layout.n_samples:
                raise ValueError(
                    "Precomputed matrix must be square. Input is a "
                    f"{layout.n_samples}x{X.shape[1]} matrix (all ranks' rows together)."
                )
            agree_on_errors(comms, lambda: _precomputed.check_distances(X, X.shape[1]))
        self.effective_metric_, self.effective_metric_params_ = effective_metric(
            self.metric, self.p, self.metric_params, self.algorithm
        )
        self._metric, self._p = search_metric(self.effective_metric_, self.effective_metric_params_)
        if is_sparse(X) and (is_device_array(X) or self._metric not in _sparse.METRICS):
            raise ValueError(
                f"Sparse (CSR) rows are searched with the metrics {_sparse.METRICS} on the "
                f"host only; got metric {self.effective_metric_!r}"
                f"{' on the GPU' if is_device_array(X) else ''}."
            )
        self._fit_method = "brute"
        self._fit_X = X
        self._fit_rank = comms.rank  # whose part of the index a pickle of this rank holds
        self.n_samples_fit_ = layout.n_samples
        self.shard_counts_ = tuple(int(c) for c in layout.counts)
        return y, layout

    # -- scikit-learn's estimator ------------------------------------------------
    _not_exported = frozenset({"shard_counts_", "_fit_rank"})

    @collective_method
    def as_sklearn(self):
        """The scikit-learn estimator of this class, with the whole index.

        Every rank's rows (and targets) are gathered into it, in global row
        order: ``n_samples_fit_`` rows on every rank, the memory of the index
        on one machine. Otherwise as :meth:`mlmpi.base.DistributedEstimatorMixin.as_sklearn`.

        This method is collective.

        Returns
        -------
        estimator : scikit-learn estimator
            Searches its index as this model does, in any process.
        """
        return super().as_sklearn()

    def _sklearn_state(self):
        comms = self._fitted_comms()
        agree_on_errors(comms, lambda: self._check_own_part(comms))
        state = super()._sklearn_state()
        state["_fit_X"] = _gathered(self._fit_X, comms)
        if "_y" in state:
            state["_y"] = _gathered(self._y, comms)
        return state

    # -- helpers ----------------------------------------------------------------
    def _fitted_comms(self):
        check_is_fitted(self, "_fit_X")
        comms = self._get_comms()
        if comms.size != len(self.shard_counts_):
            raise ValueError(
                f"This model was fitted on {len(self.shard_counts_)} ranks; it needs the same "
                f"number of ranks to search its index (this comms has {comms.size})."
            )
        return comms

    def _check_own_part(self, comms):
        """Raise unless this rank holds the part of the index it fitted (a rank
        that loaded another rank's pickle holds another part). No communication."""
        fit_rank = getattr(self, "_fit_rank", comms.rank)
        if fit_rank != comms.rank or self._fit_X.shape[0] != self.shard_counts_[comms.rank]:
            raise ValueError(
                f"Rank {comms.rank} holds the part of the index that rank {fit_rank} fitted "
                f"({self._fit_X.shape[0]} of {self.n_samples_fit_} rows): a search needs every "
                "rank's own part. Load on each rank the pickle that rank wrote, in a job of "
                f"{len(self.shard_counts_)} ranks, or fit again."
            )

    def _queries(self, X, comms, check_setting):
        """This rank's validated queries in the index dtype (the fitted rows
        for ``X=None``) and the global number of query rows; the same error on
        every rank. (The collective contract has already agreed that every
        rank passed ``X=None`` or none did, and the same ``n_neighbors`` or
        ``radius``, checked here by ``check_setting()``.)

        This method is collective.
        """

        def check():
            check_setting()
            self._check_own_part(comms)
            if X is None:
                return self._fit_X, self._fit_X.shape[0]
            Xq = check_local(self, X, order="C", accept_sparse=is_sparse(self._fit_X))
            if is_sparse(self._fit_X):
                Xq = to_csr(Xq)
            if self.effective_metric_ == "precomputed":
                _precomputed.check_distances(Xq, self.n_samples_fit_)
            if is_device_array(Xq) != is_device_array(self._fit_X):
                raise TypeError(
                    "The queries and the fitted index must be on the same kind of device "
                    "(both NumPy or both CuPy)."
                )
            return Xq.astype(self._fit_X.dtype, copy=False), Xq.shape[0]

        Xq, rows = agree(comms, check)
        return Xq, int(sum(rows))

    def _batch_size(self):
        return self.batch_size or DEFAULT_BATCH[is_device_array(self._fit_X)]

    def _search_args(self, comms):
        return dict(
            metric=self._metric,
            p=self._p,
            comms=comms,
            counts=self.shard_counts_,
            batch_size=self._batch_size(),
        )

    # -- searches ---------------------------------------------------------------
    @collective_method
    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        """Find the k nearest neighbours of this rank's query rows in the global index.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local_queries, n_features), default=None
            This rank's query rows (may have zero rows). None: the rows this
            rank fitted, each of which is then not its own neighbour.
        n_neighbors : int, default=None
            Number of neighbours per query; default ``self.n_neighbors``.
            At most ``n_samples_fit_`` (all ranks' rows together).
        return_distance : bool, default=True
            Whether to return the distances.

        Returns
        -------
        neigh_dist : array of shape (n_local_queries, n_neighbors)
            Distances, ascending. Local. Only with ``return_distance=True``.
        neigh_ind : array of shape (n_local_queries, n_neighbors)
            **Global** row indices of the neighbours (position in the
            concatenation of every rank's fitted rows, rank 0 first). Equal
            distances are ordered by global index, whatever the number of ranks.
        """
        comms = self._fitted_comms()
        if n_neighbors is None:
            n_neighbors = self.n_neighbors

        def check_setting():
            if not isinstance(n_neighbors, Integral):
                raise TypeError(
                    f"n_neighbors does not take {type(n_neighbors)} value, enter integer value"
                )
            if n_neighbors <= 0:
                raise ValueError(f"Expected n_neighbors > 0. Got {n_neighbors}")

        query_is_train = X is None
        Q, n_queries = self._queries(X, comms, check_setting)
        if query_is_train:
            n_neighbors += 1
        if n_neighbors > self.n_samples_fit_:
            shown = n_neighbors - 1 if query_is_train else n_neighbors
            inequality = (
                "n_neighbors < n_samples_fit" if query_is_train else "n_neighbors <= n_samples_fit"
            )
            raise ValueError(
                f"Expected {inequality}, but n_neighbors = {shown}, "
                f"n_samples_fit = {self.n_samples_fit_}, n_samples = {n_queries}"
            )
        if self.effective_metric_ == "precomputed":
            dist, indices = _precomputed.kneighbors(Q, n_neighbors)
        elif is_sparse(self._fit_X):
            dist, indices = _sparse.kneighbors(
                Q,
                self._fit_X,
                n_neighbors=n_neighbors,
                metric=self._metric,
                comms=comms,
                counts=self.shard_counts_,
                batch_size=self._batch_size(),
            )
        elif query_is_train:  # each pair of fitted rows met once, for both
            reduced, indices = _ring.self_kneighbors(
                self._fit_X, n_neighbors=n_neighbors, **self._search_args(comms)
            )
            dist = _ring.to_distance(reduced, self._metric, self._p)
        else:
            reduced, indices = _ring.kneighbors(
                _ring.prepare_rows(Q, self._metric),
                self._fit_X,
                n_neighbors=n_neighbors,
                **self._search_args(comms),
            )
            dist = _ring.to_distance(reduced, self._metric, self._p)
        if query_is_train:
            dist, indices = _drop_self(dist, indices, self._fit_offset())
        return (dist, indices) if return_distance else indices

    def _fit_offset(self):
        return int(sum(self.shard_counts_[: self._get_comms().rank]))

    @collective_method
    def kneighbors_graph(self, X=None, n_neighbors=None, mode="connectivity"):
        """Graph of the k nearest neighbours of this rank's query rows.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local_queries, n_features), default=None
            As for :meth:`kneighbors`.
        n_neighbors : int, default=None
            As for :meth:`kneighbors`.
        mode : {'connectivity', 'distance'}, default='connectivity'
            Ones, or the distances, as the values.

        Returns
        -------
        A : sparse matrix of shape (n_local_queries, ``n_samples_fit_``)
            CSR, local rows, **global** column indices (SciPy, or
            ``cupyx.scipy.sparse`` for CuPy input).
        """
        _check_mode(mode)
        dist, ind = self.kneighbors(X, n_neighbors, return_distance=True)
        xp = get_namespace(ind)
        n_queries, k = ind.shape
        data = xp.ones(n_queries * k) if mode == "connectivity" else dist.ravel()
        indptr = xp.arange(0, n_queries * k + 1, k)
        return _sparse_module(xp).csr_matrix(
            (data, ind.ravel(), indptr), shape=(n_queries, self.n_samples_fit_)
        )

    @collective_method
    def radius_neighbors(self, X=None, radius=None, return_distance=True, sort_results=False):
        """Find every neighbour within ``radius`` of this rank's query rows.

        Exact. The output size depends on the data; the working memory of
        the search stays bounded by ``batch_size``.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local_queries, n_features), default=None
            This rank's query rows; None: the fitted rows, each excluding itself.
        radius : float, default=None
            Limiting distance (> 0); default ``self.radius``.
        return_distance : bool, default=True
            Whether to return the distances.
        sort_results : bool, default=False
            Sort each query's neighbours by distance (then global index);
            otherwise they come in ascending global index.

        Returns
        -------
        neigh_dist : ndarray of shape (n_local_queries,) of arrays
            Distances of each query's neighbours. Local.
        neigh_ind : ndarray of shape (n_local_queries,) of arrays
            Their **global** row indices.
        """
        comms = self._fitted_comms()
        radius = self.radius if radius is None else radius

        def check_setting():
            if sort_results and not return_distance:
                raise ValueError("return_distance must be True if sort_results is True.")
            if is_sparse(self._fit_X):
                raise TypeError("radius_neighbors does not support sparse (CSR) rows yet.")
            if not isinstance(radius, Real) or not radius > 0:  # inf: every row, as scikit-learn
                raise ValueError(f"radius must be a positive number, got {radius!r}.")

        query_is_train = X is None
        Q, _ = self._queries(X, comms, check_setting)
        if self.effective_metric_ == "precomputed":
            rows, indices, dist = _precomputed.radius_neighbors(Q, float(radius))
        else:
            rows, indices, dist = _ring.radius_neighbors(
                _ring.prepare_rows(Q, self._metric),
                self._fit_X,
                radius=float(radius),
                **self._search_args(comms),
            )
        if query_is_train:
            keep = indices != rows + self._fit_offset()
            rows, indices, dist = rows[keep], indices[keep], dist[keep]
        neigh_dist, neigh_ind = _group_by_row(rows, indices, dist, Q.shape[0], sort_results)
        return (neigh_dist, neigh_ind) if return_distance else neigh_ind

    @collective_method
    def radius_neighbors_graph(self, X=None, radius=None, mode="connectivity", sort_results=False):
        """Graph of the neighbours within ``radius`` of this rank's query rows.

        This method is collective.

        Parameters
        ----------
        X, radius, sort_results
            As for :meth:`radius_neighbors`.
        mode : {'connectivity', 'distance'}, default='connectivity'
            Ones, or the distances, as the values.

        Returns
        -------
        A : sparse matrix of shape (n_local_queries, ``n_samples_fit_``)
            CSR, local rows, **global** column indices.
        """
        _check_mode(mode)
        dist, ind = self.radius_neighbors(
            X, radius, return_distance=True, sort_results=sort_results
        )
        xp = get_namespace(*ind) if ind.shape[0] else np
        lengths = [len(i) for i in ind]
        indptr = xp.asarray(group_starts(lengths))
        columns = xp.concatenate(list(ind)) if lengths else xp.empty(0, dtype=xp.int64)
        if mode == "connectivity":
            data = xp.ones(columns.shape[0])
        else:
            data = xp.concatenate(list(dist)) if lengths else xp.empty(0)
        return _sparse_module(xp).csr_matrix(
            (data, columns, indptr), shape=(len(lengths), self.n_samples_fit_)
        )


def _gathered(rows, comms):
    """Every rank's ``rows`` (dense or CSR), stacked in rank order.

    This function is collective.
    """
    if is_sparse(rows):
        import scipy.sparse as sp

        return sp.vstack(comms.allgather_object(on_host(rows))).tocsr()
    return comms.allgatherv(get_namespace(rows).ascontiguousarray(rows))


def _check_mode(mode):
    if mode not in ("connectivity", "distance"):
        raise ValueError(
            'Unsupported mode, must be one of "connectivity", or "distance" but got '
            f'"{mode}" instead'
        )


def _drop_self(dist, indices, offset):
    """scikit-learn's self-exclusion for ``X=None``: drop each row's own global
    index, or its first neighbour when its own index is not among them."""
    xp = get_namespace(indices)
    n_queries, k = indices.shape
    own = xp.arange(offset, offset + n_queries)[:, None]
    mask = indices != own
    mask[:, 0][mask.all(axis=1)] = False
    return dist[mask].reshape(n_queries, k - 1), indices[mask].reshape(n_queries, k - 1)


def _group_by_row(rows, indices, dist, n_queries, sort_results):
    """Object arrays of each query's distances and indices (ascending global
    index, or by (distance, index) with ``sort_results``)."""
    xp = get_namespace(indices)
    keys = [indices.astype(xp.float64)]
    if sort_results:
        keys.append(dist.astype(xp.float64))
    keys.append(rows.astype(xp.float64))
    order = xp.lexsort(xp.stack(keys))
    counts = (
        to_host(xp.bincount(rows, minlength=n_queries))
        if rows.shape[0]
        else np.zeros(n_queries, int)
    )
    cuts = np.cumsum(counts)[:-1].tolist()
    neigh_dist = np.empty(n_queries, dtype=object)
    neigh_ind = np.empty(n_queries, dtype=object)
    if n_queries == 0:
        return neigh_dist, neigh_ind
    for i, (d, g) in enumerate(zip(xp.split(dist[order], cuts), xp.split(indices[order], cuts))):
        neigh_dist[i], neigh_ind[i] = d, g
    return neigh_dist, neigh_ind


class SupervisedNeighborsBase(NeighborsBase):
    """Parameters of the k-neighbours classifier and regressor, and the
    targets of the neighbours, fetched from the ranks that own them."""

    _parameter_constraints: dict = {
        **{k: v for k, v in NeighborsBase._parameter_constraints.items() if k != "radius"},
        "weights": [StrOptions({"uniform", "distance"}), callable, None],
    }
    _zero_weights_error = False

    def __init__(
        self,
        n_neighbors=5,
        *,
        weights="uniform",
        algorithm="auto",
        leaf_size=30,
        p=2,
        metric="minkowski",
        metric_params=None,
        n_jobs=None,
        batch_size=None,
        comms=None,
    ):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.metric = metric
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.batch_size = batch_size
        self.comms = comms

    def _neighbour_targets(self, X):
        """``(weights, targets)`` of this rank's queries' neighbours: weights of
        shape (n_local_queries, k) or None (uniform), targets of shape
        (n_local_queries, k, n_outputs) on the host.

        This method is collective.
        """
        comms = self._fitted_comms()
        dist, ind = self.kneighbors(X)

        def check():
            weights = neighbour_weights(to_host(dist).astype(np.float64), self.weights)
            if (
                self._zero_weights_error
                and weights is not None
                and weights.shape[1]
                and bool(np.any(np.all(weights == 0, axis=1)))
            ):
                raise ValueError(
                    "All neighbors of some sample is getting zero weights. Please modify "
                    "'weights' to avoid this case if you are using a user-defined function."
                )
            return weights, None

        weights, _ = agree(comms, check)
        return weights, fetch_rows(self._y, ind, comms, self.shard_counts_), get_namespace(ind)
