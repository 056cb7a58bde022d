"""Histogram-tree kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.

- :func:`bin_columns`, :func:`bin_csr`: raw values (compared as float32, as
  scikit-learn's trees do) to bin indices on given edges; NaN to the missing bin.
- :func:`build_histograms`, :func:`build_count_histograms`: per (open node,
  sampled feature, bin) sums of the per-row statistics of this rank's
  active rows (dense statistics, or one weighted count per output).
- :func:`find_splits`: the best split of each node over a block of
  (node, feature) histograms; :func:`find_splits_in_rows` the same from the
  nodes' rows, one pair's histogram at a time; :func:`subtract_histograms`
  derives a node's histograms from its parent's and its sibling's.
- :func:`route_rows`: the order that groups the rows going on by the next
  level's open nodes, and the leaf of each row that stops;
  :func:`add_left_sums` sums the rows that the splits send left.
- :func:`take_rows`: gathers rows of a 2-D array (the level's rows, reordered).
- :func:`count_draws`: a rank's bootstrap counts from a sample's global row draws.
- :func:`preorder`, :func:`inherit`: a grown tree's depth-first numbering,
  and values passed down from parents (depths, kept ancestors).
- :func:`accumulate_leaves`: adds a tree's leaf value of each row.

The statistics of a node (see ``mlmpi/ensemble/_criteria.py``) come in two
families. "Counts" criteria (0 gini, 1 entropy, 4 absolute error on binned
targets) keep, per output ``o``, the weighted counts of its classes (or
target bins) at ``offsets[o]:offsets[o + 1]``; "moments" criteria (2 squared
error, 3 Poisson) keep ``W`` at 0 and ``Σwy_k`` at ``1 + k`` in the
histograms, which the split search reads (their other moments are summed
for the children of the splits made, :func:`add_left_sums`). The last
statistic is the number of rows, except in the moments' histograms where
``min_samples_leaf`` is 1: there W tells a child with rows (W > 0), and the
row count is summed for the children of the splits made.
"""

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from .cells import cell_tables, count_below
from .forest_scans import (
    _UNSEEN_MISSING,
    _class_proxy,
    _scan_simple,
    _simple_left,
    _simple_scan_applies,
)

EPSILON = np.finfo(np.float64).eps


@njit(cache=True, nogil=True)
def _bin_columns(X, edges, edge_starts, missing_bin, out):
    origin, scale, first = cell_tables(edges, edge_starts)
    for i in range(X.shape[0]):  # row by row: X and out are read and written once
        for f in range(X.shape[1]):
            x = np.float64(np.float32(X[i, f]))
            if np.isnan(x):
                out[i, f] = missing_bin
            else:
                out[i, f] = count_below(edges, edge_starts, origin, scale, first, f, x)


def bin_columns(X, edges, edge_starts, missing_bin, out):
    """``out[i, f]`` = number of edges of feature ``f`` below ``float32(X[i, f])``,
    or ``missing_bin`` where ``X[i, f]`` is NaN.

    ``edges[edge_starts[f]:edge_starts[f + 1]]`` are feature ``f``'s sorted
    thresholds, so ``x <= edges_f[b]`` exactly when ``out <= b``.
    """
    _bin_columns(X, edges, edge_starts, missing_bin, out)
    return out


@njit(cache=True, nogil=True)
def bin_csr(data, indices, indptr, edges, edge_starts, missing_bin, out):
    """:func:`bin_columns` of the CSR matrix ``(data, indices, indptr)`` into the
    dense ``out`` (zeros, stored or not, take the bin of 0.0)."""
    n_features = out.shape[1]
    origin, scale, first = cell_tables(edges, edge_starts)
    zero_bins = np.empty(n_features, dtype=out.dtype)
    for f in range(n_features):
        zero_bins[f] = count_below(edges, edge_starts, origin, scale, first, f, 0.0)
    for i in range(out.shape[0]):
        for f in range(n_features):  # not a slice: numba counts each as a view
            out[i, f] = zero_bins[f]
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            x = np.float64(np.float32(data[p]))
            if np.isnan(x):
                out[i, f] = missing_bin
            else:
                out[i, f] = count_below(edges, edge_starts, origin, scale, first, f, x)
    return out


@njit(cache=True, nogil=True)
def build_histograms(binned, starts, node_slot, features, row_stats, hist):
    """``hist[n, k, b, :] += row_stats[r]`` for every row ``r`` of the open node
    ``m`` with ``node_slot[m] = n`` whose bin of feature ``features[n, k]`` is ``b``.

    The level's rows are grouped by open node, in arrays of their own
    (:func:`route_rows` keeps them so): node ``m``'s rows are
    ``binned[starts[m]:starts[m + 1]]``, read in order. ``hist`` has shape
    (nodes, sampled features, bins, statistics) and is zeroed by the caller;
    the rows of open nodes with ``node_slot`` -1 are skipped.
    """
    n_sampled = features.shape[1]
    n_stats = row_stats.shape[1]
    for m in range(node_slot.shape[0]):
        n = node_slot[m]
        if n < 0:
            continue
        node_hist, node_features = hist[n], features[n]  # the node's: fewer index products
        for r in range(starts[m], starts[m + 1]):
            for k in range(n_sampled):
                b = binned[r, node_features[k]]
                for s in range(n_stats):
                    node_hist[k, b, s] += row_stats[r, s]
    return hist


