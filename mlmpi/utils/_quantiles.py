"""Exact quantiles of the concatenated shards, by distributed selection.

Every function here returns, per column, what NumPy returns on the
concatenated (global) data: :func:`global_quantiles` is
``np.nanquantile(X_global, q, axis=0)``, :func:`global_percentiles` is
``np.nanpercentile``, :func:`global_median` is ``np.nanmedian`` (NaN ignored,
empty ranks allowed), and :func:`global_bin_thresholds` is the binning of
scikit-learn's histogram gradient boosting. Per-shard quantiles are never
averaged.

How: a quantile is an interpolation between two order statistics (the k-th
smallest non-NaN values of a column next to its virtual index). They are
found exactly, by one of two selections, with a fixed handful of
collectives whatever the number of rows; the interpolation then repeats
NumPy's arithmetic exactly.

**Few quantiles per column** (a median, a quantile range; dense data): a
radix selection that never sorts. Values become order-preserving 64-bit
keys (one pass, NaN dropped, ``kernels/cpu/quantiles.py``). Each round, one
allreduce gives every group's global key range and one more the counts of
its keys in up to 4,096 equal bins of that range (a subtraction and a
shift per key); the counts say which bin holds each wanted order statistic
and its rank inside, and only those bins' keys are copied on as the next
round's groups. A group whose keys are all equal is answered by its range;
one of at most 4,096 values moves whole to one rank (``alltoallv``), which
sorts it and reads the answers off, and one ``allgatherv`` gives every rank
all answers. 64-bit keys take at most six rounds; ordinary data two.

**Many quantiles per column** (``QuantileTransformer``'s 1,000, the bin
edges of boosting; sparse columns): a sample sort that stops early. Each
rank sorts its columns once (a radix sort of the keys); evenly spaced
values of every rank's sorted columns are the sample, and column ``j``'s
sample goes to rank ``j mod P``, which picks up to 16 splitters per wanted
order statistic (one ``alltoallv``, one ``allgatherv``). One allreduce sums
every rank's counts in the buckets between and at the splitters (an equal
value of a splitter has a bucket of its own, so ties never make a bucket
that cannot shrink; ``searchsorted`` on the sorted columns). A statistic
at a splitter is that splitter; the other wanted buckets move, each to one
rank, as above. A bucket too large to move (over 4M values) is split again
the same way, on its values only.

Traffic per rank: the small histograms and samples, and the values of the
buckets that move (a few per wanted statistic), never the columns.

Every function is collective: all ranks call it with the same quantiles and
the same number of columns (local rows may differ, including zero).
"""

import numpy as np

from .._array import is_device_array, is_sparse, to_host
from ..kernels import kernels_for
from ._float_keys import from_keys
from ._offsets import group_starts
from ._weighted_quantiles import global_weighted_percentiles

_FEW = 16  # quantiles per column up to which dense data is selected by radix, unsorted
_SPLITTERS_PER_TARGET = 16  # splitters per wanted order statistic on sorted data
_MAX_SPLITTERS = 16383  # splitters per column at most (bucket ids are uint16)
_OVERSAMPLING = 2  # sample values per splitter
_GROUP = 1 << 22  # values of a bucket that one rank takes; larger ones are split again
_MAX_ROUNDS = 64  # bucket splits: far more than needed (logarithmic); a guard
_BIN_BITS = 12  # a radix round counts each group in up to 2**12 bins
_MOVE = 4096  # a group of at most this many values (all ranks) moves to one rank

# For each method: the virtual index of quantile q among n sorted values, and
# the interpolation weight from its fractional part (NumPy's _QuantileMethods).
_METHODS = {
    "linear": (lambda n, q: (n - 1) * q, lambda gamma: gamma),
    "averaged_inverted_cdf": (
        lambda n, q: n * q - 1,
        lambda gamma: np.where(gamma == 0, 0.5, 1.0),
    ),
}


