"""Histogram-tree kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
``kernels/gpu/forest.py`` has the same functions with the same IN/OUT
signatures for CuPy arrays.

- :func:`bin_columns`: raw values to bin indices on given edges.
- :func:`build_histograms`: per (open node, sampled feature, bin) sums of
  the per-row statistics of this rank's active rows.
- :func:`route_rows`: moves active rows to the next level's open nodes,
  grouped by node.
- :func:`accumulate_leaves`: adds every tree's leaf value of each row.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _bin_columns(X, edges, edge_starts, out):
    for f in range(X.shape[1]):
        column_edges = edges[edge_starts[f] : edge_starts[f + 1]]
        for i in range(X.shape[0]):
            out[i, f] = np.searchsorted(column_edges, X[i, f], side="left")


def bin_columns(X, edges, edge_starts, out):
    """``out[i, f]`` = number of edges of feature ``f`` below ``X[i, f]``.

    ``edges[edge_starts[f]:edge_starts[f + 1]]`` are feature ``f``'s sorted
    thresholds, so ``X[i, f] <= edges_f[b]`` exactly when ``out[i, f] <= b``.
    """
    _bin_columns(X, edges, edge_starts, out)
    return out


@njit(cache=True, nogil=True)
def build_histograms(binned, rows, node_of_row, first_node, features, row_stats, hist):
    """``hist[n, k, b, :] += row_stats[i]`` for every active row ``i`` of open
    node ``first_node + n`` whose bin of feature ``features[n, k]`` is ``b``.

    ``hist`` has shape (nodes, sampled features, bins, statistics) and is
    zeroed by the caller; rows of other open nodes are skipped.
    """
    n_nodes, n_sampled = features.shape
    n_stats = row_stats.shape[1]
    for r in range(rows.shape[0]):
        i = rows[r]
        n = node_of_row[i] - first_node
        if n < 0 or n >= n_nodes:
            continue
        for k in range(n_sampled):
            b = binned[i, features[n, k]]
            for s in range(n_stats):
                hist[n, k, b, s] += row_stats[i, s]
    return hist


@njit(cache=True, nogil=True)
def route_rows(
    binned, rows, node_of_row, split_feature, split_bin, left_next, right_next, n_next, out
):
    """Send each active row of open node ``n`` to ``left_next[n]`` (bin <=
    ``split_bin[n]``) or ``right_next[n]``; -1 (a leaf) where ``split_feature[n] < 0``
    or the child is not open. Updates ``node_of_row`` in place, writes the rows
    still active into ``out`` grouped by next node (``n_next`` of them; within
    a node in the order of ``rows``), so that histogram updates stay in one
    node's block, and returns their number."""
    counts = np.zeros(n_next + 1, dtype=np.int64)
    for r in range(rows.shape[0]):
        i = rows[r]
        n = node_of_row[i]
        f = split_feature[n]
        if f < 0:
            nxt = -1
        elif binned[i, f] <= split_bin[n]:
            nxt = left_next[n]
        else:
            nxt = right_next[n]
        node_of_row[i] = nxt
        if nxt >= 0:
            counts[nxt + 1] += 1
    for n in range(n_next):
        counts[n + 1] += counts[n]
    for r in range(rows.shape[0]):
        i = rows[r]
        n = node_of_row[i]
        if n >= 0:
            out[counts[n]] = i
            counts[n] += 1
    return counts[n_next - 1] if n_next else 0


@njit(cache=True, nogil=True)
def accumulate_leaves(X, feature, threshold, children_left, children_right, value, roots, out):
    """``out[i] += value[leaf]`` of every tree (root node ids in ``roots``) for each
    row of ``X``; a node is a leaf where ``feature < 0``, rows go left where
    ``X[i, feature] <= threshold``."""
    for i in range(X.shape[0]):
        for t in range(roots.shape[0]):
            node = roots[t]
            while feature[node] >= 0:
                if X[i, feature[node]] <= threshold[node]:
                    node = children_left[node]
                else:
                    node = children_right[node]
            for v in range(value.shape[1]):
                out[i, v] += value[node, v]
    return out


