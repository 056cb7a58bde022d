"""Learning and validation curves whose every fit and score is collective."""

import time

import numpy as np
import sklearn.model_selection as sk
from sklearn.base import clone, is_classifier
from sklearn.utils import check_random_state, indexable

from .._contract import collective_function, nested_calls_agree
from .._sklearn_compat import (
    _aggregate_score_dicts,
    _check_groups_routing_disabled,
    _check_method_params,
    _num_samples,
    _safe_indexing,
    _translate_train_sizes,
    _warn_or_raise_about_fit_failures,
)
from ..comms import resolve_comms
from ..metrics import check_scoring
from ..utils.shard_local import warn_shard_local_learners
from ..utils.validation import agree
from ._agreement import agreed_random_state, check_n_jobs
from ._failures import agreed_fit_and_score, agreed_folds
from ._scoring import collective_scoring
from ._split import _GlobalRowSplitter, check_cv

_TRAIN_SIZES = np.linspace(0.1, 1.0, 5)  # scikit-learn's default


def _global_splits(splitter, X, y, groups, comms):
    """``(offset, n_local, splits)``: each split's training and test rows as global
    row indices, in scikit-learn's order. An iterable of this rank's (train, test)
    pairs is read as the ranks' pairs concatenated in rank order. Collective."""
    n_local = _num_samples(X)
    offset, _ = comms.exclusive_scan_rows(n_local)
    if isinstance(splitter, _GlobalRowSplitter):
        return offset, n_local, splitter._global_order(X, y, groups)[1]
    splits = [
        tuple(comms.allgatherv(np.asarray(part, dtype=np.int64) + offset) for part in (train, test))
        for train, test in splitter.split(X, y, groups)
    ]
    return offset, n_local, splits


def _local(rows, offset, n_local):
    """This rank's positions among global ``rows`` (in their order)."""
    mine = rows[(rows >= offset) & (rows < offset + n_local)]
    return (mine - offset).astype(np.intp)


def _incremental_scores(estimator, X, y, classes, train, test, sizes, scorer, local, times, params):
    """scikit-learn's ``_incremental_fit_estimator`` on global rows: ``partial_fit``
    on each chunk of the (global) training rows, with ``params`` (row-aligned ones
    cut to the chunk's rows), scored after each. Collective."""
    found = []
    start = 0

    def rows(index):  # (X, y) of the rows, y left out when there is none
        parts = (X, y) if y is not None else (X,)
        return [_safe_indexing(part, index) for part in parts]

    for size in sizes:
        chunk = local(train[start:size])
        start = size
        fit_params = _check_method_params(X, params=params, indices=chunk)
        began = time.time()
        if classes is None:
            estimator.partial_fit(*rows(chunk), **fit_params)
        else:
            estimator.partial_fit(*rows(chunk), classes=classes, **fit_params)
        fit_time = time.time() - began
        began = time.time()
        test_score = scorer(estimator, *rows(local(test)))
        train_score = scorer(estimator, *rows(local(train[:size])))
        score_time = time.time() - began
        found.append(
            (train_score, test_score, fit_time, score_time) if times else (train_score, test_score)
        )
    return np.array(found)  # (n_sizes, scores and times)


