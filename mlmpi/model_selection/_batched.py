"""Searches and cross-validations of a linear model with every pair fitted together.

:class:`~mlmpi.model_selection.GridSearchCV`, :class:`RandomizedSearchCV`
and :func:`cross_validate` fit one model per (candidate, fold) pair. When the
estimator is an mlmpi linear model (Ridge, LinearRegression, Lasso,
ElasticNet, LogisticRegression), alone or after an mlmpi ``StandardScaler``
in a pipeline, the pairs are fitted together
(:mod:`mlmpi.linear_model._batched_fits`): the Gram matrices of every fold
from one pass over the data, or every logistic solver answered by one GEMM
per round. Each pair's held-out decision values come from one GEMM per fold,
and the scorers run on them as they would on the fitted pipeline. The
results (``cv_results_``, the best candidate, the refitted estimator) are
those of the pair-by-pair loop, to the solvers' tolerance.

The hooks return None (or False) when the shortcut does not apply (another
estimator or step, fit parameters, a callable scorer that may read the
estimator, non-complementary splits, data other than a finite float64
matrix, a fit the shortcut cannot reproduce): the caller then runs the
pair-by-pair loop, with the splits and random draws it would have made.
"""

import time
from contextlib import contextmanager

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.pipeline import Pipeline

from ..linear_model._batched_fits import (
    NotBatchable,
    Pair,
    batchable_rows,
    least_squares_fits,
    logistic_fits,
)
from ..linear_model._coordinate_descent import ElasticNet, Lasso
from ..linear_model._fold_stats import Folds
from ..linear_model._given_decision import decisions, score, scoring_estimator
from ..linear_model._least_squares import LinearRegression, Ridge
from ..linear_model._logistic import LogisticRegression
from ..metrics import check_scoring
from ..metrics._scorer import _GlobalScorer
from ..preprocessing import StandardScaler
from ..utils.validation import agree

_LAST_STEPS = (LinearRegression, Ridge, Lasso, ElasticNet, LogisticRegression)
_RAVELLED = (Ridge, Lasso, ElasticNet)  # y of shape (n, 1) predicts shape (n,)


def _steps(estimator):
    """``(scaler, last step)`` of a batchable estimator (scaler None: no scaling),
    else None."""
    if type(estimator) in _LAST_STEPS:
        return None, estimator
    if not isinstance(estimator, Pipeline) or estimator.transform_input is not None:
        return None
    *head, last = [step for _, step in estimator.steps]
    scalers = [step for step in head if step not in (None, "passthrough")]
    if type(last) not in _LAST_STEPS or len(scalers) > 1:
        return None
    if scalers and type(scalers[0]) is not StandardScaler:
        return None
    return (scalers[0] if scalers else None), last


def _configured(estimator, candidates):
    """``(scaler, last step)`` of each candidate, validated; None if any is not batchable."""
    configured = []
    for params in candidates:
        try:
            steps = _steps(clone(estimator).set_params(**clone(params, safe=False)))
            if steps is None:
                return None
            for step in steps:
                if step is not None:
                    step._validate_params()
        except Exception:  # the pair-by-pair loop reports it as scikit-learn does
            return None
        configured.append(steps)
    kinds = {isinstance(last, LogisticRegression) for _, last in configured}
    return configured if len(kinds) == 1 else None


def _known_scoring(scoring):
    """Scorers that only call the estimator's response methods (and ``score``)."""
    if scoring is None or isinstance(scoring, _GlobalScorer):
        return True
    return isinstance(scoring, dict) and all(
        isinstance(scorer, _GlobalScorer) for scorer in scoring.values()
    )


@contextmanager
def _restored_random_states(*owners):
    """Give back the ``random_state`` instances of ``owners`` their state when the
    block ends by falling back (so the pair-by-pair loop draws the same)."""
    states = [
        (owner.random_state, owner.random_state.get_state())
        for owner in owners
        if isinstance(getattr(owner, "random_state", None), np.random.RandomState)
    ]
    fallback = {"active": True}
    try:
        yield fallback
    finally:
        if fallback["active"]:
            for random_state, state in states:
                random_state.set_state(state)