@njit(cache=True, nogil=True)
def build_count_histograms(binned, starts, node_slot, features, stat_index, weight, hist):
    """:func:`build_histograms` for statistics that are weighted counts: row
    ``r`` adds ``weight[r]`` to the statistics ``stat_index[r, :]`` (its class,
    or target bin, of each output) and 1 to the last (the row count)."""
    n_sampled = features.shape[1]
    n_outputs = stat_index.shape[1]
    rows_stat = hist.shape[3] - 1
    for m in range(node_slot.shape[0]):
        n = node_slot[m]
        if n < 0:
            continue
        node_hist, node_features = hist[n], features[n]  # the node's: fewer index products
        for r in range(starts[m], starts[m + 1]):
            w = weight[r]
            for k in range(n_sampled):
                b = binned[r, node_features[k]]
                for o in range(n_outputs):
                    node_hist[k, b, stat_index[r, o]] += w
                node_hist[k, b, rows_stat] += 1.0
    return hist


@njit(cache=True, nogil=True)
def subtract_histograms(parents, parent_index, hist, sibling_index, first):
    """``hist[f, first + i] = parents[f, parent_index[i]] - hist[f, sibling_index[i]]``
    for every feature ``f`` and ``i``: a node's histograms as its parent's less
    its sibling's (exact for integer or exact-grid sums), with no temporaries.
    ``parents`` and ``hist`` have shape (features, nodes, bins x statistics)."""
    width = hist.shape[2]
    for f in range(hist.shape[0]):
        for i in range(parent_index.shape[0]):
            source, sibling = parents[f, parent_index[i]], hist[f, sibling_index[i]]
            out = hist[f, first + i]
            for k in range(width):
                out[k] = source[k] - sibling[k]
    return hist


@njit(cache=True, nogil=True, inline="always")
def _side(b, split_bin, missing_left, missing_bin):
    """0 (left) or 1 (right): where a split sends a row of bin ``b``."""
    if b == missing_bin:
        return 0 if missing_left else 1
    return 1 if b > split_bin else 0


@njit(cache=True, nogil=True)
def add_left_sums(binned, starts, split_feature, split_bin, missing_left, missing_bin, values, out):
    """``out[m] += values[r]`` for every row ``r`` of open node ``m`` (rows
    ``starts[m]:starts[m + 1]``) that its split sends left, as
    :func:`route_rows` sends them; nothing for nodes with ``split_feature[m] < 0``."""
    for m in range(starts.shape[0] - 1):
        f = split_feature[m]
        if f < 0:
            continue
        for r in range(starts[m], starts[m + 1]):
            if _side(binned[r, f], split_bin[m], missing_left[m], missing_bin) == 0:
                for s in range(values.shape[1]):
                    out[m, s] += values[r, s]
    return out


@njit(cache=True, nogil=True)
def route_rows(
    binned,
    starts,
    split_feature,
    split_bin,
    missing_left,
    missing_bin,
    targets,
    ids,
    leaf_of_row,
    order,
    next_starts,
):
    """Send each row of open node ``m`` (rows ``starts[m]:starts[m + 1]``, grouped
    by node as :func:`build_histograms` reads them) to ``targets[m, 0]`` (left:
    bin <= ``split_bin[m]``, or the missing bin with ``missing_left[m]``) or
    ``targets[m, 1]``; where ``split_feature[m] < 0`` to ``targets[m, 0]``.

    A target >= 0 is an open node of the next level: ``order`` gets the
    positions of the rows that go on, grouped by next node (within a node in
    their order here), next node ``m``'s at ``order[next_starts[m]:next_starts[m
    + 1]]`` (``next_starts`` has one more entry than there are next nodes), so
    that the caller gathers the level's arrays with it. A target -2 - id marks
    the leaf ``id`` of the tree: ``leaf_of_row[ids[r]]`` is set to it.
    Returns the number of rows that go on."""
    n_next = next_starts.shape[0] - 1
    next_starts[:] = 0
    to = np.empty(binned.shape[0], dtype=np.int64)
    for m in range(starts.shape[0] - 1):
        f = split_feature[m]
        for r in range(starts[m], starts[m + 1]):
            side = 0
            if f >= 0:
                side = _side(binned[r, f], split_bin[m], missing_left[m], missing_bin)
            nxt = targets[m, side]
            to[r] = nxt
            if nxt >= 0:
                next_starts[nxt + 1] += 1
            else:
                leaf_of_row[ids[r]] = nxt
    for m in range(n_next):
        next_starts[m + 1] += next_starts[m]
    fill = next_starts[:-1].copy()
    for r in range(binned.shape[0]):
        nxt = to[r]
        if nxt >= 0:
            order[fill[nxt]] = r
            fill[nxt] += 1
    return next_starts[n_next]