@collective_function
def learning_curve(
    estimator,
    X,
    y,
    *,
    groups=None,
    train_sizes=_TRAIN_SIZES,
    cv=None,
    scoring=None,
    exploit_incremental_learning=False,
    n_jobs=None,
    pre_dispatch="all",
    verbose=0,
    shuffle=False,
    random_state=None,
    error_score=np.nan,
    return_times=False,
    params=None,
    comms=None,
):
    """Learning curve over the global rows.

    :func:`sklearn.model_selection.learning_curve` on the concatenation of
    every rank's rows: the training subsets are the first global rows of each
    split's training set in scikit-learn's order (shuffled by ``random_state``,
    the same draw on every rank), so every fit sees the rows scikit-learn's
    would, at any number of ranks. Every fit and score is collective.

    This function is collective.

    Parameters
    ----------
    estimator : estimator object
        An mlmpi estimator or pipeline.
    X, y : array-like
        This rank's rows.
    groups : array-like of shape (n_local,), default=None
        This rank's group labels, for the group splitters.
    train_sizes : array-like, default=np.linspace(0.1, 1.0, 5)
        Fractions or global numbers of training rows.
    cv : int, cross-validation generator, iterable or None, default=None
        See :func:`check_cv`.
    scoring : str, callable or None, default=None
        A name is mlmpi's collective scorer.
    exploit_incremental_learning : bool, default=False
        Fit by ``partial_fit`` on successive chunks of global rows.
    n_jobs : None or 1
        Other values raise ``ValueError`` under ``mpiexec``.
    pre_dispatch, verbose
        Accepted for compatibility.
    shuffle : bool, default=False
        Shuffle each training set (its global rows) before taking prefixes.
    random_state : int, RandomState instance or None, default=None
        The shuffle's seed (None: drawn on rank 0 for every rank).
    error_score : 'raise' or numeric, default=np.nan
    return_times : bool, default=False
    params : dict, default=None
        Parameters of the estimator's ``fit``, or of its ``partial_fit`` with
        ``exploit_incremental_learning`` (row-aligned ones for this rank's rows).
    comms : Comms, default=None
        None for :func:`mlmpi.get_comms`.

    Returns
    -------
    train_sizes_abs : ndarray of shape (n_unique_ticks,)
    train_scores, test_scores : ndarray of shape (n_ticks, n_cv_folds)
    fit_times, score_times : ndarray of shape (n_ticks, n_cv_folds)
        With ``return_times``; rank 0's.

    Notes
    -----
    Every rank holds each split's global training rows (8 bytes per row).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import Ridge
    >>> from mlmpi.model_selection import learning_curve
    >>> X, y = load_diabetes(return_X_y=True)
    >>> sizes, train, test = learning_curve(Ridge(), X, y, train_sizes=[50, 100], cv=3)
    >>> sizes.tolist(), test.shape
    ([50, 100], (2, 3))
    """
    comms = resolve_comms(comms)
    check_n_jobs(n_jobs, comms)
    warn_shard_local_learners(estimator, comms)
    if exploit_incremental_learning and not hasattr(estimator, "partial_fit"):
        raise ValueError(
            "An estimator must support the partial_fit interface to exploit incremental learning"
        )
    _check_groups_routing_disabled(groups)
    X, y, groups = indexable(X, y, groups)
    splitter = check_cv(cv, y, classifier=is_classifier(estimator), comms=comms)
    scorer = check_scoring(estimator, collective_scoring(scoring))
    offset, n_local, splits = _global_splits(splitter, X, y, groups, comms)
    sizes = _translate_train_sizes(train_sizes, len(splits[0][0]))
    if verbose > 0 and comms.rank == 0:
        print(f"[learning_curve] Training set sizes: {sizes}")
    if shuffle:
        rng = check_random_state(agreed_random_state(random_state, comms))
        splits = [(rng.permutation(train), test) for train, test in splits]

    def local(rows):
        return _local(rows, offset, n_local)

    with nested_calls_agree():  # every fit and score agrees too
        if exploit_incremental_learning:
            classes = None
            if is_classifier(estimator):
                _, found = agree(comms, lambda: (None, np.unique(y)))
                classes = np.unique(np.concatenate(found))
            out = [
                _incremental_scores(
                    clone(estimator),
                    X,
                    y,
                    classes,
                    train,
                    test,
                    sizes,
                    scorer,
                    local,
                    return_times,
                    params or {},
                )
                for train, test in splits
            ]
            out = np.asarray(out).transpose((2, 1, 0))
        else:
            results = [
                agreed_fit_and_score(
                    comms,
                    clone(estimator),
                    X,
                    y,
                    scorer=scorer,
                    train=local(train[:size]),
                    test=local(test),
                    verbose=verbose,
                    parameters=None,
                    fit_params=params,
                    score_params=None,
                    return_train_score=True,
                    error_score=error_score,
                    return_times=return_times,
                )
                for train, test in splits
                for size in sizes
            ]
            _warn_or_raise_about_fit_failures(results, error_score)
            results = _aggregate_score_dicts(results)
            keys = ["train_scores", "test_scores"] + (
                ["fit_time", "score_time"] if return_times else []
            )
            out = [np.asarray(results[key]).reshape(-1, sizes.shape[0]).T for key in keys]
        if return_times:
            fit_times, score_times = comms.bcast_object((out[2], out[3]), root=0)
            return sizes, out[0], out[1], fit_times, score_times
        return sizes, out[0], out[1]


@collective_function
def validation_curve(
    estimator,
    X,
    y,
    *,
    param_name,
    param_range,
    groups=None,
    cv=None,
    scoring=None,
    n_jobs=None,
    pre_dispatch="all",
    verbose=0,
    error_score=np.nan,
    params=None,
    comms=None,
):
    """Validation curve over the global rows.

    :func:`sklearn.model_selection.validation_curve` with folds cut by global
    row (:func:`check_cv`) and collective fits and scores: the scores of the
    concatenated data, at any number of ranks.

    This function is collective.

    Parameters
    ----------
    estimator : estimator object
        An mlmpi estimator or pipeline.
    X, y : array-like
        This rank's rows.
    param_name : str
        The parameter varied.
    param_range : array-like
        Its values.
    groups : array-like of shape (n_local,), default=None
        This rank's group labels, for the group splitters.
    cv : int, cross-validation generator, iterable or None, default=None
        See :func:`check_cv`.
    scoring : str, callable or None, default=None
        A name is mlmpi's collective scorer.
    n_jobs : None or 1
        Other values raise ``ValueError`` under ``mpiexec``.
    pre_dispatch, verbose
        Accepted for compatibility.
    error_score : 'raise' or numeric, default=np.nan
    params : dict, default=None
        Parameters of the estimator's ``fit``.
    comms : Comms, default=None
        None for :func:`mlmpi.get_comms`.

    Returns
    -------
    train_scores, test_scores : ndarray of shape (n_ticks, n_cv_folds)
        Replicated.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import Ridge
    >>> from mlmpi.model_selection import validation_curve
    >>> X, y = load_diabetes(return_X_y=True)
    >>> train, test = validation_curve(
    ...     Ridge(), X, y, param_name="alpha", param_range=[0.1, 1.0], cv=3
    ... )
    >>> test.shape
    (2, 3)
    """
    comms = resolve_comms(comms)
    check_n_jobs(n_jobs, comms)
    warn_shard_local_learners(estimator, comms)
    with nested_calls_agree(), agreed_folds(comms):  # every fit and score agrees too
        return sk.validation_curve(
            estimator,
            X,
            y,
            param_name=param_name,
            param_range=param_range,
            groups=groups,
            cv=check_cv(cv, y, classifier=is_classifier(estimator), comms=comms),
            scoring=collective_scoring(scoring),
            n_jobs=n_jobs,
            pre_dispatch=pre_dispatch,
            verbose=verbose,
            error_score=error_score,
            params=params,
        )
