"""Cross-validation whose every fit and score is collective over the ranks."""

import numpy as np
import sklearn.model_selection as sk
from sklearn.base import is_classifier

from .._contract import collective_function, nested_calls_agree
from ..comms import resolve_comms
from ..utils.shard_local import warn_shard_local_learners
from ._agreement import check_n_jobs
from ._batched import batched_cross_validate
from ._failures import agreed_folds
from ._scoring import collective_scoring, rank0_times
from ._split import check_cv


@collective_function
def cross_validate(
    estimator,
    X,
    y=None,
    *,
    groups=None,
    scoring=None,
    cv=None,
    n_jobs=None,
    verbose=0,
    params=None,
    pre_dispatch="2*n_jobs",
    return_train_score=False,
    return_estimator=False,
    return_indices=False,
    error_score=np.nan,
    comms=None,
):
    """Evaluate metric(s) by cross-validation over every rank's rows.

    :func:`sklearn.model_selection.cross_validate` with folds cut by global
    row (:func:`check_cv`): every rank fits and scores the same fold together,
    one after the other, so the scores are those of the concatenated data at
    any number of ranks.

    This function is collective.

    Parameters
    ----------
    estimator : estimator object
        An mlmpi estimator or pipeline (its ``fit`` and ``score`` collective).
    X, y : array-like
        This rank's rows.
    groups : object
        Ignored by mlmpi's splitters.
    scoring : str, callable, list, dict or None, default=None
        None: the estimator's ``score`` (over every rank's rows); names:
        ``mlmpi.metrics.get_scorer``'s collective scorers; a callable must be
        collective.
    cv : int, cross-validation generator or iterable, default=None
        See :func:`check_cv`.
    n_jobs : None or 1
        Other values raise ``ValueError`` under ``mpiexec`` (joblib's workers
        cannot join the MPI job; the ranks already work in parallel).
    verbose, params, pre_dispatch, return_train_score, return_estimator, return_indices, \
error_score
        As scikit-learn's. ``return_indices`` gives this rank's row indices.
    comms : Comms, default=None
        None for :func:`mlmpi.get_comms`.

    Returns
    -------
    scores : dict
        scikit-learn's keys; ``fit_time`` and ``score_time`` are rank 0's, so
        the dict is the same on every rank.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import Ridge
    >>> from mlmpi.model_selection import cross_validate
    >>> X, y = load_diabetes(return_X_y=True)
    >>> scores = cross_validate(Ridge(alpha=0.1), X, y, cv=3)
    >>> sorted(scores)
    ['fit_time', 'score_time', 'test_score']
    """
    comms = resolve_comms(comms)
    check_n_jobs(n_jobs, comms)
    warn_shard_local_learners(estimator, comms)
    with nested_calls_agree():  # every fit and score agrees too (the estimator's parameters)
        scoring = collective_scoring(scoring)
        cv = check_cv(cv, y, classifier=is_classifier(estimator), comms=comms)
        results, splits = batched_cross_validate(
            estimator,
            X,
            y,
            groups=groups,
            scoring=scoring,
            cv=cv,
            params=params,
            return_train_score=return_train_score,
            return_estimator=return_estimator,
            return_indices=return_indices,
            comms=comms,
        )
        if results is None:
            with agreed_folds(comms):  # a fold failing on one rank fails on all
                results = sk.cross_validate(
                    estimator,
                    X,
                    y,
                    groups=groups,
                    scoring=scoring,
                    cv=cv if splits is None else splits,
                    n_jobs=n_jobs,
                    verbose=verbose,
                    params=params,
                    pre_dispatch=pre_dispatch,
                    return_train_score=return_train_score,
                    return_estimator=return_estimator,
                    return_indices=return_indices,
                    error_score=error_score,
                )
    return rank0_times(results, ("fit_time", "score_time"), comms)


@collective_function
def cross_val_score(
    estimator,
    X,
    y=None,
    *,
    groups=None,
    scoring=None,
    cv=None,
    n_jobs=None,
    verbose=0,
    params=None,
    pre_dispatch="2*n_jobs",
    error_score=np.nan,
    comms=None,
):
    """Evaluate a score by cross-validation over every rank's rows.

    :func:`cross_validate`'s ``test_score``; the same array on every rank.

    This function is collective.

    Parameters
    ----------
    estimator, X, y, groups, scoring, cv, n_jobs, verbose, params, pre_dispatch, \
error_score, comms
        As in :func:`cross_validate` (``scoring`` is one metric).

    Returns
    -------
    scores : ndarray of float of shape (n_splits,)

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import Ridge
    >>> from mlmpi.model_selection import cross_val_score
    >>> X, y = load_diabetes(return_X_y=True)
    >>> cross_val_score(Ridge(alpha=0.1), X, y, cv=3).shape
    (3,)
    """
    if scoring is not None and not (callable(scoring) or isinstance(scoring, str)):
        raise ValueError(
            "scoring must be None, a string or a callable for cross_val_score; use "
            f"cross_validate for several metrics (got {scoring!r})."
        )
    return cross_validate(
        estimator,
        X,
        y,
        groups=groups,
        scoring=scoring,
        cv=cv,
        n_jobs=n_jobs,
        verbose=verbose,
        params=params,
        pre_dispatch=pre_dispatch,
        error_score=error_score,
        comms=comms,
    )["test_score"]
