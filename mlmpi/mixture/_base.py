"""The EM loop shared by the Gaussian mixtures (scikit-learn's ``BaseMixture``).

The E-step is local: each rank computes the log-responsibilities of its own
rows. The M-step reduces the sufficient statistics over the ranks
(:mod:`._stats`) and the k × d (× d) algebra that follows is replicated.
The lower bound behind the convergence test is an exact sum over every
rank's rows, so ``n_iter_`` and ``converged_`` do not depend on how the rows
are split. During ``fit`` the parameters are host float64 arrays; at its end
they become arrays of X's namespace and dtype.
"""

import warnings
from abc import abstractmethod
from numbers import Integral, Real
from time import time

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._array import get_namespace, to_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import Interval, StrOptions, _fit_context
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..utils.validation import RowLayout, agree, check_local, validate_fit_data
from ._init import initial_resp, replayed_random_state
from ._sample import sample_rows
from ._stats import as_host, global_rows, global_sum


class BaseMixture(DistributedEstimatorMixin, DensityMixin, BaseEstimator):
    """EM (or variational) fitting of a Gaussian mixture on row-sharded data."""

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "reg_covar": [Interval(Real, 0.0, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "init_params": [StrOptions({"kmeans", "random", "random_from_data", "k-means++"})],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "verbose_interval": [Interval(Integral, 1, None, closed="left")],
        "covariance_type": [StrOptions({"full", "tied", "diag", "spherical"})],
        "comms": [None, Comms],
    }

    # -- what the two mixtures define ------------------------------------------------

    @abstractmethod
    def _check_parameters(self, X):
        """Check (and derive) the model's own parameters. May be collective."""

    @abstractmethod
    def _initialize(self, X, resp):
        """Initial parameters from this rank's responsibilities. Collective."""

    @abstractmethod
    def _m_step(self, X, log_resp):
        """Update the parameters from this rank's log-responsibilities. Collective."""

    @abstractmethod
    def _compute_lower_bound(self, log_resp, log_prob_norm):
        """The global lower bound (this rank's per-row arrays). Collective."""

    @abstractmethod
    def _log_weights(self):
        """Per-component constant of the weighted log-probabilities (host, (k,))."""

    @abstractmethod
    def _get_parameters(self):
        pass

    @abstractmethod
    def _set_parameters(self, params):
        pass

    @abstractmethod
    def _array_attributes(self):
        """Names of the fitted array attributes that follow X's namespace and dtype."""

    # -- fitting ---------------------------------------------------------------------

    def _initialize_parameters(self, X, random_state, layout=None):
        """Initial parameters from ``init_params`` (scikit-learn's draws). Collective."""
        comms = self._get_comms()
        if layout is None:
            counts = tuple(int(c) for c in comms.allgather(np.asarray([X.shape[0]])))
            layout = RowLayout(counts, comms.rank)
        resp = initial_resp(self.init_params, X, self.n_components, random_state, comms, layout)
        self._initialize(X, resp)

    @collective_method
    def fit(self, X, y=None):
        """Estimate the model parameters with the EM algorithm on the rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : Ignored

        Returns
        -------
        self : object
        """
        self.fit_predict(X, y)
        return self

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit_predict(self, X, y=None):
        """Estimate the model parameters and predict the labels of this rank's rows.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : Ignored

        Returns
        -------
        labels : ndarray of shape (n_local,)
            Component of each of this rank's rows. Local.
        """
        comms = self._get_comms()
        warm = self.warm_start and hasattr(self, "converged_")
        if warm:
            self._to_host()
        X, _, _, layout = validate_fit_data(self, X, comms=comms, ensure_min_samples=2)
        if layout.n_samples < self.n_components:
            raise ValueError(
                "Expected n_samples >= n_components "
                f"but got n_components = {self.n_components}, "
                f"n_samples = {layout.n_samples}"
            )
        self._check_parameters(X)
        n_init = 1 if warm else self.n_init
        max_lower_bound = -np.inf
        best_lower_bounds = []
        self.converged_ = False
        random_state = replayed_random_state(self.random_state, comms)
        for init in range(n_init):
            self._print_verbose_msg_init_beg(init)
            if not warm:
                self._initialize_parameters(X, random_state, layout)
            lower_bound = self.lower_bound_ if warm else -np.inf
            current_lower_bounds = []
            if self.max_iter == 0:
                best_params, best_n_iter = self._get_parameters(), 0
                continue
            converged = False
            for n_iter in range(1, self.max_iter + 1):
                previous = lower_bound
                log_prob_norm, log_resp = self._estimate_log_prob_resp(X)
                self._m_step(X, log_resp)
                lower_bound = self._compute_lower_bound(log_resp, log_prob_norm)
                current_lower_bounds.append(lower_bound)
                change = lower_bound - previous
                self._print_verbose_msg_iter_end(n_iter, change)
                if abs(change) < self.tol:
                    converged = True
                    break
            self._print_verbose_msg_init_end(lower_bound, converged)
            if lower_bound > max_lower_bound or max_lower_bound == -np.inf:
                max_lower_bound = lower_bound
                best_params, best_n_iter = self._get_parameters(), n_iter
                best_lower_bounds = current_lower_bounds
                self.converged_ = converged
        if not self.converged_ and self.max_iter > 0:
            warnings.warn(
                "Best performing initialization did not converge. "
                "Try different init parameters, or increase max_iter, "
                "tol, or check for degenerate data.",
                ConvergenceWarning,
                stacklevel=2,
            )
        self._set_parameters(best_params)
        self.n_iter_ = best_n_iter
        self.lower_bound_ = max_lower_bound
        self.lower_bounds_ = best_lower_bounds
        self._to_namespace(get_namespace(X), X.dtype)
        # A last E-step, so that fit_predict(X) is always fit(X).predict(X).
        return self._estimate_weighted_log_prob(X).argmax(axis=1)

    def _to_host(self):
        for name in self._array_attributes():
            setattr(self, name, as_host(getattr(self, name)))

    def _to_namespace(self, xp, dtype):
        for name in self._array_attributes():
            setattr(self, name, to_namespace(getattr(self, name), xp).astype(dtype))

    # -- local predictions -------------------------------------------------------------

    def _estimate_weighted_log_prob(self, X):
        xp = get_namespace(X)
        out = xp.empty((X.shape[0], self.n_components), dtype=X.dtype)

        def like(value):
            return to_namespace(value, xp).astype(X.dtype, copy=False)

        kernels_for("mixture", X).log_gaussian_prob(
            X,
            like(self.means_),
            like(self.precisions_cholesky_),
            self.covariance_type,
            like(self._log_weights()),
            out,
        )
        return out

    def _estimate_log_prob_resp(self, X):
        """``(log_prob_norm, log_resp)`` of this rank's rows (no communication)."""
        log_resp = self._estimate_weighted_log_prob(X)
        log_prob_norm = get_namespace(X).empty(X.shape[0], dtype=X.dtype)
        kernels_for("mixture", X).normalize_log_resp(log_resp, log_prob_norm)
        return log_prob_norm, log_resp

    def _check_X(self, X):
        check_is_fitted(self)
        return check_local(self, X)

    def score_samples(self, X):
        """Log-likelihood of each of this rank's rows (no communication).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        log_prob : array of shape (n_local,)
            Local.
        """
        return self._estimate_log_prob_resp(self._check_X(X))[0]

    def predict(self, X):
        """Component of each of this rank's rows (no communication).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        labels : array of shape (n_local,)
            Local.
        """
        return self._estimate_weighted_log_prob(self._check_X(X)).argmax(axis=1)

    def predict_proba(self, X):
        """Posterior probability of each component for this rank's rows (no communication).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)

        Returns
        -------
        resp : array of shape (n_local, n_components)
            Local.
        """
        log_resp = self._estimate_log_prob_resp(self._check_X(X))[1]
        return get_namespace(log_resp).exp(log_resp)

    # -- global scores and samples -----------------------------------------------------

    def _total_log_likelihood(self, X):
        """``(sum of the rows' log-likelihoods, n_samples)`` over every rank. Collective."""
        comms = self._get_comms()
        log_prob, _ = agree(comms, lambda: (self.score_samples(X), None))
        return global_sum(log_prob, comms), global_rows(log_prob, comms)

    @collective_method
    def score(self, X, y=None):
        """Mean log-likelihood of the rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : Ignored

        Returns
        -------
        log_likelihood : float
            Replicated.
        """
        total, n_samples = self._total_log_likelihood(X)
        return total / n_samples

    @collective_method
    def sample(self, n_samples=1):
        """Draw ``n_samples`` rows from the fitted mixture, spread over the ranks.

        The draws are scikit-learn's (its ``RandomState`` sequence, replayed by
        every rank): the concatenation of the ranks' rows, in rank order, is
        the same at any number of ranks. Rank ``r`` gets a balanced share of
        the rows (:func:`mlmpi.datasets.even_counts`).

        This method is collective.

        Parameters
        ----------
        n_samples : int, default=1
            Number of rows over all ranks.

        Returns
        -------
        X : array of shape (n_local_samples, n_features)
            This rank's rows (float64).
        y : array of shape (n_local_samples,)
            Their components.
        """
        check_is_fitted(self)
        if n_samples < 1:
            raise ValueError(
                f"Invalid value for 'n_samples': {self.n_components} . The sampling "
                "requires at least one sample."
            )
        comms = self._get_comms()
        xp = get_namespace(self.means_)
        X, y = sample_rows(
            replayed_random_state(self.random_state, comms),
            n_samples,
            to_host(self.weights_),
            to_host(self.means_),
            to_host(self.covariances_),
            self.covariance_type,
            comms,
        )
        return to_namespace(X, xp), to_namespace(y, xp)

    # -- verbose messages (rank 0 prints) ----------------------------------------------

    def _print(self, message):
        if self._get_comms().rank == 0:
            print(message)

    def _print_verbose_msg_init_beg(self, n_init):
        if self.verbose >= 1:
            self._print(f"Initialization {n_init}")
        if self.verbose >= 2:
            self._init_prev_time = self._iter_prev_time = time()

    def _print_verbose_msg_iter_end(self, n_iter, diff_ll):
        if n_iter % self.verbose_interval != 0:
            return
        if self.verbose == 1:
            self._print(f"  Iteration {n_iter}")
        elif self.verbose >= 2:
            now = time()
            self._print(
                f"  Iteration {n_iter}\t time lapse {now - self._iter_prev_time:.5f}s\t "
                f"ll change {diff_ll:.5f}"
            )
            self._iter_prev_time = now

    def _print_verbose_msg_init_end(self, lower_bound, converged):
        message = "converged" if converged else "did not converge"
        if self.verbose == 1:
            self._print(f"Initialization {message}.")
        elif self.verbose >= 2:
            seconds = time() - self._init_prev_time
            self._print(
                f"Initialization {message}. time lapse {seconds:.5f}s\t lower bound "
                f"{lower_bound:.5f}."
            )
