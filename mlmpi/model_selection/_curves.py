"""Learning and validation curves whose every fit and score is collective."""

import time

import numpy as np
import sklearn.model_selection as sk
from sklearn.base import clone, is_classifier
from sklearn.utils import check_random_state, indexable

from .._array import to_host
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
from ..random import draws_for
from ..random._order import shuffled_positions
from ..random._policy import PER_ROW
from ..utils.shard_local import warn_shard_local_learners
from ..utils.validation import RowLayout, agree
from ._agreement import agreed_random_state, check_n_jobs
from ._failures import agreed_fit_and_score, agreed_folds
from ._per_row import per_row_seed
from ._scoring import collective_scoring
from ._split import _PerRowShuffleSplit, check_cv

_TRAIN_SIZES = np.linspace(0.1, 1.0, 5)  # scikit-learn's default
_SHUFFLE_STREAM = 0x63757276 << 32  # the training sets' per-row shuffles ("curv"), one per split


def _ordered_splits(splitter, X, y, groups, comms):
    """``(splits, counts)``: each split as ``[train, position, test]``: this
    rank's training rows (local indices, increasing; an iterable's in its
    order), the position of each in the split's training set in
    scikit-learn's order, and this rank's test rows; and every rank's number
    of training rows of each split, shape (n_ranks, n_splits).

    The shuffle splits give the positions their draws made (per-row, or
    scikit-learn's replayed). The other splitters' training sets are in
    increasing order of the global rows, and an iterable of this rank's
    (train, test) pairs is read as the ranks' pairs concatenated in rank
    order: a position is then the training rows on the ranks below plus the
    row's place here. This function is collective.
    """
    if isinstance(splitter, _PerRowShuffleSplit):
        splits = []
        for train, test in splitter._ordered_parts(X, y, groups):
            rows = np.flatnonzero(train >= 0)
            splits.append([rows, train[rows], np.flatnonzero(test >= 0)])
    else:
        splits = [
            [np.asarray(train, dtype=np.intp), None, np.asarray(test, dtype=np.intp)]
            for train, test in splitter.split(X, y, groups)
        ]
    counts = np.array([len(split[0]) for split in splits], dtype=np.int64)
    counts = to_host(comms.allgather(counts)).reshape(comms.size, len(splits))
    for split, below in zip(splits, counts[: comms.rank].sum(axis=0)):
        if split[1] is None:
            split[1] = below + np.arange(len(split[0]))
    return splits, counts


def _shuffle(splits, counts, n_samples, random_state, comms):
    """Shuffle each split's training set (new positions, in place), as
    :mod:`mlmpi.random`'s policy says for ``n_samples`` global rows: per-row
    draws over its rows (keyed by their index in the ranks' training rows,
    rank after rank), or scikit-learn's ``rng.permutation(train)`` of each
    split in turn, replayed (8 bytes per global training row). Collective."""
    if draws_for(n_samples) == PER_ROW:
        seed = per_row_seed(random_state, comms)
        for i, split in enumerate(splits):
            layout = RowLayout(tuple(counts[:, i]), comms.rank)
            split[1] = shuffled_positions(seed, _SHUFFLE_STREAM + i, layout, comms)
        return
    rng = check_random_state(agreed_random_state(random_state, comms))
    for split, n_train in zip(splits, counts.sum(axis=0)):
        split[1] = np.argsort(rng.permutation(n_train))[split[1]]


def _incremental_scores(estimator, X, y, classes, split, sizes, scorer, times, params):
    """scikit-learn's ``_incremental_fit_estimator`` on global rows: ``partial_fit``
    on each chunk of the (global) training rows, with ``params`` (row-aligned ones
    cut to the chunk's rows), scored after each. Collective."""
    train, position, test = split
    found = []
    start = 0

    def rows(index):  # (X, y) of the rows, y left out when there is none
        parts = (X, y) if y is not None else (X,)
        return [_safe_indexing(part, index) for part in parts]

    for end in np.searchsorted(position, sizes):
        chunk = train[start:end]
        start = end
        fit_params = _check_method_params(X, params=params, indices=chunk)
        began = time.time()
        if classes is None:
            estimator.partial_fit(*rows(chunk), **fit_params)
        else:
            estimator.partial_fit(*rows(chunk), classes=classes, **fit_params)
        fit_time = time.time() - began
        began = time.time()
        test_score = scorer(estimator, *rows(test))
        train_score = scorer(estimator, *rows(train[:end]))
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
    split's training set in scikit-learn's order (shuffled with
    ``shuffle=True``), so every fit sees the rows scikit-learn's would, at any
    number of ranks. Every fit and score is collective.

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
    Each rank finds the position of each of its training rows in the
    training set's order and keeps those below each size: time and memory
    over the rank's rows, except where scikit-learn's draws are replayed.
    The K-fold family, the time series split and an iterable of (train,
    test) pairs order the training rows as scikit-learn does, by global row
    (an iterable in its order, rank after rank), from counts alone. The
    order of the shuffle splits, and the shuffle of each training set with
    ``shuffle=True``, follow :mod:`mlmpi.random`'s policy: scikit-learn's
    draws (by default up to a million global rows), replayed over the global
    rows on every rank (8 bytes per row), give scikit-learn's subsets;
    per-row draws give subsets of scikit-learn's sizes, the same at any
    number of ranks.

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
    splits, counts = _ordered_splits(splitter, X, y, groups, comms)
    sizes = _translate_train_sizes(train_sizes, int(counts[:, 0].sum()))
    if verbose > 0 and comms.rank == 0:
        print(f"[learning_curve] Training set sizes: {sizes}")
    if shuffle:
        n_samples = comms.exclusive_scan_rows(_num_samples(X))[1]
        _shuffle(splits, counts, n_samples, random_state, comms)
    for split in splits:  # this rank's training rows in the training set's order
        order = np.argsort(split[1])
        split[0], split[1] = split[0][order], split[1][order]

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
                    split,
                    sizes,
                    scorer,
                    return_times,
                    params or {},
                )
                for split in splits
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
                    train=train[: np.searchsorted(position, size)],
                    test=test,
                    verbose=verbose,
                    parameters=None,
                    fit_params=params,
                    score_params=None,
                    return_train_score=True,
                    error_score=error_score,
                    return_times=return_times,
                )
                for train, position, test in splits
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
