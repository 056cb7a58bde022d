"""t-SNE over row-sharded data, the same embedding at any number of ranks."""

from numbers import Integral, Real

import numpy as np
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from .._array import get_namespace, on_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import Interval, StrOptions, _fit_context
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..neighbors._base import METRICS
from ..random import shared_seed
from ..utils.validation import agree_on_errors, validate_fit_data
from . import _t_sne_affinities as affinities
from . import _t_sne_init as start
from ._local_rows import MACHINE_EPSILON
from ._t_sne_descent import BarnesHut, Exact, gradient_descent


class _Say:
    """scikit-learn's progress messages, printed by rank 0 at ``verbose``
    (the same on every rank: what a message needs is computed everywhere)."""

    def __init__(self, verbose, comms):
        self.verbose = verbose
        self._prints = bool(verbose) and comms.rank == 0

    def __call__(self, message):
        if self._prints:
            print(message)


class TSNE(
    DistributedEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """t-distributed Stochastic Neighbor Embedding of the rows of every rank together.

    scikit-learn's :class:`sklearn.manifold.TSNE` for row-sharded data:
    ``fit`` and ``fit_transform`` are collective, and ``embedding_`` holds
    this rank's rows. The embedding has the same bits at any number of ranks
    (and with any split of the rows, a rank may hold none); it is not
    scikit-learn's embedding bit for bit, whose sums change with its thread
    count, but t-SNE's with scikit-learn's schedule and parameters.

    How it is computed (see the user guide):

    - the joint probabilities ``P`` from each row's ``min(n - 1, 3·perplexity + 1)``
      exact nearest neighbours (:class:`mlmpi.NearestNeighbors`), by
      scikit-learn's binary search, symmetrised with one all-to-all exchange
      and normalised by an exact sum (every row with every other with
      ``method='exact'``);
    - each iteration gathers the embedding on every rank (``n · n_components``
      values), and each rank computes its rows' gradient: Barnes-Hut against
      a tree built over the gathered embedding (the same tree on every rank),
      or exactly against every row; the normalisation, the KL divergence and
      the gradient norm are exact sums over the ranks;
    - the start: ``'pca'`` projects the rows on the principal axes of the
      rows (of a uniform sample of at most 4,000,000 values when the data is
      larger), ``'random'`` draws per global row.

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the embedded space (at most 3 with ``'barnes_hut'``).

    perplexity : float, default=30.0
        The perplexity, less than the global number of rows.

    early_exaggeration : float, default=12.0
        Factor of ``P`` during the first 250 iterations.

    learning_rate : float or "auto", default="auto"
        ``'auto'``: ``max(n_samples / early_exaggeration / 4, 50)``, with the
        global ``n_samples``.

    max_iter : int, default=1000
        Maximum number of iterations (at least 250).

    n_iter_without_progress : int, default=300
        Iterations without progress (checked every 50) after which the
        optimisation stops, after the 250 exploration iterations.

    min_grad_norm : float, default=1e-7
        The optimisation stops when the gradient norm (of all rows) is below it.

    metric : str, default='euclidean'
        The metric of the neighbour search (those of
        :class:`mlmpi.NearestNeighbors`: 'euclidean', 'sqeuclidean',
        'cosine', 'manhattan', 'chebyshev', 'minkowski' and their aliases),
        or 'precomputed': each rank passes its rows of the distance matrix
        (shape ``(n_local, n_samples)``). Distances are squared, as
        scikit-learn does.

    metric_params : dict, default=None
        Keyword arguments of the metric (``p`` for 'minkowski').

    init : {"pca", "random"} or ndarray of shape (n_samples, n_components), default="pca"
        The start. An array holds the initial embedding of all global rows,
        the same on every rank (each rank takes its rows).

    verbose : int, default=0
        Progress printed by rank 0.

    random_state : int, RandomState instance or None, default=None
        Seeds the random start and the sample of the PCA start; None or a
        ``RandomState``: rank 0 draws a seed for every rank.

    method : {'barnes_hut', 'exact'}, default='barnes_hut'
        The gradient: Barnes-Hut (``O(n log n)`` per rank and iteration, the
        tree being built on every rank) or exact (``O(n · n_local)``).

    angle : float, default=0.5
        Barnes-Hut's trade-off between speed and accuracy (theta).

    n_jobs : int, default=None
        Accepted for scikit-learn's API; each rank runs one thread (one rank per core).

    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_local, n_components)
        This rank's rows of the embedding (float32 for the 'pca' and 'random'
        starts, as scikit-learn's). Local.

    kl_divergence_ : float
        Kullback-Leibler divergence after the optimisation. Replicated.

    n_features_in_ : int
        Number of features seen during :meth:`fit`. Replicated.

    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during :meth:`fit` (string column names only).

    learning_rate_ : float
        The learning rate used. Replicated.

    n_iter_ : int
        Index of the last iteration (scikit-learn's convention). Replicated.

    See Also
    --------
    mlmpi.PCA : Linear dimensionality reduction.

    Notes
    -----
    ``fit`` and ``fit_transform`` are collective. Memory per rank: this
    rank's rows and their neighbours, plus the gathered embedding
    (``n_samples · n_components`` values) and its tree; with
    ``method='exact'``, this rank's rows of the dense ``P``
    (``n_local · n_samples`` values). CSR rows are searched with the
    euclidean family and cosine; ``'precomputed'`` takes dense rows.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.manifold import TSNE
    >>> X = np.array([[0, 0, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1]], dtype=float)
    >>> embedding = TSNE(perplexity=3, init="random", random_state=0).fit_transform(X)
    >>> embedding.shape
    (4, 2)
    """

    # scikit-learn's iterations with early exaggeration, and between progress
    # checks (class attributes there too, which its tests set)
    _EXPLORATION_MAX_ITER = 250
    _N_ITER_CHECK = 50

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "perplexity": [Interval(Real, 0, None, closed="neither")],
        "early_exaggeration": [Interval(Real, 1, None, closed="left")],
        "learning_rate": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 250, None, closed="left")],
        "n_iter_without_progress": [Interval(Integral, -1, None, closed="left")],
        "min_grad_norm": [Interval(Real, 0, None, closed="left")],
        "metric": [StrOptions(set(METRICS))],
        "metric_params": [dict, None],
        "init": [StrOptions({"pca", "random"}), np.ndarray],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "method": [StrOptions({"barnes_hut", "exact"})],
        "angle": [Interval(Real, 0, 1, closed="both")],
        "n_jobs": [None, Integral],
        "comms": [None, Comms],
    }

    def __init__(
        self,
        n_components=2,
        *,
        perplexity=30.0,
        early_exaggeration=12.0,
        learning_rate="auto",
        max_iter=1000,
        n_iter_without_progress=300,
        min_grad_norm=1e-7,
        metric="euclidean",
        metric_params=None,
        init="pca",
        verbose=0,
        random_state=None,
        method="barnes_hut",
        angle=0.5,
        n_jobs=None,
        comms=None,
    ):
        self.n_components = n_components
        self.perplexity = perplexity
        self.early_exaggeration = early_exaggeration
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.n_iter_without_progress = n_iter_without_progress
        self.min_grad_norm = min_grad_norm
        self.metric = metric
        self.metric_params = metric_params
        self.init = init
        self.verbose = verbose
        self.random_state = random_state
        self.method = method
        self.angle = angle
        self.n_jobs = n_jobs
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit the embedding of every rank's rows and return this rank's rows of it.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features) or (n_local, n_samples)
            This rank's rows (may be empty; CSR, other sparse formats
            converted), or with ``metric='precomputed'`` its dense rows of
            the distance matrix.
        y : None
            Ignored.

        Returns
        -------
        X_new : ndarray of shape (n_local, n_components)
            This rank's rows of the embedding (``embedding_``).
        """
        self._fit(X)
        return self.embedding_

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the embedding of every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features) or (n_local, n_samples)
            This rank's rows (may be empty; CSR, other sparse formats
            converted), or with ``metric='precomputed'`` its dense rows of
            the distance matrix.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        self._fit(X)
        return self

    def _check_params(self, n_samples):
        """scikit-learn's checks that need the global row count (replicated facts)."""
        if self.perplexity >= n_samples:
            raise ValueError(
                f"perplexity ({self.perplexity}) must be less than n_samples ({n_samples})"
            )
        if self.metric == "precomputed" and isinstance(self.init, str) and self.init == "pca":
            raise ValueError('The parameter init="pca" cannot be used with metric="precomputed".')
        if isinstance(self.init, np.ndarray):
            start.check_given_embedding(self.init, n_samples, self.n_components)
        if self.method == "barnes_hut" and self.n_components > 3:
            raise ValueError(
                "'n_components' should be inferior to 4 for the barnes_hut algorithm as it "
                "relies on quad-tree or oct-tree."
            )

    def _fit(self, X):
        comms = self._get_comms()
        X, _, _, layout = validate_fit_data(
            self,
            X,
            comms=comms,
            dtype=[np.float32, np.float64],
            ensure_min_samples=2,
            accept_sparse="csr",
        )
        xp = get_namespace(X)
        X = on_host(X)
        n_samples = layout.n_samples
        self._check_params(n_samples)
        if self.metric == "precomputed":
            agree_on_errors(comms, lambda: _check_distances(X, n_samples))
        say = _Say(self.verbose, comms)
        self.learning_rate_ = (
            max(n_samples / self.early_exaggeration / 4, 50)
            if self.learning_rate == "auto"
            else self.learning_rate
        )
        seed = shared_seed(self.random_state, comms)
        objective = self._objective(X, layout, comms, say)
        Y = self._start(X, seed, layout, comms)
        dtype = Y.dtype
        Y = Y.astype(np.float64)
        self.kl_divergence_, self.n_iter_ = self._optimize(objective, Y, comms, say)
        self.embedding_ = to_namespace(Y.astype(dtype), xp)

    def _objective(self, X, layout, comms, say):
        """The gradient of this rank's rows, from their rows of ``P``. Collective."""
        dof = max(self.n_components - 1, 1)
        n_samples = layout.n_samples
        exact = self.method == "exact"
        P = affinities.joint_probabilities(
            X,
            n_neighbors=n_samples - 1
            if exact
            else min(n_samples - 1, int(3.0 * self.perplexity + 1)),
            perplexity=self.perplexity,
            metric=self.metric,
            metric_params=self.metric_params,
            layout=layout,
            comms=comms,
            say=say,
        )
        if not exact:
            return BarnesHut(P, self.angle, dof, layout, comms)
        P_rows = np.maximum(P.dense(n_samples), MACHINE_EPSILON)
        own = np.arange(layout.n_local)
        P_rows[own, own + layout.offset] = 0.0
        return Exact(P_rows, dof, layout, comms)

    def _start(self, X, seed, layout, comms):
        """This rank's rows of the initial embedding. Collective."""
        if isinstance(self.init, np.ndarray):
            return start.given_embedding(self.init, layout)
        if self.init == "pca":
            return start.pca_embedding(X, self.n_components, seed, layout, comms)
        return start.random_embedding(seed, self.n_components, layout)

    def _optimize(self, objective, Y, comms, say):
        """scikit-learn's two stages of gradient descent on this rank's rows ``Y``
        (moved in place): ``(KL divergence, last iteration)``. Collective."""
        exploration = self._EXPLORATION_MAX_ITER
        common = dict(
            learning_rate=self.learning_rate_,
            n_iter_check=self._N_ITER_CHECK,
            min_grad_norm=self.min_grad_norm,
            comms=comms,
            say=say,
        )
        objective.exaggerate(self.early_exaggeration)
        error, it = gradient_descent(
            objective,
            Y,
            0,
            exploration,
            momentum=0.5,
            n_iter_without_progress=exploration,
            **common,
        )
        say(f"[t-SNE] KL divergence after {it + 1} iterations with early exaggeration: {error:f}")
        if it < exploration or self.max_iter > exploration:
            objective.exaggerate(1.0)
            error, it = gradient_descent(
                objective,
                Y,
                it + 1,
                self.max_iter,
                momentum=0.8,
                n_iter_without_progress=self.n_iter_without_progress,
                **common,
            )
        say(f"[t-SNE] KL divergence after {it + 1} iterations: {error:f}")
        return error, it

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.sparse = True
        return tags

    @property
    def _n_features_out(self):
        """Number of transformed output features."""
        return self.embedding_.shape[1]


def _check_distances(D, n_samples):
    """scikit-learn's checks of this rank's rows of a precomputed distance matrix."""
    if issparse(D):
        raise TypeError(
            "mlmpi's TSNE takes dense rows of the distance matrix with "
            "metric='precomputed', not a sparse neighbours graph."
        )
    if D.shape[1] != n_samples:
        raise ValueError("X should be a square distance matrix")
    if (D < 0).any():
        raise ValueError(
            "Negative values in data passed to TSNE.fit(). With metric='precomputed', X "
            "should contain positive distances."
        )
