"""NearestNeighbors over a sharded index."""

from .._contract import collective_method
from .._sklearn_compat import _fit_context
from ._base import DISTRIBUTED_DOC, NeighborsBase


class NearestNeighbors(NeighborsBase):
    """Unsupervised learner for neighbour searches over rows spread across ranks.

    scikit-learn's :class:`sklearn.neighbors.NearestNeighbors` (brute force),
    where every rank passes its own rows to :meth:`fit` and its own queries
    to :meth:`kneighbors`/:meth:`radius_neighbors`; returned indices are
    global.
    {shared}
    Parameters
    ----------
    n_neighbors : int, default=5
        Number of neighbours for :meth:`kneighbors` queries.
    radius : float, default=1.0
        Range of parameter space to use by default for :meth:`radius_neighbors` (> 0).
    algorithm : {{'auto', 'ball_tree', 'kd_tree', 'brute'}}, default='auto'
        Accepted for compatibility with scikit-learn; exact brute force runs
        whatever the value.
    leaf_size : int, default=30
        Accepted for compatibility; unused.
    metric : {{'minkowski', 'euclidean', 'l2', 'sqeuclidean', 'cosine', 'manhattan', \
'cityblock', 'l1', 'chebyshev', 'infinity', 'p', 'precomputed'}}, default='minkowski'
        Distance metric, with scikit-learn's aliases ('p' and 'infinity' are
        refused with ``algorithm='brute'``, as scikit-learn does);
        'minkowski' with ``p`` 1, 2 or inf is manhattan, euclidean or
        chebyshev (``effective_metric_``); 'precomputed': X holds distances
        (see below).
    p : float, default=2
        Power of the Minkowski metric (> 0).
    metric_params : dict, default=None
        Only ``{{'p': value}}`` (and ``'w': None``) is supported.
    n_jobs : int, default=None
        Accepted for compatibility; each rank uses its own threads
        (``MLMPI_NUM_THREADS``).
    batch_size : int, default=None
        Rows of a query batch and of an index block (memory per rank is about
        two index blocks plus a ``batch_size × batch_size`` distance block).
        None: 768 on the host, 8192 on a GPU.
    comms : Comms, default=None
        The ranks that hold the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    effective_metric_ : str
        The metric used. Replicated.
    effective_metric_params_ : dict
        Its parameters. Replicated.
    n_features_in_ : int
        Number of features seen during fit. Replicated.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (when X has string column names).
    n_samples_fit_ : int
        Number of rows in the whole (global) index. Replicated.
    shard_counts_ : tuple of int
        Rows of the index held by each rank. Replicated.

    Notes
    -----
    :meth:`fit`, :meth:`kneighbors`, :meth:`kneighbors_graph`,
    :meth:`radius_neighbors` and :meth:`radius_neighbors_graph` are
    collective. A rank may hold zero index rows and pass zero queries.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import NearestNeighbors
    >>> nn = NearestNeighbors(n_neighbors=2).fit(np.array([[0.0], [1.0], [3.0]]))
    >>> nn.kneighbors(np.array([[0.9]]), return_distance=False)
    array([[1, 0]])
    """

    def __init__(
        self,
        *,
        n_neighbors=5,
        radius=1.0,
        algorithm="auto",
        leaf_size=30,
        metric="minkowski",
        p=2,
        metric_params=None,
        n_jobs=None,
        batch_size=None,
        comms=None,
    ):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.batch_size = batch_size
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Keep this rank's rows as its shard of the index.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's index rows (NumPy or CuPy; may have zero rows).
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : NearestNeighbors
            The fitted estimator.
        """
        self._fit_index(X)
        return self


NearestNeighbors.__doc__ = NearestNeighbors.__doc__.format(shared=DISTRIBUTED_DOC)
