"""Small nodes' whole subtrees, each grown on one rank (collective).

Level by level, every open node costs each level a share of its Python
work and collectives, whatever its rows: in a full-depth tree most nodes
are small and deep, and that share is most of the fit. A node whose global
rows are at most :data:`LOCAL_ROWS` instead leaves the level; once the
batch's levels are done, the rows of such nodes go to their ranks, a chunk
of trees at a time (:data:`HANDOVER_ROWS`), in one all-to-all (the nodes
dealt out by :func:`owners`), and each rank grows all the subtrees it
received in one kernel call (``forest_subtrees.grow_subtrees``: the same
split search and rules, depth first); one allgather gives every rank every
subtree's nodes, grafted onto their trees, each then done (its nodes out of
the batch's memory). Where the nodes draw
only some features, a subtree must also be allowed :data:`LOCAL_DEPTH` more
levels. The subtrees' random draws are keyed by the tree's seed, the root's
id in its tree and the node's place in the subtree (not drawn in sequence),
and every sum is exact: the same tree at any number of ranks, in any batch.
"""

import numpy as np

from ..utils._offsets import group_starts
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
#: Global rows of the subtrees of a batch's trees that travel and grow
#: together (at least one tree's). One all-to-all of the whole batch's rows
#: took four times the time of one a tree on a fresh process (its buffers'
#: new pages); a tree's of the full-depth classifier hold about 126,000.
HANDOVER_ROWS = 1 << 17


def owners(load, size):
    """The rank of each of some nodes, of ``load`` each: dealt in decreasing
    load (ties in node order) back and forth over the ranks (0 to P - 1, P - 1
    to 0, ...), so that each rank gets about 1/P of the load and a like mix of
    large and small nodes, early and late ones. (Contiguous runs of nodes of
    equal global rows left one rank of two with 1.7 times the other's
    subtree work on the full-depth classifier: the work is not the rows.)"""
    turn = np.arange(load.shape[0]) % (2 * size)
    owner = np.empty(load.shape[0], dtype=np.int64)
    owner[np.argsort(-load, kind="stable")] = np.where(turn < size, turn, 2 * size - 1 - turn)
    return owner


def rank_after_rank(owner):
    """The nodes of ``owner`` in the order the ranks hold them one after
    another (each rank's in node order, as :func:`rows_to_owners` gives them):
    the order of anything gathered from the ranks, one entry per node."""
    return np.argsort(owner, kind="stable")


def in_node_order(gathered, owner):
    """Rows gathered from the ranks, one per node of ``owner``
    (:func:`rank_after_rank`), put back in node order."""
    out = np.empty_like(gathered)
    out[rank_after_rank(owner)] = gathered
    return out


def rows_to_owners(owner, lengths, rows, comms, take_rows):
    """Send the rows of some open nodes to their ranks (``owner``, as
    :func:`owners` deals them) in one all-to-all.

    ``rows`` ``(binned, stats)`` (uint8 and float64) hold this rank's rows of
    the nodes, grouped by node, the nodes rank after rank
    (:func:`rank_after_rank`); ``lengths[i]``: node ``i``'s. Returns ``(mine, binned, stats,
    node_starts)``: the nodes this rank received (increasing), and their
    rows, grouped by node (node ``mine[j]``'s at ``node_starts[j]:node_starts[j
    + 1]``), gathered by ``take_rows`` (the kernel ``forest.take_rows``).

    This function is collective.
    """
    binned, stats = rows
    in_order = rank_after_rank(owner)
    mine = in_order[owner[in_order] == comms.rank]
    first_of_owner = np.searchsorted(owner[in_order], owner[in_order])
    # each row's node, numbered among its owner's nodes
    tag = np.repeat(np.arange(owner.shape[0]) - first_of_owner, lengths[in_order])
    packed = np.concatenate([binned, tag[:, None].view(np.uint8), stats.view(np.uint8)], axis=1)
    received = comms.alltoallv(packed, np.bincount(np.repeat(owner, lengths), minlength=comms.size))
    width = binned.shape[1]
    tag = received[:, width : width + 8].copy().view(np.int64)[:, 0]
    order = np.argsort(tag, kind="stable")
    node_starts = group_starts(np.bincount(tag, minlength=mine.shape[0]))
    n_rows = received.shape[0]
    binned = take_rows(received[:, :width], order, np.empty((n_rows, width), dtype=np.uint8))
    stats = take_rows(
        received[:, width + 8 :], order, np.empty((n_rows, 8 * stats.shape[1]), dtype=np.uint8)
    )
    return mine, binned, stats.view(np.float64), node_starts


def level_positions(nodes, starts):
    """The positions of the rows of ``nodes`` among a level's rows grouped by
    node (node ``m``'s at ``starts[m]:starts[m + 1]``), node by node."""
    lengths = starts[nodes + 1] - starts[nodes]
    first = np.repeat(starts[nodes] - (np.cumsum(lengths) - lengths), lengths)
    return first + np.arange(first.shape[0])


