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
        _exact_medians(rows, below, half, boundary, out[:, o])
    return out


def _exact_medians(rows, below, half, boundary, out):
    """Write into ``out[leaf]`` the exact median of each leaf of ``rows`` (leaf,
    target, weight, from the bin below): rows of the median bin in increasing
    order after the weight ``below[leaf]``, or, at a ``boundary``, the mean of the
    largest target of the bin below and the smallest of the median bin."""
    upper = rows[rows[:, 3] == 0]
    upper = upper[np.lexsort((upper[:, 1], upper[:, 0]))]
    leaves, first = np.unique(upper[:, 0].astype(np.int64), return_index=True)
    if leaves.shape[0]:
        size = np.diff(np.append(first, upper.shape[0]))
        leaf_of = np.repeat(leaves, size)
        total = np.cumsum(upper[:, 2])
        before = np.repeat(np.append(0.0, total[first[1:] - 1]), size)
        cumulative = below[leaf_of] + (total - before)
        passed = np.flatnonzero(cumulative > half[leaf_of])
        at = np.full(leaves.shape[0], -1, dtype=np.int64)
        hit, hit_first = np.unique(leaf_of[passed], return_index=True)
        at[np.searchsorted(leaves, hit)] = passed[hit_first]
        at = np.where(at < 0, first + size - 1, at)  # rounding: the last row
        value = upper[at, 1]
        tie = (at > first) & (cumulative[np.maximum(at - 1, 0)] == half[leaves])
        value[tie] = (upper[at[tie] - 1, 1] + value[tie]) / 2
        out[leaves] = value
    lower = rows[rows[:, 3] > 0]
    tied = np.unique(lower[:, 0].astype(np.int64))
    tied = tied[boundary[tied] & np.isin(tied, leaves)]
    if tied.shape[0]:
        largest = np.full(out.shape[0], -np.inf)
        np.maximum.at(largest, lower[:, 0].astype(np.int64), lower[:, 1])
        smallest = np.full(out.shape[0], np.inf)
        np.minimum.at(smallest, upper[:, 0].astype(np.int64), upper[:, 1])
        out[tied] = (largest[tied] + smallest[tied]) / 2