class SortedColumns:
    """This rank's non-NaN values of each column, sorted (float64), and the
    number of implicit zeros of each column of a sparse matrix."""

    def __init__(self, X):
        self.dtype = _float_dtype(X)
        if is_sparse(X):
            csc = X.tocsc().get() if is_device_array(X) else X.tocsc()
            n_rows = csc.shape[0]
            self.values, self.zeros = [], []
            for j in range(csc.shape[1]):
                data = np.asarray(csc.data[csc.indptr[j] : csc.indptr[j + 1]], dtype=np.float64)
                self.values.append(np.sort(data[~np.isnan(data)]))
                self.zeros.append(n_rows - data.size)
        else:  # keys of the non-NaN values, radix-sorted per column
            dense = to_host(X)
            dense = dense[:, None] if dense.ndim == 1 else dense
            dense = dense if dense.dtype.kind == "f" else dense.astype(np.float64)
            kernels = kernels_for("quantiles", dense)
            keys, begin, end = kernels.columns_as_keys(dense)
            kernels.sort_key_groups(keys, begin, end)
            kernels.keys_to_values(keys)
            ordered = keys.view(np.float64)
            self.values = [ordered[b:e] for b, e in zip(begin, end)]
            self.zeros = [0] * dense.shape[1]
        self.n_columns = len(self.values)

    @classmethod
    def from_columns(cls, values, zeros, dtype):
        """Columns given as this rank's values (any order, NaN ignored) and
        counts of extra zeros; ``dtype`` is the data's."""
        columns = cls.__new__(cls)
        columns.dtype = np.dtype(dtype)
        columns.values = [np.sort(v[~np.isnan(v)]).astype(np.float64) for v in values]
        columns.zeros = list(zeros)
        columns.n_columns = len(columns.values)
        return columns

    def subset(self, columns):
        """These columns only (the same sorted arrays, not copied)."""
        subset = SortedColumns.__new__(SortedColumns)
        subset.dtype = self.dtype
        subset.values = [self.values[j] for j in columns]
        subset.zeros = [self.zeros[j] for j in columns]
        subset.n_columns = len(subset.values)
        return subset

    def distinct(self, j):
        """This rank's distinct values of column ``j`` (dense columns)."""
        v = self.values[j]
        return v[np.concatenate([[True], v[1:] != v[:-1]])] if v.size else v

    def sizes(self):
        """Values of each column on this rank (implicit zeros included)."""
        return np.array([v.size + z for v, z in zip(self.values, self.zeros)], dtype=np.int64)

    def sample(self, sizes):
        """About ``sizes[j]`` values of each column ``j``, and whether the
        column has implicit zeros here (0.0 must then be a splitter, so that
        zeros never move)."""
        drawn = [  # evenly spaced: the values are sorted
            v[((np.arange(m) + 0.5) * (v.size / m)).astype(np.int64)] if v.size and m else v[:0]
            for v, m in zip(self.values, sizes)
        ]
        return drawn, [z > 0 for z in self.zeros]

    def histogram(self, splitters):
        """This rank's count in every bucket of every column (concatenated)."""
        parts = []
        for v, z, t in zip(self.values, self.zeros, splitters):
            left = np.searchsorted(v, t, side="left")
            right = np.searchsorted(v, t, side="right")
            counts = np.empty(2 * t.size + 1, dtype=np.int64)
            counts[0::2] = np.r_[left, v.size] - np.r_[0, right]
            counts[1::2] = right - left
            if z:
                counts[2 * np.searchsorted(t, 0.0) + 1] += z  # 0.0 is a splitter
            parts.append(counts)
        return np.concatenate(parts)

    def take(self, wanted, splitters):
        """This rank's values of the open buckets ``wanted`` (rows ``(column,
        bucket)``, sorted), concatenated, and their number per bucket."""
        out, sizes = [], []
        columns = wanted[:, 0]
        for j in np.unique(columns):
            v, t, p = self.values[j], splitters[j], wanted[columns == j, 1] // 2
            if t.size:
                low = np.where(p > 0, np.searchsorted(v, t[np.maximum(p - 1, 0)], "right"), 0)
                high = np.searchsorted(v, t[np.minimum(p, t.size - 1)], "left")
                high = np.where(p < t.size, high, v.size)
            else:
                low, high = np.zeros_like(p), np.full_like(p, v.size)
            out.extend(v[a:b] for a, b in zip(low, high))
            sizes.append(high - low)
        return _concat(out), _concat(sizes).astype(np.int64)


def _concat(parts):
    return np.concatenate(parts) if parts else np.empty(0)


