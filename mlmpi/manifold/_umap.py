"""UMAP over row-sharded data, the same embedding at any number of ranks."""

import warnings
from numbers import Integral, Real

import joblib
import numpy as np
from scipy.sparse import csr_matrix
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, on_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import Interval, StrOptions, _fit_context
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..neighbors._base import METRICS
from ..random import RowStream, shared_seed
from ..utils.validation import RowLayout, agree, check_local, validate_fit_data
from . import _umap_graph as fuzzy
from ._local_rows import LocalRows
from ._t_sne_init import check_given_embedding, given_embedding
from ._umap_layout import find_ab_params, optimize_layout, pruned
from ._umap_spectral import spectral_embedding

_NOISE_STREAM = 0x756D6170 + 1
_RANDOM_STREAM = 0x756D6170 + 2


class UMAP(
    DistributedEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Uniform Manifold Approximation and Projection of the rows of every rank together.

    umap-learn's :class:`umap.UMAP` for row-sharded data: ``fit``,
    ``fit_transform`` and ``transform`` are collective, and ``embedding_``
    holds this rank's rows. The embedding has the same bits at any number of
    ranks (and with any split of the rows; a rank may hold none). It is not
    umap-learn's embedding: umap-learn moves the rows one edge at a time in
    one sequence, while here every pass of an epoch moves all rows against
    the embedding as the pass began (see the user guide). Rows are cast to
    float32, as umap-learn does.

    How it is computed:

    - the fuzzy graph from each row's ``n_neighbors`` exact nearest rows
      (:class:`mlmpi.NearestNeighbors`, the row itself first), umap-learn's
      per-row ``rho`` and ``sigma``, and the fuzzy union with the transposed
      memberships (one all-to-all exchange): umap-learn's graph;
    - the spectral start: the normalised Laplacian's eigenvectors by a
      distributed LOBPCG (each product gathers an ``n × (n_components + 2)``
      block);
    - each epoch is two passes, each after gathering the embedding
      (``n · n_components`` float32 values): each rank moves its rows along
      their due edges with every gradient taken at the gathered positions,
      with umap-learn's sampling schedule; negative samples come from a
      counter-based generator addressed by (epoch, edge, draw).

    Parameters
    ----------
    n_neighbors : int, default=15
        Size of each row's neighbourhood (the row included), at least 2;
        at most ``n_samples - 1`` (larger values are truncated, with a warning).
    n_components : int, default=2
        Dimension of the embedded space.
    metric : str, default='euclidean'
        The metric of the neighbour search (those of
        :class:`mlmpi.NearestNeighbors`: 'euclidean', 'sqeuclidean',
        'cosine', 'manhattan', 'chebyshev', 'minkowski' and their aliases),
        or 'precomputed': each rank passes its dense rows of the distance matrix.
    metric_kwds : dict, default=None
        Keyword arguments of the metric (``p`` for 'minkowski').
    n_epochs : int, default=None
        Epochs of the layout; None: 500 up to 10,000 rows, 200 above
        (umap-learn's rule, with the global row count).
    learning_rate : float, default=1.0
        The initial learning rate, decreasing linearly to 0.
    init : {'spectral', 'random'} or ndarray of shape (n_samples, n_components), default='spectral'
        The start. An array holds the start of all global rows, the same on
        every rank (each rank takes its rows).
    min_dist : float, default=0.1
        The smallest distance between embedded rows.
    spread : float, default=1.0
        The scale of the embedded rows, at least ``min_dist``.
    set_op_mix_ratio : float, default=1.0
        1.0: the fuzzy union of the rows' memberships; 0.0: their intersection.
    local_connectivity : float, default=1.0
        Neighbours each row is assumed connected to.
    repulsion_strength : float, default=1.0
        The weight of the negative samples.
    negative_sample_rate : int, default=5
        Negative samples per positive sample.
    a, b : float, default=None
        The curve's parameters; None: fitted to ``min_dist`` and ``spread``.
    random_state : int, RandomState instance or None, default=None
        Seeds the start and the negative samples; None or a ``RandomState``:
        rank 0 draws a seed for every rank. The result is reproducible
        whatever the threads or ranks (umap-learn forces one thread for that).
    transform_seed : int, default=42
        Seeds the negative samples of :meth:`transform`.
    verbose : bool, default=False
        Progress printed by rank 0.
    n_jobs : int, default=None
        Accepted for umap-learn's API; each rank runs one thread (one rank per core).
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_local, n_components), float32
        This rank's rows of the embedding. Local.
    graph_ : scipy.sparse.csr_matrix of shape (n_local, n_samples)
        This rank's rows of the fuzzy graph (global columns). Local.
    n_features_in_ : int
        Number of features seen during :meth:`fit`. Replicated.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during :meth:`fit` (string column names only).

    See Also
    --------
    mlmpi.manifold.TSNE : t-distributed Stochastic Neighbor Embedding.

    Notes
    -----
    ``fit``, ``fit_transform`` and ``transform`` are collective. Memory per
    rank: this rank's rows, their neighbours and edges, and the gathered
    embedding (``n_samples · n_components`` values, and the spectral start's
    ``n_samples · (n_components + 2)``). The fitted search keeps this rank's
    rows for :meth:`transform`.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.manifold import UMAP
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> embedding = UMAP(n_neighbors=5, random_state=0).fit_transform(X)
    >>> embedding.shape
    (40, 2)
    """

    _parameter_constraints: dict = {
        "n_neighbors": [Interval(Integral, 2, None, closed="left")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "metric": [StrOptions(set(METRICS))],
        "metric_kwds": [dict, None],
        "n_epochs": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "init": [StrOptions({"spectral", "random"}), np.ndarray],
        "min_dist": [Interval(Real, 0, None, closed="left")],
        "spread": [Interval(Real, 0, None, closed="neither")],
        "set_op_mix_ratio": [Interval(Real, 0, 1, closed="both")],
        "local_connectivity": [Interval(Real, 0, None, closed="left")],
        "repulsion_strength": [Interval(Real, 0, None, closed="left")],
        "negative_sample_rate": [Interval(Integral, 1, None, closed="left")],
        "a": [Interval(Real, 0, None, closed="neither"), None],
        "b": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
        "transform_seed": ["random_state"],
        "verbose": ["verbose"],
        "n_jobs": [None, Integral],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        n_neighbors=15,
        n_components=2,
        *,
        metric="euclidean",
        metric_kwds=None,
        n_epochs=None,
        learning_rate=1.0,
        init="spectral",
        min_dist=0.1,
        spread=1.0,
        set_op_mix_ratio=1.0,
        local_connectivity=1.0,
        repulsion_strength=1.0,
        negative_sample_rate=5,
        a=None,
        b=None,
        random_state=None,
        transform_seed=42,
        verbose=False,
        n_jobs=None,
        comms=None,
    ):
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.metric = metric
        self.metric_kwds = metric_kwds
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.init = init
        self.min_dist = min_dist
        self.spread = spread
        self.set_op_mix_ratio = set_op_mix_ratio
        self.local_connectivity = local_connectivity
        self.repulsion_strength = repulsion_strength
        self.negative_sample_rate = negative_sample_rate
        self.a = a
        self.b = b
        self.random_state = random_state
        self.transform_seed = transform_seed
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the embedding of every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features) or (n_local, n_samples)
            This rank's rows (may be empty; CSR), or with ``metric='precomputed'``
            its dense rows of the distance matrix.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        self._fit(X)
        return self

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit the embedding of every rank's rows and return this rank's rows of it.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features) or (n_local, n_samples)
            As for :meth:`fit`.
        y : None
            Ignored.

        Returns
        -------
        X_new : ndarray of shape (n_local, n_components)
            This rank's rows of the embedding (``embedding_``).
        """
        self._fit(X)
        return self.embedding_

    def _say(self, comms, message):
        if self.verbose and comms.rank == 0:
            print(f"[UMAP] {message}")

    def _check_params(self, n_samples):
        """umap-learn's checks that need the global row count (replicated facts)."""
        if self.min_dist > self.spread:
            raise ValueError("min_dist must be less than or equal to spread")
        if isinstance(self.init, np.ndarray):
            check_given_embedding(self.init, n_samples, self.n_components)

    def _fit(self, X):
        comms = self._get_comms()
        X, _, _, layout = validate_fit_data(
            self,
            X,
            comms=comms,
            dtype=np.float32,  # as umap-learn: the neighbour search runs in float32
            ensure_min_samples=2,
            accept_sparse="csr",
        )
        xp = get_namespace(X)
        X = on_host(X)
        n_samples = layout.n_samples
        self._check_params(n_samples)
        self._n_neighbors = min(self.n_neighbors, n_samples - 1)
        if self._n_neighbors < self.n_neighbors:
            warnings.warn(
                "n_neighbors is larger than the dataset size; truncating to X.shape[0] - 1",
                UserWarning,
                stacklevel=3,
            )
        if self.a is None or self.b is None:
            self._a, self._b = find_ab_params(self.spread, self.min_dist)
        else:
            self._a, self._b = float(self.a), float(self.b)
        seed = shared_seed(self.random_state, comms)
        self._say(comms, f"Finding the {self._n_neighbors} nearest neighbours of {n_samples} rows")
        self._search, distances, indices = fuzzy.nearest_rows(
            X, self._n_neighbors, self.metric, self.metric_kwds, layout, comms
        )
        graph = fuzzy.fuzzy_graph(
            distances,
            indices,
            n_neighbors=self._n_neighbors,
            set_op_mix_ratio=self.set_op_mix_ratio,
            local_connectivity=self.local_connectivity,
            layout=layout,
            comms=comms,
        )
        self.graph_ = csr_matrix(
            (graph.values, graph.indices, graph.indptr), shape=(layout.n_local, n_samples)
        )
        n_epochs = self.n_epochs if self.n_epochs is not None else _default_epochs(n_samples)
        kept, largest = pruned(
            graph, n_epochs if n_epochs > 10 else _default_epochs(n_samples), comms
        )
        self._say(comms, "Starting the layout")
        Y = _scaled_to_box(self._start(kept, seed, layout, comms), comms)
        self._say(comms, f"Optimising the layout over {n_epochs} epochs")
        optimize_layout(
            Y,
            kept,
            tail=None,
            first_row=layout.offset,
            n_epochs=n_epochs,
            largest=largest,
            a=self._a,
            b=self._b,
            gamma=float(self.repulsion_strength),
            initial_alpha=float(self.learning_rate),
            negative_sample_rate=self.negative_sample_rate,
            seed=seed,
            comms=comms,
        )
        self._fitted_hash = joblib.hash(X)
        self.embedding_ = to_namespace(Y, xp)

    def _start(self, graph, seed, layout, comms):
        """This rank's rows of the start (float32), before scaling to the box. Collective."""
        if isinstance(self.init, np.ndarray):
            return given_embedding(self.init, layout).astype(np.float32)
        if self.init == "spectral":
            vectors = spectral_embedding(graph, self.n_components, seed, layout, comms)
            if vectors is not None:
                return _noisy_scale(vectors, seed, layout, comms)
            warnings.warn(
                f"The spectral start needs at least {3 * (self.n_components + 2)} rows; "
                "falling back to the random start.",
                UserWarning,
                stacklevel=3,
            )
        uniform = RowStream(seed, _RANDOM_STREAM, self.n_components).uniform(
            layout.offset, layout.n_local
        )
        return (20.0 * uniform - 10.0).astype(np.float32)

    @collective_method
    def transform(self, X):
        """Embed new rows into the fitted embedding (umap-learn's ``transform``).

        This method is collective. Each new row starts at the
        membership-weighted mean of its nearest fitted rows and moves for
        ``n_epochs // 3`` epochs (100 up to 10,000 new rows and 30 above when
        ``n_epochs`` is None) against the fitted embedding, which stays
        fixed. The fitted rows themselves, passed again on every rank, return
        ``embedding_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local_new, n_features)
            This rank's new rows (may be empty), or with
            ``metric='precomputed'`` their dense distances to every fitted row.

        Returns
        -------
        X_new : ndarray of shape (n_local_new, n_components)
            This rank's rows of the new embedding.
        """
        check_is_fitted(self)
        comms = self._get_comms()

        def check():
            rows = check_local(self, X, dtype=np.float32, accept_sparse="csr")
            host = on_host(rows)
            return (rows, host), (host.shape[0], joblib.hash(host) == self._fitted_hash)

        (rows, host), facts = agree(comms, check)
        xp = get_namespace(rows)
        if all(same for _, same in facts):
            return self.embedding_
        layout = RowLayout(tuple(count for count, _ in facts), comms.rank)
        return to_namespace(self._transform(host, layout, comms), xp)

    def _transform(self, X, layout, comms):
        distances, indices = self._search.kneighbors(X, n_neighbors=self._n_neighbors)
        distances = np.asarray(distances).astype(np.float32)
        indices = np.asarray(indices, dtype=np.int64)
        strengths, _, _ = fuzzy.memberships(
            distances,
            indices,
            n_neighbors=self._n_neighbors,
            local_connectivity=max(0.0, self.local_connectivity - 1.0),
            first_row=-1,
            comms=comms,
        )
        indptr = np.arange(0, strengths.size + 1, self._n_neighbors, dtype=np.int64)
        graph = LocalRows(indptr, indices.ravel(), strengths.ravel()).kept(strengths.ravel() != 0)
        fitted = np.ascontiguousarray(comms.allgatherv(np.asarray(on_host(self.embedding_))))
        Y = np.empty((layout.n_local, self.n_components), dtype=np.float32)
        kernels_for("umap", Y).weighted_average_rows(
            graph.indptr, graph.indices, graph.values, fitted, Y
        )
        if self.n_epochs is None:
            n_epochs = 100 if layout.n_samples <= 10_000 else 30
        else:
            n_epochs = max(int(self.n_epochs // 3), 1)
        kept, largest = pruned(graph, n_epochs, comms)
        return optimize_layout(
            Y,
            kept,
            tail=fitted,
            first_row=layout.offset,
            n_epochs=n_epochs,
            largest=largest,
            a=self._a,
            b=self._b,
            gamma=float(self.repulsion_strength),
            initial_alpha=float(self.learning_rate) / 4.0,
            negative_sample_rate=self.negative_sample_rate,
            seed=shared_seed(self.transform_seed, comms),
            comms=comms,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float32"]  # float32 out, as umap-learn
        return tags

    @property
    def _n_features_out(self):
        """Number of transformed output features."""
        return self.embedding_.shape[1]


def _default_epochs(n_samples):
    """umap-learn's epochs: 500 up to 10,000 rows, 200 above."""
    return 500 if n_samples <= 10_000 else 200


def _noisy_scale(vectors, seed, layout, comms):
    """umap-learn's ``noisy_scale_coords``: the largest coordinate (of every rank)
    scaled to 10, plus N(0, 1e-4²) noise drawn per global row. Collective."""
    largest = comms.allreduce(np.array([np.abs(vectors).max(initial=0.0)]), op="max")[0]
    coords = (vectors * (10.0 / largest)).astype(np.float32)
    noise = RowStream(seed, _NOISE_STREAM, vectors.shape[1]).normal(layout.offset, layout.n_local)
    return coords + (1e-4 * noise).astype(np.float32)


def _scaled_to_box(Y, comms):
    """Each column shifted and scaled to [0, 10] by its extremes over every rank
    (umap-learn's last step before the layout), float32, C order. Collective."""
    d = Y.shape[1]
    local = np.concatenate([-Y.min(axis=0, initial=np.inf), Y.max(axis=0, initial=-np.inf)])
    extremes = comms.allreduce(local.astype(np.float64), op="max")
    low, high = (-extremes[:d]).astype(np.float32), extremes[d:].astype(np.float32)
    return np.ascontiguousarray((10.0 * (Y - low) / (high - low)).astype(np.float32))
