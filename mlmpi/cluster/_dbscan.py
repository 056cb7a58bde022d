"""Exact distributed DBSCAN with scikit-learn's API."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from .._array import get_namespace, is_device_array, is_sparse, to_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import Interval, StrOptions, _fit_context
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..neighbors import _ring
from ..neighbors._base import DEFAULT_BATCH, effective_metric
from ..utils._exact import onto_exact_grid
from ..utils._global_rows import Halo, fetch_rows, scatter_min
from ..utils.validation import agree, validate_fit_data
from ._components import component_minima
from ._dbscan_general import (
    _NONE,
    is_symmetric,
    pairwise_pairs,
    precomputed_pairs,
    reaching_minima,
)
from ._dbscan_space import space_labels

#: Effective metrics and the Minkowski power a k-d tree searches them with.
TREE_POWERS = {"euclidean": 2.0, "manhattan": 1.0, "chebyshev": np.inf}
METRICS = ("euclidean", "manhattan", "chebyshev", "minkowski", "sqeuclidean", "cosine")
#: Effective metrics scikit-learn computes for CSR rows (among ``METRICS``).
SPARSE_METRICS = ("euclidean", "manhattan", "cosine")
_MAX_TREE_FEATURES = 15  # scikit-learn's 'auto' uses brute force above this


class DBSCAN(DistributedEstimatorMixin, ClusterMixin, BaseEstimator):
    """Exact DBSCAN clustering of data whose rows are spread over MPI ranks.

    scikit-learn's :class:`sklearn.cluster.DBSCAN`: the same core samples
    and the same labels (the same numbers, not only the same partition) as
    scikit-learn on the concatenation of every rank's rows, at any number of
    ranks. Nothing is gathered onto one rank.

    How it runs, in three collective steps:

    1. **eps-neighbourhoods.** Every pair (local row, global row) within
       ``eps``. On the k-d tree path (host rows, a Minkowski metric with
       ``p >= 1``, at most 15 features or ``algorithm='kd_tree'`` or
       ``'ball_tree'``: scikit-learn's ``'auto'`` picks a tree there) the
       search goes by space, after HPDBSCAN: a k-d bisection of the ranks,
       cut at quantiles of a sample of the rows, gives each rank a region
       of about ``n / P`` rows; rows move to the rank of their region, with
       copies of the rows within ``eps`` of it (its halo, found by
       coordinate slabs, as ``|x_i - y_i| <= d(x, y)``); each rank finds the
       pairs of its region's rows with k-d trees of its rows and of its
       halo, and steps 2 and 3 run inside the regions (below). Rows
       are ordered by (coordinate, global index), so a dense spot, up to
       every row identical, is split over several ranks, each of which
       receives the spot's other rows as halo
       (:mod:`mlmpi.cluster._dbscan_space`). The other paths keep a ring of
       ranks, round which blocks of every rank's rows travel: the
       brute-force ring of :class:`mlmpi.NearestNeighbors` (one GEMM per
       block pair) for device arrays, ``algorithm='brute'``, 'sqeuclidean',
       'cosine', Minkowski with ``p < 1`` and more than 15 features with
       ``'auto'``; a brute-force ring of scikit-learn's
       ``pairwise_distances`` for a callable metric (called on every pair
       of rows) and CSR rows. With ``metric='precomputed'``
       each row's neighbours are read from the row itself (nothing
       travels). Weighted neighbour counts decide the core samples.
    2. **Components.** Each rank joins the core-core pairs among its own
       rows (a local union-find), then merges the pieces linked by pairs
       that reach other ranks' rows with a distributed connected-components
       search (FastSV: parents that only decrease, hooked and shortcut by
       messages to the rows' owners, a few rounds) until every core sample
       knows the smallest global index of its component. On the k-d tree
       path "its own rows" are its region's, owned and halo: a region holds
       every neighbour of the rows it owns, so only the links between the
       pieces of neighbouring regions are merged by FastSV, and each row's
       core flag and component go back to the rank that holds it.
    3. **Labels.** scikit-learn numbers the clusters in the order of their
       smallest core sample; a border sample joins the first cluster that
       reaches it, the one with the smallest number among its core
       neighbours' clusters. Both rules are applied to global indices, so
       the labels equal scikit-learn's.

    A precomputed matrix or a callable metric may give a neighbour relation
    that is not symmetric (``j`` within ``eps`` of ``i``, not ``i`` of
    ``j``), as a k-nearest-neighbours graph does. scikit-learn's search then
    follows each core sample's own neighbourhood only: a sample joins the
    cluster of the smallest core sample that reaches it. The ranks detect
    such a relation (one exchange of the pairs) and, for it alone, replace
    step 2 by minima pushed along the directed links, a round per link of
    the longest path needed.

    Nothing is gathered and no array has one entry per global row: what a
    rank needs about another rank's rows (whether they are core, their
    weights, components and labels) it asks of their owners, for the rows
    its pairs reach only (its halo). Working memory per rank: this rank's
    rows, the pairs found for this rank's rows (as scikit-learn keeps every
    neighbourhood) and a few integers per local row and per halo row; on the
    k-d tree path, instead of those pairs, its region's rows, their halo and
    the pairs found for them, and a sample of 1,024 rows per rank, up to
    262,144 in all, that every rank receives; on
    the ring paths two travelling blocks, and every rank's rows pass once
    through every rank (rows are sharded by index, not by position, so any
    two may be neighbours).

    Parameters
    ----------
    eps : float, default=0.5
        The maximum distance between two samples for one to be considered
        in the neighbourhood of the other.
    min_samples : int, default=5
        The number (or total weight) of samples in a neighbourhood for a
        point, itself included, to be a core point.
    metric : {'euclidean', 'manhattan', 'chebyshev', 'minkowski', \
'sqeuclidean', 'cosine', 'precomputed'} or callable, default='euclidean'
        The distance metric. 'precomputed': each rank passes its rows of the
        global ``(n_samples, n_samples)`` distance matrix, every column
        (column ``j`` is global row ``j``, rank 0's rows first), dense or
        sparse; a sparse row's neighbours are its explicit entries within
        ``eps`` and the diagonal. A callable is called as ``metric(a, b,
        **metric_params)`` on two rows (brute force, on the host). CSR rows
        take 'euclidean', 'manhattan', 'cosine' or a callable.
    metric_params : dict, default=None
        For a callable, keyword arguments passed to it; otherwise only
        ``{'p': value}`` is supported.
    algorithm : {'auto', 'ball_tree', 'kd_tree', 'brute'}, default='auto'
        'auto': a k-d tree for a Minkowski metric with ``p >= 1`` and at most
        15 features on the host, brute force otherwise; 'kd_tree' and
        'ball_tree' both run the k-d tree (Minkowski metrics, ``p >= 1``;
        'ball_tree' also takes a callable, searched by brute force);
        'brute': the GEMM ring. Precomputed distances, callables and CSR
        rows always take their own brute-force path (CSR with a tree
        algorithm warns, as scikit-learn does).
    leaf_size : int, default=30
        Leaf size of the k-d trees.
    p : float, default=None
        Power of the Minkowski metric; None means 2.
    n_jobs : int, default=None
        Accepted for compatibility; unused (the ranks are the parallelism).
    comms : Comms, default=None
        The ranks that hold the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    core_sample_indices_ : ndarray of shape (n_local_core_samples,)
        Indices of this rank's core samples among this rank's rows. Local.
    components_ : ndarray or CSR matrix of shape (n_local_core_samples, n_features)
        Copy of this rank's core samples (CSR for CSR rows; an empty dense
        array when this rank has none, as scikit-learn's without core
        samples). Local.
    labels_ : ndarray of shape (n_local,)
        Cluster labels of this rank's rows; noisy samples are -1. Local, in
        the numbering shared by all ranks (the same as scikit-learn's).
    n_features_in_ : int
        Number of features seen during fit. Replicated.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (when X has string column names).

    See Also
    --------
    mlmpi.cluster.KMeans : K-means clustering of row-sharded data.

    Notes
    -----
    :meth:`fit` and :meth:`fit_predict` are collective: every rank of
    ``comms`` must call them. A rank may hold zero rows. A distance that
    equals ``eps`` only to the last bit may be decided differently from
    scikit-learn's when the two compute it in a different order (the
    brute-force paths, or more than 3 features on the tree path); exact
    ties, as on integer grids, are decided alike. Precomputed rows hold the
    distances themselves, so they are decided exactly as scikit-learn's.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import DBSCAN
    >>> X = np.array([[1, 2], [2, 2], [2, 3], [8, 7], [8, 8], [25, 80]])
    >>> DBSCAN(eps=3, min_samples=2).fit(X).labels_
    array([ 0,  0,  0,  1,  1, -1])
    >>> from sklearn import cluster
    >>> cluster.DBSCAN(eps=3, min_samples=2).fit(X).labels_  # the same labels
    array([ 0,  0,  0,  1,  1, -1])
    """

    _parameter_constraints: dict = {
        "eps": [Interval(Real, 0.0, None, closed="neither")],
        "min_samples": [Interval(Integral, 1, None, closed="left")],
        "metric": [StrOptions(set(METRICS) | {"precomputed"}), callable],
        "metric_params": [dict, None],
        "algorithm": [StrOptions({"auto", "ball_tree", "kd_tree", "brute"})],
        "leaf_size": [Interval(Integral, 1, None, closed="left")],
        "p": [Interval(Real, 0.0, None, closed="left"), None],
        "n_jobs": [Integral, None],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        eps=0.5,
        *,
        min_samples=5,
        metric="euclidean",
        metric_params=None,
        algorithm="auto",
        leaf_size=30,
        p=None,
        n_jobs=None,
        comms=None,
    ):
        self.eps = eps
        self.min_samples = min_samples
        self.metric = metric
        self.metric_params = metric_params
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.n_jobs = n_jobs
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Perform DBSCAN clustering of the rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features) or \
(n_local, n_samples)
            This rank's rows (NumPy, CuPy or CSR; may have zero rows), or with
            ``metric='precomputed'`` this rank's rows of the distance matrix.
        y : Ignored
            Not used, present here for API consistency by convention.
        sample_weight : array-like of shape (n_local,), default=None
            Weights of this rank's rows, as in scikit-learn: a sample with a
            weight of at least ``min_samples`` is by itself a core sample; a
            negative weight may keep its neighbours from being core.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        comms = self._get_comms()
        X, _, _, layout = validate_fit_data(self, X, comms=comms, order="C", accept_sparse="csr")
        (metric, params), _ = agree(comms, lambda: (self._effective_metric(X), None))
        weights = _agreed_weights(sample_weight, X, comms)

        if self._by_space(X, metric, params):
            p = params.get("p", TREE_POWERS.get(metric, 2.0))
            core, minima = space_labels(
                X, weights, self.eps, self.min_samples, p, self.leaf_size, comms, layout
            )
            labels = _core_labels(minima, core, comms, layout)
        else:
            rows, neighbours = self._eps_pairs(X, metric, params, comms, layout)
            # Named metrics give a symmetric relation; distances given or computed
            # by the caller's function may not.
            symmetric = not (metric == "precomputed" or callable(metric)) or is_symmetric(
                rows, neighbours, comms, layout
            )
            halo = Halo(neighbours, layout.counts, comms.rank)
            core = _core_mask(rows, neighbours, weights, X.shape[0], self.min_samples, comms, halo)
            labels = _labels(rows, neighbours, core, comms, layout, halo, symmetric)

        xp = get_namespace(X)
        core_indices = np.flatnonzero(core)
        self.core_sample_indices_ = to_namespace(core_indices, xp)
        self.labels_ = to_namespace(labels, xp)
        # scikit-learn's components_ without core samples: an empty dense array
        self.components_ = (
            X[self.core_sample_indices_].copy()
            if core_indices.size or not is_sparse(X)
            else np.empty((0, X.shape[1]), dtype=X.dtype)
        )
        return self

    def _effective_metric(self, X):
        """``(metric, params)`` of the search, with scikit-learn's checks of the
        metric against ``algorithm`` and the input, and its warnings. Local;
        the same outcome on every rank, whose parameters and kinds of input
        (dense or CSR, host or device, n_features) agree."""
        if callable(self.metric):
            return self._callable_metric()
        metric, params = effective_metric(self.metric, self.p, self.metric_params)
        tree_algorithm = self.algorithm in ("kd_tree", "ball_tree")
        if is_sparse(X):
            if metric not in SPARSE_METRICS + ("precomputed",):
                raise ValueError(
                    f"Metric '{metric}' not valid for sparse input. Use "
                    f"{sorted(SPARSE_METRICS)}, 'precomputed' or a callable function."
                )
            if tree_algorithm:
                warnings.warn("cannot use tree with sparse input: using brute force", stacklevel=3)
        elif tree_algorithm and not self._on_tree(X, metric, params):
            raise ValueError(
                f"algorithm={self.algorithm!r} needs a Minkowski metric with p >= 1 on "
                f"host arrays; got metric={metric!r}. Use algorithm='brute' or 'auto'."
            )
        return metric, params

    def _callable_metric(self):
        """``(metric, params)`` for a callable ``metric``: ``metric_params`` are
        its keyword arguments (``p`` is not passed), as in scikit-learn."""
        if self.algorithm == "kd_tree":
            name = getattr(self.metric, "__qualname__", type(self.metric).__name__)
            raise ValueError(
                f"kd_tree does not support callable metric '{name}'. Use "
                "algorithm='ball_tree', 'brute' or 'auto' (all run brute force)."
            )
        params = dict(self.metric_params or {})
        if "p" in params and self.p is not None:
            warnings.warn(
                "Parameter p is found in metric_params. The corresponding parameter from "
                "__init__ is ignored.",
                SyntaxWarning,
                stacklevel=3,
            )
        return self.metric, params

    def _on_tree(self, X, metric, params):
        """Whether the k-d tree path searches the dense rows ``X`` (else the GEMM ring)."""
        p = params.get("p", 2.0)
        return (
            self.algorithm != "brute"
            and not is_device_array(X)
            and (metric in TREE_POWERS or (metric == "minkowski" and p >= 1))
            and not (self.algorithm == "auto" and X.shape[1] > _MAX_TREE_FEATURES)
        )

    def _by_space(self, X, metric, params):
        """Whether the k-d tree path clusters the rows by regions of space."""
        return not (callable(metric) or is_sparse(X) or metric == "precomputed") and (
            self._on_tree(X, metric, params)
        )

    def _eps_pairs(self, X, metric, params, comms, layout):
        """``(rows, neighbours)``: every pair of a local row and a global row
        within ``eps``, the row itself included unless a precomputed or
        callable distance to itself exceeds ``eps`` (host int64 arrays), on
        the paths that do not go by space.

        This method is collective.
        """
        if callable(metric) or (is_sparse(X) and metric != "precomputed"):
            return pairwise_pairs(X, self.eps, metric, params, comms, layout)
        if metric == "precomputed":
            return precomputed_pairs(X, self.eps, comms, layout)
        rows, neighbours, _ = _ring.radius_neighbors(
            _ring.prepare_rows(X, metric),
            X,
            radius=self.eps,
            metric=metric,
            p=params.get("p", TREE_POWERS.get(metric, 2.0)),
            comms=comms,
            counts=layout.counts,
            batch_size=DEFAULT_BATCH[is_device_array(X)],
        )
        return to_host(rows).astype(np.int64), to_host(neighbours).astype(np.int64)

    @collective_method
    def fit_predict(self, X, y=None, sample_weight=None):
        """Compute clusters of the rows of every rank and return this rank's labels.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_local,), default=None

        Returns
        -------
        labels : ndarray of shape (n_local,)
            Cluster labels of this rank's rows; noisy samples are -1.
        """
        return self.fit(X, sample_weight=sample_weight).labels_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.sparse = True
        return tags


def _agreed_weights(sample_weight, X, comms):
    """This rank's weights on the host (float64), or None when no rank passed
    any (a rank without weights gets unit weights when others have them);
    the same error on every rank for bad weights. Negative weights are
    allowed, as in scikit-learn. Float weights are rounded onto the grid on
    which their sums are exact (each moves by at most ``n * 2**-53`` of the
    largest).

    This function is collective.
    """

    def check():
        if sample_weight is None:
            return None, (False, 0, 1.0, X.shape[0])
        weights = np.asarray(to_host(sample_weight), dtype=np.float64)
        if weights.ndim == 0:
            weights = np.full(X.shape[0], float(weights))
        if weights.shape != (X.shape[0],):
            raise ValueError(f"sample_weight.shape == {weights.shape}, expected {(X.shape[0],)}!")
        if not np.isfinite(weights).all():
            raise ValueError("Input sample_weight contains NaN or infinity.")
        largest = float(np.abs(weights).max(initial=0.0))
        return weights, (True, np.count_nonzero(weights), largest, X.shape[0])

    weights, facts = agree(comms, check)
    if not any(f[0] for f in facts):
        return None
    if sum(f[1] for f in facts) == 0:
        raise ValueError(  # scikit-learn's message
            "Sample weights must contain at least one non-zero number (all ranks together)."
        )
    if weights is None:
        return np.ones(X.shape[0])
    # On the grid where every neighbourhood's sum is exact, whatever order
    # the ring brings its pairs in: the core test gives the same answer at
    # any number of ranks.
    return onto_exact_grid(weights, max(f[2] for f in facts), sum(f[3] for f in facts))


def _core_mask(rows, neighbours, weights, n_local, min_samples, comms, halo):
    """Whether each local row is a core sample: the (weighted) count of its
    eps-neighbours reaches ``min_samples``.

    This function is collective when there are weights (the halo's weights
    come from their owners).
    """
    if weights is None:
        counts = np.bincount(rows, minlength=n_local)
    else:
        counts = np.bincount(rows, weights=halo.values_of(weights, comms), minlength=n_local)
    return counts >= min_samples


def _labels(rows, neighbours, core, comms, layout, halo, symmetric):
    """scikit-learn's DBSCAN labels of the local rows (int64, -1 for noise).

    Nothing here is sized by the global number of rows: each rank asks the
    owners of the rows its pairs reach (the halo) for what it needs.
    ``symmetric``: whether ``j`` is a neighbour of ``i`` exactly when ``i``
    is one of ``j`` (clusters are then components of the core-core links).

    This function is collective.
    """
    neighbour_core = halo.values_of(core.astype(np.uint8), comms).astype(bool)
    links = core[rows] & neighbour_core
    if symmetric:
        minima = _component_minima(rows, neighbours, links, comms, layout, halo)
    else:
        minima = reaching_minima(rows, neighbours, links, core, comms, layout)
    labels = _core_labels(np.where(core, minima, _NONE), core, comms, layout)
    # A sample that is not core joins the first cluster that reaches it: the
    # smallest number among those of the core samples that have it as neighbour.
    reach = core[rows] & ~neighbour_core
    best = np.full(core.shape[0], _NONE)
    scatter_min(best, neighbours[reach], labels[rows[reach]], comms, layout.counts)
    return np.where(best < _NONE, best, labels)


def _component_minima(rows, neighbours, links, comms, layout, halo):
    """The smallest global index of each local row's component of the
    core-core ``links``: first this rank's own links (a local union-find),
    then the links to other ranks' rows, between the smallest rows of the
    local pieces, merged by the distributed FastSV.

    This function is collective.
    """
    offset, n_local = layout.offset, layout.n_local
    kernels = kernels_for("dbscan", rows)
    inside = links & (neighbours >= offset) & (neighbours < offset + n_local)
    piece = offset + kernels.component_minima(rows[inside], neighbours[inside] - offset, n_local)
    cross = links & ~inside
    piece_of_neighbour = halo.values_of(piece, comms)[cross]
    return component_minima(piece, piece[rows[cross]], piece_of_neighbour, comms, layout.counts)


def _core_labels(minima, core, comms, layout):
    """Labels of the local rows whose cluster's smallest core sample is known
    (``minima``; ``_NONE`` elsewhere, labelled -1): clusters numbered in the
    order of their smallest core sample.

    This function is collective.
    """
    offset, n_local = layout.offset, core.shape[0]
    is_root = core & (minima == offset + np.arange(n_local))
    roots_before = comms.exclusive_scan_rows(int(is_root.sum()))[0]
    cluster = np.full(n_local, -1, dtype=np.int64)
    cluster[is_root] = roots_before + np.arange(int(is_root.sum()))
    labels = np.full(n_local, -1, dtype=np.int64)
    labelled = minima < _NONE
    distinct, where = np.unique(minima[labelled], return_inverse=True)
    labels[labelled] = fetch_rows(cluster, distinct, comms, layout.counts)[where.reshape(-1)]
    return labels
