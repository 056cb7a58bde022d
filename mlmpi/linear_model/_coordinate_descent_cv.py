"""LassoCV and ElasticNetCV on row-sharded data: every fold's path from one pass.

scikit-learn fits, for each fold, the elastic-net path over a grid of alphas
(coordinate descent warm-started from the largest alpha) and scores each
alpha by the held-out mean squared error. Everything it needs is in the
folds' sufficient statistics (:mod:`~mlmpi.linear_model._fold_stats`): each
fold's centred Gram matrix gives its path (scikit-learn's Gram solver, as
:class:`~mlmpi.linear_model.ElasticNet`), and the held-out rows' sums give
the squared errors of every alpha as a quadratic form of the coefficients
(no second pass). The alpha grid comes from the total of the same sums; the
chosen model is then refitted by :class:`~mlmpi.linear_model.ElasticNet`.
"""

import numbers
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn import linear_model as sk
from sklearn.base import BaseEstimator, MultiOutputMixin
from sklearn.utils import check_random_state, check_scalar, column_or_1d

from .._array import on_host, to_host
from .._contract import collective_method
from .._sklearn_compat import _fit_context, _raise_for_params
from ..base import DistributedEstimatorMixin, DistributedRegressorMixin
from ..comms import Comms
from ..random import shared_seed
from ._base import RegressionMixin, regression_data
from ._coordinate_descent import ElasticNet, Lasso, _alpha_grid, _gram_path
from ._fold_stats import Folds, fold_stats


def _path_rng(random_state, selection, comms):
    """A factory of the random streams of the paths: an int seeds each path
    afresh (as scikit-learn); otherwise one seed shared by the ranks feeds
    every path in turn."""
    if selection != "random":
        return lambda: check_random_state(0)
    if isinstance(random_state, numbers.Integral):
        return lambda: check_random_state(random_state)
    shared = check_random_state(shared_seed(random_state, comms))
    return lambda: shared