def _by_key(keys, values, n_keys):
    """``(values grouped by key, each group sorted; start of each key's group)``
    for keys in ``range(n_keys)``."""
    kernels = kernels_for("quantiles", values)
    order = np.empty(keys.size, dtype=np.int64)
    starts = np.empty(n_keys + 1, dtype=np.int64)
    kernels.group_order(np.asarray(keys, dtype=np.int64), n_keys, order, starts)
    grouped = np.ascontiguousarray(values[order], dtype=np.float64)
    kernels.sort_groups(grouped, starts)
    return grouped, starts


def _to_owners(keys, values, owner, comms):
    """Send each ``(key, value)`` to rank ``owner`` (one alltoallv); return the
    pairs this rank received."""
    order = np.empty(owner.size, dtype=np.int64)
    kernels_for("quantiles", values).group_order(
        np.asarray(owner, dtype=np.int64), comms.size, order, np.empty(comms.size + 1, np.int64)
    )
    pairs = np.column_stack([keys[order].astype(np.float64), values[order]])
    got = comms.alltoallv(pairs, np.bincount(owner, minlength=comms.size))
    return got[:, 0].astype(np.int64), got[:, 1]


def _splitters(columns, n_splitters, rows, comms):
    """Every column's splitters (increasing, distinct, float64), the same on
    every rank: column ``j``'s sample is sorted by rank ``j mod P``, which
    picks ``n_splitters[j]`` evenly spaced values.

    This function is collective.
    """
    d = columns.n_columns
    mine = columns.sizes()
    share = -(-_OVERSAMPLING * n_splitters * mine // np.maximum(rows, 1))
    drawn, zeros = columns.sample(share)
    # a column with implicit zeros sends key d + j: 0.0 is then a splitter
    keys = np.concatenate(
        [np.full(v.size, j) for j, v in enumerate(drawn)]
        + [np.array([d + j]) for j in range(d) if zeros[j]]
        + [np.empty(0, dtype=np.int64)]
    ).astype(np.int64)
    values = np.concatenate(drawn + [np.zeros(int(sum(zeros)))])
    keys, values = _to_owners(keys, values, keys % d % comms.size, comms)
    ordered, starts = _by_key(keys, values, 2 * d)
    picked = []
    for j in range(comms.rank, d, comms.size):
        sample = ordered[starts[j] : starts[j + 1]]
        m = int(n_splitters[j]) if sample.size else 0
        at = (np.arange(1, m + 1) * sample.size) // (m + 1)
        chosen = np.unique(np.r_[sample[at], ordered[starts[d + j] : starts[d + j + 1]][:1]])
        picked.append(np.column_stack([np.full(chosen.size, j, dtype=np.float64), chosen]))
    every = comms.allgatherv(np.concatenate(picked) if picked else np.empty((0, 2)))
    every, starts = _by_key(every[:, 0].astype(np.int64), every[:, 1], d)
    return [every[starts[j] : starts[j + 1]] for j in range(d)]


def _n_splitters(columns, n_targets, rows):
    """Splitters per column: enough that the wanted buckets are small, few
    enough that the samples and the counts stay small."""
    wanted = _SPLITTERS_PER_TARGET * max(int(n_targets), 64)
    return np.minimum(min(wanted, _MAX_SPLITTERS), rows // 4)


def _locate(hist, starts, column_of, kth):
    """The bucket of each wanted order statistic and its rank inside it."""
    bucket = np.empty(kth.size, dtype=np.int64)
    inside = np.empty(kth.size, dtype=np.int64)
    for j in np.unique(column_of):
        sel = column_of == j
        cumulative = np.cumsum(hist[starts[j] : starts[j + 1]])
        bucket[sel] = np.searchsorted(cumulative, kth[sel], side="right")
        below = cumulative[np.maximum(bucket[sel] - 1, 0)]
        inside[sel] = kth[sel] - np.where(bucket[sel] > 0, below, 0)
    return bucket, inside


def _order_statistics(columns, positions, comms, rounds=0):
    """Exact order statistics of the columns' global non-NaN values.

    ``positions(n)`` maps the global count of values of each column to
    ``(column_of, kth)``: the wanted order statistics (0-based, ``kth < n``).
    Returns ``(n, values)``: ``values[t]`` is the ``kth[t]``-smallest value
    of column ``column_of[t]`` (float64).

    This function is collective.
    """
    if rounds > _MAX_ROUNDS:  # pragma: no cover
        raise RuntimeError("global quantile search did not converge")
    rows = comms.allreduce(columns.sizes())
    column_of, _ = positions(rows)  # as many targets as there will be, or more
    targets = np.bincount(column_of, minlength=columns.n_columns).max(initial=0)
    splitters = _splitters(columns, _n_splitters(columns, targets, rows), rows, comms)
    hist = comms.allreduce(columns.histogram(splitters))
    starts = group_starts([2 * t.size + 1 for t in splitters])
    n = np.add.reduceat(hist, starts[:-1]) if hist.size else np.zeros(0, dtype=np.int64)
    column_of, kth = positions(n)
    bucket, inside = _locate(hist, starts, column_of, kth)
    values = np.empty(kth.size)
    at_splitter = bucket % 2 == 1
    for t in np.flatnonzero(at_splitter):
        values[t] = splitters[column_of[t]][bucket[t] // 2]
    moving = np.flatnonzero(~at_splitter)
    if moving.size == 0:
        return n, values
    wanted, group = _unique_pairs(column_of[moving], bucket[moving])
    local, sizes = columns.take(wanted, splitters)
    large = hist[starts[wanted[:, 0]] + wanted[:, 1]] > _GROUP
    small = ~large[group]
    values[moving[small]] = _resolve(
        local, sizes, ~large, group[small], inside[moving[small]], comms
    )
    if large.any():  # split those buckets again, on their values only
        pieces = np.split(local, np.cumsum(sizes)[:-1])
        sub = SortedColumns.from_columns(
            [pieces[g] for g in np.flatnonzero(large)], [0] * int(large.sum()), np.float64
        )
        renumber = np.cumsum(large) - 1
        big = moving[~small]

        def sub_positions(_):
            return renumber[group[~small]], inside[big]

        values[big] = _order_statistics(sub, sub_positions, comms, rounds + 1)[1]
    return n, values


def global_order_statistics(columns, column_of, kth, comms):
    """The ``kth[t]``-smallest (from 0) value of column ``column_of[t]`` over
    every rank's values, for each query ``t``.

    Parameters
    ----------
    columns : list of ndarray
        This rank's values of each column (any order, any lengths, no NaN).
    column_of : ndarray of shape (n_queries,), int
    kth : ndarray of shape (n_queries,), int
        Ranks below each column's global count.
    comms : Comms

    Returns
    -------
    values : ndarray of shape (n_queries,), float64
        Identical on every rank.

    Notes
    -----
    This function is collective: every rank passes the same queries.
    """
    sorted_columns = SortedColumns.from_columns(columns, [0] * len(columns), np.float64)
    queries = (np.asarray(column_of, dtype=np.int64), np.asarray(kth, dtype=np.int64))
    return _order_statistics(sorted_columns, lambda n: queries, comms)[1]


def _resolve(local, sizes, chosen, group, inside, comms):
    """The ``inside[t]``-smallest value of bucket ``group[t]``, for buckets
    small enough to move: bucket ``g`` (``chosen[g]``; ``local`` holds this
    rank's values of every bucket, ``sizes[g]`` of them) goes to rank ``g mod
    P``, which sorts it and reads its answers off; every rank gets them all.

    This function is collective.
    """
    keys = np.repeat(np.arange(sizes.size), sizes)
    keep = chosen[keys]
    keys, values = _to_owners(keys[keep], local[keep], keys[keep] % comms.size, comms)
    ordered, starts = _by_key(keys, values, sizes.size)
    mine = np.flatnonzero(group % comms.size == comms.rank)
    found = ordered[starts[group[mine]] + inside[mine]]
    every = comms.allgatherv(np.column_stack([mine, found]))
    answers = np.empty(group.size)
    answers[every[:, 0].astype(np.int64)] = every[:, 1]
    return answers


def _radix_order_statistics(X, positions, comms):
    """:func:`_order_statistics` of dense ``X`` by radix selection: a few
    rounds, each a histogram of every group's keys in up to 4,096 bins of its
    global key range (one allreduce of the ranges, one of the counts); the
    bins that hold a wanted order statistic become the next round's groups
    (their keys copied out), until they are small enough to move or hold a
    single value. 64-bit keys need at most six rounds; ordinary data two.

    This function is collective.
    """
    kernels = kernels_for("quantiles", np.empty(0))
    X = to_host(X)
    X = X[:, None] if X.ndim == 1 else X
    keys, begin, end = kernels.columns_as_keys(X)
    total = comms.allreduce(end - begin)
    column_of, kth = positions(total)
    group, inside, size = column_of.copy(), kth.copy(), total
    values = np.empty(kth.size)
    answered = np.zeros(kth.size, dtype=bool)
    moved, moved_of = [], np.full(kth.size, -1)  # groups small enough to move
    for _ in range(_MAX_ROUNDS):
        live = np.unique(group[~answered & (moved_of < 0)])
        for g in live[size[live] <= _MOVE]:
            moved_of[~answered & (moved_of < 0) & (group == g)] = len(moved)
            moved.append(from_keys(keys[begin[g] : end[g]]))
        live = live[size[live] > _MOVE]
        low, high = _key_ranges(keys, begin[live], end[live], comms)
        for g, value in zip(live[low == high], from_keys(low[low == high])):
            values[~answered & (moved_of < 0) & (group == g)] = value  # all its values are equal
            answered |= (moved_of < 0) & (group == g)
        live, low, high = live[low < high], low[low < high], high[low < high]
        if live.size == 0:
            break
        keys, begin, end, group, inside, size = _radix_round(
            kernels,
            keys,
            begin,
            end,
            live,
            low,
            high,
            group,
            inside,
            answered | (moved_of >= 0),
            comms,
        )
    else:  # pragma: no cover
        raise RuntimeError("global quantile search did not converge")
    targets = np.flatnonzero(moved_of >= 0)
    sizes = np.array([v.size for v in moved], dtype=np.int64)
    values[targets] = _resolve(
        _concat(moved),
        sizes,
        np.ones(sizes.size, dtype=bool),
        moved_of[targets],
        inside[targets],
        comms,
    )
    return total, values


def _key_ranges(keys, begin, end, comms):
    """Global smallest and largest key of every group (one allreduce)."""
    mine = np.full(2 * begin.size, np.iinfo(np.uint64).max, dtype=np.uint64)
    for i, (lo, hi) in enumerate(zip(begin, end)):
        if hi > lo:
            part = keys[lo:hi]
            mine[i], mine[begin.size + i] = part.min(), ~part.max()
    both = comms.allreduce(mine, op="min")
    return both[: begin.size], ~both[begin.size :]


def _radix_round(kernels, keys, begin, end, live, low, high, group, inside, settled, comms):
    """One radix round over the groups ``live`` (global key ranges ``low`` to
    ``high``): the bins of each, counted over the ranks; the bins that hold an
    unsettled target become the new groups. Returns the new groups' keys,
    ``begin``, ``end``, the targets' new ``group`` and ``inside`` ranks, and
    the groups' global sizes.

    This function is collective.
    """
    width = high - low
    shift = np.array([max(int(w).bit_length() - _BIN_BITS, 0) for w in width], dtype=np.uint64)
    offsets = group_starts((width >> shift).astype(np.int64) + 1)
    bins = np.empty(keys.size, dtype=np.uint16)
    local = np.zeros(offsets[-1], dtype=np.int64)
    kernels.key_histogram(keys, begin[live], end[live], low, shift, offsets[:-1], local, bins)
    hist = comms.allreduce(local)
    # every unsettled target of a live group: its bin, and its rank inside
    targets = np.flatnonzero(~settled & np.isin(group, live))
    slot = np.searchsorted(live, group[targets])
    bin_of = np.empty(targets.size, dtype=np.int64)
    for i, (t, s) in enumerate(zip(targets, slot)):
        cumulative = np.cumsum(hist[offsets[s] : offsets[s + 1]])
        bin_of[i] = np.searchsorted(cumulative, inside[t], side="right")
        inside[t] -= cumulative[bin_of[i] - 1] if bin_of[i] else 0
    chosen, renumbered = np.unique(offsets[slot] + bin_of, return_inverse=True)
    next_group = np.full(offsets[-1], -1, dtype=np.int64)
    next_group[chosen] = np.arange(chosen.size)
    sizes = local[chosen]
    new_begin = group_starts(sizes)[:-1]
    new_keys = np.empty(int(sizes.sum()), dtype=np.uint64)
    kernels.take_bins(
        keys, bins, begin[live], end[live], offsets[:-1], next_group, new_begin.copy(), new_keys
    )
    group = np.full(group.size, -1)  # settled targets belong to no group any more
    group[targets] = renumbered.reshape(-1)
    return new_keys, new_begin, new_begin + sizes, group, inside, hist[chosen]


def _float_dtype(X):
    """The dtype NumPy's quantiles interpolate in: ``X``'s float dtype, else float64."""
    dtype = np.dtype(getattr(X, "dtype", np.float64))
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _plan(n, qs, method):
    """For each (quantile, column) of columns holding ``n`` values: the
    positions of the two order statistics NumPy interpolates between
    (``(2, n_q, d)``, -1 where the column is empty) and the weight."""
    virtual_index, fix_gamma = _METHODS[method]
    # NumPy's arithmetic for one column of n values, here for every column at once
    virtual = virtual_index(n[None, :], qs[:, None])
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n[None, :] - 1
    below = virtual < 0
    previous[above], following[above] = -1, -1
    previous[below], following[below] = 0, 0
    gamma = np.asarray(fix_gamma(virtual - previous), dtype=np.float64)
    # order statistic positions (NumPy's -1 is the last value)
    positions = np.stack([previous, following]).astype(np.int64)
    positions = np.where(positions < 0, n[None, None, :] - 1, positions)
    return np.where(n[None, None, :] > 0, positions, -1), gamma


def _targets(positions):
    """``(column_of, kth, inverse)``: the distinct order statistics of the
    plan's valid positions, and where each position's value is among them."""
    column_of = np.broadcast_to(np.arange(positions.shape[-1]), positions.shape)
    valid = positions >= 0
    targets, inverse = _unique_pairs(column_of[valid], positions[valid])
    return targets[:, 0], targets[:, 1], inverse


def _unique_pairs(first, second):
    """``(pairs, inverse)``: the distinct ``(first, second)`` pairs of two
    non-negative int arrays, sorted, and where each pair is among them (one
    1-d unique of combined keys: a unique over rows sorts structured rows,
    far slower)."""
    first, second = np.asarray(first, np.int64), np.asarray(second, np.int64)
    span = int(second.max(initial=0)) + 1
    keys, inverse = np.unique(first * span + second, return_inverse=True)
    return np.stack([keys // span, keys % span], axis=1), inverse.reshape(-1)


def _neighbour_statistics(X, q, method, comms):
    """For each (quantile, column): the two order statistics NumPy interpolates
    between, the weight, and the global count of non-NaN values."""
    qs = np.asarray(q, dtype=np.float64).reshape(-1)

    def positions(n):
        return _targets(_plan(n, qs, method)[0])[:2]

    if isinstance(X, SortedColumns) or is_sparse(X) or qs.size > _FEW:
        columns = X if isinstance(X, SortedColumns) else SortedColumns(X)
        dtype = columns.dtype
        n, found = _order_statistics(columns, positions, comms)
    else:
        dtype = _float_dtype(X)
        n, found = _radix_order_statistics(X, positions, comms)
    plan, gamma = _plan(n, qs, method)
    *_, inverse = _targets(plan)
    values = np.full(plan.shape, np.nan)
    values[plan >= 0] = found[inverse]
    return values[0], values[1], gamma, n, dtype


def _lerp(a, b, t, *, weak):
    """NumPy's quantile interpolation (``numpy.lib._function_base_impl._lerp``).

    ``weak``: ``t`` stands for a Python float (NumPy's weak promotion: the
    weights are rounded to ``a``'s dtype, which the result keeps).
    """
    t_up, t_down = t, 1 - t
    if weak:
        t_up, t_down = t_up.astype(a.dtype), t_down.astype(a.dtype)
    diff = b - a
    result = np.add(a, diff * t_up)
    np.subtract(b, diff * t_down, out=result, where=t >= 0.5, casting="unsafe", dtype=result.dtype)
    return result


def _quantiles(X, q, method, comms, *, weak_q):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {sorted(_METHODS)}, got {method!r}.")
    shape = np.shape(q)
    previous, following, gamma, n, dtype = _neighbour_statistics(X, q, method, comms)
    return _interpolated(previous, following, gamma, n, dtype, weak_q).reshape(shape + (n.size,))


def _interpolated(previous, following, gamma, n, dtype, weak_q):
    """NumPy's quantiles from their two order statistics and weights."""
    previous, following = previous.astype(dtype), following.astype(dtype)
    result = _lerp(previous, following, gamma, weak=weak_q)
    result[:, n == 0] = np.nan
    return result


def _median(lower, upper, n, dtype):
    """NumPy's median from the two middle values: the middle one, or the sum
    of the middle two halved."""
    lower, upper = lower.astype(dtype), upper.astype(dtype)
    middle = np.where(n % 2 == 1, lower, (lower + upper) / dtype.type(2)).astype(dtype)
    middle[n == 0] = np.nan
    return middle


def _check_quantiles(q):
    q = np.asanyarray(q, dtype=np.float64)
    if q.ndim > 1 or not np.all((q >= 0) & (q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1] (a scalar or 1-d).")
    return q


def global_quantiles(X, q, *, comms, method="linear"):
    """``np.nanquantile(X_global, q, axis=0, method=method)`` of the shards.

    Parameters
    ----------
    X : array of shape (n_local, n_features) or sparse matrix
        This rank's rows (NumPy, CuPy or SciPy/CuPy sparse: implicit zeros
        count as values). NaN is ignored. A rank may hold zero rows.
    q : float or array of shape (n_quantiles,)
        Quantiles in [0, 1].
    comms : Comms
        The ranks that hold the shards.
    method : {"linear", "averaged_inverted_cdf"}, default="linear"
        NumPy's interpolation method.

    Returns
    -------
    quantiles : ndarray of shape (n_features,) or (n_quantiles, n_features)
        On the host, identical on every rank; NaN for a column without a
        non-NaN value on any rank. The dtype is NumPy's (float64 for array
        ``q``; a Python scalar ``q`` keeps a float32 ``X`` float32).

    Notes
    -----
    This function is collective. The k-th smallest values are found exactly
    (see the module docstring); the result equals NumPy's bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.utils import global_quantiles
    >>> X = np.array([[1.0, 10.0], [np.nan, 30.0], [3.0, 20.0], [2.0, 40.0]])
    >>> global_quantiles(X, [0.0, 0.5, 1.0], comms=get_comms())
    array([[ 1., 10.],
           [ 2., 25.],
           [ 3., 40.]])
    """
    weak_q = type(q) in (int, float)
    return _quantiles(X, _check_quantiles(q), method, comms, weak_q=weak_q)


def global_percentiles(X, percentiles, *, comms, method="linear"):
    """``np.nanpercentile(X_global, percentiles, axis=0, method=method)`` of the shards.

    Same as :func:`global_quantiles` with ``q = percentiles / 100`` divided as
    NumPy divides (so the result equals ``np.nanpercentile`` exactly).

    Parameters
    ----------
    X : array of shape (n_local, n_features) or sparse matrix
        This rank's rows, as in :func:`global_quantiles`.
    percentiles : float or array of shape (n_percentiles,)
        Percentiles in [0, 100].
    comms : Comms
        The ranks that hold the shards.
    method : {"linear", "averaged_inverted_cdf"}, default="linear"
        NumPy's interpolation method.

    Returns
    -------
    percentiles : ndarray of shape (n_features,) or (n_percentiles, n_features)
        On the host, identical on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.utils import global_percentiles
    >>> global_percentiles(np.array([[1.0], [2.0], [4.0]]), [25, 75], comms=get_comms())
    array([[1.5],
           [3. ]])
    """
    weak_q = type(percentiles) in (int, float)
    q = np.true_divide(np.asanyarray(percentiles), 100)
    if q.ndim > 1 or not np.all((q >= 0) & (q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantiles(X, q, method, comms, weak_q=weak_q)


def global_median(X, *, comms):
    """``np.nanmedian(X_global, axis=0)`` of the shards.

    The mean of the two middle values for an even count, in ``X``'s dtype,
    as NumPy computes it.

    Parameters
    ----------
    X : array of shape (n_local, n_features) or sparse matrix
        This rank's rows, as in :func:`global_quantiles`; NaN is ignored.
    comms : Comms
        The ranks that hold the shards.

    Returns
    -------
    median : ndarray of shape (n_features,)
        On the host, identical on every rank; NaN for a column without a
        non-NaN value.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.utils import global_median
    >>> global_median(np.array([[1.0], [2.0], [4.0], [np.nan], [10.0]]), comms=get_comms())
    array([3.])
    """
    lower, upper, _, n, dtype = _neighbour_statistics(X, [0.5], "linear", comms)
    return _median(lower[0], upper[0], n, dtype)


def median_and_percentiles(X, percentiles, *, comms):
    """``(np.nanmedian(X_global, axis=0), np.nanpercentile(X_global, percentiles,
    axis=0))`` of the shards, from one selection (the median's two middle
    values are the order statistics of the 50th percentile).

    This function is collective.
    """
    q = np.true_divide(np.asanyarray(percentiles, dtype=np.float64), 100)
    lower, upper, gamma, n, dtype = _neighbour_statistics(X, np.r_[0.5, q], "linear", comms)
    middle = _median(lower[0], upper[0], n, dtype)
    return middle, _interpolated(lower[1:], upper[1:], gamma[1:], n, dtype, weak_q=False)


_ALMOST_INF = 1e300  # scikit-learn's cap on thresholds (hist gradient boosting's ALMOST_INF)


def global_bin_thresholds(X, max_bins, *, comms, sample_weight=None):
    """Per column, the thresholds scikit-learn's histogram gradient boosting bins on.

    Equal to ``_BinMapper(n_bins=max_bins + 1, subsample=None).fit(X_global)
    .bin_thresholds_``: a column with at most ``max_bins`` distinct non-NaN
    values gets the midpoints between consecutive distinct values (the
    distinct values are the union of every rank's); otherwise the
    ``averaged_inverted_cdf`` percentiles ``linspace(0, 100, max_bins + 1)[1:-1]``
    of the global column (exact, :func:`global_percentiles`), duplicates
    removed, capped at 1e300. A value ``x`` falls in bin ``i`` when
    ``thresholds[i - 1] < x <= thresholds[i]``.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
        This rank's rows; NaN is ignored.
    max_bins : int
        Bins for the non-NaN values, at least 2.
    comms : Comms
    sample_weight : array of shape (n_local,), default=None
        Positive weights of the rows: the percentiles are then scikit-learn's
        weighted ones (``_weighted_percentile(..., average=True)``,
        :func:`mlmpi.utils._weighted_quantiles.global_weighted_percentiles`).

    Returns
    -------
    thresholds : list of ndarray (float64)
        One increasing array of at most ``max_bins - 1`` thresholds per column,
        identical on every rank.

    Notes
    -----
    This function is collective: one allgather of each rank's distinct
    values (at most ``max_bins`` per column, or a flag) and, for the columns
    with more, one :func:`global_percentiles`.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.utils import global_bin_thresholds
    >>> global_bin_thresholds(np.array([[0.0], [1.0], [1.0], [3.0]]), 4, comms=get_comms())
    [array([0.5, 2. ])]
    """
    X = np.asarray(to_host(X), dtype=np.float64)
    columns = SortedColumns(X)  # each column sorted once, for the distinct values and the search
    local = []
    for j in range(X.shape[1]):
        distinct = columns.distinct(j)
        local.append(distinct if distinct.size <= max_bins else None)
    gathered = comms.allgather_object(local)
    distinct = []
    for j in range(X.shape[1]):
        parts = [rank_values[j] for rank_values in gathered]
        union = None if any(p is None for p in parts) else np.unique(np.concatenate(parts))
        distinct.append(union if union is not None and union.size <= max_bins else None)
    percentiles = np.linspace(0, 100, num=max_bins + 1)[1:-1]
    many = [j for j, values in enumerate(distinct) if values is None]
    quantiles = None
    if many and sample_weight is None:
        quantiles = global_percentiles(
            columns.subset(many), percentiles, comms=comms, method="averaged_inverted_cdf"
        )
    elif many:
        weights = np.asarray(sample_weight, dtype=np.float64)
        quantiles = global_weighted_percentiles(
            [X[:, j] for j in many], [weights] * len(many), percentiles, average=True, comms=comms
        )
    thresholds = []
    for j, values in enumerate(distinct):
        if values is not None:
            edges = (values[:-1] + values[1:]) / 2 if values.size > 1 else np.array([])
        else:
            edges = quantiles[:, many.index(j)]
            edges = np.unique(edges) if np.unique(edges).size != edges.size else edges
        thresholds.append(np.minimum(edges, _ALMOST_INF))
    return thresholds