@njit(cache=True, nogil=True)
def take_rows(source, order, out):
    """``out[p] = source[order[p]]`` for 2-D arrays (rows of a few values: a
    loop copies them several times faster than NumPy's indexing)."""
    for p in range(order.shape[0]):
        row = order[p]
        for j in range(source.shape[1]):  # not slices: each would be a counted view
            out[p, j] = source[row, j]
    return out


@njit(cache=True, nogil=True)
def count_draws(draws, offset, counts):
    """``counts[r] += 1`` for every draw ``offset + r`` that falls on ``counts``'
    rows (a rank's share of a bootstrap sample's global row draws)."""
    n = counts.shape[0]
    for d in draws:
        r = d - offset
        if 0 <= r < n:
            counts[r] += 1.0
    return counts


@njit(cache=True, nogil=True)
def preorder(left, right, split, out):
    """``out``: the nodes in depth-first preorder from the root 0, left child
    first (scikit-learn's depth-first numbering). Returns how many there are."""
    stack = np.empty(left.shape[0], dtype=np.int64)
    stack[0], top, count = 0, 1, 0
    while top:
        top -= 1
        node = stack[top]
        out[count] = node
        count += 1
        if split[node]:
            stack[top], stack[top + 1] = right[node], left[node]
            top += 2
    return count


@njit(cache=True, nogil=True)
def inherit(left, right, split, values, step):
    """Each child of a split node whose ``values`` entry is negative takes its
    parent's plus ``step``, parents first (a parent's id is below its
    children's): the depth of every node (``step`` 1, zeros), or the kept
    ancestor of every node of a pruned tree (``step`` 0)."""
    for node in range(left.shape[0]):
        if split[node]:
            for child in (left[node], right[node]):
                if values[child] < 0:
                    values[child] = values[node] + step
    return values


@njit(cache=True, nogil=True)
def accumulate_leaves(
    X, feature, threshold, missing_left, children_left, children_right, value, out
):
    """``out[i] += value[leaf]`` of one tree (its root node 0) for each row of
    ``X``; a node is a leaf where ``children_left < 0``, rows go left where
    ``float32(X[i, feature]) <= threshold``, NaN where ``missing_left``."""
    for i in range(X.shape[0]):
        node = 0
        while children_left[node] >= 0:
            x = X[i, feature[node]]
            if np.isnan(x):
                go_left = missing_left[node]
            else:
                go_left = np.float64(np.float32(x)) <= threshold[node]
            node = children_left[node] if go_left else children_right[node]
        for v in range(value.shape[1]):
            out[i, v] += value[node, v]
    return out


@njit(cache=True, nogil=True, inline="always")
def node_weight(stats, criterion, offsets):
    """Total weight of a node with these statistics."""
    if criterion == 2 or criterion == 3:
        return stats[0]
    weight = 0.0
    for c in range(offsets[0], offsets[1]):
        weight += stats[c]
    return weight


@njit(cache=True, nogil=True, inline="always")
def _absolute_deviation(stats, start, stop, values):
    """Weighted absolute deviation from their weighted median of targets
    ``values[start:stop]`` with weights ``stats[start:stop]``."""
    weight = 0.0
    for c in range(start, stop):
        weight += stats[c]
    if weight <= 0:
        return 0.0
    below = 0.0
    median = values[stop - 1]
    for c in range(start, stop):
        below += stats[c]
        if below >= 0.5 * weight:
            median = values[c]
            break
    deviation = 0.0
    for c in range(start, stop):
        deviation += stats[c] * abs(values[c] - median)
    return deviation


@njit(cache=True, nogil=True, inline="always")
def proxy(stats, criterion, offsets, values):
    """Criterion part additive over children (see ``mlmpi/ensemble/_criteria.py``):
    a split's weighted impurity decrease, summed over the outputs, is
    ``proxy(left) + proxy(right) - proxy(node)``."""
    n_outputs = offsets.shape[0] - 1
    total = 0.0
    if criterion == 2 or criterion == 3:
        weight = stats[0]
        if weight <= 0:
            return 0.0
        for k in range(n_outputs):
            s = stats[1 + k]
            if criterion == 2:
                total += s * s / weight
            elif s > 0:
                total += s * np.log(s / weight)
        return total
    for o in range(n_outputs):
        start, stop = offsets[o], offsets[o + 1]
        if criterion == 4:
            total -= _absolute_deviation(stats, start, stop, values)
            continue
        weight = 0.0
        part = 0.0
        for c in range(start, stop):
            count = stats[c]
            weight += count
            if criterion == 0:
                part += count * count
            elif count > 0:
                part += count * np.log2(count)
        total += _class_proxy(criterion, weight, part)
    return total


