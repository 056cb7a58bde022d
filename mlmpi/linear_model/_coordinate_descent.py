"""ElasticNet and Lasso on row-sharded data: coordinate descent on the
allreduced Gram matrix.

The global centred Gram matrix ``XcᵀWXc`` and ``XcᵀWyc`` (two allreduces)
are exact sufficient statistics of the elastic-net objective, so every rank
runs the same coordinate descent on them: scikit-learn's own Gram-matrix
solver (the one its ``precompute=True`` uses), with the same stopping rule
(duality gap), hence the same iterates as scikit-learn with
``precompute=True``. No communication after the statistics. CSR rows give
their Gram matrix through the sparse kernels (implicit centring).

Sparse X with more than ``GRAM_MAX_FEATURES`` features (text), where the
Gram matrix is impossible, is solved matrix-free instead: FISTA
(:mod:`mlmpi.linear_model._proximal`) on the same objective, with
scikit-learn's duality-gap stopping rule; ``solver_`` says which ran.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, MultiOutputMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._array import to_host
from .._contract import collective_method
from .._sklearn_compat import Interval, StrOptions, _align_api_if_sparse, _fit_context
from ..base import DistributedEstimatorMixin, DistributedRegressorMixin
from ..comms import Comms
from ..kernels import kernels_for
from ..random import shared_seed
from ._base import (
    RegressionMixin,
    check_finite_parameters,
    gram_fits,
    regression_data,
    set_coefficients,
)
from ._iterative import CentredRows
from ._proximal import fista
from ._stats import centred_moments

_NON_FINITE = (
    "Coordinate descent iterations resulted in non-finite parameter values. "
    "The input data may contain large values and need to be preprocessed."
)
_NOT_CONVERGED = (
    "Objective did not converge. You might want to increase the number of iterations, "
    "check the scale of the features or consider increasing regularisation."
)
_RIDGE_HINT = (
    "Linear regression models with a zero l1 penalization strength are more efficiently "
    "fitted using one of the solvers implemented in sklearn.linear_model.Ridge/RidgeCV instead."
)


def _gram_path(
    gram,
    xty,
    yty,
    alphas,
    coef_init,
    *,
    l1_ratio,
    n_samples,
    dtype,
    max_iter,
    tol,
    rng,
    random,
    positive,
):
    """Coordinate descent on the replicated Gram matrix along ``alphas`` (warm starts).

    The ``coordinate_descent`` kernel (scikit-learn's Gram-solver rules) on the
    global statistics ``gram = XᵀX``, ``xty = Xᵀy``, ``yty = yᵀy``: no
    communication. Returns ``(coefs, dual_gaps, n_iters)``, coefs of shape
    (n_features, n_alphas), dual gaps divided by ``n_samples`` (scikit-learn's scale).
    """
    gram = np.ascontiguousarray(gram, dtype=dtype)
    xty = np.ascontiguousarray(xty, dtype=dtype)
    # ||y||² (the duality-gap scale) in dtype, as scikit-learn's solver gets it from y
    y_norm = np.array([np.sqrt(yty)], dtype=dtype)
    y_norm2 = float(y_norm @ y_norm)
    kernels = kernels_for("coordinate_descent", gram)
    coef = np.array(coef_init, dtype=dtype, order="C")
    coefs = np.empty((gram.shape[0], len(alphas)), dtype=dtype)
    gaps, n_iters = np.empty(len(alphas)), []
    for i, alpha in enumerate(alphas):
        l1 = dtype(alpha * l1_ratio * n_samples)
        gap, target, n_iter, converged = kernels.enet_gram(
            coef,
            l1,
            dtype(alpha * (1.0 - l1_ratio) * n_samples),
            gram,
            xty,
            y_norm2,
            max_iter,
            tol,
            rng.randint(0, kernels.RAND_R_MAX),
            random,
            positive,
        )
        if not converged:
            message = f"{_NOT_CONVERGED} Duality gap: {gap:.6e}, tolerance: {target:.3e}"
            if l1 < np.finfo(np.float64).eps:
                message += "\n" + _RIDGE_HINT
            warnings.warn(message, ConvergenceWarning, stacklevel=2)
        coefs[:, i] = coef
        gaps[i] = gap / n_samples
        n_iters.append(int(n_iter))
    return coefs, gaps, n_iters


def _fista_path(op, b, alphas, coef_init, *, l1_ratio, n_samples, max_iter, tol, positive, comms):
    """:func:`_gram_path` without the Gram matrix: FISTA with distributed products
    along ``alphas`` (warm starts). This function is collective."""
    coefs = np.empty((op.x_mean.shape[0], len(alphas)))
    gaps, n_iters = np.empty(len(alphas)), []
    coef = np.asarray(coef_init, dtype=np.float64)
    for i, alpha in enumerate(alphas):
        coef, gap, n_iter = fista(
            op,
            b,
            comms,
            l1=alpha * l1_ratio * n_samples,
            l2=alpha * (1.0 - l1_ratio) * n_samples,
            coef_init=coef,
            max_iter=max_iter,
            tol=tol,
            positive=positive,
        )
        coefs[:, i] = coef
        gaps[i] = gap / n_samples
        n_iters.append(n_iter)
    return coefs, gaps, n_iters


class _TargetProblem:
    """One target's elastic-net problem on the global data, solved along a path of
    alphas: coordinate descent on the Gram matrix when ``moments`` has one,
    else FISTA with matrix-free products (sparse X with many features).

    ``scale`` rescales the weights to sum to ``n_samples`` (scikit-learn's rule).
    """

    def __init__(self, X, Y, target, sample_weight, moments, *, scale, n_samples, comms):
        self.moments, self.target, self.scale = moments, target, scale
        self.n_samples, self.comms, self.dtype = n_samples, comms, X.dtype.type
        self.solver = "coordinate_descent" if moments.gram is not None else "fista"
        if self.solver == "fista":
            weight = None if sample_weight is None else sample_weight * scale
            self.op = CentredRows(X, moments.x_mean, weight)
            xp = self.op.xp
            self.b = xp.asarray(Y[:, target], dtype=xp.float64) - moments.y_mean[target]
            if self.op.root is not None:
                self.b = self.b * self.op.root

    def xty(self):
        """``Xcᵀ W yc`` (host float64). Collective for the matrix-free problem."""
        if self.solver == "coordinate_descent":
            return self.moments.xty[:, self.target] * self.scale
        return to_host(self.comms.allreduce(self.op.rmatvec(self.b)))

    def path(self, alphas, coef_init, *, l1_ratio, max_iter, tol, rng, random, positive):
        """``(coefs, dual_gaps, n_iters)`` along ``alphas``. This method is collective."""
        options = {
            "l1_ratio": l1_ratio,
            "n_samples": self.n_samples,
            "max_iter": max_iter,
            "tol": tol,
            "positive": positive,
        }
        if self.solver == "fista":
            return _fista_path(self.op, self.b, alphas, coef_init, comms=self.comms, **options)
        m = self.moments
        return _gram_path(
            m.gram * self.scale,
            self.xty(),
            m.yty[self.target] * self.scale,
            alphas,
            coef_init,
            dtype=self.dtype,
            rng=rng,
            random=random,
            **options,
        )


def _alpha_grid(xty, n_samples, *, l1_ratio, positive, eps, n_alphas):
    """scikit-learn's grid: ``n_alphas`` log-spaced from the smallest alpha with an all-zero fit."""
    if l1_ratio == 0:
        raise ValueError(
            "Automatic alpha grid generation is not supported for l1_ratio=0. Please "
            "supply a grid by providing your estimator with the appropriate `alphas=` argument."
        )
    top = max(0.0, np.max(xty)) if positive else np.max(np.abs(xty))
    alpha_max = top / (n_samples * l1_ratio)
    if alpha_max <= np.finfo(np.float64).resolution:
        return np.full(n_alphas, np.finfo(np.float64).resolution)
    return np.geomspace(alpha_max, alpha_max * eps, num=n_alphas)


def enet_path(
    X,
    y,
    *,
    l1_ratio=0.5,
    eps=1e-3,
    n_alphas="deprecated",
    alphas="warn",
    precompute="auto",
    Xy=None,
    copy_X=True,
    coef_init=None,
    verbose=False,
    return_n_iter=False,
    positive=False,
    check_input=True,
    comms=None,
    **params,
):
    """Elastic-net path of the global row-sharded data (scikit-learn's ``enet_path``).

    As scikit-learn's, no intercept is fitted (X and y are used as given).
    Coordinate descent runs on the allreduced Gram matrix ``XᵀX`` (two
    allreduces in all), so the path is replicated. ``precompute``, ``Xy``,
    ``copy_X``, ``check_input`` and ``verbose`` are accepted for compatibility
    (the Gram matrix and ``Xᵀy`` always come from the shards). ``y`` must be
    1-D (scikit-learn's multi-task path is not provided).

    Parameters
    ----------
    X : array-like of shape (n_local, n_features)
    y : array-like of shape (n_local,)
    l1_ratio, eps, n_alphas, alphas, coef_init, return_n_iter, positive
        As scikit-learn's ``enet_path``.
    precompute, Xy, copy_X, check_input, verbose
        Accepted for compatibility (ignored).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    **params
        ``tol``, ``max_iter``, ``random_state``, ``selection``.

    Returns
    -------
    alphas : ndarray of shape (n_alphas,)
    coefs : ndarray of shape (n_features, n_alphas)
    dual_gaps : ndarray of shape (n_alphas,)
    n_iters : list of int
        Only with ``return_n_iter``.

    Notes
    -----
    This function is collective.
    """
    if n_alphas == "deprecated":
        grid_size = 100
    else:
        warnings.warn(
            "'n_alphas' was deprecated in 1.9 and will be removed in 1.11. 'alphas' now "
            "accepts an integer value which removes the need to pass 'n_alphas'. The "
            "default value of 'alphas' will change from None to 100 in 1.11. Pass an "
            "explicit value to 'alphas' and leave 'n_alphas' to its default value to "
            "silence this warning.",
            FutureWarning,
            stacklevel=2,
        )
        grid_size = n_alphas
    if alphas is None:
        warnings.warn(
            "'alphas=None' is deprecated and will be removed in 1.11, at which point the "
            "default value will be set to 100. Set 'alphas=100' to silence this warning.",
            FutureWarning,
            stacklevel=2,
        )
    elif not (isinstance(alphas, str) and alphas == "warn"):
        grid_size = alphas
    tol = params.pop("tol", 1e-4)
    max_iter = params.pop("max_iter", 1000)
    random_state = params.pop("random_state", None)
    selection = params.pop("selection", "cyclic")
    if params:
        raise ValueError("Unexpected parameters in params", params.keys())
    if selection not in ("random", "cyclic"):
        raise ValueError("selection should be either random or cyclic.")
    model = ElasticNet(l1_ratio=l1_ratio, fit_intercept=False, comms=comms)
    X, Y, _, single, comms, layout = regression_data(model, X, y, None)
    if not single:
        raise ValueError("mlmpi's enet_path needs a 1-D y (the multi-task path is not provided).")
    moments = centred_moments(X, Y, None, comms, fit_intercept=False, products=gram_fits(X))
    problem = _TargetProblem(
        X, Y, 0, None, moments, scale=1.0, n_samples=layout.n_samples, comms=comms
    )
    if isinstance(grid_size, Integral):
        grid = _alpha_grid(
            problem.xty(),
            layout.n_samples,
            l1_ratio=l1_ratio,
            positive=positive,
            eps=eps,
            n_alphas=grid_size,
        )
    else:
        grid = np.sort(np.asarray(grid_size, dtype=np.float64))[::-1]
    rng = check_random_state(shared_seed(random_state, comms) if selection == "random" else 0)
    start = np.zeros(X.shape[1]) if coef_init is None else to_host(coef_init)
    coefs, gaps, n_iters = problem.path(
        grid,
        start,
        l1_ratio=l1_ratio,
        max_iter=max_iter,
        tol=tol,
        rng=rng,
        random=selection == "random",
        positive=positive,
    )
    if return_n_iter:
        return grid, coefs, gaps, n_iters
    return grid, coefs, gaps


class ElasticNet(
    DistributedEstimatorMixin,
    MultiOutputMixin,
    RegressionMixin,
    DistributedRegressorMixin,
    BaseEstimator,
):
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
        Coordinate descent sweeps (or FISTA iterations) per target. Replicated.
    solver_ : str
        ``'coordinate_descent'`` (on the allreduced Gram matrix) or ``'fista'``
        (matrix-free: sparse X with more than 4096 features). Replicated.
    dual_gap_ : float or ndarray of shape (n_targets,)
        Final duality gaps (divided by ``n_samples``). Replicated.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.

    Notes
    -----
    ``fit`` and ``score`` are collective: every rank calls them, with its own
    rows. Fitted attributes are replicated (the same on every rank). ``predict``
    is local: no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import linear_model
    >>> from mlmpi import ElasticNet
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(30, 4))
    >>> y = X @ np.array([1.5, 0.0, -2.0, 0.0]) + 0.1 * rng.normal(size=30)
    >>> enet = ElasticNet(alpha=0.1, l1_ratio=0.7).fit(X, y)
    >>> reference = linear_model.ElasticNet(alpha=0.1, l1_ratio=0.7).fit(X, y)
    >>> np.allclose(enet.coef_, reference.coef_, atol=1e-4)
    True
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
        "comms": [None, Comms],
    }

    def __init__(
        self,
        alpha=1.0,
        *,
        l1_ratio=0.5,
        fit_intercept=True,
        precompute=False,
        max_iter=1000,
        copy_X=True,
        tol=1e-4,
        warm_start=False,
        positive=False,
        random_state=None,
        selection="cyclic",
        comms=None,
    ):
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
    @_fit_context(prefer_skip_nested_validation=True)
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
        if self.alpha == 0:
            warnings.warn(
                "With alpha=0, this algorithm does not converge well. You are advised "
                "to use the LinearRegression estimator",
                stacklevel=2,
            )
        X, Y, sample_weight, single, comms, layout = regression_data(self, X, y, sample_weight)
        moments = centred_moments(
            X, Y, sample_weight, comms, fit_intercept=self.fit_intercept, products=gram_fits(X)
        )
        n_samples = layout.n_samples
        # scikit-learn rescales the weights to sum to n_samples
        scale = 1.0 if sample_weight is None else n_samples / moments.weight_sum
        random = self.selection == "random"
        rng = check_random_state(shared_seed(self.random_state, comms) if random else 0)
        coef = self._initial_coef(Y.shape[1], X.shape[1])
        gaps, n_iters = np.zeros(Y.shape[1], dtype=X.dtype), []
        for target in range(Y.shape[1]):
            problem = _TargetProblem(
                X, Y, target, sample_weight, moments, scale=scale, n_samples=n_samples, comms=comms
            )
            w, gap, n_iter = problem.path(
                [self.alpha],
                coef[target],
                l1_ratio=self.l1_ratio,
                max_iter=self.max_iter,
                tol=self.tol,
                rng=rng,
                random=random,
                positive=self.positive,
            )
            coef[target] = w[:, 0]
            gaps[target] = gap[0]
            n_iters.append(n_iter[0])
        self.solver_ = problem.solver
        set_coefficients(self, coef, moments, single=single, like=X, ravel_one_column=True)
        one_target = Y.shape[1] == 1  # y of shape (n,) or (n, 1)
        self.n_iter_ = n_iters[0] if one_target else n_iters
        self.dual_gap_ = gaps[0] if one_target else gaps
        check_finite_parameters(self, _NON_FINITE)
        return self

    @property
    def sparse_coef_(self):
        """Sparse representation of the fitted ``coef_`` (SciPy CSR, host), as scikit-learn's.

        Replicated.
        """
        return _align_api_if_sparse(sparse.csr_array(np.atleast_2d(to_host(self.coef_))))

    path = staticmethod(enet_path)


class Lasso(ElasticNet):
    """Linear model with an L1 prior on row-sharded data (scikit-learn's API).

    Minimises ``1 / (2 * n_samples) * ||y - Xw||² + alpha * ||w||_1`` over the
    union of the shards: :class:`ElasticNet` with ``l1_ratio=1``. See
    :class:`ElasticNet` for the attributes and the solver.

    Parameters
    ----------
    alpha : float, default=1.0
        Weight of the L1 penalty.
    fit_intercept : bool, default=True
        Centre X and y at their global weighted means and fit an intercept.
    precompute : bool or array-like, default=False
        Accepted for compatibility: the Gram matrix is always computed from
        the shards (a user-supplied one is ignored).
    copy_X : bool, default=True
        Accepted for compatibility; X is never modified.
    max_iter : int, default=1000
        Most coordinate descent sweeps.
    tol : float, default=1e-4
        Stop when the duality gap is below ``tol * ||y - ȳ||²`` (scikit-learn's rule).
    warm_start : bool, default=False
        Start from the previous ``coef_``.
    positive : bool, default=False
        Non-negative coefficients.
    random_state : int, RandomState instance or None, default=None
        Seed of ``selection='random'``, shared by every rank.
    selection : {'cyclic', 'random'}, default='cyclic'
        Order of the coordinate updates.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    coef_ : array of shape (n_features,) or (n_targets, n_features)
        Replicated.
    intercept_ : float or array of shape (n_targets,)
        Replicated.
    n_iter_ : int or list of int
        Iterations per target. Replicated.
    dual_gap_ : float or ndarray of shape (n_targets,)
        Final duality gaps. Replicated.

    Notes
    -----
    ``fit`` and ``score`` are collective: every rank calls them, with its own
    rows. Fitted attributes are replicated (the same on every rank). ``predict``
    is local: no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import linear_model
    >>> from mlmpi import Lasso
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(30, 4))
    >>> y = X @ np.array([1.5, 0.0, -2.0, 0.0]) + 0.1 * rng.normal(size=30)
    >>> lasso = Lasso(alpha=0.1).fit(X, y)
    >>> np.allclose(lasso.coef_, linear_model.Lasso(alpha=0.1).fit(X, y).coef_, atol=1e-4)
    True
    """

    _parameter_constraints: dict = {
        key: value for key, value in ElasticNet._parameter_constraints.items() if key != "l1_ratio"
    }

    def __init__(
        self,
        alpha=1.0,
        *,
        fit_intercept=True,
        precompute=False,
        copy_X=True,
        max_iter=1000,
        tol=1e-4,
        warm_start=False,
        positive=False,
        random_state=None,
        selection="cyclic",
        comms=None,
    ):
        super().__init__(
            alpha=alpha,
            l1_ratio=1.0,
            fit_intercept=fit_intercept,
            precompute=precompute,
            max_iter=max_iter,
            copy_X=copy_X,
            tol=tol,
            warm_start=warm_start,
            positive=positive,
            random_state=random_state,
            selection=selection,
            comms=comms,
        )
