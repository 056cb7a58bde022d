"""Every (fold, candidate) pair of a cross-validated linear model, fitted together.

A cross-validated search fits one model per fold and candidate. For the
linear models these fits share their passes over the data:

* Ridge, LinearRegression, Lasso and ElasticNet need only the Gram matrices
  of each fold's training rows (:mod:`~mlmpi.linear_model._fold_stats`: one
  pass, a fold's statistics are the total's minus its held-out rows'); each
  pair is then the estimator's own solver on them (Cholesky; TSQR's
  well-conditioned case; coordinate descent, warm-started along the alphas
  of candidates that differ only in alpha);
* LogisticRegression runs every pair's solver side by side, one GEMM per
  round for all of them (:mod:`~mlmpi.linear_model._batched_logistic`).

A model may be the last step of a pipeline whose earlier step is a
:class:`~mlmpi.preprocessing.StandardScaler` fitted on each fold: its mean
and scale follow from the fold's moments, and the linear model's statistics
of the scaled rows from the raw ones (``Z = (X - c) / s``), with no second pass.
Each fit is returned as coefficients acting on the raw rows.

Anything these shortcuts do not reproduce exactly (another solver, an
ill-conditioned Gram matrix, a fold without some class, ...) raises
:class:`NotBatchable`, and the caller fits pair by pair instead.
"""

from dataclasses import dataclass

import numpy as np
from scipy import linalg
from sklearn.utils import check_random_state

from ..preprocessing._data import standard_scale
from ..utils.stats import global_classes
from ..utils.validation import agree
from ._batched_logistic import AskingObjective, BatchedLogistic, FoldView
from ._coordinate_descent import ElasticNet, _gram_path
from ._fold_stats import fold_stats
from ._least_squares import (
    LinearRegression,
    Ridge,
    _alphas,
    _gram_is_well_conditioned,
    _ridge_cholesky,
    cholesky_problem,
)
from ._logistic import _class_weights


class NotBatchable(Exception):
    """The pairs cannot be fitted together exactly: fit them one by one."""


@dataclass(frozen=True)
class Pair:
    """One fit of a cross-validation: a fold and a configured estimator (the
    last step), seen through ``scaler`` (a configured, unfitted
    :class:`~mlmpi.preprocessing.StandardScaler`, or None)."""

    fold: int
    estimator: object
    scaler: object = None


@dataclass(frozen=True)
class LinearFit:
    """A fitted pair as a linear response of the raw rows:
    ``X @ coef.T + intercept`` (coef of shape (n_outputs, n_features))."""

    coef: np.ndarray
    intercept: np.ndarray
    n_iter: object = None


def _scaler_of(stats, fold, scaler):
    """``(scale, centre)`` of ``scaler`` fitted on the fold's training rows (None: identity)."""
    if scaler is None:
        return None, None
    n, x_mean, _, xx, _, _ = stats.train(fold)
    var = (np.diag(xx) if stats.products else xx) / n
    scale = standard_scale(var, x_mean, n) if scaler.with_std else None
    return scale, (x_mean if scaler.with_mean else None)


def _raw(coef, intercept, scale, centre):
    """Coefficients on ``z = (x - centre) / scale`` as a response of ``x``."""
    if scale is not None:
        coef = coef / scale
    if centre is not None:
        intercept = intercept - coef @ centre
    return LinearFit(coef, intercept)


# -- least squares: Ridge, LinearRegression, Lasso, ElasticNet ---------------------


def _least_squares_coef(estimator, moments):
    """The coefficients (n_targets, n_features) of ``estimator``'s own solver on
    ``moments``, where it is the Gram-matrix one."""
    if isinstance(estimator, Ridge):
        if estimator.positive or estimator._check_solver() != "cholesky":
            raise NotBatchable
        coef = _ridge_cholesky(moments, _alphas(estimator.alpha, moments.xty.shape[1]))
        if coef is None:
            raise NotBatchable
        return coef
    if estimator.positive or not _gram_is_well_conditioned(moments.gram, estimator.tol):
        raise NotBatchable
    return linalg.lstsq(*cholesky_problem(moments), cond=estimator.tol)[0].T


def _path_key(pair):
    """Pairs that share a warm-started coordinate-descent path."""
    params = pair.estimator.get_params()
    params.pop("alpha")
    scaler = None if pair.scaler is None else (pair.scaler.with_mean, pair.scaler.with_std)
    return pair.fold, scaler, repr(sorted(params.items()))