@njit(cache=True, nogil=True, inline="always")
def constrained_value(stats, criterion, offsets, values):
    """The value monotonic constraints bound (scikit-learn's): the mean target,
    or the share of the first class (binary classification), or the weighted
    median of the binned targets (absolute error)."""
    weight = node_weight(stats, criterion, offsets)
    if weight <= 0:
        return 0.0
    if criterion == 2 or criterion == 3:
        return stats[1] / weight
    if criterion == 4:
        below = 0.0
        for c in range(offsets[0], offsets[1]):
            below += stats[c]
            if below >= 0.5 * weight:
                return values[c]
        return values[offsets[1] - 1]
    return stats[offsets[0]] / weight


@njit(cache=True, nogil=True, inline="always")
def _positive_sums(stats, criterion, offsets):
    """Poisson's validity of a child: every output's ``Σwy`` above EPSILON."""
    if criterion != 3:
        return True
    for k in range(offsets.shape[0] - 1):
        if stats[1 + k] <= EPSILON:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _random_bin(bin_min, bin_max, low, high, u):
    """ExtraTrees' split of a node whose occupied bins are ``low..high``: a
    threshold uniform between the smallest value of bin ``low`` and the largest
    of bin ``high`` (``bin_min``/``bin_max``: a feature's global extremes per
    bin), rows up to it going left: after the last bin (below ``high``) whose
    middle value does not exceed it (so that the rounding to bin edges has no
    bias). Exact when every bin holds one value."""
    threshold = bin_min[low] + u * (bin_max[high] - bin_min[low])
    b = low
    for c in range(low + 1, high):
        if bin_min[c] + 0.5 * (bin_max[c] - bin_min[c]) <= threshold:
            b = c
    return b


@njit(cache=True, nogil=True)
def bin_ranges(X, binned, counted, low, high):
    """``low[f, b]``/``high[f, b]``: the smallest/largest value (as float32) of
    feature ``f`` among the rows of bin ``b`` where ``counted`` is true, merged
    into the arrays given."""
    for i in range(X.shape[0]):
        if not counted[i]:
            continue
        for f in range(X.shape[1]):
            x = X[i, f]
            if np.isnan(x):
                continue
            x = np.float64(np.float32(x))
            b = binned[i, f]
            low[f, b] = min(low[f, b], x)
            high[f, b] = max(high[f, b], x)
    return low


@njit(nogil=True, inline="always")
def _occupied_bins(hist, h, missing_bin, present, occupied):
    """Write the occupied bins of histogram ``h`` (statistic ``present`` positive),
    the missing bin aside, in order into ``occupied``; return how many. Without
    a branch per bin: whether a bin is empty is unpredictable, and the scan
    then visits only these."""
    n_occupied = 0
    for b in range(hist.shape[1]):
        occupied[n_occupied] = b
        n_occupied += (b != missing_bin) & (hist[h, b, present] > 0)
    return n_occupied


@njit(nogil=True, inline="always")
def _four_stats(row_stats, r):
    """The first four statistics of row ``r`` as scalars (zeros past the
    last): summed in registers, not in memory, where a row has at most four.
    Where it has four or more, loads without a branch (with the loads
    branching, the full-depth classifier's subtree kernel took about 1.09
    times as long)."""
    n_stats = row_stats.shape[1]
    if n_stats >= 4:
        return row_stats[r, 0], row_stats[r, 1], row_stats[r, 2], row_stats[r, 3]
    return (
        row_stats[r, 0],
        row_stats[r, 1] if n_stats > 1 else 0.0,
        row_stats[r, 2] if n_stats > 2 else 0.0,
        0.0,
    )


@njit(nogil=True, inline="always")
def _seen(seen_bins, k, b):
    """Mark bin ``b`` of histogram ``k`` seen; return its group's bit."""
    seen_bins[k, b] = 1
    return np.uint64(1) << np.uint64(b >> 3)


@njit(nogil=True, inline="always")
def _add_row(scratch, k, b, sums):
    """Add a row's statistics, ``sums`` (:func:`_four_stats`, at most four),
    to bin ``b`` of histogram ``k``."""
    n_stats = scratch.shape[2]
    s0, s1, s2, s3 = sums
    scratch[k, b, 0] += s0
    if n_stats > 1:
        scratch[k, b, 1] += s1
    if n_stats > 2:
        scratch[k, b, 2] += s2
    if n_stats > 3:
        scratch[k, b, 3] += s3


SUMMED_AT_ONCE = 4  # features whose histograms are summed in one pass over a node's rows


