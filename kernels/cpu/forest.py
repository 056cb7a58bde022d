"""Histogram-tree kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
``kernels/gpu/forest.py`` has the same functions with the same IN/OUT
signatures for CuPy arrays.

- :func:`bin_columns`: raw values to bin indices on given edges.
- :func:`build_histograms`: per (open node, sampled feature, bin) sums of
  the per-row statistics of this rank's active rows.
- :func:`route_rows`: moves active rows to the next level's open nodes.
- :func:`accumulate_leaves`: adds every tree's leaf value of each row.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _bin_columns(X, edges, edge_starts, out):
    for f in range(X.shape[1]):
        column_edges = edges[edge_starts[f]:edge_starts[f + 1]]
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
def route_rows(binned, rows, node_of_row, split_feature, split_bin, left_next, right_next):
    """Send each active row of open node ``n`` to ``left_next[n]`` (bin <=
    ``split_bin[n]``) or ``right_next[n]``; -1 (a leaf) where ``split_feature[n] < 0``
    or the child is not open. Updates ``node_of_row`` in place and returns the
    number of rows still active, compacted at the front of ``rows``."""
    kept = 0
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
            rows[kept] = i
            kept += 1
    return kept


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
