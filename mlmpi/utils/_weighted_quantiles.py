"""Weighted percentiles of the concatenated shards (scikit-learn's
``_weighted_percentile``), by distributed selection.

scikit-learn sorts the values, takes the cumulative sum of their weights and
returns the first value whose cumulative weight reaches ``p / 100`` of the
total (``average=True``: the mean of that value and the next one of positive
weight when the cumulative weight equals the target). Here the weights are
first rounded to a fixed-point grid whose power-of-two unit comes from the
global largest weight and the global number of values (so that no sum
overflows an int64): every cumulative weight is then an exact integer, the
same at any number of ranks, and the value is found by a search over the
float values that every rank runs in step: each round proposes ``_PIVOTS``
pivots evenly spaced (in the order of the floats' bit patterns) in the
interval known to hold the answer, one allreduce sums the weight of the values
<= each pivot, and a second shrinks the interval to the smallest and largest
data values inside the pivot interval that holds the answer. The interval's
ends are always data values, so the search stops when they meet: at most ~16
rounds of two small allreduces, however many rows. Integer weights (and any
weights that are multiples of the grid's unit) give scikit-learn's result
exactly; others may differ where a float cumulative sum of scikit-learn's
lands within rounding of the target.
"""

import math

import numpy as np

from ._float_keys import from_keys, to_keys

_EPS = np.finfo(np.float64).eps
_PIVOTS = 15  # pivots per round: the interval shrinks at least (_PIVOTS + 1)-fold
_MAX_ROUNDS = 80  # more than a 64-bit search can need: a guard against a logic error


class _WeightedColumns:
    """This rank's values of positive (fixed-point) weight of each column,
    sorted, with their cumulative weights."""

    def __init__(self, values, weights):
        self.values, self.cumulative = [], []
        for v, w in zip(values, weights):
            keep = (w > 0) & ~np.isnan(v)
            order = np.argsort(v[keep], kind="stable")
            self.values.append(np.asarray(v[keep][order], dtype=np.float64))
            self.cumulative.append(np.concatenate([[0], np.cumsum(w[keep][order])]))
        self.n_columns = len(self.values)

    def totals(self):
        return np.array([c[-1] for c in self.cumulative], dtype=np.int64)

    def extremes(self):
        """(min, max) per column (inf, -inf for an empty column)."""
        low = np.array([v[0] if v.size else np.inf for v in self.values])
        high = np.array([v[-1] if v.size else -np.inf for v in self.values])
        return low, high

    def weight_at_most(self, j, pivots):
        """Local weight of the values of column ``j`` that are <= each pivot."""
        return self.cumulative[j][np.searchsorted(self.values[j], pivots, side="right")]

    def inside(self, j, left, right):
        """Smallest and largest local value of column ``j`` in ``(left, right]``
        (inf and -inf where there is none)."""
        v = self.values[j]
        first = np.searchsorted(v, left, side="right")
        last = np.searchsorted(v, right, side="right") - 1
        ok = first <= last
        low = np.where(ok, v[np.minimum(first, v.size - 1)] if v.size else 0.0, np.inf)
        high = np.where(ok, v[np.maximum(last, 0)] if v.size else 0.0, -np.inf)
        return low, high


def _pivots(low, high):
    """``_PIVOTS`` values per row between ``low`` and ``high`` (evenly spaced
    keys), then ``high`` itself."""
    lo, hi = to_keys(low), to_keys(high)
    span = hi - lo
    steps = np.arange(1, _PIVOTS + 1, dtype=np.uint64)
    stride = span // np.uint64(_PIVOTS + 1)
    offsets = np.where(
        stride[:, None] > 0, stride[:, None] * steps, np.minimum(steps, span[:, None])
    )
    return np.concatenate([from_keys(lo[:, None] + offsets), high[:, None]], axis=1)


def _by_column(column_of):
    """``(column, positions)`` for each distinct column in ``column_of``."""
    order = np.argsort(column_of, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(column_of[order]) != 0])
    for start, stop in zip(starts, np.r_[starts[1:], order.size]):
        yield int(column_of[order[start]]), order[start:stop]


def _search(columns, column_of, kth, low, high, comms):
    """The smallest global value of column ``column_of[t]`` whose weight of
    values <= it exceeds ``kth[t]``, for each target ``t``, given global
    bounds ``low[t] <= answer <= high[t]``."""
    low, high = low.copy(), high.copy()
    for _ in range(_MAX_ROUNDS):
        active = np.flatnonzero(low < high)
        if active.size == 0:
            return low
        pivots = _pivots(low[active], high[active])
        weights = np.empty(pivots.shape, dtype=np.int64)
        for j, rows in _by_column(column_of[active]):
            weights[rows] = columns.weight_at_most(j, pivots[rows].ravel()).reshape(-1, _PIVOTS + 1)
        weights = comms.allreduce(weights)
        # the answer lies in (pivots[first - 1], pivots[first]]
        first = np.argmax(weights > kth[active, None], axis=1)
        rows = np.arange(active.size)
        left = np.where(first > 0, pivots[rows, first - 1], np.nextafter(low[active], -np.inf))
        right = pivots[rows, first]
        bounds = np.empty((2, active.size))
        for j, sel in _by_column(column_of[active]):
            inner_low, inner_high = columns.inside(j, left[sel], right[sel])
            bounds[0, sel], bounds[1, sel] = inner_low, -inner_high
        bounds = comms.allreduce(bounds, op="min")
        low[active], high[active] = bounds[0], -bounds[1]
    raise RuntimeError("weighted quantile search did not converge")  # pragma: no cover


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
    found = _search(columns, column_of, kth, bounds[:d][column_of], -bounds[d:][column_of], comms)
    reached = np.zeros(found.shape[0], dtype=np.int64)
    for t, (j, v) in enumerate(zip(column_of, found)):
        reached[t] = columns.weight_at_most(j, np.array([v]))[0]
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
    totals = comms.allreduce(columns.totals()).astype(np.float64)
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
