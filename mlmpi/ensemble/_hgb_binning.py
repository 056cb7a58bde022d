"""scikit-learn's ``_BinMapper.fit`` on the concatenated training rows.

The bin thresholds depend only on the multiset of (subsampled) values of
each feature, so they are scikit-learn's exactly once the same rows are
drawn:

- more than 200,000 training rows: the ranks replay scikit-learn's draw of
  200,000 *positions* of its training order (``RandomState(seed).choice``,
  with replacement, proportional to the sample weights when given) and each
  rank keeps its drawn rows, with their multiplicity. Only the drawn values
  travel (through the distributed selection of
  :func:`mlmpi.utils.global_bin_thresholds`). With sample weights the draw
  needs every weight in training order: they are gathered once (8 bytes per
  training row);
- otherwise every row counts, rows of zero weight excluded;
- a feature with at most ``max_bins`` distinct values (the union over the
  ranks) gets the midpoints between them, others the global
  ``averaged_inverted_cdf`` percentiles (weighted ones when sample weights
  are given and not used by a subsample);
- a categorical feature's bins are its global category codes.
"""

import numpy as np
from sklearn.utils import check_random_state

from ..utils.stats import global_bin_thresholds

SUBSAMPLE = 200_000  # scikit-learn's _BinMapper(subsample=int(2e5))


def _drawn_rows(X, sample_weight, rows, seed, subsample, comms):
    """This rank's rows of scikit-learn's binning subsample, repeated as drawn."""
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


def fit_bin_mapper(bin_mapper, X, sample_weight, rows, comms, subsample=SUBSAMPLE):
    """Set the fitted attributes of scikit-learn's ``bin_mapper`` from the
    training rows of every rank.

    Parameters
    ----------
    bin_mapper : sklearn ``_BinMapper``
        Unfitted, with ``n_bins``, ``is_categorical``, ``known_categories``
        (global) and ``random_state`` (the fit's seed).
    X : ndarray of shape (n_local_train, n_features), float64
        This rank's training rows (host), in ``rows.train`` order.
    sample_weight : ndarray of shape (n_local_train,) or None
    rows : TrainingRows
        The training rows and their positions in scikit-learn's order.
    comms : Comms
    subsample : int
        scikit-learn's ``subsample`` (200,000).

    Returns
    -------
    bin_mapper : the same object, fitted.

    Notes
    -----
    This function is collective.
    """
    n_features = X.shape[1]
    if rows.n_train > subsample:
        X = _drawn_rows(X, sample_weight, rows, bin_mapper.random_state, subsample, comms)
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
    starts = np.zeros(len(thresholds) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([t.shape[0] for t in thresholds])
    flat = np.concatenate(thresholds) if thresholds else np.empty(0)
    return np.ascontiguousarray(flat, dtype=np.float64), starts