@njit(nogil=True, inline="always")
def summing_space(n_slots, n_bins, n_stats):
    """The zeroed workspace of :func:`_pair_histograms` for up to ``n_slots``
    features at once: ``(scratch, occupied, n_occupied, seen, groups)``."""
    return (
        np.zeros((n_slots, n_bins, n_stats)),
        np.empty((n_slots, n_bins), dtype=np.int64),
        np.zeros(n_slots, dtype=np.int64),
        np.zeros((n_slots, 32), dtype=np.uint64),
        np.zeros(n_slots, dtype=np.uint64),
    )


@njit(nogil=True, inline="always")
def _pair_histograms(rows, first, last, listed, scale, space, missing_bin):
    """Sum the statistics of rows ``first:last`` by their bin of each feature
    ``features[k]`` of ``listed`` ``(features, n_listed)`` into ``scratch[k]``
    (times ``scale``, where given), in one pass over the rows, and write the
    bins holding rows, the missing bin aside, in order into ``occupied[k]``,
    how many into ``n_occupied[k]``. ``space``: :func:`summing_space`;
    ``seen`` and ``groups`` (a byte per bin, a bit per 8 bins) are zero
    again on return, so that a pair costs its rows and its occupied bins,
    not every bin."""
    binned, row_stats = rows
    features, n_listed = listed
    scratch, occupied, n_occupied, seen, groups = space
    n_stats = scratch.shape[2]
    seen_bins = seen.view(np.uint8)
    # the usual pass (SUMMED_AT_ONCE features): their ids and bit groups held in
    # registers, not reloaded from memory for every row (with the branchless
    # loads, 0.84-0.90 of the subtree kernel's time)
    if n_listed == 4 and n_stats <= 4:
        f0, f1, f2, f3 = features[0], features[1], features[2], features[3]
        g0 = g1 = g2 = g3 = np.uint64(0)
        for r in range(first, last):
            sums = _four_stats(row_stats, r)  # once for all the features
            b0, b1, b2, b3 = binned[r, f0], binned[r, f1], binned[r, f2], binned[r, f3]
            g0 |= _seen(seen_bins, 0, b0)
            g1 |= _seen(seen_bins, 1, b1)
            g2 |= _seen(seen_bins, 2, b2)
            g3 |= _seen(seen_bins, 3, b3)
            _add_row(scratch, 0, b0, sums)
            _add_row(scratch, 1, b1, sums)
            _add_row(scratch, 2, b2, sums)
            _add_row(scratch, 3, b3, sums)
        groups[0], groups[1], groups[2], groups[3] = g0, g1, g2, g3
    else:
        for r in range(first, last):
            sums = _four_stats(row_stats, r)
            for k in range(n_listed):
                b = binned[r, features[k]]
                groups[k] |= _seen(seen_bins, k, b)
                if n_stats <= 4:
                    _add_row(scratch, k, b, sums)
                    continue
                for s in range(n_stats):
                    scratch[k, b, s] += row_stats[r, s]
    for k in range(n_listed):
        count = 0
        while groups[k]:
            g = trailing_zeros(groups[k])
            groups[k] &= groups[k] - np.uint64(1)
            word = seen[k, g]
            seen[k, g] = 0
            while word:
                b = 8 * g + (trailing_zeros(word) >> 3)
                if b != missing_bin:
                    occupied[k, count] = b
                    count += 1
                word &= word - np.uint64(1)
        n_occupied[k] = count
        if scale.shape[0]:  # the other bins hold zeros
            for t in range(count):
                for s in range(n_stats):
                    scratch[k, occupied[k, t], s] *= scale[s]
            if missing_bin >= 0:
                for s in range(n_stats):
                    scratch[k, missing_bin, s] *= scale[s]


@njit(nogil=True, inline="always")
def _clear_pair(histogram, missing_bin):
    """Zero again the bins of ``histogram`` ``(scratch, k, occupied,
    n_occupied)`` that :func:`_pair_histograms` filled: its occupied bins and
    the missing bin."""
    scratch, k, occupied, n_occupied = histogram
    n_stats = scratch.shape[2]
    for t in range(n_occupied):
        b = occupied[t]
        for s in range(n_stats):
            scratch[k, b, s] = 0.0
    if missing_bin >= 0:
        for s in range(n_stats):
            scratch[k, missing_bin, s] = 0.0


@njit(nogil=True, inline="always")
def _pair_outputs(n_stats):
    """The ``out`` of :func:`_scan_pair` for one pair: ``(gain, split_bin,
    missing_left, left, constant, right_bin)``."""
    return (
        np.empty(1),
        np.empty(1, dtype=np.int64),
        np.empty(1, dtype=np.int8),
        np.zeros((1, n_stats)),
        np.empty(1, dtype=np.bool_),
        np.empty(1, dtype=np.int64),
    )


