"""scikit-learn's ``_BinMapper.fit`` on the concatenated training rows.

The bin thresholds depend only on the multiset of (subsampled) values of
each feature, so they are scikit-learn's exactly once the same rows are
drawn:

- more than ``subsample`` (scikit-learn's 200,000) training rows: a
  subsample of ``subsample`` draws with replacement, proportional to the
  sample weights when given, under the fit's random draws
  (:mod:`._hgb_rows`). With scikit-learn's draws, the ranks replay its
  draw of *positions* of its training order (``RandomState(seed).choice``);
  with sample weights, that needs every weight in training order: they are
  gathered once (16 bytes per training row). With per-row draws, each rank
  draws how many times each of its training rows is taken (a per-row
  bootstrap over the training rows in global row order; weighted, it
  exchanges only the weights the ranks' boundaries cut): O(rows on the
  rank). Each rank keeps its drawn rows, with their multiplicity, and only
  the drawn values travel (through the distributed selection of
  :func:`mlmpi.utils.global_bin_thresholds`);
- otherwise every row counts, rows of zero weight excluded;
- a feature with at most ``max_bins`` distinct values (the union over the
  ranks) gets the midpoints between them, others the global
  ``averaged_inverted_cdf`` percentiles (weighted ones when sample weights
  are given and not used by a subsample);
- a categorical feature's bins are its global category codes.
"""

import numpy as np
from sklearn.utils import check_random_state

from ..random._policy import PER_ROW
from ..random._tree import WeightedBootstrap, bootstrap_counts
from ..utils._offsets import group_starts
from ..utils.stats import global_bin_thresholds
from ._hgb_rows import BINNING_STREAM


def _replayed_rows(X, sample_weight, rows, seed, subsample, comms):
    """This rank's rows of scikit-learn's binning subsample, repeated as drawn
    (collective with sample weights)."""
    rng = check_random_state(seed)
    if sample_weight is None:
        drawn = rng.choice(rows.n_train, subsample, replace=True)
    else:
        pairs = np.stack([rows.positions.astype(np.float64), sample_weight], axis=1)
        every = comms.allgatherv(np.ascontiguousarray(pairs))
        weights = np.empty(rows.n_train)
        weights[every[:, 0].astype(np.int64)] = every[:, 1]
        drawn = rng.choice(rows.n_train, subsample, p=weights / np.sum(weights), replace=True)
    return X[rows.local_rows(np.sort(drawn))]


def _per_row_rows(X, sample_weight, rows, seed, subsample, comms):
    """This rank's rows of a per-row binning subsample, repeated as drawn
    (collective with sample weights)."""
    layout = rows.layout
    if sample_weight is None:
        start, stop = layout.offset, layout.offset + layout.n_local
        counts = bootstrap_counts(seed, BINNING_STREAM, layout.n_samples, subsample, start, stop)
    else:
        counts = WeightedBootstrap(sample_weight, layout, comms).counts(
            seed, BINNING_STREAM, subsample
        )
    return X[np.repeat(np.arange(counts.shape[0]), counts)]


def fit_bin_mapper(bin_mapper, X, sample_weight, rows, comms):
    """Set the fitted attributes of scikit-learn's ``bin_mapper`` from the
    training rows of every rank.

    Parameters
    ----------
    bin_mapper : sklearn ``_BinMapper``
        Unfitted, with ``n_bins``, ``subsample`` (None: no subsample),
        ``is_categorical``, ``known_categories`` (global) and
        ``random_state`` (the fit's seed).
    X : ndarray of shape (n_local_train, n_features), float64
        This rank's training rows (host), in ``rows.train`` order.
    sample_weight : ndarray of shape (n_local_train,) or None
    rows : TrainingRows
        The training rows, their order and the fit's random draws.
    comms : Comms

    Returns
    -------
    bin_mapper : the same object, fitted.

    Notes
    -----
    This function is collective.
    """
    n_features = X.shape[1]
    subsample = bin_mapper.subsample
    if subsample is not None and rows.n_train > subsample:
        drawn_rows = _per_row_rows if rows.draws == PER_ROW else _replayed_rows
        X = drawn_rows(X, sample_weight, rows, bin_mapper.random_state, subsample, comms)
        sample_weight = None
    elif sample_weight is not None:
        X, sample_weight = X[sample_weight != 0], sample_weight[sample_weight != 0]
    is_categorical = np.zeros(n_features, dtype=np.uint8)
    if bin_mapper.is_categorical is not None:
        is_categorical = np.asarray(bin_mapper.is_categorical, dtype=np.uint8)
    numerical = np.flatnonzero(is_categorical == 0)
    max_bins = bin_mapper.n_bins - 1
    found = global_bin_thresholds(
        X[:, numerical], max_bins, comms=comms, sample_weight=sample_weight
    )
    thresholds = [None] * n_features
    for f, values in zip(numerical, found):
        thresholds[f] = values
    for f in np.flatnonzero(is_categorical):
        thresholds[f] = np.asarray(bin_mapper.known_categories[f], dtype=np.float64)
    bin_mapper.is_categorical_ = is_categorical
    bin_mapper.missing_values_bin_idx_ = bin_mapper.n_bins - 1
    bin_mapper.bin_thresholds_ = thresholds
    bin_mapper.n_bins_non_missing_ = np.array(
        [t.shape[0] + (not c) for t, c in zip(thresholds, is_categorical)], dtype=np.uint32
    )
    return bin_mapper


def flat_thresholds(bin_mapper):
    """Every feature's thresholds concatenated, and where each starts (for the
    binning kernel)."""
    thresholds = bin_mapper.bin_thresholds_
    starts = group_starts([t.shape[0] for t in thresholds])
    flat = np.concatenate(thresholds) if thresholds else np.empty(0)
    return np.ascontiguousarray(flat, dtype=np.float64), starts
