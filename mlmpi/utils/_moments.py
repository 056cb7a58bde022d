"""Per-column mean and variance of the concatenated shards (NaN ignored).

Each rank summarises its rows as ``(count, mean, centred sum of squares)``
per column (float64, weighted when weights are given); one allgather
collects the summaries and every rank merges them in rank order with Chan,
Golub and LeVeque's pairwise formula. This is exact up to rounding, never
an average of per-shard variances. The same merge folds a new batch into
the state of a ``partial_fit``.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.utils.sparsefuncs import mean_variance_axis

from .._array import is_device_array, is_sparse, to_host


@dataclass
class Moments:
    """Weighted count, mean and centred sum of squares of each column (float64)."""

    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @property
    def var(self):
        """Population variance (NaN for a column without values)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.m2 / self.count

    def merge(self, other):
        """Moments of the union of the two sets of rows (Chan et al., eq. 1.5)."""
        count = self.count + other.count
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(count > 0, other.count / count, 0.0)
        delta = other.mean - self.mean
        mean = self.mean + delta * share
        m2 = self.m2 + other.m2 + delta**2 * self.count * share
        return Moments(count, mean, m2)


def local_moments(X, sample_weight=None):
    """Moments of this rank's rows (dense or sparse; NaN ignored).

    No communication. A column without values has count 0 and mean 0.
    """
    if is_sparse(X):
        X = X.get() if is_device_array(X) else X
        if X.shape[0] == 0:
            zeros = np.zeros(X.shape[1])
            return Moments(zeros, zeros.copy(), zeros.copy())
        weights = None if sample_weight is None else to_host(sample_weight)
        mean, var, count = mean_variance_axis(X, axis=0, weights=weights, return_sum_weights=True)
        count = np.asarray(count, dtype=np.float64)
        mean = np.where(count > 0, mean, 0.0)
        return Moments(count, mean, np.where(count > 0, var * count, 0.0))
    X = np.asarray(to_host(X), dtype=np.float64)
    valid = ~np.isnan(X)
    w = np.ones(X.shape[0]) if sample_weight is None else to_host(sample_weight).astype(np.float64)
    weights = valid * w[:, None]
    count = weights.sum(axis=0)
    values = np.where(valid, X, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, (weights * values).sum(axis=0) / count, 0.0)
    m2 = (weights * (values - mean) ** 2).sum(axis=0)
    return Moments(count, mean, m2)


def global_moments(X, sample_weight=None, *, comms):
    """Moments of every rank's rows together.

    Notes
    -----
    This function is collective: one allgather of ``3 * n_features`` float64
    per rank, merged in rank order (identically on every rank).
    """
    mine = local_moments(X, sample_weight)
    gathered = comms.allgather(np.stack([mine.count, mine.mean, mine.m2])[None])
    total = Moments(*gathered[0])
    for part in gathered[1:]:
        total = total.merge(Moments(*part))
    return total