@njit(nogil=True, inline="always")
def _scan_pair(criterion, histogram, p, pairs, nodes, bins, measure, rules, out, work):
    """Search pair ``p`` on ``histogram`` ``(hist, h, occupied, n_occupied)``:
    histogram ``h`` of ``hist``, whose occupied bins (the missing bin aside)
    are ``occupied[:n_occupied]``, in order; writes ``out[...][p]`` (see
    :func:`find_splits`). ``work``: ``(running, right)``, scratch of one
    node's statistics."""
    hist, h, occupied, n_occupied = histogram
    running, right = work
    pair_node, pair_feature, pair_valid, uniform = pairs
    totals, lower, upper = nodes
    bin_min, bin_max, missing_bin = bins
    offsets, values = measure
    min_samples_leaf, min_weight_leaf, monotonic, rows_stat = rules
    gain, split_bin, missing_left, left, constant, right_bin = out
    n_stats = hist.shape[2]
    present = rows_stat if rows_stat >= 0 else 0  # the row count, or the moments' W
    gain[p] = -np.inf
    split_bin[p] = 0
    right_bin[p] = 1
    missing_left[p] = False
    n = pair_node[p]
    low = occupied[0] if n_occupied else hist.shape[1]
    high = occupied[n_occupied - 1] if n_occupied else -1
    has_missing = missing_bin >= 0 and hist[h, missing_bin, present] > 0
    constant[p] = high < low or (high == low and not has_missing)
    if not pair_valid[p] or constant[p]:
        return
    f = pair_feature[p]
    parent = proxy(totals[n], criterion, offsets, values)
    passes = 2 if has_missing else 1
    for side in range(passes):
        send_left = side == 1
        first = low
        if uniform.shape[0]:
            if side != (1 if has_missing and uniform[p, 1] < 0.5 else 0):
                continue
            if high > low:
                first = _random_bin(bin_min[f], bin_max[f], low, high, uniform[p, 0])
        running[:] = 0.0
        if send_left:
            for s in range(n_stats):
                running[s] = hist[h, missing_bin, s]
        for b in range(low, first):
            for s in range(n_stats):
                running[s] += hist[h, b, s]
        # the candidates: every occupied bin (an empty one partitions as the bin
        # before it), or ExtraTrees' one random bin
        for t in range(1 if uniform.shape[0] else n_occupied):
            b = first if uniform.shape[0] else occupied[t]
            for s in range(n_stats):
                running[s] += hist[h, b, s]
            at_bin = b
            if b == high and not uniform.shape[0]:
                if send_left or not has_missing:
                    break
                at_bin = missing_bin - 1  # only the missing rows go right
            for s in range(n_stats):
                right[s] = totals[n, s] - running[s]
            if rows_stat < 0:  # min_samples_leaf is 1: a child with rows has W > 0
                if running[0] <= 0:
                    continue
                if right[0] <= 0:
                    break
            else:
                if running[rows_stat] < min_samples_leaf:
                    continue
                if right[rows_stat] < min_samples_leaf:
                    break
            if monotonic.shape[0] and monotonic[f] != 0:
                value_left = constrained_value(running, criterion, offsets, values)
                value_right = constrained_value(right, criterion, offsets, values)
                if not (
                    min(value_left, value_right) >= lower[n]
                    and max(value_left, value_right) <= upper[n]
                    and (value_left - value_right) * monotonic[f] <= 0
                ):
                    continue
            if (
                node_weight(running, criterion, offsets) < min_weight_leaf
                or node_weight(right, criterion, offsets) < min_weight_leaf
            ):
                continue
            if not (
                _positive_sums(running, criterion, offsets)
                and _positive_sums(right, criterion, offsets)
            ):
                continue
            g = (
                proxy(running, criterion, offsets, values)
                + proxy(right, criterion, offsets, values)
                - parent
            )
            if g > gain[p]:
                gain[p] = g
                split_bin[p] = at_bin
                # the threshold goes midway to the right child's first occupied bin
                right_bin[p] = occupied[t + 1] if b != high and not uniform.shape[0] else b + 1
                if has_missing:
                    missing_left[p] = send_left
                elif rows_stat >= 0:  # unseen NaN follows the larger child, as in scikit-learn
                    missing_left[p] = running[rows_stat] > right[rows_stat]
                else:  # decided by the caller, from the children's row counts
                    missing_left[p] = _UNSEEN_MISSING
                left[p, :] = running