def _folds(cv, X, y, groups, comms):
    """``(splits, Folds)``: the splitter's splits and whether they are
    complementary on every rank (Folds None otherwise). Collective."""
    splits = [(np.asarray(train), np.asarray(test)) for train, test in cv.split(X, y, groups)]
    folds = Folds([t for t, _ in splits], [t for _, t in splits], X.shape[0])
    _, complementary = agree(comms, lambda: (None, folds.complementary()))
    return splits, (folds if all(complementary) else None)


class _PairScorer:
    """Scores of the fitted pairs on their fold's rows: one GEMM per fold for all
    its pairs' decision values."""

    def __init__(self, X, y, pairs, fits, classes):
        self.X, self.y = X, y
        self.pairs, self.fits, self.classes = pairs, fits, classes
        self.single = y.ndim == 1

    def scores(self, scorer, members, rows):
        """Score of each pair ``members`` (indices of ``pairs``) on this rank's ``rows``."""
        fits = [self.fits[i] for i in members]
        values = decisions(self.X, rows, fits)
        y = self.y[rows]
        results, start = [], 0
        for i, fit in zip(members, fits):
            last = self.pairs[i].estimator
            width = fit.coef.shape[0]
            decision = np.ascontiguousarray(values[:, start : start + width])
            start += width
            if self.classes is None and width == 1 and (self.single or isinstance(last, _RAVELLED)):
                decision = decision.ravel()
            estimator = scoring_estimator(last, fit, decision, self.classes, self.X.shape[1])
            results.append(score(scorer, estimator, rows.shape[0], y))
        return results


def fit_and_score_pairs(
    estimator, candidates, X, y, groups, cv, scorer, *, return_train_score, comms
):
    """Fit every (candidate, fold) pair together and score it, as scikit-learn's
    ``_fit_and_score`` results (candidate-major), or None when the pairs must be
    fitted one by one. Also returns the splits (for the fallback).

    This function is collective.
    """
    configured = _configured(estimator, candidates)
    if configured is None or not batchable_rows(X, y, comms, classifier=is_classifier(estimator)):
        return None, None
    splits, folds = _folds(cv, X, y, groups, comms)
    if folds is None:
        return None, splits
    pairs = [
        Pair(fold, clone(last), scaler)
        for scaler, last in configured
        for fold in range(folds.n_splits)
    ]
    start = time.perf_counter()
    try:
        if isinstance(pairs[0].estimator, LogisticRegression):
            fits, classes = logistic_fits(X, y, folds, pairs, comms)
        else:
            Y = y[:, None] if y.ndim == 1 else y
            fits, classes = least_squares_fits(X, Y, folds, pairs, comms), None
    except NotBatchable:
        return None, splits
    fit_time = (time.perf_counter() - start) / len(pairs)
    pair_scorer = _PairScorer(X, y, pairs, fits, classes)
    out = [None] * len(pairs)
    for fold, (train, test) in enumerate(splits):
        members = list(range(fold, len(pairs), folds.n_splits))
        start = time.perf_counter()
        test_scores = pair_scorer.scores(scorer, members, test)
        score_time = (time.perf_counter() - start) / len(members)
        train_scores = pair_scorer.scores(scorer, members, train) if return_train_score else None
        for j, i in enumerate(members):
            out[i] = {
                "fit_error": None,
                "test_scores": test_scores[j],
                "n_test_samples": test.shape[0],
                "fit_time": fit_time,
                "score_time": score_time,
            }
            if return_train_score:
                out[i]["train_scores"] = train_scores[j]
    return out, splits


def _candidates(search):
    if hasattr(search, "param_grid"):
        return list(ParameterGrid(search.param_grid))
    return list(
        ParameterSampler(
            search.param_distributions, search.n_iter, random_state=search.random_state
        )
    )