class _LinearModelCV(
    DistributedEstimatorMixin,
    MultiOutputMixin,
    RegressionMixin,
    DistributedRegressorMixin,
    BaseEstimator,
):
    """The fit shared by :class:`LassoCV` and :class:`ElasticNetCV`."""

    _estimator = None  # the model refitted with the best alpha

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = False  # one target (scikit-learn's MultiTask*CV: more)
        return tags

    def _l1_ratios(self):
        return np.atleast_1d(getattr(self, "l1_ratio", 1.0)).astype(np.float64)

    def _grids(self, l1_ratios, moments, n_samples):
        """The alphas of each l1_ratio (rows), largest first."""
        if isinstance(self.alphas, Integral):
            return [
                _alpha_grid(
                    moments.xty[:, 0],
                    n_samples,
                    l1_ratio=l1_ratio,
                    positive=self.positive,
                    eps=self.eps,
                    n_alphas=self.alphas,
                )
                for l1_ratio in l1_ratios
            ]
        for index, alpha in enumerate(self.alphas):
            check_scalar(alpha, f"alphas[{index}]", target_type=Real, min_val=0.0)
        grid = np.sort(np.asarray(self.alphas, dtype=np.float64))[::-1]
        return [grid] * len(l1_ratios)

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, **params):
        """Fit the model with cross-validation over the global rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
        y : array-like of shape (n_local,)
        sample_weight : float or array-like of shape (n_local,), default=None
            Weights of the fits and of each fold's held-out mean squared error.
        **params : dict
            Passed to the splitter's ``split`` (e.g. ``groups``).

        Returns
        -------
        self : object
        """
        from ..model_selection._split import check_cv

        _raise_for_params(params, self, "fit")
        if isinstance(sample_weight, numbers.Number):
            sample_weight = None
        X, Y, sample_weight, single, comms, layout = regression_data(self, X, y, sample_weight)
        if Y.shape[1] > 1:
            raise ValueError(f"For multi-task outputs, use MultiTask{type(self).__name__}")
        if not single:  # a column vector: scikit-learn's DataConversionWarning, then 1-D
            column_or_1d(np.empty((0, 1)) if np.ndim(y) == 2 else y, warn=True)
            single = True
        splitter = check_cv(self.cv, comms=comms)
        splits = list(splitter.split(X, Y[:, 0], params.get("groups")))
        folds = Folds([t for t, _ in splits], [t for _, t in splits], X.shape[0])
        host_X = on_host(X)  # sparse stays sparse
        weight = None if sample_weight is None else to_host(sample_weight)
        stats = fold_stats(host_X, to_host(Y), folds, comms, sample_weight=weight)
        l1_ratios = self._l1_ratios()
        total = stats.moments(None, fit_intercept=self.fit_intercept)
        grids = self._grids(l1_ratios, total, total.weight_sum)
        rng = _path_rng(self.random_state, self.selection, comms)
        mse = np.empty((len(l1_ratios), folds.n_splits, len(grids[0])))
        for r, (l1_ratio, grid) in enumerate(zip(l1_ratios, grids)):
            for k in range(folds.n_splits):
                mse[r, k] = self._held_out_errors(stats, k, grid, l1_ratio, X.dtype.type, rng())
        self._set_path(l1_ratios, grids, mse)
        model = self._refit(X, Y[:, 0] if single else Y, sample_weight)
        self.coef_, self.intercept_ = model.coef_, model.intercept_
        self.dual_gap_, self.n_iter_ = model.dual_gap_, model.n_iter_
        return self

    def _held_out_errors(self, stats, k, grid, l1_ratio, dtype, rng):
        """Held-out mean squared error of each alpha of fold ``k``'s path."""
        moments = stats.moments(k, fit_intercept=self.fit_intercept)
        n_train = stats.rows(k)[0]
        scale = n_train / moments.weight_sum  # scikit-learn's weights sum to n_train
        coefs, _, _ = _gram_path(
            moments.gram * scale,
            moments.xty[:, 0] * scale,
            moments.yty[0] * scale,
            grid,
            np.zeros(moments.gram.shape[0]),
            l1_ratio=l1_ratio,
            n_samples=n_train,
            dtype=dtype,
            max_iter=self.max_iter,
            tol=self.tol,
            rng=rng,
            random=self.selection == "random",
            positive=self.positive,
        )
        coefs = coefs.astype(np.float64)
        intercepts = moments.y_mean[0] - moments.x_mean @ coefs
        squared, weight = stats.held_out_residuals(k, coefs, intercepts)
        return squared / weight

    def _set_path(self, l1_ratios, grids, mse):
        """``mse_path_``, ``alphas_``, ``alpha_`` and ``l1_ratio_``, as scikit-learn."""
        self.mse_path_ = np.squeeze(np.moveaxis(mse, 2, 1))
        mean = mse.mean(axis=1)
        best_mse = np.inf
        for l1_ratio, grid, errors in zip(l1_ratios, grids, mean):
            i = np.argmin(errors)
            if errors[i] < best_mse:
                self.alpha_, self.l1_ratio_, best_mse = grid[i], l1_ratio, errors[i]
        if isinstance(self.alphas, Integral):
            self.alphas_ = np.asarray(grids) if len(l1_ratios) > 1 else np.asarray(grids[0])
        else:
            self.alphas_ = np.asarray(grids[0])
        if not hasattr(self, "l1_ratio"):
            del self.l1_ratio_

    def _refit(self, X, y, sample_weight):
        model = self._estimator(comms=self.comms)
        common = {k: v for k, v in self.get_params().items() if k in model.get_params()}
        model.set_params(**common)
        model.alpha = self.alpha_
        if isinstance(self.precompute, str):
            model.precompute = False
        if hasattr(self, "l1_ratio_"):
            model.l1_ratio = self.l1_ratio_
        with warnings.catch_warnings():
            if self.alpha_ == 0:
                warnings.simplefilter("ignore", UserWarning)  # ElasticNet's alpha=0 advice
            return model.fit(X, y, sample_weight=sample_weight)


_NOTES = """
    Notes
    -----
    ``fit`` and ``score`` are collective; ``predict`` is local. Folds are
    cut by global row (:func:`~mlmpi.model_selection.check_cv`, K-fold by
    default). One pass over the data gives every fold's Gram matrix and its
    held-out sums; each fold's path is coordinate descent on its Gram matrix
    (scikit-learn's ``precompute=True`` solver) and the held-out errors are
    quadratic forms of the path's coefficients. The selected alpha is
    refitted by :class:`{model}` (two more passes).
"""

_ATTRIBUTES = """
    Attributes
    ----------
    alpha_ : float
        The chosen alpha. Replicated.{l1_ratio_}
    coef_ : ndarray of shape (n_features,)
        Replicated.
    intercept_ : float
        Replicated.
    mse_path_ : ndarray
        Held-out mean squared error of each {shape}. Replicated (host).
    alphas_ : ndarray
        The alphas tried. Replicated (host).
    dual_gap_ : float
        Of the refitted model.
    n_iter_ : int
        Of the refitted model.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Only when X has string column names.
"""


