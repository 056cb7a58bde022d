"""Weighted percentiles of the concatenated shards (scikit-learn's
``_weighted_percentile``), by distributed selection.

scikit-learn sorts the values, takes the cumulative sum of their weights and
returns the first value whose cumulative weight reaches ``p / 100`` of the
total (``average=True``: the mean of that value and the next one of positive
weight when the cumulative weight equals the target). Here the weights are
first rounded to a fixed-point grid whose power-of-two unit comes from the
global largest weight and the global number of values (so that no sum
overflows an int64): every cumulative weight is then an exact integer, the
same at any number of ranks, and the value is found by the search of
:mod:`._quantiles` over "weight of the values <= pivot" instead of "number
of values <= pivot". Integer weights (and any weights that are multiples of
the grid's unit) give scikit-learn's result exactly; others may differ where
a float cumulative sum of scikit-learn's lands within rounding of the target.
"""

import math

import numpy as np

from ._quantiles import _order_statistics, _SortedColumns

_EPS = np.finfo(np.float64).eps


class _WeightedColumns(_SortedColumns):
    """This rank's values of positive (fixed-point) weight of each column,
    sorted, with their cumulative weights: ``count_at_most`` gives weights."""

    def __init__(self, values, weights):
        self.dtype = np.dtype(np.float64)
        self.values, self.cumulative = [], []
        for v, w in zip(values, weights):
            keep = (w > 0) & ~np.isnan(v)
            order = np.argsort(v[keep], kind="stable")
            self.values.append(np.asarray(v[keep][order], dtype=np.float64))
            self.cumulative.append(np.concatenate([[0], np.cumsum(w[keep][order])]))
        self.zeros = [0] * len(self.values)
        self.n_columns = len(self.values)

    def counts(self):
        return np.array([c[-1] for c in self.cumulative], dtype=np.int64)

    def count_at_most(self, j, pivots):
        return self.cumulative[j][np.searchsorted(self.values[j], pivots, side="right")]


def _fixed_point(weights, comms):
    """Weights rounded to a common grid: ``(ints, unit)``, ``unit`` a power of
    two small enough that no column's total overflows an int64."""
    local = np.array(
        [max((float(np.max(w, initial=0.0)) for w in weights), default=0.0)]
        + [float(sum(w.shape[0] for w in weights))]
    )
    largest = comms.allreduce(local[:1], op="max")[0]
    count = int(comms.allreduce(local[1:])[0])
    exponent = 0
    if largest > 0:
        exponent = 62 - math.frexp(largest)[1] - max(1, count.bit_length())
    scale = math.ldexp(1.0, exponent)
    ints = [np.rint(np.asarray(w, dtype=np.float64) * scale).astype(np.int64) for w in weights]
    return ints, 1.0 / scale


def _smallest_reaching(columns, column_of, targets, comms):
    """For each query, the smallest value ``v`` of column ``column_of[t]`` whose
    weight of values ``<= v`` is at least ``targets[t]`` (fixed-point units,
    float), and that weight."""
    low, high = columns.extremes()
    d = columns.n_columns
    bounds = comms.allreduce(np.concatenate([low, -high]), op="min")
    kth = np.ceil(targets).astype(np.int64) - 1
    found = _order_statistics(
        columns, column_of, kth, bounds[:d][column_of], -bounds[d:][column_of], comms
    )
    reached = np.zeros(found.shape[0], dtype=np.int64)
    for t, (j, v) in enumerate(zip(column_of, found)):
        reached[t] = columns.count_at_most(j, np.array([v]))[0]
    return found, comms.allreduce(reached)


def global_weighted_percentiles(values, weights, percentiles, *, average, comms):
    """scikit-learn's ``_weighted_percentile(values[j], weights[j], p, average)``
    of every rank's values of each column ``j``, for each ``p`` in ``percentiles``.

    Parameters
    ----------
    values : list of ndarray
        This rank's values of each column (NaN ignored).
    weights : list of ndarray
        Their non-negative weights.
    percentiles : ndarray of shape (n_percentiles,)
        In [0, 100].
    average : bool
        scikit-learn's ``average``: the "averaged_inverted_cdf" variant.
    comms : Comms

    Returns
    -------
    result : ndarray of shape (n_percentiles, n_columns)
        Identical on every rank; NaN for a column of zero total weight.

    Notes
    -----
    This function is collective.
    """
    percentiles = np.asarray(percentiles, dtype=np.float64).reshape(-1)
    weights = [np.where(np.isnan(v), 0.0, w) for v, w in zip(values, weights)]
    ints, unit = _fixed_point(weights, comms)
    columns = _WeightedColumns(values, ints)
    totals = comms.allreduce(columns.counts()).astype(np.float64)
    n_p, n_c = percentiles.shape[0], columns.n_columns
    column_of = np.tile(np.arange(n_c), n_p)
    targets = (percentiles / 100)[:, None] * totals[None, :]
    targets = np.where(targets == 0, np.nextafter(0.0, 1.0), targets).ravel()
    valid = totals[column_of] > 0
    result = np.full(n_p * n_c, np.nan)
    if not valid.any():
        return result.reshape(n_p, n_c)
    found, reached = _smallest_reaching(columns, column_of[valid], targets[valid], comms)
    result[valid] = found
    if average:
        on_target = (reached.astype(np.float64) - targets[valid]) * unit <= _EPS
        on_target &= reached < totals[column_of[valid]]
        if comms.allreduce(np.array([int(on_target.any())]), op="max")[0]:
            queries = np.flatnonzero(valid)[on_target]
            following, _ = _smallest_reaching(
                columns, column_of[queries], reached[on_target] + 1.0, comms
            )
            result[queries] = (result[queries] + following) / 2
    return result.reshape(n_p, n_c)
