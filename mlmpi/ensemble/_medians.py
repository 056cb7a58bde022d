"""Exact weighted medians of the leaves of an absolute_error tree.

The tree's statistics are weighted counts of the targets' global quantile
bins, which locate each node's weighted median in one bin. A leaf's exact
median (scikit-learn's: the first target, in increasing order, whose
cumulative weight passes half the node's weight; the mean of it and the
target before when the cumulative weight there is exactly half) needs only
the rows of that bin (and, when half the weight falls on its lower edge,
of the occupied bin below): every rank sends those rows, one allgatherv,
and every rank computes the same medians. Other nodes keep the value their
median bin stands for.
"""

import numpy as np

from ._criteria import weighted_median_of_bins


def leaf_medians(criterion, grown, leaf_codes, raw, binned, weight, comms):
    """``tree_.value`` (nodes, outputs) of an absolute_error tree.

    ``leaf_codes`` (``-2 - leaf``), ``raw`` and ``binned`` targets and
    ``weight`` are those of this rank's rows in the tree.

    This function is collective.
    """
    stats = grown.stats
    weight_of = criterion.weight(stats)
    leaf = grown.feature < 0
    row_leaf = -2 - leaf_codes
    out = np.empty((grown.node_count, criterion.n_outputs))
    for o in range(criterion.n_outputs):
        start, stop = criterion.offsets[o], criterion.offsets[o + 1]
        counts, values = stats[:, start:stop], criterion.values[start:stop]
        out[:, o] = weighted_median_of_bins(counts, weight_of, values)
        half = 0.5 * weight_of
        cumulative = np.cumsum(counts, axis=1)
        median_bin = np.minimum((cumulative <= half[:, None]).sum(axis=1), counts.shape[1] - 1)
        below = (
            np.take_along_axis(cumulative, median_bin[:, None], axis=1)[:, 0]
            - counts[np.arange(counts.shape[0]), median_bin]
        )
        boundary = (below == half) & (below > 0)
        occupied_below = np.where(
            np.arange(counts.shape[1]) < median_bin[:, None], counts > 0, False
        )
        lower_bin = np.where(
            occupied_below.any(axis=1),
            counts.shape[1] - 1 - np.argmax(occupied_below[:, ::-1], axis=1),
            -1,
        )
        rows_bin = binned[:, o] - start
        in_median = rows_bin == median_bin[row_leaf]
        in_lower = boundary[row_leaf] & (rows_bin == lower_bin[row_leaf])
        send = np.flatnonzero(leaf[row_leaf] & (in_median | in_lower))
        mine = np.stack(
            [row_leaf[send], raw[send, o], weight[send], in_lower[send]], axis=1
        ).astype(np.float64)
        rows = comms.allgatherv(np.ascontiguousarray(mine.reshape(-1, 4)))
        order = np.lexsort((rows[:, 1], rows[:, 3] == 0, rows[:, 0]))
        rows = rows[order]
        starts = np.flatnonzero(np.r_[True, rows[1:, 0] != rows[:-1, 0]]) if rows.shape[0] else []
        for first, last in zip(starts, list(starts[1:]) + [rows.shape[0]]):
            node = int(rows[first, 0])
            lower, upper = (
                rows[first:last][rows[first:last, 3] > 0],
                rows[first:last][rows[first:last, 3] == 0],
            )
            if boundary[node] and lower.shape[0] and upper.shape[0]:
                out[node, o] = (lower[:, 1].max() + upper[:, 1].min()) / 2
            elif upper.shape[0]:
                cumulative = below[node] + np.cumsum(upper[:, 2])
                at = min(
                    int(np.searchsorted(cumulative, half[node], side="right")), upper.shape[0] - 1
                )
                out[node, o] = upper[at, 1]
                if at > 0 and cumulative[at - 1] == half[node]:
                    out[node, o] = (upper[at - 1, 1] + upper[at, 1]) / 2
    return out