class Subtrees:
    """The subtrees of a batch of trees, each grown on one rank.

    ``seeds`` (one per tree of the batch) key the subtrees' draws, with the
    root's id in its tree (``_Tree.local``); ``binned`` (the shard's) and
    ``row_stats`` (each tree's) are where the rows of a chunk are gathered
    from when it grows (not when they leave the levels: a batch's rows
    would all be held at once); the others are ``grow_trees``'.
    """

    def __init__(self, seeds, n_sampled, rules, comms, kernels, binned, row_stats):
        self.seeds = np.array([int(seed) % (1 << 63) for seed in seeds], dtype=np.int64)
        self.n_sampled = n_sampled
        self.rules, self.comms, self.kernels = rules, comms, kernels
        self.binned, self.row_stats = binned, row_stats
        # per tree, per level, this rank's rows of the nodes that left it: (rows
        # per node, global rows per node, the rows' ids, node ids, depths,
        # known constant features)
        self._left = [[] for _ in seeds]

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
        row_ids = rows.ids[order[level_positions(nodes, starts)]]
        leaf_of_row[row_ids] = -2 - np.repeat(node_ids, lengths)
        by_node = (
            lengths,
            tree.stats[node_ids, -1],
            node_ids,
            np.full(nodes.shape[0], depth, dtype=np.int64),
            level.constant[nodes],
        )
        # the nodes are grouped by tree: each tree's part
        node_bounds = np.searchsorted(level.trees[nodes], np.arange(1, self.seeds.shape[0]))
        row_bounds = group_starts(lengths)[node_bounds]
        node_parts = [np.split(array, node_bounds) for array in by_node]
        row_parts = np.split(row_ids, row_bounds)
        for t, (length, global_rows, ids, depths, constant) in enumerate(zip(*node_parts)):
            if length.shape[0]:
                self._left[t].append((length, global_rows, row_parts[t], ids, depths, constant))
        kept_starts = group_starts(starts[keep + 1] - starts[keep])
        return level.subset(keep), order[level_positions(keep, starts)], kept_starts

    def grow(self, batch, trees):
        """Grow the subtrees of the nodes taken out of the levels of ``batch``
        (the batch's :class:`_Tree`) and graft them onto their trees
        (``trees``: each alone, :meth:`_Tree.of_tree`), a chunk of consecutive
        trees at a time: those whose nodes hold at most :data:`HANDOVER_ROWS`
        global rows, or one tree. Yields each chunk's trees (their indices),
        once grafted.

        This generator is collective (per chunk, an all-to-all and an
        allgather; none where no node was taken out: the same on every rank);
        every rank consumes it whole.
        """
        chunk, chunk_rows = [], 0
        for t, parts in enumerate(self._left):
            rows = sum(int(part[1].sum()) for part in parts)
            if chunk and chunk_rows + rows > HANDOVER_ROWS:
                yield self._grafted(batch, trees, chunk)
                chunk, chunk_rows = [], 0
            chunk, chunk_rows = [*chunk, t], chunk_rows + rows
        if chunk:
            yield self._grafted(batch, trees, chunk)

    def _grafted(self, batch, trees, chunk):
        """Grow the subtrees of the trees ``chunk`` (indices) and graft each
        tree's onto it; returns ``chunk`` (collective)."""
        parts = [part for t in chunk for part in self._left[t]]
        for t in chunk:
            self._left[t] = []
        if not parts:
            return chunk
        roots, nodes = self._grow_chunk(batch, parts)
        tree_of_root = batch.tree[roots]
        if np.any(np.diff(tree_of_root) < 0):  # the subtrees grouped by tree
            by_tree = np.argsort(tree_of_root, kind="stable")
            starts = np.append(np.flatnonzero(nodes[:, 0] == 0), nodes.shape[0])
            nodes = gathered(nodes, level_positions(by_tree, starts), self.kernels.take_rows)
            roots, tree_of_root = roots[by_tree], tree_of_root[by_tree]
        node_bounds = np.searchsorted(tree_of_root[np.cumsum(nodes[:, 0] == 0) - 1], chunk[1:])
        root_bounds = np.searchsorted(tree_of_root, chunk[1:])
        for t, these, their_roots in zip(
            chunk, np.split(nodes, node_bounds), np.split(roots, root_bounds), strict=True
        ):
            trees[t].graft(batch.local[their_roots], these[:, :7], these[:, 7:].view(np.float64))
        return chunk

    def _rows(self, row_ids):
        """The bins and statistics (``RowStats.subtree_rows``) of the rows of
        ``row_ids`` (``t * n_local + row`` in tree ``t``), in their order."""
        take = self.kernels.take_rows
        n_local = max(1, self.binned.shape[0])
        trees = row_ids // n_local
        rows = row_ids - trees * n_local
        bounds = np.flatnonzero(np.diff(trees)) + 1
        stats = [
            self.row_stats[t[0]].subtree_rows(these, take)
            for t, these in zip(np.split(trees, bounds), np.split(rows, bounds), strict=True)
            if these.shape[0]
        ]
        if not stats:  # no rows here
            return self.binned[:0], np.zeros((0, self.rules.criterion.n_stats))
        return gathered(self.binned, rows, take), np.concatenate(stats)

    def _grow_chunk(self, tree, parts):
        """Send the rows of the nodes of ``parts`` (as ``_left`` holds them) to
        their ranks (one all-to-all), grow every subtree there, all at once,
        and gather them (collective): ``(roots, nodes)`` as
        :meth:`_Tree.graft` takes them (the ints, then the floats' bits), the
        subtrees rank after rank (the order of the nodes' ids in their trees,
        which no result depends on: the trees are numbered by their shape)."""
        lengths, global_rows, row_ids, ids, depth, constant = (
            np.concatenate(part) for part in zip(*parts)
        )
        owner = owners(global_rows, self.comms.size)
        starts = group_starts(lengths)
        rows = self._rows(row_ids[level_positions(rank_after_rank(owner), starts)])
        mine, binned, stats, node_starts = rows_to_owners(
            owner, lengths, rows, self.comms, self.kernels.take_rows
        )
        roots = ids  # every rank hands off the same nodes
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
            (
                tree.local[ids],
                depth,
                np.ascontiguousarray(constant),
                np.ascontiguousarray(tree.stats[ids]),
            ),
            (self.seeds[tree.tree[ids]], self.n_sampled, self.rules.random_thresholds),
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
        return roots[rank_after_rank(owner)], grown