@njit(nogil=True, inline="always")
def _scan_usual(criterion, histogram, p, pairs, nodes, bins, measure, rules, out, candidates):
    """Search pair ``p`` as :func:`_scan_pair` does, with the same results, by
    ``forest_scans._scan_simple`` where it serves: a searched pair of one
    output, without NaN rows, monotonic constraint or ExtraTrees draws.
    Returns whether it did (False: nothing written)."""
    hist, h = histogram[0], histogram[1]
    pair_node, pair_feature, pair_valid, uniform = pairs
    monotonic, rows_stat = rules[2], rules[3]
    missing_bin = bins[2]
    present = rows_stat if rows_stat >= 0 else 0
    if not (
        _simple_scan_applies(criterion, measure[0].shape[0] - 1, rows_stat)
        and pair_valid[p]
        and not uniform.shape[0]
        and not (missing_bin >= 0 and hist[h, missing_bin, present] > 0)
        and not (monotonic.shape[0] and monotonic[pair_feature[p]] != 0)
    ):
        return False
    n = pair_node[p]
    gain, split_bin, missing_left, left, constant, right_bin = out
    found = _scan_simple(criterion, histogram, nodes[0], n, rules, candidates)
    gain[p], split_bin[p], right_bin[p], missing_left[p], constant[p], best = found
    if best >= 0:
        _simple_left(criterion, candidates, best, rows_stat, left[p])
    return True


def _specialised(criterion):
    """:func:`find_splits` and :func:`find_splits_in_rows` compiled for one
    criterion (``measure``: the criterion's ``(offsets, values)``). With the
    criterion a constant, numba drops the other criteria's branches of the helpers, and
    with them the reference counting of the statistics arrays passed to
    them, which it cannot prune across those branches: inside the scan of
    the bins it cost 160 ns per occupied bin (gini), against 34 ns specialised.

    Each specialisation has a name of its own: numba names a function's
    cache files after its qualified name, and the closures, with the same
    name and signature, would share one index, keyed by the criterion.
    Processes that compile different criteria at once (test workers, two
    jobs) update that index without a lock, so one criterion's machine code
    could be filed under another's key: a wrong split search, or a crash
    ("NRT_adapt_ndarray_to_python: descr is NULL", seen in a test run).

    The bodies are the closures' own, not helpers inlined into them: numba's
    ``inline="always"`` copies a callee's IR block by block, each block with
    the whole scope, so each level of inlining a large body costs seconds of
    every specialisation's compilation (``forest_subtrees._specialised``)."""

    def find_splits_for(hist, pairs, nodes, bins, measure, rules, out):
        rows_stat = rules[3]
        present = rows_stat if rows_stat >= 0 else 0  # the row count, or the moments' W
        n_pairs, n_bins, n_stats = hist.shape
        work = (np.empty(n_stats), np.empty(n_stats))  # running and right statistics
        occupied = np.empty(n_bins, dtype=np.int64)
        candidates = np.empty((6, n_bins))
        for p in range(n_pairs):
            n_occupied = _occupied_bins(hist, p, bins[2], present, occupied)
            histogram = (hist, p, occupied, n_occupied)
            if not _scan_usual(
                criterion, histogram, p, pairs, nodes, bins, measure, rules, out, candidates
            ):
                _scan_pair(criterion, histogram, p, pairs, nodes, bins, measure, rules, out, work)
        return out[0]

    def find_splits_in_rows_for(rows, pairs, nodes, bins, measure, rules, summing, out):
        # a node's pairs' histograms are summed from its rows, SUMMED_AT_ONCE
        # features in one pass, scanned, then their bins are zeroed again
        binned, starts, features, row_stats = rows
        scale, n_bins = summing
        pair_valid, uniform = pairs
        missing_bin = bins[2]
        n_nodes, n_slots = features.shape
        n_stats = row_stats.shape[1]
        pair_node = np.empty(n_nodes * n_slots, dtype=np.int64)
        pair_feature = np.empty(n_nodes * n_slots, dtype=np.int64)
        for i in range(n_nodes):
            for k in range(n_slots):
                pair_node[i * n_slots + k] = i
                pair_feature[i * n_slots + k] = features[i, k]
        every = (pair_node, pair_feature, pair_valid, uniform)
        work = (np.empty(n_stats), np.empty(n_stats))  # running and right statistics
        space = summing_space(min(n_slots, SUMMED_AT_ONCE), n_bins, n_stats)
        candidates = np.empty((6, n_bins))
        scratch, occupied, n_occupied = space[0], space[1], space[2]
        for i in range(n_nodes):
            for at in range(0, n_slots, SUMMED_AT_ONCE):
                listed = features[i, at : at + SUMMED_AT_ONCE]
                _pair_histograms(
                    (binned, row_stats),
                    starts[i],
                    starts[i + 1],
                    (listed, listed.shape[0]),
                    scale,
                    space,
                    missing_bin,
                )
                for k in range(listed.shape[0]):
                    histogram = (scratch, k, occupied[k], n_occupied[k])
                    p = i * n_slots + at + k
                    if not _scan_usual(
                        criterion, histogram, p, every, nodes, bins, measure, rules, out, candidates
                    ):
                        _scan_pair(
                            criterion, histogram, p, every, nodes, bins, measure, rules, out, work
                        )
                    _clear_pair(histogram, missing_bin)
        return out[0]

    find_splits_for.__name__ = find_splits_for.__qualname__ = f"find_splits_criterion_{criterion}"
    find_splits_in_rows_for.__name__ = find_splits_in_rows_for.__qualname__ = (
        f"find_splits_in_rows_criterion_{criterion}"
    )
    return (
        njit(cache=True, nogil=True)(find_splits_for),
        njit(cache=True, nogil=True)(find_splits_in_rows_for),
    )


