"""Gaussian mixture fitted by EM on row-sharded data (scikit-learn's API)."""

import math
from typing import ClassVar

import numpy as np

from .._array import get_namespace
from .._contract import collective_method
from .._sklearn_compat import (
    _check_means,
    _check_mixture_weights,
    _check_precisions,
    _compute_precision_cholesky,
    _compute_precision_cholesky_from_precisions,
)
from ._base import BaseMixture
from ._stats import as_host, gaussian_parameters, global_rows, global_sum


def precisions_from_cholesky(precisions_chol, covariance_type):
    """The precisions ``L Lᵀ`` from their Cholesky factors (host)."""
    if covariance_type == "full":
        return precisions_chol @ precisions_chol.transpose(0, 2, 1)
    if covariance_type == "tied":
        return precisions_chol @ precisions_chol.T
    return precisions_chol**2


class GaussianMixture(BaseMixture):
    """Gaussian mixture fitted by EM on the rows of every rank (scikit-learn's API).

    scikit-learn's :class:`sklearn.mixture.GaussianMixture` on the union of
    the shards: each rank computes the responsibilities of its own rows, and
    the M-step's sufficient statistics (the responsibility sums, weighted
    sums and covariance statistics) come from one allreduce each. The
    initialisations replay scikit-learn's random draws over the global rows,
    and the lower bound is an exact sum, so ``n_iter_`` and ``converged_``
    do not depend on the number of ranks.

    Parameters
    ----------
    n_components : int, default=1
        The number of mixture components.
    covariance_type : {'full', 'tied', 'diag', 'spherical'}, default='full'
        The type of covariance parameters.
    tol : float, default=1e-3
        The convergence threshold on the change of the lower bound.
    reg_covar : float, default=1e-6
        Non-negative regularization added to the diagonal of covariance.
    max_iter : int, default=100
        The number of EM iterations to perform.
    n_init : int, default=1
        The number of initializations to perform; the best is kept.
    init_params : {'kmeans', 'k-means++', 'random', 'random_from_data'}, default='kmeans'
        The method used to initialize the responsibilities (see
        :ref:`the user guide <mixture_guide>` for how each is reproduced).
    weights_init : array-like of shape (n_components,), default=None
        The user-provided initial weights (the same on every rank).
    means_init : array-like of shape (n_components, n_features), default=None
        The user-provided initial means (the same on every rank).
    precisions_init : array-like, default=None
        The user-provided initial precisions (the same on every rank).
    random_state : int, RandomState instance or None, default=None
        The stream of the initialisation and of :meth:`sample`. With a
        RandomState or None, rank 0's generator is used and its state is
        copied to the other ranks.
    warm_start : bool, default=False
        Start the next ``fit`` from this one's solution.
    verbose : int, default=0
        Verbosity (rank 0 prints).
    verbose_interval : int, default=10
        Number of iterations between two prints.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    weights_ : array of shape (n_components,)
        Replicated.
    means_ : array of shape (n_components, n_features)
        Replicated.
    covariances_ : array
        Replicated; the shape depends on ``covariance_type``.
    precisions_ : array
        Replicated.
    precisions_cholesky_ : array
        Replicated.
    converged_ : bool
        Replicated.
    n_iter_ : int
        Replicated.
    lower_bound_ : float
        Mean log-likelihood of the global rows under the best fit. Replicated.
    lower_bounds_ : list of float
        The lower bound of each iteration of the best fit. Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Array attributes are in X's namespace and floating dtype (NumPy in,
    NumPy out; CuPy in, CuPy out).

    Notes
    -----
    :meth:`fit`, :meth:`fit_predict`, :meth:`score`, :meth:`bic`,
    :meth:`aic` and :meth:`sample` are collective. :meth:`predict`,
    :meth:`predict_proba` and :meth:`score_samples` work on local rows and
    do not communicate. A rank may hold zero rows.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import GaussianMixture
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]])
    >>> gm = GaussianMixture(n_components=2, random_state=0).fit(X)
    >>> gm.means_
    array([[10.,  2.],
           [ 1.,  2.]])
    >>> gm.predict([[0, 0], [12, 3]])
    array([1, 0])
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseMixture._parameter_constraints,
        "weights_init": ["array-like", None],
        "means_init": ["array-like", None],
        "precisions_init": ["array-like", None],
    }

    def __init__(
        self,
        n_components=1,
        *,
        covariance_type="full",
        tol=1e-3,
        reg_covar=1e-6,
        max_iter=100,
        n_init=1,
        init_params="kmeans",
        weights_init=None,
        means_init=None,
        precisions_init=None,
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        comms=None,
    ):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.precisions_init = precisions_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.comms = comms

    def _check_parameters(self, X):
        """scikit-learn's checks of the initial parameters (replicated: the
        contract agreed on them, so each raises on every rank or on none)."""
        n_features = X.shape[1]
        if self.weights_init is not None:
            self.weights_init = _check_mixture_weights(self.weights_init, self.n_components, xp=np)
        if self.means_init is not None:
            self.means_init = _check_means(self.means_init, self.n_components, n_features, xp=np)
        if self.precisions_init is not None:
            self.precisions_init = _check_precisions(
                self.precisions_init, self.covariance_type, self.n_components, n_features, xp=np
            )

    def _initialize_parameters(self, X, random_state, layout=None):
        if self.weights_init is None or self.means_init is None or self.precisions_init is None:
            super()._initialize_parameters(X, random_state, layout)
        else:
            self._initialize(X, None)

    def _initialize(self, X, resp):
        weights = means = covariances = None
        if resp is not None:
            weights, means, covariances = gaussian_parameters(
                X, resp, self.reg_covar, self.covariance_type, self._get_comms()
            )
            if self.weights_init is None:
                weights = weights / global_rows(X, self._get_comms())
        self.weights_ = as_host(weights if self.weights_init is None else self.weights_init)
        self.means_ = as_host(means if self.means_init is None else self.means_init)
        if self.precisions_init is None:
            self.covariances_ = covariances
            self.precisions_cholesky_ = _compute_precision_cholesky(
                covariances, self.covariance_type, xp=np
            )
        else:
            self.precisions_cholesky_ = _compute_precision_cholesky_from_precisions(
                as_host(self.precisions_init), self.covariance_type, xp=np
            )

    def _m_step(self, X, log_resp):
        weights, self.means_, self.covariances_ = gaussian_parameters(
            X,
            get_namespace(log_resp).exp(log_resp),
            self.reg_covar,
            self.covariance_type,
            self._get_comms(),
        )
        self.weights_ = weights / weights.sum()
        self.precisions_cholesky_ = _compute_precision_cholesky(
            self.covariances_, self.covariance_type, xp=np
        )

    def _log_weights(self):
        return np.log(self.weights_)

    def _compute_lower_bound(self, _, log_prob_norm):
        comms = self._get_comms()
        return global_sum(log_prob_norm, comms) / global_rows(log_prob_norm, comms)

    def _get_parameters(self):
        return (self.weights_, self.means_, self.covariances_, self.precisions_cholesky_)

    def _set_parameters(self, params):
        self.weights_, self.means_, self.covariances_, self.precisions_cholesky_ = params
        self.precisions_ = precisions_from_cholesky(self.precisions_cholesky_, self.covariance_type)

    def _array_attributes(self):
        return ("weights_", "means_", "covariances_", "precisions_", "precisions_cholesky_")

    def _n_parameters(self):
        """Return the number of free parameters in the model."""
        _, n_features = self.means_.shape
        if self.covariance_type == "full":
            cov_params = self.n_components * n_features * (n_features + 1) / 2.0
        elif self.covariance_type == "diag":
            cov_params = self.n_components * n_features
        elif self.covariance_type == "tied":
            cov_params = n_features * (n_features + 1) / 2.0
        else:
            cov_params = self.n_components
        mean_params = n_features * self.n_components
        return int(cov_params + mean_params + self.n_components - 1)

    @collective_method
    def bic(self, X):
        """Bayesian information criterion of the model on the rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : array of shape (n_local, n_features)
            This rank's rows (may be empty).

        Returns
        -------
        bic : float
            The lower the better. Replicated.
        """
        deviance, n_samples = self._deviance(X)
        return deviance + self._n_parameters() * math.log(n_samples)

    @collective_method
    def aic(self, X):
        """Akaike information criterion of the model on the rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : array of shape (n_local, n_features)
            This rank's rows (may be empty).

        Returns
        -------
        aic : float
            The lower the better. Replicated.
        """
        return self._deviance(X)[0] + 2 * self._n_parameters()

    def _deviance(self, X):
        """``(-2 · score(X) · n_samples, n_samples)`` over every rank, rounded as
        scikit-learn's (the mean log-likelihood times the rows). Collective."""
        total, n_samples = self._total_log_likelihood(X)
        return -2 * total / n_samples * n_samples, n_samples
