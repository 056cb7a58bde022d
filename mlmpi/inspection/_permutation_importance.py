"""Permutation importance with each column shuffled over the global rows."""

import numbers

import numpy as np
from sklearn.utils import Bunch, check_array, check_random_state

from .._contract import collective_function
from .._sklearn_compat import _aggregate_score_dicts, _generate_indices
from ..comms import resolve_comms
from ..metrics import check_scoring
from ..model_selection._agreement import agreed_random_state
from ..model_selection._scoring import collective_scoring
from ..model_selection._split import _agreed_kind, _blocks, _row_kind, _RowMove
from ..random import draws_for
from ..random._order import shuffled_positions
from ..random._policy import PER_ROW
from ..random._tree import subset_parts
from ..utils.validation import RowLayout

_SAMPLE_STREAM = 0x7065726D  # the per-row sample of ``max_samples`` rows ("perm")
# the per-row shuffle of repeat k: stream _SHUFFLE_STREAMS + k
_SHUFFLE_STREAMS = _SAMPLE_STREAM << 32


def _score(scorer, estimator, X, y, sample_weight):
    if sample_weight is not None:
        return scorer(estimator, X, y, sample_weight=sample_weight)
    return scorer(estimator, X, y)


def _column(X, index):
    return np.asarray(X.iloc[:, index] if hasattr(X, "iloc") else X[:, index])


def _set_column(X, index, values):
    if hasattr(X, "iloc"):
        X[X.columns[index]] = values
    else:
        X[:, index] = values


def _stacked(scores):
    """One score per repeat: an array, or a dict of arrays for several scorers."""
    if isinstance(scores[0], dict):
        return _aggregate_score_dicts(scores)
    return np.array(scores)


def _permutation_scores(
    estimator, X, y, sample_weight, column, seed, n_repeats, scorer, rows, comms
):
    """scikit-learn's ``_calculate_permutation_scores`` with the column shuffled over the
    global rows (or scikit-learn's sample of them): every rank draws the same
    permutations and sets its rows' new values. ``rows`` is ``(offset, n_local,
    max_samples)``.

    This function is collective."""
    offset, n_local, max_samples = rows
    random_state = check_random_state(seed)
    values = comms.allgatherv(np.ascontiguousarray(_column(X, column)))  # the global column
    n_samples = values.shape[0]
    sample = np.arange(n_samples)
    if max_samples < n_samples:
        sample = _generate_indices(
            random_state=random_state,
            bootstrap=False,
            n_population=n_samples,
            n_samples=max_samples,
        )
    mine = (sample >= offset) & (sample < offset + n_local)
    positions, local = np.flatnonzero(mine), sample[mine] - offset
    X_permuted = X.iloc[local].copy() if hasattr(X, "iloc") else X[local].copy()
    y_part = y[local]
    weight = None if sample_weight is None else np.asarray(sample_weight)[local]
    source = np.arange(sample.shape[0])  # position -> position of its value before any shuffle
    shuffling = np.arange(sample.shape[0])
    scores = []
    for _ in range(n_repeats):
        random_state.shuffle(shuffling)
        source = source[shuffling]  # scikit-learn shuffles the already shuffled column
        _set_column(X_permuted, column, values[sample[source[positions]]])
        scores.append(_score(scorer, estimator, X_permuted, y_part, weight))
    return _stacked(scores)


def _agreed_kinds(arrays, comms):
    """How the rows of each of ``arrays`` (an iterable) travel between the
    ranks: ``_agreed_kind`` of every rank's kinds.

    This function is collective."""
    gathered = comms.allgather_object([_row_kind(a) for a in arrays])
    return [_agreed_kind(list(kinds)) for kinds in zip(*gathered)]


def _moved_sample(data, seed, layout, max_samples, comms):
    """The sampled rows of ``data`` (``X``, ``y`` and the weights or None), in
    global row order, in even blocks over the ranks (``_RowMove``), and their
    layout. The sample is a uniform subset of ``max_samples`` global rows
    drawn by global row index (all rows when there are no more).

    This function is collective."""
    start, stop = layout.offset, layout.offset + layout.n_local
    if max_samples < layout.n_samples:
        parts = subset_parts(seed, _SAMPLE_STREAM, layout.n_samples, (max_samples,), start, stop)
        kept = parts == 0
    else:
        kept = np.ones(layout.n_local, dtype=bool)
    before, _ = comms.exclusive_scan_rows(int(kept.sum()))
    move = _RowMove(np.where(kept, before + np.cumsum(kept) - 1, -1), max_samples, comms)
    arrays = [a for a in data if a is not None]
    moved = [move.rows(a, kind, comms) for a, kind in zip(arrays, _agreed_kinds(arrays, comms))]
    if data[2] is None:
        moved.append(None)
    sampled = RowLayout(tuple(np.diff(_blocks(max_samples, comms.size)).tolist()), comms.rank)
    return moved, sampled


def _per_row_scores(estimator, data, seed, n_repeats, scorer, layout, max_samples, comms):
    """The scores of every column shuffled ``n_repeats`` times, with per-row
    draws: the sampled rows move once to even blocks (:func:`_moved_sample`);
    repeat ``k`` orders them uniformly at random (``shuffled_positions``,
    stream ``_SHUFFLE_STREAMS + k``, the same order for every column, as
    scikit-learn's), and the sample's row ``j`` takes the column's value of
    the row that this order puts at position ``j``, moved to its rank by
    ``_RowMove``.

    This function is collective."""
    (X, y, weight), sampled = _moved_sample(data, seed, layout, max_samples, comms)
    moves = [
        _RowMove(
            shuffled_positions(seed, _SHUFFLE_STREAMS + repeat, sampled, comms), max_samples, comms
        )
        for repeat in range(n_repeats)
    ]
    kinds = _agreed_kinds((_column(X, column) for column in range(X.shape[1])), comms)
    scores = []
    for column, kind in enumerate(kinds):
        values = _column(X, column).copy()
        repeats = []
        for move in moves:
            _set_column(X, column, move.rows(values, kind, comms))
            repeats.append(_score(scorer, estimator, X, y, weight))
        _set_column(X, column, values)
        scores.append(_stacked(repeats))
    return scores


