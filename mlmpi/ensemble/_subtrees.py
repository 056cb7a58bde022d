"""Small nodes' whole subtrees, each grown on one rank (collective).

Level by level, every open node costs each level a share of its Python
work and collectives, whatever its rows: in a full-depth tree most nodes
are small and deep, and that share is most of the fit. A node whose global
rows are at most :data:`LOCAL_ROWS` instead leaves the level; once the
tree's levels are done, the rows of all such nodes go to their ranks in
one all-to-all (contiguous runs of nodes of about equal rows), and each
rank grows all the subtrees it received in one kernel call
(``forest_subtrees.grow_subtrees``: the same split search and rules, depth
first); one allgather gives every rank every subtree's nodes, grafted onto
the tree. Where the nodes draw only some features, a
subtree must also be allowed :data:`LOCAL_DEPTH` more levels. The subtrees'
random draws are keyed by the tree's seed, the root and the node's place in
the subtree (not drawn in sequence), and every sum is exact: the same tree
at any number of ranks.
"""

import numpy as np

from ._criteria import gathered

#: Global rows up to which a node's subtree is grown on one rank.
LOCAL_ROWS = 8192
#: Levels a subtree must be allowed (``max_depth`` less its root's depth) to be
#: grown on one rank where the nodes draw only some of the features. There a
#: level's histograms are small and cheap to reduce, and carrying the rows to
#: one rank does not pay for a few levels (``max_depth=12``: 2.17 s level by
#: level, 2.37 s handed over at 8,192 rows); where every feature is searched
#: it does (6.48 s against 5.13 s).
LOCAL_DEPTH = 10


def rows_to_owners(lengths, global_rows, binned, stats, comms):
    """Send the rows of some open nodes to their ranks: contiguous runs of
    nodes of about equal global rows (``global_rows``), in one all-to-all.

    ``binned`` (uint8) and ``stats`` (float64) hold this rank's rows of the
    nodes, grouped by node, ``lengths[i]`` of node ``i``. Returns
    ``(mine, binned, stats, node_starts)``: the nodes this rank received,
    and their rows, grouped by node (node ``mine[j]``'s at
    ``node_starts[j]:node_starts[j + 1]``).

    This function is collective.
    """
    n_nodes = lengths.shape[0]
    global_rows = global_rows.astype(np.int64)
    before = np.cumsum(global_rows) - global_rows
    share = float(global_rows.sum()) / comms.size
    owner = np.searchsorted(share * np.arange(1, comms.size), before, side="right")
    rank_of_node = np.arange(n_nodes) - np.searchsorted(owner, owner)  # among its owner's
    tag = np.repeat(rank_of_node, lengths)
    packed = np.concatenate([binned, tag[:, None].view(np.uint8), stats.view(np.uint8)], axis=1)
    received = comms.alltoallv(packed, np.bincount(np.repeat(owner, lengths), minlength=comms.size))
    width = binned.shape[1]
    mine = np.flatnonzero(owner == comms.rank)
    tag = received[:, width : width + 8].copy().view(np.int64)[:, 0]
    order = np.argsort(tag, kind="stable")
    node_starts = np.zeros(mine.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(tag, minlength=mine.shape[0]), out=node_starts[1:])
    grouped = received[order]
    return (
        mine,
        np.ascontiguousarray(grouped[:, :width]),
        np.ascontiguousarray(grouped[:, width + 8 :]).view(np.float64),
        node_starts,
    )


def level_positions(nodes, starts):
    """The positions of the rows of ``nodes`` among a level's rows grouped by
    node (node ``m``'s at ``starts[m]:starts[m + 1]``), node by node."""
    lengths = starts[nodes + 1] - starts[nodes]
    first = np.repeat(starts[nodes] - (np.cumsum(lengths) - lengths), lengths)
    return first + np.arange(first.shape[0])