_FIND_SPLITS, _FIND_SPLITS_IN_ROWS = zip(*(_specialised(criterion) for criterion in range(5)))


def find_splits(hist, pairs, nodes, bins, criterion, rules, out):
    """Best split of each (node, feature) pair from its global histogram.

    Parameters
    ----------
    hist : ndarray of shape (pairs, bins, statistics), float32 or float64
        The global histogram of feature ``pair_feature[p]`` over the rows of
        node ``pair_node[p]``.
    pairs : tuple ``(pair_node, pair_feature, pair_valid, uniform)``
        Each pair's node (a row of ``totals``), feature, and whether to search
        it (False: only its constancy is checked); ``uniform``: ExtraTrees'
        draws (pairs, 2), or empty (0, 2).
    nodes : tuple ``(totals, lower, upper)``
        The nodes' statistics and the bounds of their constrained values.
    bins : tuple ``(bin_min, bin_max, missing_bin)``
        Each feature's extremes per bin (features, bins; ExtraTrees only), and
        the bin of the rows whose value is NaN (-1: none anywhere).
    criterion : tuple ``(code, offsets, values)``
        The criterion (``mlmpi/ensemble/_criteria.py``).
    rules : tuple ``(min_samples_leaf, min_weight_leaf, monotonic, rows_stat)``
        ``monotonic``: per feature 1, -1 or 0 (empty: no constraints);
        ``rows_stat``: the statistic that counts the rows, or -1 where the
        histograms carry none (moments with ``min_samples_leaf`` 1: a child
        has rows where its W, statistic 0, is positive).
    out : tuple ``(gain, split_bin, missing_left, left, constant, right_bin)``
        Written, per pair; ``missing_left`` (int8) is 2 where the node has no
        NaN and ``rows_stat`` is -1 (the caller sends them to the child with
        more rows).

    Notes
    -----
    Candidates, in scikit-learn's order: every bin boundary with the missing
    rows right, then the split that sends only the missing rows right (bin
    ``missing_bin - 1``: threshold +inf), then every boundary with them left;
    ties go to the first. Where ``monotonic`` is 1 (-1), the left child's
    :func:`constrained_value` may not exceed (fall below) the right's, and
    both must lie within the node's ``lower``/``upper`` bounds. With
    ExtraTrees' draws: one random boundary (:func:`_random_bin`) and a random
    side for the missing rows.

    Writes per pair the best ``gain`` (weighted impurity decrease summed over
    the outputs; -inf: no valid split), ``split_bin`` (last bin going left),
    ``right_bin`` (the first occupied bin going right, where the threshold
    lies between them, as scikit-learn's lies midway between the values on
    either side; ``split_bin + 1`` with ExtraTrees' draws), ``missing_left``
    and the ``left`` child's statistics; ``constant[p]``: one occupied bin and
    no missing rows, or only missing rows.
    """
    code, offsets, values = criterion
    return _FIND_SPLITS[code](hist, pairs, nodes, bins, (offsets, values), rules, out)


def find_splits_in_rows(rows, pairs, nodes, bins, criterion, rules, summing, out):
    """:func:`find_splits` for nodes whose rows are all here: the same search
    on the same histograms, summed from the rows one (node, feature) pair at a
    time, so no histogram of every pair is stored.

    Parameters
    ----------
    rows : tuple ``(binned, starts, features, row_stats)``
        The nodes' rows' bins (n_rows, n_features) uint8, node ``i``'s at
        ``starts[i]:starts[i + 1]``; each node's features (n_nodes, n_slots),
        pair ``p = i * n_slots + k`` being node ``i``'s ``k``-th; each row's
        statistics in the histograms' layout (n_rows, n_stats) float64.
    pairs : tuple ``(pair_valid, uniform)``
        Per pair, as :func:`find_splits` takes them.
    nodes, bins, criterion, rules, out
        As :func:`find_splits` takes them, ``nodes`` indexed by ``i``.
    summing : tuple ``(scale, n_bins)``
        ``scale`` (n_stats,) multiplies the summed statistics (class weights;
        empty: none); ``n_bins``: the histograms' bins.
    """
    code, offsets, values = criterion
    measure = (offsets, values)
    return _FIND_SPLITS_IN_ROWS[code](rows, pairs, nodes, bins, measure, rules, summing, out)