def _elastic_net_paths(pairs, stats, dtype):
    """Coefficients (n_targets, n_features) of each ElasticNet/Lasso pair, by
    coordinate descent on its fold's Gram matrix along the alphas of its path."""
    paths = {}
    for index, pair in enumerate(pairs):
        estimator = pair.estimator
        if estimator.selection != "cyclic" or estimator.alpha == 0:
            raise NotBatchable
        paths.setdefault(_path_key(pair), []).append(index)
    coefs = {}
    for members in paths.values():
        first = pairs[members[0]]
        estimator = first.estimator
        scale, centre = _scaler_of(stats, first.fold, first.scaler)
        moments = stats.moments(
            first.fold, fit_intercept=estimator.fit_intercept, scale=scale, centre=centre
        )
        order = sorted(members, key=lambda i: -pairs[i].estimator.alpha)
        alphas = [pairs[i].estimator.alpha for i in order]
        n_targets = moments.xty.shape[1]
        found = np.empty((len(order), n_targets, moments.gram.shape[0]))
        for target in range(n_targets):
            path, _, _ = _gram_path(
                moments.gram,
                moments.xty[:, target],
                moments.yty[target],
                alphas,
                np.zeros(moments.gram.shape[0]),
                l1_ratio=estimator.l1_ratio,
                n_samples=stats.rows(first.fold)[0],
                dtype=dtype,
                max_iter=estimator.max_iter,
                tol=estimator.tol,
                rng=check_random_state(0),
                random=False,
                positive=estimator.positive,
            )
            found[:, target] = path.T
        coefs.update(zip(order, found))
    return coefs


def least_squares_fits(X, Y, folds, pairs, comms):
    """:class:`LinearFit` of every Ridge, LinearRegression, Lasso or ElasticNet pair.

    ``Y`` is 2-D (n_local, n_targets). Raises :class:`NotBatchable` for a pair
    the Gram matrices cannot fit as its estimator would.

    This function is collective (two allreduces).
    """
    for pair in pairs:
        if not isinstance(pair.estimator, (Ridge, LinearRegression, ElasticNet)):
            raise NotBatchable
    stats = fold_stats(X, Y, folds, comms)
    elastic = [i for i, pair in enumerate(pairs) if isinstance(pair.estimator, ElasticNet)]
    coefs = _elastic_net_paths([pairs[i] for i in elastic], stats, X.dtype.type)
    coefs = {elastic[i]: coef for i, coef in coefs.items()}
    fits = []
    for index, pair in enumerate(pairs):
        estimator = pair.estimator
        scale, centre = _scaler_of(stats, pair.fold, pair.scaler)
        moments = stats.moments(
            pair.fold, fit_intercept=estimator.fit_intercept, scale=scale, centre=centre
        )
        coef = coefs[index] if index in coefs else _least_squares_coef(estimator, moments)
        if not np.all(np.isfinite(coef)):
            raise NotBatchable
        intercept = moments.y_mean - coef @ moments.x_mean
        fits.append(_raw(coef, intercept, scale, centre))
    return fits


# -- logistic regression -------------------------------------------------------------


