"""Exact distributed HDBSCAN with scikit-learn's API."""

from warnings import warn

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import HDBSCAN as _SkHDBSCAN
from sklearn.neighbors import BallTree, KDTree
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, to_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import (
    _OUTLIER_ENCODING,
    _fit_context,
    _process_mst,
    labelling_at_cut,
    remap_single_linkage_tree,
    tree_to_labels,
)
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..neighbors import _ring
from ..neighbors._base import DEFAULT_BATCH, METRICS, effective_metric
from ..utils._global_rows import fetch_rows
from ..utils.ring import ring_blocks
from ..utils.validation import RowLayout, agree, agree_on_errors, check_local, validate_fit_data
from . import _hdbscan_centers, _hdbscan_mst, _hdbscan_predict

_INFINITE = _OUTLIER_ENCODING["infinite"]["label"]
_MISSING = _OUTLIER_ENCODING["missing"]["label"]
_SYMMETRY_BLOCK = 1 << 20  # entries of each travelling block of distance rows


class HDBSCAN(DistributedEstimatorMixin, ClusterMixin, BaseEstimator):
    """Exact HDBSCAN clustering of data whose rows are spread over MPI ranks.

    scikit-learn's :class:`sklearn.cluster.HDBSCAN`: the same labels and
    probabilities as scikit-learn on the concatenation of every rank's rows
    (on data without tied distances), and identical ones at any number of
    ranks, on any data.

    How it runs:

    1. **Core distances.** Each row's ``min_samples`` nearest rows (itself
       included) come from the exact neighbour ring of
       :class:`mlmpi.NearestNeighbors`; the core distance is the last one,
       computed by the same per-pair loop (features in order) as the next
       step and as scikit-learn's trees, so it is bit-equal to theirs.
    2. **Minimum spanning tree.** scikit-learn's Prim loop
       (``mst_from_data_matrix``, or ``mst_from_mutual_reachability`` for
       precomputed distances), step by step: each rank updates its own rows
       against the node just added, and one small allgather per step (each
       rank's best candidate edge and its row) gives every rank the next
       node, ties to the smaller global index. The loop is latency-bound:
       n - 1 collectives of ``4 + n_features`` float64 per rank, and
       ``O(n² · n_features / P)`` arithmetic in all.
    3. **Tree and labels.** Every rank holds the n - 1 edges in
       scikit-learn's order and runs scikit-learn's own code on them
       (sorting, single linkage, condensed tree, stability, selection,
       labelling), then keeps its rows' labels and probabilities.

    Memory per rank: this rank's rows and O(n) for the tree: the edges (24
    bytes per global row) and, while scikit-learn's tree code runs, about
    350 bytes per global row at its peak (its Python lists; measured at
    n = 200,000). The single-linkage tree (32 bytes per global row) is kept
    for :meth:`dbscan_clustering`; for :meth:`approximate_predict`, this
    rank's rows (a reference to the validated ``X``, as
    :class:`mlmpi.NearestNeighbors` keeps its index) and their core
    distances, and each global row's place in the condensed tree (16 bytes
    per global row).

    Parameters
    ----------
    min_cluster_size : int, default=5
        The minimum number of samples in a group for that group to be
        considered a cluster; smaller groupings are noise.
    min_samples : int, default=None
        The number of samples in a neighbourhood (the point itself included)
        for the core distance; None means ``min_cluster_size``.
    cluster_selection_epsilon : float, default=0.0
        A distance threshold: clusters below this value are merged.
    max_cluster_size : int, default=None
        A limit on the size of the clusters the ``"eom"`` selection returns.
    metric : str, default='euclidean'
        'euclidean', 'l2', 'sqeuclidean', 'cosine', 'manhattan', 'cityblock',
        'l1', 'chebyshev', 'infinity', 'minkowski' or 'p' (``p >= 1`` in
        ``metric_params``), or 'precomputed': each rank passes its rows of
        the global ``(n_samples, n_samples)`` distance matrix (column ``j`` is
        global row ``j``, rank 0's rows first), dense, symmetric (as
        scikit-learn checks), ``inf`` for a missing distance. Other metrics
        and callables are refused, as is sparse input.
    metric_params : dict, default=None
        Only ``{'p': value}`` for the Minkowski metric.
    alpha : float, default=1.0
        A distance scaling parameter as used in robust single linkage.
    algorithm : {'auto', 'brute', 'kd_tree', 'ball_tree'}, default='auto'
        Checked against the metric as scikit-learn does; the search is the
        same exact one whatever the value.
    leaf_size : int, default=40
        Accepted for compatibility; unused.
    n_jobs : int, default=None
        Accepted for compatibility; unused (the ranks are the parallelism).
    cluster_selection_method : {'eom', 'leaf'}, default='eom'
        How clusters are selected from the condensed tree.
    allow_single_cluster : bool, default=False
        Whether a single cluster may be selected.
    store_centers : {'centroid', 'medoid', 'both'}, default=None
        Which cluster centres to compute (not with 'precomputed').
    copy : bool, default=False
        Accepted for compatibility: the caller's data is never modified.
        Not set, it warns as scikit-learn 1.9 does.
    comms : Comms, default=None
        The ranks that hold the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    labels_ : ndarray of shape (n_local,)
        Cluster labels of this rank's rows. Local. Noise is -1, rows with an
        infinite value -2 and rows with a missing value -3.
    probabilities_ : ndarray of shape (n_local,)
        The strength with which each of this rank's rows is a member of its
        cluster (0 for noise and infinite rows, NaN for missing ones). Local.
    centroids_ : ndarray of shape (n_clusters, n_features)
        Probability-weighted mean of each cluster (``store_centers``).
        Replicated.
    medoids_ : ndarray of shape (n_clusters, n_features)
        The member of each cluster with the smallest sum of distances to the
        others weighted by their probabilities (``store_centers``). Replicated.
    n_features_in_ : int
        Number of features seen during fit. Replicated.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (when X has string column names).

    See Also
    --------
    mlmpi.cluster.DBSCAN : Exact DBSCAN of row-sharded data.

    Notes
    -----
    :meth:`fit`, :meth:`fit_predict`, :meth:`predict` and
    :meth:`approximate_predict` (beyond scikit-learn: the hdbscan package's
    prediction of new points) are collective; :meth:`dbscan_clustering` is
    not (every rank holds the single-linkage tree). A rank may hold zero
    rows. CuPy rows are read on the host, where HDBSCAN runs; the labels,
    probabilities, centres and the methods' results are then CuPy arrays.
    scikit-learn computes the distances of the 'sqeuclidean' and
    'cosine' metrics and of ``algorithm='brute'`` with matrix products, so
    they may differ from these in their last bits.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import HDBSCAN
    >>> X = np.array([[1.0, 2.0], [1.1, 2.0], [1.0, 2.2], [0.9, 1.9], [1.2, 2.1],
    ...               [8.0, 7.0], [8.1, 7.2], [7.9, 7.1], [8.2, 6.9], [8.0, 7.3],
    ...               [25.0, 80.0]])
    >>> model = HDBSCAN(min_cluster_size=3, copy=True).fit(X)
    >>> model.labels_
    array([ 0,  0,  0,  0,  0,  1,  1,  1,  1,  1, -1])
    >>> from sklearn import cluster
    >>> cluster.HDBSCAN(min_cluster_size=3, copy=True).fit(X).labels_  # the same
    array([ 0,  0,  0,  0,  0,  1,  1,  1,  1,  1, -1])
    """

    _parameter_constraints: dict = {
        **_SkHDBSCAN._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        min_cluster_size=5,
        min_samples=None,
        cluster_selection_epsilon=0.0,
        max_cluster_size=None,
        metric="euclidean",
        metric_params=None,
        alpha=1.0,
        algorithm="auto",
        leaf_size=40,
        n_jobs=None,
        cluster_selection_method="eom",
        allow_single_cluster=False,
        store_centers=None,
        copy="warn",
        comms=None,
    ):
        self.min_cluster_size = min_cluster_size
        self.min_samples = min_samples
        self.cluster_selection_epsilon = cluster_selection_epsilon
        self.max_cluster_size = max_cluster_size
        self.metric = metric
        self.metric_params = metric_params
        self.alpha = alpha
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.n_jobs = n_jobs
        self.cluster_selection_method = cluster_selection_method
        self.allow_single_cluster = allow_single_cluster
        self.store_centers = store_centers
        self.copy = copy
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Find the clusters of the rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features) or (n_local, n_samples)
            This rank's rows (may have zero rows), or with
            ``metric='precomputed'`` this rank's rows of the distance matrix.
        y : Ignored
            Not used, present here for API consistency by convention.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        comms = self._get_comms()
        if self.copy == "warn":
            warn(
                "The default value of `copy` will change from False to True in 1.10."
                " Explicitly set a value for `copy` to silence this warning.",
                FutureWarning,
                stacklevel=4,
            )
        if self.metric == "precomputed" and self.store_centers is not None:
            raise ValueError("Cannot store centers when using a precomputed distance matrix.")
        metric, p = self._effective_metric()
        X, _, _, layout = validate_fit_data(
            self, X, comms=comms, dtype=np.float64, order="C", ensure_all_finite=False
        )
        xp = get_namespace(X)  # CuPy rows are read on the host; the results go back
        X = to_host(X)
        if metric == "precomputed":
            self._fit_distances(X, comms, layout)
        else:
            self._fit_rows(X, metric, p, comms, layout)
        self._row_offset = layout.offset
        for name in ("labels_", "probabilities_", "centroids_", "medoids_"):
            if name in self.__dict__:
                setattr(self, name, to_namespace(getattr(self, name), xp))
        return self

    def _effective_metric(self):
        """``(metric, p)``: scikit-learn's checks of the metric against
        ``algorithm``, then the metric the search computes (refusing those
        it does not). Local: the parameters agree on every rank."""
        for algorithm, tree in (("kd_tree", KDTree), ("ball_tree", BallTree)):
            if self.algorithm == algorithm and self.metric not in tree.valid_metrics:
                raise ValueError(
                    f"{self.metric} is not a valid metric for a {tree.__name__}-based "
                    "algorithm. Please select a different metric."
                )
        if self.metric == "precomputed":
            return "precomputed", None
        if callable(self.metric) or self.metric not in METRICS:
            raise ValueError(
                f"metric={self.metric!r} is not supported by mlmpi's HDBSCAN; use one of "
                f"{sorted(set(METRICS))}."
            )
        params = dict(self.metric_params or {})
        if METRICS[self.metric] == "minkowski" and params.get("p", 2) < 1:
            raise ValueError(f"The Minkowski metric needs p >= 1, got p={params['p']}.")
        metric, params = effective_metric(METRICS[self.metric], None, params)
        return metric, params.get("p", 2)

    def _global_checks(self, n_samples):
        """scikit-learn's checks of the number of samples (the global one)."""
        if n_samples == 1:
            raise ValueError("n_samples=1 while HDBSCAN requires more than one sample")
        self._min_samples = self.min_cluster_size if self.min_samples is None else self.min_samples
        if self._min_samples > n_samples:
            raise ValueError(
                f"min_samples ({self._min_samples}) must be at most the number of"
                f" samples in X ({n_samples})"
            )

    def _labels(self, tree):
        """scikit-learn's labels and probabilities of every row of ``tree``."""
        return tree_to_labels(
            tree,
            self.min_cluster_size,
            self.cluster_selection_method,
            self.allow_single_cluster,
            self.cluster_selection_epsilon,
            self.max_cluster_size,
        )

    def _fit_rows(self, X, metric, p, comms, layout):
        """Fit on feature rows; rows with a non-finite value are set aside as
        scikit-learn does. This method is collective."""
        sums = X.sum(axis=1)  # scikit-learn tells missing from infinite rows by the sum
        finite = np.isfinite(sums)
        counts = tuple(int(c) for c in comms.allgather(np.array([finite.sum()])))
        kept = RowLayout(counts, comms.rank)
        self._global_checks(kept.n_samples)
        X_kept = X if finite.all() else np.ascontiguousarray(X[finite])
        rows = _ring.prepare_rows(X_kept, metric)
        core = _hdbscan_mst.core_distances(X_kept, metric, p, self._min_samples, comms, kept)
        mst = _hdbscan_mst.mst_from_rows(rows, core, self.alpha, metric, p, comms, kept)
        tree = _process_mst(mst)
        every_label, probabilities = self._labels(tree)
        mine = slice(kept.offset, kept.offset + kept.n_local)
        n_clusters = int(every_label.max(initial=-1)) + 1
        labels, probabilities = every_label[mine], probabilities[mine]
        if self.store_centers:
            self._store_centers(
                X_kept, rows, labels, probabilities, n_clusters, metric, p, comms, kept
            )
        self._keep_for_prediction(X_kept, core, tree, every_label, kept)
        if kept.n_samples < layout.n_samples:
            tree, labels, probabilities = _with_non_finite(
                tree, labels, probabilities, sums, comms, layout
            )
        self._single_linkage_tree_ = tree
        self.labels_, self.probabilities_ = labels, probabilities

    def _store_centers(self, X, rows, labels, probabilities, n_clusters, metric, p, comms, layout):
        """``centroids_`` and/or ``medoids_``. This method is collective."""
        if self.store_centers in ("centroid", "both"):
            self.centroids_ = _hdbscan_centers.centroids(
                X, labels, probabilities, n_clusters, comms
            )
        if self.store_centers in ("medoid", "both"):
            self.medoids_ = _hdbscan_centers.medoids(
                X, rows, labels, probabilities, n_clusters, metric, p, comms, layout
            )

    def _fit_distances(self, D, comms, layout):
        """Fit on rows of a distance matrix. This method is collective."""
        agree_on_errors(comms, lambda: _no_nan(D))
        self._global_checks(layout.n_samples)
        if D.shape[1] != layout.n_samples:
            raise ValueError(
                "The precomputed distance matrix is expected to be symmetric, however"
                f" it has shape {(layout.n_samples, D.shape[1])}. Please verify that the"
                " distance matrix was constructed correctly."
            )
        if not _symmetric(D, comms, layout):
            raise ValueError(
                "The precomputed distance matrix is expected to be symmetric, however"
                " its values appear to be asymmetric. Please verify that the distance"
                " matrix was constructed correctly."
            )
        D = D / self.alpha
        core = _hdbscan_mst.precomputed_core_distances(D, self._min_samples)
        mst = _hdbscan_mst.mst_from_distances(D, core, comms, layout)
        if np.isinf(mst["distance"]).any():
            warn(
                "The minimum spanning tree contains edge weights with value infinity. "
                "Potentially, you are missing too many distances in the initial distance "
                "matrix for the given neighborhood size.",
                UserWarning,
                stacklevel=5,
            )
        tree = _process_mst(mst)
        labels, probabilities = self._labels(tree)
        mine = slice(layout.offset, layout.offset + layout.n_local)
        self._single_linkage_tree_ = tree
        self.labels_, self.probabilities_ = labels[mine], probabilities[mine]

    @collective_method
    def fit_predict(self, X, y=None):
        """Find the clusters of the rows of every rank and return this rank's labels.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features) or (n_local, n_samples)
            As for :meth:`fit`.
        y : Ignored
            Not used, present here for API consistency by convention.

        Returns
        -------
        labels : ndarray of shape (n_local,)
            Cluster labels of this rank's rows.
        """
        return self.fit(X).labels_

    def dbscan_clustering(self, cut_distance, min_cluster_size=5):
        """This rank's labels of the DBSCAN* clustering at ``cut_distance``.

        scikit-learn's flat clustering of the single-linkage tree cut at a
        mutual-reachability distance (DBSCAN without border points). Every
        rank holds the tree, so this method is not collective: each rank may
        call it on its own.

        Parameters
        ----------
        cut_distance : float
            The mutual reachability distance at which to cut.
        min_cluster_size : int, default=5
            Clusters smaller than this are noise.

        Returns
        -------
        labels : ndarray of shape (n_local,)
            Labels of this rank's rows: noise -1, rows with an infinite value
            -2, rows with a missing value -3.
        """
        check_is_fitted(self, "labels_")
        fitted = to_host(self.labels_)
        labels = labelling_at_cut(self._single_linkage_tree_, cut_distance, min_cluster_size)
        labels = labels[self._row_offset : self._row_offset + fitted.shape[0]]
        labels[fitted == _INFINITE] = _INFINITE
        labels[fitted == _MISSING] = _MISSING
        return to_namespace(labels, get_namespace(self.labels_))

    def _keep_for_prediction(self, X, core, tree, labels, layout):
        """What :meth:`approximate_predict` needs: this rank's finite rows and
        their core distances (distributed), the row counts, and the condensed
        tree's walk (replicated, from every row's ``labels``)."""
        self._fit_X, self._core_distances = X, core
        self._fit_counts = layout.counts
        self._prediction_data = _hdbscan_predict.prediction_data(
            tree, labels, self.min_cluster_size
        )

    @collective_method
    def approximate_predict(self, X):
        """Labels and membership strengths of this rank's new rows.

        Beyond scikit-learn: the hdbscan package's ``approximate_predict``.
        Each new row joins the condensed tree of the fit at its nearest
        training row in mutual reachability, among its ``2 · min_samples``
        nearest training rows of every rank; it gets the label of the
        selected cluster it would fall in (-1: noise) and a strength in
        [0, 1] (its lambda over that cluster's largest). The fit is not
        changed, so the labels are those of the fitted clustering, not
        those of a refit with the new rows. Ties in mutual reachability go
        to the nearer neighbour, then the smaller global index, so the
        results are the same at any number of ranks.

        The package's own ``min_samples`` does not count the point itself
        at fit: the package with ``min_samples - 1`` finds this clustering,
        and with prediction data generated for ``min_samples`` predicts as
        this method does. Where a selected cluster has no row falling out
        of it directly (the root with ``allow_single_cluster``), the package
        (0.8.44) takes the lowest cluster its rows fall out of; this method
        takes the selected cluster.

        This method is collective: one neighbour ring of the new rows round
        every rank's training rows, and one exchange of the neighbours' core
        distances. It needs the same number of ranks as the fit. Not with
        ``metric='precomputed'`` (as in the hdbscan package); training rows
        with a non-finite value take no part.

        Parameters
        ----------
        X : array-like of shape (n_local_queries, n_features)
            This rank's new rows (may have zero rows), finite.

        Returns
        -------
        labels : ndarray of shape (n_local_queries,)
            Cluster labels of this rank's new rows (-1: noise). Local.
        strengths : ndarray of shape (n_local_queries,)
            Their membership strengths (0 for noise). Local.

        Examples
        --------
        >>> import numpy as np
        >>> from mlmpi import HDBSCAN
        >>> X = np.array([[1.0, 2.0], [1.1, 2.0], [1.0, 2.2], [0.9, 1.9], [1.2, 2.1],
        ...               [8.0, 7.0], [8.1, 7.2], [7.9, 7.1], [8.2, 6.9], [8.0, 7.3],
        ...               [25.0, 80.0]])
        >>> model = HDBSCAN(min_cluster_size=3, min_samples=2, copy=True).fit(X)
        >>> labels, strengths = model.approximate_predict([[1.05, 2.05], [8.0, 7.1], [30.0, 0.0]])
        >>> labels
        array([ 0,  1, -1])
        >>> strengths.round(2)
        array([0.89, 1.  , 0.  ])
        """
        comms = self._get_comms()
        Q = self._new_rows(X, comms)
        xp = get_namespace(Q)  # CuPy rows are read on the host; the results go back
        Q = to_host(Q)
        metric, p = self._effective_metric()
        reduced, indices = _ring.kneighbors(
            _ring.prepare_rows(Q, metric),
            self._fit_X,
            n_neighbors=2 * self._min_samples,
            metric=metric,
            p=p,
            comms=comms,
            counts=self._fit_counts,
            batch_size=DEFAULT_BATCH[False],
        )
        core = fetch_rows(self._core_distances, indices, comms, self._fit_counts)
        labels, strengths = _hdbscan_predict.assign(
            self._prediction_data,
            _ring.to_distance(reduced, metric, p),
            indices,
            core,
            self._min_samples,
        )
        return to_namespace(labels, xp), to_namespace(strengths, xp)

    def _new_rows(self, X, comms):
        """This rank's new rows, validated; the same error on every rank.

        This method is collective.
        """
        check_is_fitted(self, "labels_")
        if self.metric == "precomputed":
            raise ValueError("Prediction of new points is not available with metric='precomputed'.")
        if comms.size != len(self._fit_counts):
            raise ValueError(
                f"This model was fitted on {len(self._fit_counts)} ranks; it needs the same "
                f"number of ranks to predict (this comms has {comms.size})."
            )
        n_samples = sum(self._fit_counts)
        if 2 * self._min_samples > n_samples:
            raise ValueError(
                f"Prediction needs 2 * min_samples ({2 * self._min_samples}) training rows"
                f" with finite values; the fit had {n_samples}."
            )
        Q, _ = agree(comms, lambda: (check_local(self, X, dtype=np.float64, order="C"), None))
        return Q

    @collective_method
    def predict(self, X):
        """Cluster labels of this rank's new rows.

        Beyond scikit-learn: the labels of :meth:`approximate_predict` (the
        hdbscan package's semantics).

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local_queries, n_features)
            This rank's new rows (may have zero rows), finite.

        Returns
        -------
        labels : ndarray of shape (n_local_queries,)
            Cluster labels of this rank's new rows (-1: noise). Local.

        Examples
        --------
        >>> import numpy as np
        >>> from mlmpi import HDBSCAN
        >>> X = np.array([[1.0, 2.0], [1.1, 2.0], [1.0, 2.2], [0.9, 1.9], [1.2, 2.1],
        ...               [8.0, 7.0], [8.1, 7.2], [7.9, 7.1], [8.2, 6.9], [8.0, 7.3],
        ...               [25.0, 80.0]])
        >>> model = HDBSCAN(min_cluster_size=3, min_samples=2, copy=True).fit(X)
        >>> model.predict([[1.05, 2.05], [30.0, 0.0]])
        array([ 0, -1])
        """
        return self.approximate_predict(X)[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.allow_nan = self.metric != "precomputed"
        return tags


def _no_nan(D):
    if np.isnan(D).any():
        raise ValueError("np.nan values found in precomputed-dense")


def _symmetric(D, comms, layout):
    """Whether the distance matrix of every rank's rows ``D`` is symmetric to
    scikit-learn's tolerance (``np.allclose(D, D.T)``): the rows travel round a
    ring and each rank compares its columns of them with its own rows.

    This function is collective.
    """
    offsets = np.cumsum((0,) + layout.counts)
    mine = slice(layout.offset, layout.offset + layout.n_local)
    close = True
    rows = max(1, _SYMMETRY_BLOCK // max(1, D.shape[1]))
    for block, owner, start, request in ring_blocks(D, comms, layout.counts, rows):
        begin = offsets[owner] + start
        columns = D[:, begin : begin + block.shape[0]]
        close &= bool(np.allclose(columns, block[:, mine].T, rtol=1e-7, atol=1e-9))
        if request is not None:
            request.test()
    return bool(comms.allreduce(np.array([not close], dtype=np.int64))[0] == 0)


def _with_non_finite(tree, labels, probabilities, sums, comms, layout):
    """scikit-learn's tree, labels and probabilities once the rows with a
    non-finite value (by their ``sums``) are put back: the tree remapped to
    every global row, this rank's labels and probabilities.

    This function is collective: one allgatherv of the global indices of the
    rows of each kind.
    """
    finite, missing = np.isfinite(sums), np.isnan(sums)
    kinds = np.where(finite, 0, np.where(missing, 2, 1)).astype(np.int64)
    every = comms.allgatherv(kinds)
    finite_index, infinite_index, missing_index = (np.flatnonzero(every == k) for k in range(3))
    tree = remap_single_linkage_tree(
        tree,
        dict(enumerate(finite_index)),
        non_finite=set(np.hstack([infinite_index, missing_index])),
    )
    new_labels = np.empty(sums.shape[0], dtype=np.int32)
    new_labels[finite] = labels
    new_labels[np.isinf(sums)] = _INFINITE
    new_labels[missing] = _MISSING
    new_probabilities = np.zeros(sums.shape[0])
    new_probabilities[finite] = probabilities
    new_probabilities[np.isinf(sums)] = _OUTLIER_ENCODING["infinite"]["prob"]
    new_probabilities[missing] = _OUTLIER_ENCODING["missing"]["prob"]
    return tree, new_labels, new_probabilities