def batched_search(search, X, y, params, comms):
    """Fit ``search`` (a GridSearchCV or RandomizedSearchCV whose ``cv`` and
    ``scoring`` are already mlmpi's) with every pair fitted together. Returns
    False when the pair-by-pair loop must run; ``search.cv`` is then the list
    of splits already cut (restored by the caller).

    This method is collective.
    """
    groups = params.get("groups")
    if set(params) - {"groups"} or not _known_scoring(search.scoring):
        return False
    if _steps(search.estimator) is None:
        return False
    with _restored_random_states(search, search.cv) as fallback:
        candidates = _candidates(search)
        scorers, refit_metric = search._get_scorers()
        out, splits = fit_and_score_pairs(
            search.estimator,
            candidates,
            X,
            y,
            groups,
            search.cv,
            scorers,
            return_train_score=search.return_train_score,
            comms=comms,
        )
        if out is None:
            if splits is not None:
                search.cv = splits
            return False
        fallback["active"] = False
    _finish_search(search, candidates, len(splits), out, scorers, refit_metric, X, y)
    return True


def _finish_search(search, candidates, n_splits, out, scorers, refit_metric, X, y):
    """What scikit-learn's ``BaseSearchCV.fit`` does after the fits."""
    search.n_splits_ = n_splits
    results = search._format_results(candidates, n_splits, out, {})
    first_test_score = out[0]["test_scores"]
    search.multimetric_ = isinstance(first_test_score, dict)
    if callable(search.scoring) and search.multimetric_:
        search._check_refit_for_multimetric(first_test_score)
        refit_metric = search.refit
    if search.refit or not search.multimetric_:
        search.best_index_ = search._select_best_index(search.refit, refit_metric, results)
        if not callable(search.refit):
            search.best_score_ = results[f"mean_test_{refit_metric}"][search.best_index_]
        search.best_params_ = results["params"][search.best_index_]
    if search.refit:
        search.best_estimator_ = clone(search.estimator).set_params(
            **clone(search.best_params_, safe=False)
        )
        start = time.time()
        search.best_estimator_.fit(X, y)
        search.refit_time_ = time.time() - start
        if hasattr(search.best_estimator_, "feature_names_in_"):
            search.feature_names_in_ = search.best_estimator_.feature_names_in_
    search.scorer_ = scorers._scorers if hasattr(scorers, "_scorers") else scorers
    search.cv_results_ = results


def batched_cross_validate(
    estimator,
    X,
    y,
    *,
    groups,
    scoring,
    cv,
    params,
    return_train_score,
    return_estimator,
    return_indices,
    comms,
):
    """scikit-learn's ``cross_validate`` dict with the folds fitted together, or
    ``(None, splits)`` when the pair-by-pair loop must run (``splits`` None
    when none were cut yet).

    This function is collective.
    """
    if params or return_estimator or not _known_scoring(scoring) or _steps(estimator) is None:
        return None, None
    with _restored_random_states(cv) as fallback:
        scorer = check_scoring(estimator, scoring)
        out, splits = fit_and_score_pairs(
            estimator,
            [{}],
            X,
            y,
            groups,
            cv,
            scorer,
            return_train_score=return_train_score,
            comms=comms,
        )
        if out is None:
            return None, splits
        fallback["active"] = False
    results = {
        "fit_time": np.array([o["fit_time"] for o in out]),
        "score_time": np.array([o["score_time"] for o in out]),
    }
    if return_indices:
        train, test = zip(*splits)
        results["indices"] = {"train": train, "test": test}
    parts = ("test", "train") if return_train_score else ("test",)
    scores = {part: _by_name([o[f"{part}_scores"] for o in out]) for part in parts}
    for name in scores["test"]:
        for part in parts:
            results[f"{part}_{name}"] = scores[part][name]
    return results, splits


def _by_name(scores):
    """``{name: array}`` of per-fold scores (one metric is named ``score``)."""
    if isinstance(scores[0], dict):
        return {name: np.asarray([s[name] for s in scores]) for name in scores[0]}
    return {"score": np.asarray(scores)}