class LassoCV(_LinearModelCV):
    """Lasso with the alpha chosen by cross-validation over the global rows.

    scikit-learn's :class:`sklearn.linear_model.LassoCV` on the union of the shards.

    Parameters
    ----------
    eps : float, default=1e-3
        ``alpha_min / alpha_max`` of the grid.
    alphas : int or array-like, default=100
        The number of alphas of the grid, or the alphas.
    fit_intercept : bool, default=True
    precompute : 'auto', bool or array-like, default='auto'
        Accepted for compatibility (the fold Gram matrices are always used).
    max_iter : int, default=1000
    tol : float, default=1e-4
    copy_X : bool, default=True
        Accepted for compatibility; X is never modified.
    cv : int, cross-validation generator, iterable or None, default=None
        As :func:`~mlmpi.model_selection.check_cv` (5-fold K-fold for None).
    verbose : bool or int, default=False
        Accepted for compatibility.
    n_jobs : int, default=None
        Accepted for compatibility.
    positive : bool, default=False
    random_state : int, RandomState instance or None, default=None
        Seed of ``selection='random'``: an int seeds each path as scikit-learn;
        otherwise rank 0 draws a seed for every rank.
    selection : {{'cyclic', 'random'}}, default='cyclic'
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    {attributes}{notes}
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import linear_model
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import LassoCV
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = LassoCV(cv=5).fit(X, y)
    >>> reference = linear_model.LassoCV(cv=5).fit(X, y)
    >>> bool(np.isclose(reg.alpha_, reference.alpha_))
    True
    """

    _parameter_constraints: dict = {**sk.LassoCV._parameter_constraints, "comms": [None, Comms]}
    _estimator = Lasso

    def __init__(
        self,
        *,
        eps=1e-3,
        alphas=100,
        fit_intercept=True,
        precompute="auto",
        max_iter=1000,
        tol=1e-4,
        copy_X=True,
        cv=None,
        verbose=False,
        n_jobs=None,
        positive=False,
        random_state=None,
        selection="cyclic",
        comms=None,
    ):
        self.eps = eps
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.precompute = precompute
        self.max_iter = max_iter
        self.tol = tol
        self.copy_X = copy_X
        self.cv = cv
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.positive = positive
        self.random_state = random_state
        self.selection = selection
        self.comms = comms


class ElasticNetCV(_LinearModelCV):
    """Elastic net with alpha and l1_ratio chosen by cross-validation over the global rows.

    scikit-learn's :class:`sklearn.linear_model.ElasticNetCV` on the union of the shards.

    Parameters
    ----------
    l1_ratio : float or list of float, default=0.5
        The l1_ratios tried.
    eps : float, default=1e-3
        ``alpha_min / alpha_max`` of the grid.
    alphas : int or array-like, default=100
        The number of alphas of each grid, or the alphas.
    fit_intercept : bool, default=True
    precompute : 'auto', bool or array-like, default='auto'
        Accepted for compatibility (the fold Gram matrices are always used).
    max_iter : int, default=1000
    tol : float, default=1e-4
    cv : int, cross-validation generator, iterable or None, default=None
        As :func:`~mlmpi.model_selection.check_cv` (5-fold K-fold for None).
    copy_X : bool, default=True
        Accepted for compatibility; X is never modified.
    verbose : bool or int, default=0
        Accepted for compatibility.
    n_jobs : int, default=None
        Accepted for compatibility.
    positive : bool, default=False
    random_state : int, RandomState instance or None, default=None
        As :class:`LassoCV`'s.
    selection : {{'cyclic', 'random'}}, default='cyclic'
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    {attributes}{notes}
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn import linear_model
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import ElasticNetCV
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = ElasticNetCV(l1_ratio=[0.5, 0.9], cv=5).fit(X, y)
    >>> reference = linear_model.ElasticNetCV(l1_ratio=[0.5, 0.9], cv=5).fit(X, y)
    >>> bool(reg.l1_ratio_ == reference.l1_ratio_ and np.isclose(reg.alpha_, reference.alpha_))
    True
    """

    _parameter_constraints: dict = {
        **sk.ElasticNetCV._parameter_constraints,
        "comms": [None, Comms],
    }
    _estimator = ElasticNet
    path = staticmethod(ElasticNet.path)

    def __init__(
        self,
        *,
        l1_ratio=0.5,
        eps=1e-3,
        alphas=100,
        fit_intercept=True,
        precompute="auto",
        max_iter=1000,
        tol=1e-4,
        cv=None,
        copy_X=True,
        verbose=0,
        n_jobs=None,
        positive=False,
        random_state=None,
        selection="cyclic",
        comms=None,
    ):
        self.l1_ratio = l1_ratio
        self.eps = eps
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.precompute = precompute
        self.max_iter = max_iter
        self.tol = tol
        self.cv = cv
        self.copy_X = copy_X
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.positive = positive
        self.random_state = random_state
        self.selection = selection
        self.comms = comms


LassoCV.__doc__ = LassoCV.__doc__.format(
    attributes=_ATTRIBUTES.format(l1_ratio_="", shape="alpha (rows) and fold (columns)"),
    notes=_NOTES.format(model="~mlmpi.linear_model.Lasso"),
)
ElasticNetCV.__doc__ = ElasticNetCV.__doc__.format(
    attributes=_ATTRIBUTES.format(
        l1_ratio_="\n    l1_ratio_ : float\n        The chosen l1_ratio. Replicated.",
        shape="l1_ratio, alpha and fold",
    ),
    notes=_NOTES.format(model="~mlmpi.linear_model.ElasticNet"),
)