@njit(cache=True, nogil=True, inline="always")
def _proxy(stats, criterion):
    """Criterion part additive over children (see ``mlmpi/ensemble/_splits.py``):
    0 gini, 1 entropy (bits), 2 squared error."""
    if criterion == 2:
        return stats[1] * stats[1] / stats[0] if stats[0] > 0 else 0.0
    weight = 0.0
    total = 0.0
    for c in range(stats.shape[0] - 1):
        count = stats[c]
        weight += count
        if criterion == 0:
            total += count * count
        elif count > 0:
            total += count * np.log2(count)
    if weight <= 0:
        return 0.0
    if criterion == 0:
        return total / weight
    return total - weight * np.log2(weight)


@njit(cache=True, nogil=True, inline="always")
def _random_bin(edges, low, high, u):
    """ExtraTrees' threshold: uniform in the raw range spanned by the occupied
    bins ``low..high`` (from the edge below bin ``low``, or its upper edge for
    the first bin, to the edge above bin ``high``, or its lower edge for the
    last bin), rounded down to a bin edge among ``low..high - 1``."""
    lower = edges[low - 1] if low > 0 else edges[low]
    upper = edges[high] if high < edges.shape[0] else edges[high - 1]
    threshold = lower + u * (upper - lower)
    b = np.searchsorted(edges, threshold, side="right") - 1
    return min(max(b, low), high - 1)


@njit(cache=True, nogil=True)
def find_splits(
    hist,
    valid,
    features,
    edges,
    edge_starts,
    criterion,
    min_samples_leaf,
    min_weight_leaf,
    uniform,
    slot,
    split_bin,
    gain,
    left,
    total,
    constant,
):
    """Best split of each node of a histogram chunk, into the caller's arrays.

    ``hist`` (nodes, sampled features, bins, statistics): global histograms,
    last statistic the row count; ``valid`` masks padding slots, ``features``
    names the slots' features, whose thresholds are ``edges[edge_starts[f]:
    edge_starts[f + 1]]``. With a non-empty ``uniform`` (nodes, sampled
    features), one random candidate per feature (ExtraTrees, :func:`_random_bin`);
    otherwise every bin. Outputs per node: the
    winning ``slot`` (-1: none), ``split_bin`` (last bin going left), ``gain``
    (weighted impurity decrease), ``left`` and ``total`` statistics;
    ``constant[n, k]``: one occupied bin. Ties go to the smaller slot (feature),
    then the smaller bin.
    """
    n_nodes, n_slots, n_bins, n_stats = hist.shape
    classification = criterion != 2
    running = np.empty(n_stats)
    right = np.empty(n_stats)
    for n in range(n_nodes):
        total[n, :] = 0.0
        for b in range(n_bins):
            for s in range(n_stats):
                total[n, s] += hist[n, 0, b, s]
        parent = _proxy(total[n], criterion)
        slot[n] = -1
        gain[n] = -np.inf
        for k in range(n_slots):
            low, high = n_bins, -1
            for b in range(n_bins):
                if hist[n, k, b, n_stats - 1] > 0:
                    low = min(low, b)
                    high = b
            constant[n, k] = high <= low
            if not valid[n, k] or high <= low:
                continue
            first, last = low, high - 1
            if uniform.shape[0]:
                first = _random_bin(
                    edges[edge_starts[features[n, k]] : edge_starts[features[n, k] + 1]],
                    low,
                    high,
                    uniform[n, k],
                )
                last = first
            running[:] = 0.0
            for b in range(first):
                for s in range(n_stats):
                    running[s] += hist[n, k, b, s]
            for b in range(first, last + 1):
                w_left = 0.0
                w_right = 0.0
                for s in range(n_stats):
                    running[s] += hist[n, k, b, s]
                    right[s] = total[n, s] - running[s]
                    if s < n_stats - 1 and (classification or s == 0):
                        w_left += running[s]
                        w_right += right[s]
                if running[n_stats - 1] < min_samples_leaf:
                    continue
                if right[n_stats - 1] < min_samples_leaf:
                    break
                if w_left < min_weight_leaf or w_right < min_weight_leaf:
                    continue
                g = _proxy(running, criterion) + _proxy(right, criterion) - parent
                if g > gain[n]:
                    gain[n] = g
                    slot[n] = k
                    split_bin[n] = b
                    left[n, :] = running
