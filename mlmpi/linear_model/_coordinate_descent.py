"""ElasticNet and Lasso on row-sharded data: coordinate descent on the
allreduced Gram matrix.

The global centred Gram matrix ``XcᵀWXc`` and ``XcᵀWyc`` (two allreduces)
are exact sufficient statistics of the elastic-net objective, so every rank
runs the same coordinate descent on them: scikit-learn's own Gram-matrix
solver (the one its ``precompute=True`` uses), with the same stopping rule
(duality gap), hence the same iterates as scikit-learn with
``precompute=True``. No communication after the statistics.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.linear_model._cd_fast import enet_coordinate_descent_gram
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._array import to_host
from ..comms import collective_method
from ..random import shared_seed
from ._base import RegressionMixin, regression_data, set_coefficients
from ._stats import centred_moments


class ElasticNet(MultiOutputMixin, RegressionMixin, RegressorMixin, BaseEstimator):
    """Linear regression with combined L1 and L2 priors on row-sharded data.

    Minimises, over the union of the shards (scikit-learn's objective)::

        1 / (2 * n_samples) * ||y - Xw||²
        + alpha * l1_ratio * ||w||_1 + 0.5 * alpha * (1 - l1_ratio) * ||w||²

    with sample weights rescaled to sum to ``n_samples``, as scikit-learn.

    Parameters
    ----------
    alpha : float, default=1.0
    l1_ratio : float, default=0.5
    fit_intercept : bool, default=True
    precompute : bool or array-like, default=False
        Accepted for compatibility: the Gram matrix is always computed from
        the shards (a user-supplied one is ignored).
    max_iter : int, default=1000
    copy_X : bool, default=True
        Accepted for compatibility; X is never modified.
    tol : float, default=1e-4
        Stop when the duality gap is below ``tol * ||y - ȳ||²`` (scikit-learn's rule).
    warm_start : bool, default=False
    positive : bool, default=False
    random_state : int, RandomState instance or None, default=None
        Seed of ``selection='random'``; an int gives the same updates as
        scikit-learn, None a seed drawn on rank 0 and shared.
    selection : {'cyclic', 'random'}, default='cyclic'
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    coef_ : array of shape (n_features,) or (n_targets, n_features)
        Replicated.
    intercept_ : float or array of shape (n_targets,)
        Replicated.
    n_iter_ : int or list of int
        Coordinate descent sweeps per target. Replicated.
    dual_gap_ : float or ndarray of shape (n_targets,)
        Final duality gaps (divided by ``n_samples``). Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when X has string column names.
    """

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "fit_intercept": ["boolean"],
        "precompute": ["boolean", "array-like"],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "copy_X": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "positive": ["boolean"],
        "random_state": ["random_state"],
        "selection": [StrOptions({"cyclic", "random"})],
        "comms": "no_validation",
    }

    def __init__(self, alpha=1.0, *, l1_ratio=0.5, fit_intercept=True, precompute=False,
                 max_iter=1000, copy_X=True, tol=1e-4, warm_start=False, positive=False,
                 random_state=None, selection="cyclic", comms=None):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.precompute = precompute
        self.max_iter = max_iter
        self.copy_X = copy_X
        self.tol = tol
        self.warm_start = warm_start
        self.positive = positive
        self.random_state = random_state
        self.selection = selection
        self.comms = comms

    def _initial_coef(self, n_targets, n_features):
        if self.warm_start and hasattr(self, "coef_"):
            return np.array(to_host(self.coef_), dtype=np.float64).reshape(n_targets, n_features)
        return np.zeros((n_targets, n_features))

    @collective_method
    def fit(self, X, y, sample_weight=None, check_input=True):
        """Fit the model on the global data (every rank passes its rows).

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
        y : array-like of shape (n_local,) or (n_local, n_targets)
        sample_weight : float or array-like of shape (n_local,), default=None
        check_input : bool, default=True
            Accepted for compatibility: the shards are always checked (the
            ranks must agree on errors).

        Returns
        -------
        self : object

        Notes
        -----
        This method is collective.
        """
        self._validate_params()
        if self.alpha == 0:
            warnings.warn(
                "With alpha=0, this algorithm does not converge well. You are advised "
                "to use the LinearRegression estimator",
                stacklevel=2,
            )
        X, Y, sample_weight, single, comms, layout = regression_data(self, X, y, sample_weight)
        moments = centred_moments(X, Y, sample_weight, comms, fit_intercept=self.fit_intercept)
        n_samples = layout.n_samples
        # scikit-learn rescales the weights to sum to n_samples
        scale = 1.0 if sample_weight is None else n_samples / moments.weight_sum
        dtype = X.dtype.type
        gram = np.ascontiguousarray(moments.gram * scale, dtype=dtype)
        xty = np.asarray(moments.xty * scale, dtype=dtype)
        y_norms = np.sqrt(moments.yty * scale)
        random = self.selection == "random"
        rng = check_random_state(shared_seed(self.random_state, comms) if random else 0)
        l1_reg = self.alpha * self.l1_ratio * n_samples
        l2_reg = self.alpha * (1.0 - self.l1_ratio) * n_samples

        coef = self._initial_coef(Y.shape[1], X.shape[1])
        gaps, n_iters = np.zeros(Y.shape[1]), []
        for target in range(Y.shape[1]):
            w, gap, _, n_iter = enet_coordinate_descent_gram(
                np.ascontiguousarray(coef[target], dtype=dtype), dtype(l1_reg), dtype(l2_reg),
                gram, np.ascontiguousarray(xty[:, target]),
                # the solver only reads ||y||² (its duality-gap scale) from y
                np.array([y_norms[target]], dtype=dtype),
                self.max_iter, dtype(self.tol), rng, random, self.positive, True,
            )
            coef[target] = w
            gaps[target] = gap / n_samples
            n_iters.append(int(n_iter))
        if not np.all(np.isfinite(coef)):
            raise ValueError(
                "Coordinate descent iterations resulted in non-finite parameter values. "
                "The input data may contain large values and need to be preprocessed."
            )
        set_coefficients(self, coef, moments, single=single, like=X)
        self.n_iter_ = n_iters[0] if single else n_iters
        self.dual_gap_ = gaps[0] if single else gaps
        return self


class Lasso(ElasticNet):
    """Linear model with an L1 prior on row-sharded data (scikit-learn's API).

    Minimises ``1 / (2 * n_samples) * ||y - Xw||² + alpha * ||w||_1`` over the
    union of the shards: :class:`ElasticNet` with ``l1_ratio=1``. See
    :class:`ElasticNet` for the parameters (all but ``l1_ratio``), the
    attributes and the solver.
    """

    _parameter_constraints: dict = {
        key: value for key, value in ElasticNet._parameter_constraints.items() if key != "l1_ratio"
    }

    def __init__(self, alpha=1.0, *, fit_intercept=True, precompute=False, copy_X=True,
                 max_iter=1000, tol=1e-4, warm_start=False, positive=False, random_state=None,
                 selection="cyclic", comms=None):
        super().__init__(
            alpha=alpha, l1_ratio=1.0, fit_intercept=fit_intercept, precompute=precompute,
            max_iter=max_iter, copy_X=copy_X, tol=tol, warm_start=warm_start, positive=positive,
            random_state=random_state, selection=selection, comms=comms,
        )