class Subtrees:
    """The subtrees of one tree grown on one rank each.

    ``seed`` keys the subtrees' draws; the others are ``grow_tree``'s.
    """

    def __init__(self, seed, n_sampled, rules, comms, kernels):
        self.seed, self.n_sampled = int(seed) % (1 << 63), n_sampled
        self.rules, self.comms, self.kernels = rules, comms, kernels
        # per level, this rank's rows of the nodes that left it: (rows per
        # node, global rows per node, binned, stats, node ids, depths, known
        # constant features)
        self._left = []

    def hand_off(self, tree, level, rows, order, starts, depth, leaf_of_row):
        """Take the small open nodes of ``level`` (at ``depth``) out of it, their
        subtrees to be grown on one rank each (:meth:`grow`); returns the level
        without them: ``(level, order, starts)``. Open node ``m``'s rows are
        ``rows`` (``_LevelRows``) at positions ``order[starts[m]:starts[m + 1]]``;
        those of the small nodes get their subtree's root in ``leaf_of_row``.
        Local: the rows travel in :meth:`grow`.
        """
        if self.n_sampled < level.constant.shape[1] and self.rules.max_depth - depth < LOCAL_DEPTH:
            return level, order, starts
        small = tree.stats[level.node_ids, -1] <= LOCAL_ROWS
        if not small.any():
            return level, order, starts
        nodes, keep = np.flatnonzero(small), np.flatnonzero(~small)
        node_ids = level.node_ids[nodes]
        lengths = starts[nodes + 1] - starts[nodes]
        index = order[level_positions(nodes, starts)]
        leaf_of_row[rows.ids[index]] = -2 - np.repeat(node_ids, lengths)
        take = self.kernels.take_rows
        self._left.append(
            (
                lengths,
                tree.stats[node_ids, -1],
                gathered(rows.binned, index, take),
                rows.stats.subtree_rows(index, take),
                node_ids,
                np.full(nodes.shape[0], depth, dtype=np.int64),
                level.constant[nodes],
            )
        )
        kept_lengths = starts[keep + 1] - starts[keep]
        kept_starts = np.zeros(keep.shape[0] + 1, dtype=np.int64)
        np.cumsum(kept_lengths, out=kept_starts[1:])
        return level.subset(keep), order[level_positions(keep, starts)], kept_starts

    def grow(self, tree):
        """Send the rows of the nodes taken out of the levels to their ranks (one
        all-to-all), grow every subtree there, all at once, and graft them
        onto ``tree``.

        This method is collective (an all-to-all and two allgathers, none where
        no node was taken out: the same on every rank).
        """
        if not self._left:
            return
        lengths, global_rows, binned, stats, ids, depth, constant = (
            np.concatenate(part) for part in zip(*self._left)
        )
        self._left = []
        mine, binned, stats, node_starts = rows_to_owners(
            lengths, global_rows, binned, np.ascontiguousarray(stats), self.comms
        )
        ids, depth, constant = ids[mine], depth[mine], constant[mine]
        criterion = self.rules.criterion
        capacity = 2 * binned.shape[0]
        out = (
            np.empty((capacity, 6), dtype=np.int64),
            np.empty((capacity, 1 + criterion.n_stats)),
            np.zeros(ids.shape[0], dtype=np.int64),
        )
        bins, kernel_criterion, kernel_rules = self.rules.subtree_arguments()
        self.kernels.grow_subtrees(
            (binned, stats, criterion.search_columns.shape[0], node_starts),
            (ids, depth, np.ascontiguousarray(constant), np.ascontiguousarray(tree.stats[ids])),
            (self.seed, self.n_sampled, self.rules.random_thresholds),
            bins,
            kernel_criterion,
            kernel_rules,
            out,
        )
        ints, floats, n_nodes = out
        place = np.arange(int(n_nodes.sum())) - np.repeat(np.cumsum(n_nodes) - n_nodes, n_nodes)
        taken = np.repeat(2 * node_starts[:-1], n_nodes) + place
        # one allgather of the nodes: the floats travel as the bits of int64s
        grown = self.comms.allgatherv(
            np.concatenate([place[:, None], ints[taken], floats[taken].view(np.int64)], axis=1)
        )
        roots = self.comms.allgatherv(ids)
        tree.graft(roots, grown[:, :7], grown[:, 7:].view(np.float64))