def _importances(baseline, permuted):
    importances = baseline - permuted
    return Bunch(
        importances_mean=np.mean(importances, axis=1),
        importances_std=np.std(importances, axis=1),
        importances=importances,
    )


@collective_function
def permutation_importance(
    estimator,
    X,
    y,
    *,
    scoring=None,
    n_repeats=5,
    n_jobs=None,
    random_state=None,
    sample_weight=None,
    max_samples=1.0,
    comms=None,
):
    """Permutation importance of each feature over the rows of every rank.

    :func:`sklearn.inspection.permutation_importance` on the concatenation of
    every rank's rows: each column is shuffled over the *global* rows (or
    over a uniform sample of ``max_samples`` of them), each row taking its
    new value from the rank that holds it, and each score is collective. With
    scikit-learn's draws (the default up to a million global rows) the
    importances are scikit-learn's at any number of ranks; with per-row draws
    the shuffles are the same at any number of ranks (Notes).

    This function is collective.

    Parameters
    ----------
    estimator : object
        A fitted estimator (its scoring collective: an mlmpi estimator).
    X : ndarray or DataFrame of shape (n_local, n_features)
        This rank's rows.
    y : array-like of shape (n_local,) or (n_local, n_targets)
        Their targets.
    scoring : str, callable, list, tuple, dict or None, default=None
        A name is mlmpi's collective scorer; None the estimator's ``score``.
    n_repeats : int, default=5
        Shuffles per feature.
    n_jobs : int, default=None
        Accepted for compatibility (the features are scored one after the other).
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffles (None: drawn on rank 0 for every rank).
    sample_weight : array-like of shape (n_local,), default=None
        This rank's weights, passed to the scorer.
    max_samples : int or float, default=1.0
        Rows (a fraction or a global number) drawn without replacement from
        the global rows and shuffled for each feature (Notes).
    comms : Comms, default=None
        None for :func:`mlmpi.get_comms`.

    Returns
    -------
    result : Bunch or dict of Bunch
        ``importances_mean``, ``importances_std`` and ``importances``, replicated.

    Notes
    -----
    The sample of ``max_samples`` rows and the shuffles follow the
    random-draw policy (:func:`mlmpi.random.draws_for` of the global row
    count):

    - scikit-learn's draws (by default up to a million global rows): every
      rank draws scikit-learn's sample and permutations of the global row
      indices, as scikit-learn does for each feature from ``random_state``,
      and the rows stay on their ranks. Each rank holds one global column
      (8 bytes per global row) and scikit-learn's permutation of the sampled
      rows while a feature is scored: time and memory over all global rows,
      on every rank.
    - per-row draws: the sample is an exactly uniform subset of
      ``max_samples`` global rows drawn by global row index; the sampled rows
      (with their targets and weights) move once to even blocks over the
      ranks, in global row order; repeat ``k`` shuffles every column by the
      same uniform random order of the sampled rows (a distributed sort of
      per-row random keys), its values moving between the ranks in one
      all-to-all exchange per feature and repeat. The shuffles are
      independent uniform permutations, as scikit-learn's are; time and
      memory grow with ``max_samples / n_ranks`` rows (and ``n_repeats``
      orders of them) per rank. The shuffled columns are the same at any
      number of ranks, and so are the importances wherever the scores are
      (mlmpi's metrics add their sums exactly).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from mlmpi import Ridge
    >>> from mlmpi.inspection import permutation_importance
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = Ridge(alpha=0.1).fit(X, y)
    >>> result = permutation_importance(model, X, y, n_repeats=3, random_state=0)
    >>> result.importances.shape
    (10, 3)
    """
    comms = resolve_comms(comms)
    if not hasattr(X, "iloc"):
        X = check_array(X, ensure_all_finite="allow-nan", dtype=None, ensure_min_samples=0)
    y = np.asarray(y)
    counts = comms.allgather(np.asarray(X.shape[0], dtype=np.int64))
    layout = RowLayout(tuple(counts.tolist()), comms.rank)
    n_samples = layout.n_samples
    random_state = check_random_state(agreed_random_state(random_state, comms))
    random_seed = random_state.randint(np.iinfo(np.int32).max + 1)
    if not isinstance(max_samples, numbers.Integral):
        max_samples = int(max_samples * n_samples)
    elif max_samples > n_samples:
        raise ValueError("max_samples must be <= n_samples")
    scorer = check_scoring(estimator, collective_scoring(scoring))
    baseline = _score(scorer, estimator, X, y, sample_weight)
    if draws_for(n_samples) == PER_ROW:
        data = (X, y, None if sample_weight is None else np.asarray(sample_weight))
        scores = _per_row_scores(
            estimator, data, random_seed, n_repeats, scorer, layout, max_samples, comms
        )
    else:
        sampling = (layout.offset, layout.n_local, max_samples)
        scores = [
            _permutation_scores(
                estimator,
                X,
                y,
                sample_weight,
                column,
                random_seed,
                n_repeats,
                scorer,
                sampling,
                comms,
            )
            for column in range(X.shape[1])
        ]
    if isinstance(baseline, dict):
        return {
            name: _importances(baseline[name], np.array([s[name] for s in scores]))
            for name in baseline
        }
    return _importances(baseline, np.array(scores))
