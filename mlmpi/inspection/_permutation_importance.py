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


def _permutation_scores(
    estimator, X, y, sample_weight, column, seed, n_repeats, scorer, rows, comms
):
    """scikit-learn's ``_calculate_permutation_scores`` with the column shuffled over the
    global rows (or scikit-learn's sample of them): every rank draws the same
    permutations and sets its rows' new values. ``rows`` is ``(offset, n_local,
    max_samples)``. Collective."""
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
    if isinstance(scores[0], dict):
        return _aggregate_score_dicts(scores)
    return np.array(scores)


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
    every rank's rows: each column is shuffled over the *global* rows (every
    rank draws scikit-learn's permutations of the global row count, and takes
    its rows' new values from the rank that holds them), and each score is
    collective. The importances are scikit-learn's at any number of ranks.

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
        Rows (a fraction or a global number) drawn for each feature, as
        scikit-learn draws them from the global rows.
    comms : Comms, default=None
        None for :func:`mlmpi.get_comms`.

    Returns
    -------
    result : Bunch or dict of Bunch
        ``importances_mean``, ``importances_std`` and ``importances``, replicated.

    Notes
    -----
    Each rank holds one global column (8 bytes per global row) and
    scikit-learn's permutation of the sampled rows while a feature is scored.

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
    offset, n_samples = comms.exclusive_scan_rows(X.shape[0])
    random_state = check_random_state(agreed_random_state(random_state, comms))
    random_seed = random_state.randint(np.iinfo(np.int32).max + 1)
    if not isinstance(max_samples, numbers.Integral):
        max_samples = int(max_samples * n_samples)
    elif max_samples > n_samples:
        raise ValueError("max_samples must be <= n_samples")
    scorer = check_scoring(estimator, collective_scoring(scoring))
    baseline = _score(scorer, estimator, X, y, sample_weight)
    sampling = (offset, X.shape[0], max_samples)
    scores = [
        _permutation_scores(
            estimator, X, y, sample_weight, column, random_seed, n_repeats, scorer, sampling, comms
        )
        for column in range(X.shape[1])
    ]
    if isinstance(baseline, dict):
        return {
            name: _importances(baseline[name], np.array([s[name] for s in scores]))
            for name in baseline
        }
    return _importances(baseline, np.array(scores))
