"""Variational Bayesian Gaussian mixture on row-sharded data (scikit-learn's API).

The same distributed sufficient statistics as :class:`GaussianMixture`
(:func:`._stats.gaussian_parameters`); the priors' updates, the expected
log-weights and the lower bound are scikit-learn's formulas on the replicated
k × d (× d) arrays. The priors that scikit-learn takes from the data (the
mean and covariance of X) come from the global rows.
"""

from numbers import Real
from typing import ClassVar

import numpy as np
from scipy.special import betaln, digamma
from sklearn.utils import check_array

from .._array import get_namespace, is_device_array, to_host, to_namespace
from .._sklearn_compat import (
    Interval,
    StrOptions,
    _check_precision_matrix,
    _check_precision_positivity,
    _check_shape,
    _compute_log_det_cholesky,
    _compute_precision_cholesky,
    _log_dirichlet_norm,
    _log_wishart_norm,
)
from ._base import BaseMixture
from ._gaussian_mixture import precisions_from_cholesky
from ._stats import data_moments, gaussian_parameters, global_sum


class BayesianGaussianMixture(BaseMixture):
    """Variational Bayesian Gaussian mixture on the rows of every rank (scikit-learn's API).

    scikit-learn's :class:`sklearn.mixture.BayesianGaussianMixture` on the
    union of the shards, with the distributed statistics of
    :class:`~mlmpi.mixture.GaussianMixture`; the lower bound's sum over the
    rows is exact, so ``n_iter_`` and ``converged_`` do not depend on the
    number of ranks.

    Parameters
    ----------
    n_components : int, default=1
        The number of mixture components (an upper bound).
    covariance_type : {'full', 'tied', 'diag', 'spherical'}, default='full'
    tol : float, default=1e-3
    reg_covar : float, default=1e-6
    max_iter : int, default=100
    n_init : int, default=1
    init_params : {'kmeans', 'k-means++', 'random', 'random_from_data'}, default='kmeans'
    weight_concentration_prior_type : {'dirichlet_process', 'dirichlet_distribution'}, \
            default='dirichlet_process'
    weight_concentration_prior : float, default=None
        None means ``1 / n_components``.
    mean_precision_prior : float, default=None
        None means 1.
    mean_prior : array-like of shape (n_features,), default=None
        None means the mean of the global rows.
    degrees_of_freedom_prior : float, default=None
        None means ``n_features``.
    covariance_prior : float or array-like, default=None
        None means the covariance of the global rows.
    random_state : int, RandomState instance or None, default=None
        As in :class:`~mlmpi.mixture.GaussianMixture`.
    warm_start : bool, default=False
    verbose : int, default=0
    verbose_interval : int, default=10
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    weights_, means_, covariances_, precisions_, precisions_cholesky_ : array
        Replicated, as in :class:`~mlmpi.mixture.GaussianMixture`.
    converged_, n_iter_, lower_bound_, lower_bounds_ :
        Replicated.
    weight_concentration_prior_, mean_precision_prior_, mean_prior_, \
    degrees_of_freedom_prior_, covariance_prior_ :
        The priors used. Replicated.
    weight_concentration_ : array or tuple of arrays
        Replicated.
    mean_precision_ : array of shape (n_components,)
        Replicated.
    degrees_of_freedom_ : array of shape (n_components,)
        Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    :meth:`fit`, :meth:`fit_predict`, :meth:`score` and :meth:`sample` are
    collective. :meth:`predict`, :meth:`predict_proba` and
    :meth:`score_samples` do not communicate.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import BayesianGaussianMixture
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [4, 2], [12, 4], [10, 7]])
    >>> bgm = BayesianGaussianMixture(n_components=2, random_state=42).fit(X)
    >>> bgm.means_.round(2)
    array([[2.5 , 2.29],
           [8.46, 4.52]])
    >>> bgm.predict([[0, 0], [9, 3]])
    array([0, 1])
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseMixture._parameter_constraints,
        "weight_concentration_prior_type": [
            StrOptions({"dirichlet_process", "dirichlet_distribution"})
        ],
        "weight_concentration_prior": [None, Interval(Real, 0.0, None, closed="neither")],
        "mean_precision_prior": [None, Interval(Real, 0.0, None, closed="neither")],
        "mean_prior": [None, "array-like"],
        "degrees_of_freedom_prior": [None, Interval(Real, 0.0, None, closed="neither")],
        "covariance_prior": [None, "array-like", Interval(Real, 0.0, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        n_components=1,
        covariance_type="full",
        tol=1e-3,
        reg_covar=1e-6,
        max_iter=100,
        n_init=1,
        init_params="kmeans",
        weight_concentration_prior_type="dirichlet_process",
        weight_concentration_prior=None,
        mean_precision_prior=None,
        mean_prior=None,
        degrees_of_freedom_prior=None,
        covariance_prior=None,
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
        self.weight_concentration_prior_type = weight_concentration_prior_type
        self.weight_concentration_prior = weight_concentration_prior
        self.mean_precision_prior = mean_precision_prior
        self.mean_prior = mean_prior
        self.degrees_of_freedom_prior = degrees_of_freedom_prior
        self.covariance_prior = covariance_prior
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.comms = comms

    # -- priors ------------------------------------------------------------------------

    def _check_parameters(self, X):
        """The priors (scikit-learn's rules); those taken from the data come
        from the global rows. Collective when a prior is taken from the data."""
        n_features = X.shape[1]
        self.weight_concentration_prior_ = (
            1.0 / self.n_components
            if self.weight_concentration_prior is None
            else self.weight_concentration_prior
        )
        self.mean_precision_prior_ = (
            1.0 if self.mean_precision_prior is None else self.mean_precision_prior
        )
        moments = None
        if self.mean_prior is None or self.covariance_prior is None:
            moments = data_moments(X, self._get_comms())
        if self.mean_prior is None:
            self.mean_prior_ = moments[1].astype(X.dtype)
        else:
            self.mean_prior_ = check_array(
                self.mean_prior, dtype=[np.float64, np.float32], ensure_2d=False
            )
            _check_shape(self.mean_prior_, (n_features,), "means")
        if self.degrees_of_freedom_prior is None:
            self.degrees_of_freedom_prior_ = n_features
        elif self.degrees_of_freedom_prior > n_features - 1.0:
            self.degrees_of_freedom_prior_ = self.degrees_of_freedom_prior
        else:
            raise ValueError(
                "The parameter 'degrees_of_freedom_prior' should be greater than "
                f"{n_features - 1:d}, but got {self.degrees_of_freedom_prior:.3f}."
            )
        self._check_covariance_prior(n_features, moments)

    def _check_covariance_prior(self, n_features, moments):
        if self.covariance_prior is None:
            n_samples, _, scatter = moments
            covariance = np.atleast_2d(scatter / (n_samples - 1))
            variance = np.diag(covariance)
            self.covariance_prior_ = {
                "full": covariance,
                "tied": covariance,
                "diag": variance,
                "spherical": variance.mean(),
            }[self.covariance_type]
        elif self.covariance_type in ("full", "tied"):
            self.covariance_prior_ = check_array(
                self.covariance_prior, dtype=[np.float64, np.float32], ensure_2d=False
            )
            _check_shape(
                self.covariance_prior_,
                (n_features, n_features),
                f"{self.covariance_type} covariance_prior",
            )
            _check_precision_matrix(self.covariance_prior_, self.covariance_type)
        elif self.covariance_type == "diag":
            self.covariance_prior_ = check_array(
                self.covariance_prior, dtype=[np.float64, np.float32], ensure_2d=False
            )
            _check_shape(
                self.covariance_prior_,
                (n_features,),
                f"{self.covariance_type} covariance_prior",
            )
            _check_precision_positivity(self.covariance_prior_, self.covariance_type)
        else:
            self.covariance_prior_ = self.covariance_prior

    # -- the variational updates (replicated) ------------------------------------------

    def _initialize(self, X, resp):
        self._update(X, resp)

    def _m_step(self, X, log_resp):
        self._update(X, get_namespace(log_resp).exp(log_resp))

    def _update(self, X, resp):
        nk, xk, sk = gaussian_parameters(
            X, resp, self.reg_covar, self.covariance_type, self._get_comms()
        )
        self._estimate_weights(nk)
        self._estimate_means(nk, xk)
        self._estimate_precisions(nk, xk, sk)

    def _estimate_weights(self, nk):
        if self.weight_concentration_prior_type == "dirichlet_process":
            self.weight_concentration_ = (
                1.0 + nk,
                self.weight_concentration_prior_ + np.hstack((np.cumsum(nk[::-1])[-2::-1], 0)),
            )
        else:
            self.weight_concentration_ = self.weight_concentration_prior_ + nk

    def _estimate_means(self, nk, xk):
        self.mean_precision_ = self.mean_precision_prior_ + nk
        self.means_ = (
            self.mean_precision_prior_ * self.mean_prior_ + nk[:, None] * xk
        ) / self.mean_precision_[:, None]

    def _estimate_precisions(self, nk, xk, sk):
        diff = xk - self.mean_prior_
        shrink = self.mean_precision_prior_ / self.mean_precision_
        if self.covariance_type == "full":
            self.degrees_of_freedom_ = self.degrees_of_freedom_prior_ + nk
            covariances = (
                self.covariance_prior_
                + nk[:, None, None] * sk
                + (nk * shrink)[:, None, None] * diff[:, :, None] * diff[:, None, :]
            )
            covariances /= self.degrees_of_freedom_[:, None, None]
        elif self.covariance_type == "tied":
            self.degrees_of_freedom_ = self.degrees_of_freedom_prior_ + nk.sum() / self.n_components
            covariances = (
                self.covariance_prior_
                + sk * nk.sum() / self.n_components
                + self.mean_precision_prior_
                / self.n_components
                * np.dot((nk / self.mean_precision_) * diff.T, diff)
            )
            covariances /= self.degrees_of_freedom_
        elif self.covariance_type == "diag":
            self.degrees_of_freedom_ = self.degrees_of_freedom_prior_ + nk
            covariances = self.covariance_prior_ + nk[:, None] * (
                sk + shrink[:, None] * np.square(diff)
            )
            covariances /= self.degrees_of_freedom_[:, None]
        else:
            self.degrees_of_freedom_ = self.degrees_of_freedom_prior_ + nk
            covariances = self.covariance_prior_ + nk * (sk + shrink * np.mean(np.square(diff), 1))
            covariances /= self.degrees_of_freedom_
        self.covariances_ = covariances
        self.precisions_cholesky_ = _compute_precision_cholesky(
            covariances, self.covariance_type, xp=np
        )

    def _estimate_log_weights(self):
        concentration = self.weight_concentration_
        if isinstance(concentration, tuple):
            concentration = tuple(to_host(c) for c in concentration)
        else:
            concentration = to_host(concentration)
        if self.weight_concentration_prior_type == "dirichlet_process":
            digamma_sum = digamma(concentration[0] + concentration[1])
            digamma_a = digamma(concentration[0])
            digamma_b = digamma(concentration[1])
            return digamma_a - digamma_sum + np.hstack((0, np.cumsum(digamma_b - digamma_sum)[:-1]))
        return digamma(concentration) - digamma(np.sum(concentration))

    def _log_weights(self):
        """Expected log-weights plus the per-component terms of scikit-learn's
        ``_estimate_log_prob`` beyond the Gaussian density."""
        n_features = self.means_.shape[1]
        dof = np.asarray(to_host(self.degrees_of_freedom_), dtype=np.float64)
        log_lambda = n_features * np.log(2.0) + np.sum(
            digamma(0.5 * (dof - np.arange(0, n_features)[:, None])), 0
        )
        return (
            self._estimate_log_weights()
            - 0.5 * n_features * np.log(dof)
            + 0.5 * (log_lambda - n_features / to_host(self.mean_precision_))
        )

    def _compute_lower_bound(self, log_resp, log_prob_norm):
        xp = get_namespace(log_resp)
        n_features = self.mean_prior_.shape[0]
        log_det_precisions_chol = _compute_log_det_cholesky(
            self.precisions_cholesky_, self.covariance_type, n_features
        ) - 0.5 * n_features * np.log(self.degrees_of_freedom_)
        log_wishart_norm = _log_wishart_norm(
            self.degrees_of_freedom_, log_det_precisions_chol, n_features
        )
        if self.covariance_type == "tied":
            log_wishart = self.n_components * np.float64(log_wishart_norm)
        else:
            log_wishart = np.sum(log_wishart_norm)
        if self.weight_concentration_prior_type == "dirichlet_process":
            log_norm_weight = -np.sum(
                betaln(self.weight_concentration_[0], self.weight_concentration_[1])
            )
        else:
            log_norm_weight = _log_dirichlet_norm(self.weight_concentration_)
        entropy = global_sum((xp.exp(log_resp) * log_resp).sum(axis=1), self._get_comms())
        return (
            -entropy
            - log_wishart
            - log_norm_weight
            - 0.5 * n_features * np.sum(np.log(self.mean_precision_))
        )

    def _get_parameters(self):
        return (
            self.weight_concentration_,
            self.mean_precision_,
            self.means_,
            self.degrees_of_freedom_,
            self.covariances_,
            self.precisions_cholesky_,
        )

    def _set_parameters(self, params):
        (
            self.weight_concentration_,
            self.mean_precision_,
            self.means_,
            self.degrees_of_freedom_,
            self.covariances_,
            self.precisions_cholesky_,
        ) = params
        if self.weight_concentration_prior_type == "dirichlet_process":
            total = self.weight_concentration_[0] + self.weight_concentration_[1]
            tmp = self.weight_concentration_[1] / total
            weights = self.weight_concentration_[0] / total * np.hstack((1, np.cumprod(tmp[:-1])))
            self.weights_ = weights / np.sum(weights)
        else:
            self.weights_ = self.weight_concentration_ / np.sum(self.weight_concentration_)
        self.precisions_ = precisions_from_cholesky(self.precisions_cholesky_, self.covariance_type)

    def _array_attributes(self):
        return ("weights_", "means_", "covariances_", "precisions_", "precisions_cholesky_")

    def _to_host(self):
        super()._to_host()
        self._move_variational(to_host)

    def _to_namespace(self, xp, dtype):
        super()._to_namespace(xp, dtype)
        self._move_variational(lambda value: to_namespace(value, xp))

    def _move_variational(self, move):
        """The variational parameters and the priors, arrays of X's namespace
        after a fit (their dtypes stay scikit-learn's); scalars stay."""
        for name in (
            "weight_concentration_",
            "mean_precision_",
            "degrees_of_freedom_",
            "mean_prior_",
            "covariance_prior_",
        ):
            value = getattr(self, name)
            if isinstance(value, tuple):
                setattr(self, name, tuple(move(v) for v in value))
            elif isinstance(value, np.ndarray) or is_device_array(value):
                setattr(self, name, move(value))
