"""Distributed K-Means with scikit-learn's API."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, is_sparse, to_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    _is_arraylike_not_scalar,
    _openmp_effective_n_threads,
)
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..random import shared_seed
from ..utils.stats import exact_moments
from ..utils.validation import _check_weights, agree, check_local, validate_fit_data
from ._common import global_max, row_sq_norms, sq_distances
from ._init import kmeans_parallel, kmeans_plusplus, random_rows
from ._lloyd import final_inertia, lloyd, lloyd_exponents


def _labels(X, centers):
    """Index of the closest centre of every row (local, int32)."""
    xp = get_namespace(X)
    labels = xp.full(X.shape[0], -1, dtype=xp.int32)
    k, d = centers.shape
    kernels_for("kmeans", X).lloyd_step(
        X,
        xp.ones(X.shape[0], dtype=X.dtype),
        centers,
        xp.ones(d + 1, dtype=xp.float64),
        labels,
        xp.empty((2, k, d), dtype=xp.int64),
        xp.empty((2, k), dtype=xp.int64),
        xp.empty(1, dtype=xp.int64),
        update_centers=False,
    )
    return labels


def _same_clustering(labels1, labels2, n_clusters, comms):
    """True when the global labelings are equal up to a permutation of the labels.

    This function is collective.
    """
    pairs = np.unique(to_host(labels1).astype(np.int64) * n_clusters + to_host(labels2))
    first, second = np.divmod(pairs, n_clusters)
    mapping = np.full(n_clusters + 1, -1, dtype=np.int64)
    mapping[first] = second
    mapping[n_clusters] = int(np.unique(first).size != first.size)
    gathered = np.asarray(comms.allgather(mapping)).reshape(comms.size, n_clusters + 1)
    if gathered[:, n_clusters].any():
        return False
    seen = gathered[:, :n_clusters]
    for column in seen.T:
        if np.unique(column[column >= 0]).size > 1:
            return False
    return True


class KMeans(
    DistributedEstimatorMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    ClusterMixin,
    BaseEstimator,
):
    """K-Means clustering of data whose rows are spread over MPI ranks.

    scikit-learn's :class:`sklearn.cluster.KMeans` (Lloyd's algorithm),
    where every rank passes its own rows to :meth:`fit` and all ranks get
    the same model. With one process it is a drop-in replacement for
    scikit-learn's estimator. Results do not depend on the number of ranks
    (beyond floating-point rounding of sums), the initialisation included.

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters to form as well as the number of centroids.
    init : {'k-means++', 'k-means||', 'random'}, callable or array-like of \
            shape (n_clusters, n_features), default='k-means++'
        Method for initialization:

        * 'k-means++': greedy k-means++ (scikit-learn's algorithm) over the
          global data; two small collectives per centre.
        * 'k-means||': scalable k-means++ (Bahmani et al.): a few rounds of
          oversampling keep about ``oversampling_factor * n_clusters`` rows
          per round, then greedy k-means++ on the weighted candidates. Fewer
          collectives than 'k-means++' for large ``n_clusters``.
        * 'random': ``n_clusters`` distinct rows drawn proportionally to
          ``sample_weight``.
        * An array: the initial centres; it must be the same on every rank.
        * A callable ``init(X, n_clusters, random_state)``: it is called on
          the first rank that holds rows, with that rank's (mean-centred)
          local rows, and its result is broadcast to every rank.
    n_init : 'auto' or int, default='auto'
        Number of runs with different initial centres; the run with the
        lowest global inertia is kept. 'auto': 1 for 'k-means++',
        'k-means||' or an array, 10 for 'random' or a callable.
    max_iter : int, default=300
        Maximum number of iterations of a single run.
    tol : float, default=1e-4
        Relative tolerance on the squared shift of the centres between two
        iterations, scaled by the mean of the global per-feature variances.
    verbose : int, default=0
        Verbosity mode (rank 0 prints).
    random_state : int, RandomState instance or None, default=None
        Random number generation for the initialisation. With None or a
        RandomState, rank 0 draws a seed and broadcasts it.
    copy_x : bool, default=True
        If False, the local data is centred in place during fit and put back
        afterwards (small rounding differences may remain).
    algorithm : {'lloyd', 'elkan'}, default='lloyd'
        Only Lloyd's algorithm is implemented; 'elkan' is accepted for
        compatibility with scikit-learn scripts and runs Lloyd (the result
        is the same clustering).
    oversampling_factor : float, default=2.0
        k-means|| only: expected rows kept per round, in units of
        ``n_clusters``.
    init_max_iter : int, default=5
        k-means|| only: number of oversampling rounds.
    comms : Comms, default=None
        The ranks that hold the data; None means :func:`mlmpi.get_comms`
        (MPI's world under ``mpiexec``, a single process otherwise).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Coordinates of cluster centers. Replicated (the same on every rank);
        NumPy or CuPy like the training data.
    labels_ : ndarray of shape (n_local,)
        Labels of this rank's training rows (int32). Local.
    inertia_ : float
        Global sum of squared distances of the samples to their closest
        cluster center, weighted by the sample weights. Replicated.
    n_iter_ : int
        Number of iterations run. Replicated.
    n_features_in_ : int
        Number of features seen during fit. Replicated.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (when X has string column names).

    See Also
    --------
    mlmpi.cluster.DBSCAN : Density-based clustering of row-sharded data.

    Notes
    -----
    :meth:`fit`, :meth:`fit_predict`, :meth:`fit_transform` and
    :meth:`score` are collective: every rank of ``comms`` must call them.
    :meth:`predict` and :meth:`transform` work on local rows and do not
    communicate. A rank may hold zero rows.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import KMeans
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]])
    >>> km = KMeans(n_clusters=2, random_state=0).fit(X)
    >>> np.sort(km.cluster_centers_, axis=0)
    array([[ 1.,  2.],
           [10.,  2.]])
    >>> from sklearn import cluster
    >>> km.inertia_ == cluster.KMeans(n_clusters=2, random_state=0).fit(X).inertia_
    True
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"k-means++", "k-means||", "random"}), callable, "array-like"],
        "n_init": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "copy_x": ["boolean"],
        "algorithm": [StrOptions({"lloyd", "elkan"})],
        "oversampling_factor": [Interval(Real, 0, None, closed="neither")],
        "init_max_iter": [Interval(Integral, 1, None, closed="left")],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        n_init="auto",
        max_iter=300,
        tol=1e-4,
        verbose=0,
        random_state=None,
        copy_x=True,
        algorithm="lloyd",
        oversampling_factor=2.0,
        init_max_iter=5,
        comms=None,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.copy_x = copy_x
        self.algorithm = algorithm
        self.oversampling_factor = oversampling_factor
        self.init_max_iter = init_max_iter
        self.comms = comms

    def _resolve_n_init(self):
        if self.n_init != "auto":
            n_init = self.n_init
        elif callable(self.init) or (isinstance(self.init, str) and self.init == "random"):
            n_init = 10
        else:
            n_init = 1
        if _is_arraylike_not_scalar(self.init) and n_init != 1:
            warnings.warn(
                "Explicit initial center position passed: performing only one init "
                f"in {type(self).__name__} instead of n_init={n_init}.",
                RuntimeWarning,
                stacklevel=3,
            )
            n_init = 1
        return n_init

    def _check_init_array(self, X, comms):
        """The init array in X's dtype and namespace; the same error on every rank if bad."""

        def check():
            centers = check_array(to_host(self.init), dtype=X.dtype, copy=True, order="C")
            _check_center_shape(centers, self.n_clusters, X.shape[1])
            return centers, None

        centers, _ = agree(comms, check)
        return to_namespace(centers, get_namespace(X))

    def _call_init(self, X, seed, comms, layout):
        root = next(r for r, count in enumerate(layout.counts) if count)

        def check():
            if comms.rank != root:
                return None, None
            centers = self.init(X, self.n_clusters, random_state=np.random.RandomState(seed))
            centers = check_array(to_host(centers), dtype=X.dtype, copy=False, order="C")
            _check_center_shape(centers, self.n_clusters, X.shape[1])
            return centers, None

        centers, _ = agree(comms, check)
        return to_namespace(comms.bcast(centers, root=root), get_namespace(X))

    def _init_centroids(
        self, X, x_sq_norms, init, sample_weight, rng, *, comms, layout, exponents, max_weight
    ):
        if isinstance(init, str) and init == "k-means++":
            return kmeans_plusplus(
                X,
                self.n_clusters,
                x_sq_norms,
                sample_weight,
                rng,
                comms=comms,
                max_weight=max_weight,
            )
        if isinstance(init, str) and init == "k-means||":
            return kmeans_parallel(
                X,
                self.n_clusters,
                x_sq_norms,
                sample_weight,
                rng,
                comms=comms,
                offset=layout.offset,
                oversampling_factor=self.oversampling_factor,
                n_rounds=self.init_max_iter,
                exponents=exponents,
                max_weight=max_weight,
            )
        if isinstance(init, str) and init == "random":
            return random_rows(
                X, self.n_clusters, sample_weight, rng, comms=comms, offset=layout.offset
            )
        if callable(init):
            return self._call_init(X, rng.randint(np.iinfo(np.int32).max), comms, layout)
        return init

    def _sklearn_state(self):
        return {**super()._sklearn_state(), "_n_threads": _openmp_effective_n_threads()}

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Compute k-means clustering of the rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's training rows (NumPy, SciPy sparse, or their CuPy/cupyx
            twins; may have zero rows). Sparse rows are converted to CSR and
            not centred, as in scikit-learn.
        y : Ignored
            Not used, present here for API consistency by convention.
        sample_weight : array-like of shape (n_local,), default=None
            Weights of this rank's rows. None means equal weights. Not used
            by an init array or callable.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        comms = self._get_comms()
        X, _, sample_weight, layout = validate_fit_data(
            self,
            X,
            comms=comms,
            sample_weight=sample_weight,
            order="C",
            accept_sparse="csr",
            accept_large_sparse=False,
        )
        if layout.n_samples < self.n_clusters:
            raise ValueError(
                f"n_samples={layout.n_samples} should be >= n_clusters={self.n_clusters}."
            )
        xp = get_namespace(X)
        if sample_weight is None:
            sample_weight = xp.ones(X.shape[0], dtype=X.dtype)
        n_init = self._resolve_n_init()
        init = self.init
        if _is_arraylike_not_scalar(init):
            init = self._check_init_array(X, comms)

        # Centre dense data on the global mean for accurate distances, as
        # scikit-learn does (sparse rows stay uncentred, as there). The mean,
        # the variances behind tol and the grids of Lloyd's sums all come from
        # exact sums, so none of them depends on the number of ranks.
        sparse = is_sparse(X)
        moments = exact_moments(X, layout.n_samples, comms)
        if sparse:
            largest = np.maximum(np.abs(moments.low), np.abs(moments.high))
        else:
            X_mean = to_namespace(moments.mean.astype(X.dtype), xp)
            centred = xp.empty_like(X) if self.copy_x else X
            kernels_for("kmeans", X).center_rows(X, X_mean, centred)
            X = centred
            if _is_arraylike_not_scalar(init):
                init -= X_mean
            largest = moments.high - moments.low  # bounds |x - mean|
        with np.errstate(over="ignore"):
            widest = float(np.sum(np.square(largest, dtype=np.float64)))
        if not np.isfinite(widest):  # every rank decides alike, from the global extrema
            raise ValueError(
                "KMeans: squared distances between these rows overflow float64 (the widest "
                f"column spans {float(np.max(largest)):.3g}); scale the data first, e.g. "
                "with mlmpi.preprocessing.StandardScaler."
            )
        max_weight = global_max(sample_weight.astype(xp.float64), comms)
        exponents = lloyd_exponents(largest, max_weight)
        tol = float(np.mean(moments.variance) * self.tol)
        x_sq_norms = row_sq_norms(X) if isinstance(init, str) and init != "random" else None
        rng = np.random.RandomState(shared_seed(self.random_state, comms))

        best_inertia = best_labels = None
        for _ in range(n_init):
            centers_init = self._init_centroids(
                X,
                x_sq_norms,
                init,
                sample_weight,
                rng,
                comms=comms,
                layout=layout,
                exponents=exponents,
                max_weight=max_weight,
            )
            if self.verbose and comms.rank == 0:
                print("Initialization complete")
            labels, inertia, centers, n_iter, n_distinct = lloyd(
                X,
                sample_weight,
                centers_init,
                comms=comms,
                offset=layout.offset,
                max_iter=self.max_iter,
                tol=tol,
                exponents=exponents,
                verbose=self.verbose,
            )
            if best_inertia is None or (
                inertia < best_inertia
                and not _same_clustering(labels, best_labels, self.n_clusters, comms)
            ):
                best_labels, best_centers, best_inertia = labels, centers, inertia
                best_n_iter, best_distinct = n_iter, n_distinct

        if not sparse:
            if not self.copy_x:
                X += X_mean
            best_centers += X_mean
        if best_distinct < self.n_clusters:
            warnings.warn(
                f"Number of distinct clusters ({best_distinct}) found smaller than "
                f"n_clusters ({self.n_clusters}). Possibly due to duplicate points in X.",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.cluster_centers_ = best_centers
        self._n_features_out = self.cluster_centers_.shape[0]
        self.labels_ = best_labels
        self.inertia_ = best_inertia
        self.n_iter_ = best_n_iter
        return self

    @collective_method
    def fit_predict(self, X, y=None, sample_weight=None):
        """Compute cluster centers and predict the cluster index of this rank's rows.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_local,), default=None

        Returns
        -------
        labels : ndarray of shape (n_local,)
            Index of the cluster each local row belongs to.
        """
        return self.fit(X, sample_weight=sample_weight).labels_

    @collective_method
    def fit_transform(self, X, y=None, sample_weight=None):
        """Compute clustering and transform this rank's rows to cluster-distance space.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_local,), default=None

        Returns
        -------
        X_new : ndarray of shape (n_local, n_clusters)
        """
        return self.fit(X, sample_weight=sample_weight).transform(X)

    def _check_test_data(self, X):
        check_is_fitted(self)
        return check_local(self, X, order="C", accept_sparse="csr", accept_large_sparse=False)

    def predict(self, X):
        """Predict the closest cluster of each local row. No communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        labels : ndarray of shape (n_local,)
            Index of the cluster each row belongs to (int32).
        """
        X = self._check_test_data(X)
        return _labels(X, self._centers_like(X))

    def transform(self, X):
        """Distances of each local row to every cluster center. No communication.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_local, n_clusters)
        """
        X = self._check_test_data(X)
        xp = get_namespace(X)
        return xp.sqrt(sq_distances(X, self._centers_like(X)))

    @collective_method
    def score(self, X, y=None, sample_weight=None):
        """Opposite of the global value of X on the K-means objective.

        This method is collective: the result is the same on every rank and
        covers the rows of all ranks.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_local,), default=None

        Returns
        -------
        score : float
            Minus the global weighted inertia of X.
        """
        comms = self._get_comms()

        def check():
            X_checked = self._check_test_data(X)
            weights = _check_weights(sample_weight, X_checked)
            if weights is None:
                weights = get_namespace(X_checked).ones(X_checked.shape[0], dtype=X_checked.dtype)
            return (X_checked, weights), None

        (X_checked, weights), _ = agree(comms, check)
        centers = self._centers_like(X_checked)
        inertia, _ = final_inertia(
            X_checked, weights, centers, _labels(X_checked, centers), comms=comms
        )
        return -inertia

    def _centers_like(self, X):
        """The centres in X's namespace and dtype."""
        centers = to_namespace(self.cluster_centers_, get_namespace(X))
        return centers.astype(X.dtype, copy=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _check_center_shape(centers, n_clusters, n_features):
    if centers.shape[0] != n_clusters:
        raise ValueError(
            f"The shape of the initial centers {centers.shape} does not "
            f"match the number of clusters {n_clusters}."
        )
    if centers.shape[1] != n_features:
        raise ValueError(
            f"The shape of the initial centers {centers.shape} does not "
            f"match the number of features of the data {n_features}."
        )