class LogisticFolds:
    """The classes, fold weights and scalers that the logistic fits of one
    cross-validation share; :meth:`solve` runs their solvers together.

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features), float64
    y : ndarray of shape (n_local,)
    folds : Folds
    comms : Comms

    Notes
    -----
    Building it is collective (the global classes, the fold class counts and
    the fold moments: three small collectives).
    """

    def __init__(self, X, y, folds, comms):
        self.X, self.folds, self.comms = X, folds, comms
        self.classes, _, classes_idx = global_classes(y, comms)
        self.classes_idx = np.asarray(classes_idx)
        n_classes = self.classes.shape[0]
        local = np.stack(
            [np.bincount(self.classes_idx[train], minlength=n_classes) for train in folds.train]
        ).astype(np.float64)
        self.counts = np.asarray(comms.allreduce(local.ravel())).reshape(local.shape)
        self.stats = fold_stats(X, np.empty((X.shape[0], 0)), folds, comms, products=False)
        self.n_outputs = 1 if n_classes == 2 else n_classes
        self._columns, self._weights = {}, []

    def view(self, fold, class_weight, scaler, *, every_class=True):
        """``(FoldView, weight sum)`` of a model on ``fold`` with ``class_weight``
        (the estimator's parameter) and ``scaler`` (configured or None).
        ``every_class``: the fit must see every class (as a LogisticRegression
        fitted on the fold's rows would find them), else the model still has
        all the global classes (as LogisticRegressionCV's paths)."""
        if every_class and np.any(self.counts[fold] == 0):
            raise NotBatchable  # a class missing from the training rows
        weights = _class_weights(class_weight, self.classes, self.counts[fold])
        key = (fold, tuple(weights))
        if key not in self._columns:
            column = np.zeros(self.X.shape[0])
            train = self.folds.train[fold]
            column[train] = weights[self.classes_idx[train]]
            self._columns[key] = len(self._weights)
            self._weights.append(column)
        scale, centre = _scaler_of(self.stats, fold, scaler)
        return FoldView(self._columns[key], scale, centre), float(weights @ self.counts[fold])

    def solve(self, tasks, views):
        """Run ``tasks`` (see :func:`~mlmpi.linear_model._lockstep.run_in_lockstep`),
        task ``i`` seeing the rows through ``views[i]``. This method is collective."""
        weights = np.stack(self._weights, axis=1) if self._weights else None
        batch = BatchedLogistic(
            self.X,
            self.classes_idx,
            self.n_outputs,
            weights,
            views,
            self.stats.x_shift,
            self.comms,
        )
        return batch.run(tasks)

    def as_raw(self, params, view, fit_intercept):
        """:class:`LinearFit` of parameters (n_outputs, n_features + fit_intercept) on
        the view's scaled rows."""
        d = self.X.shape[1]
        intercept = params[:, d] if fit_intercept else np.zeros(params.shape[0])
        return _raw(params[:, :d], intercept, view.scale, view.centre)


def _logistic_task(estimator, n_features, terms, penalty, C, l1_ratio):
    def task(asker):
        objective = AskingObjective(asker, n_features, **terms)
        start = np.zeros(objective.shape).ravel()
        params, n_iter = estimator._solve(objective, start, penalty, C, l1_ratio)
        return params.reshape(objective.shape), n_iter

    return task


def logistic_fits(X, y, folds, pairs, comms):
    """:class:`LinearFit` (with ``n_iter``) of every LogisticRegression pair,
    their solvers run side by side. Raises :class:`NotBatchable` for a pair
    whose fit is not an L2 (or unpenalised) one on all the global classes.

    This function is collective.
    """
    shared = LogisticFolds(X, y, folds, comms)
    d = X.shape[1]
    tasks, views = [], []
    for pair in pairs:
        estimator = pair.estimator
        penalty, C = estimator._penalty()
        estimator._check_classes(shared.classes)
        view, weight_sum = shared.view(pair.fold, estimator.class_weight, pair.scaler)
        l1_ratio, terms = estimator._objective_terms(penalty, C, shared.classes, weight_sum)
        shape = (shared.n_outputs, d + int(estimator.fit_intercept))
        estimator.solver_ = estimator._solver_to_run(shape, penalty)
        if estimator.solver_ == "fista":
            raise NotBatchable
        tasks.append(_logistic_task(estimator, d, terms, penalty, C, l1_ratio))
        views.append(view)
    fits = []
    for pair, view, (params, n_iter) in zip(pairs, views, shared.solve(tasks, views)):
        if not np.all(np.isfinite(params)):
            raise NotBatchable
        fit = shared.as_raw(params, view, pair.estimator.fit_intercept)
        fits.append(LinearFit(fit.coef, fit.intercept, n_iter))
    return fits, shared.classes


def batchable_rows(X, y, comms, *, classifier):
    """Whether every rank's ``X`` is a finite float64 NumPy matrix and ``y``
    finite numbers (regression) or class labels (classification): what the
    batched fits read directly. Agreed over the ranks (one collective)."""

    def check():
        ok = (
            type(X) is np.ndarray
            and X.ndim == 2
            and X.dtype == np.float64
            and isinstance(y, np.ndarray)
            and y.shape[0] == X.shape[0]
        )
        if ok and classifier:
            ok = y.ndim == 1 and y.dtype.kind in "iubUO"
        elif ok:
            ok = y.ndim in (1, 2) and y.dtype.kind in "iuf" and bool(np.isfinite(y).all())
        return None, bool(ok and np.isfinite(X).all())

    _, verdicts = agree(comms, check)
    return all(verdicts)
