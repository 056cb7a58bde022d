"""Single-run solver: grows a batch of trees level by level from global histograms.

The trees of a batch (those of one fit that share their rules) grow
together: a level holds the open nodes of all of them, so that its Python
work and collectives are paid once for the batch, not once a tree. Each
tree keeps its own random draws, in the order it makes them alone, and its
nodes their ids in it (:class:`_Tree`): every tree is the one it would be
grown alone.

Per level, every rank builds the histograms of its active rows for every
open node and that node's drawn features (a kernel). One ``reduce_scatter``
per chunk of nodes sums them over the ranks and leaves each rank one
contiguous block of the (node, feature) pairs, about 1/P of them. Each rank
finds the best split of every pair of its block (a kernel), and one
allgather of these (a few numbers per pair) gives every rank all of them
(:mod:`._split_search`, shared with boosting): every rank then picks the
same winner per node (the larger gain; ties to the feature drawn first,
then to the first candidate), records the same tree, draws the next level's
features from the same generator and routes its own rows. Nothing is
decided on one rank and broadcast.

Where every node draws every feature, the ranks share out the features
instead (each the same features at every level) and keep their reduced
histograms of a level: of two open siblings, only the one with fewer global
rows is built and reduced, the other is its parent's less it (exact sums,
so the same bits), and nodes whose rows take fewer bytes than their
histograms are searched from their rows, sent to one rank. Nodes of at most
255 integer counts get uint8 histograms; the regressors' histograms carry
only what the search reads.

Nodes of few global rows grow their whole subtrees on one rank each
(:mod:`._subtrees`).

Features are drawn as scikit-learn draws them: ``max_features`` of them per
node, features known to be constant in the node included (they are not
searched); when none of the drawn features turns out non-constant, the
node goes on in the same random order to the first non-constant feature (a
second search round of the level, for those nodes only).
"""

import heapq

import numpy as np

from ..utils._offsets import group_starts
from ._criteria import RowStats, gathered
from ._split_search import Blocks
from ._splits import FOUND_COLUMNS, missing_goes_left
from ._subtrees import (
    Subtrees,
    in_node_order,
    level_positions,
    owners,
    rank_after_rank,
    rows_to_owners,
)

_HISTOGRAM_ELEMENTS = 1 << 21  # values of one reduced histogram chunk (16 MiB in float64)
_BYTE_COUNTS = 255  # integer counts up to this: every bin's sum fits a uint8, exactly
_KEPT_BYTES = 1 << 27  # a level's reduced histograms kept for the next one's subtraction


# every node array of a _Tree, and its value for a new leaf (bounds: [-inf, inf])
_NODE_DEFAULTS = {
    "feature": -1,
    "bin": 0,
    "right_bin": 1,
    "missing_left": False,
    "left": -1,
    "right": -1,
    "stats": 0.0,
    "bounds": np.inf,
    "decrease": 0.0,
}


class _Tree:
    """The growing trees of a batch, identical on every rank: arrays indexed
    by node id (creation order), tree ``t``'s root node ``t``. Each node also
    has its ``tree`` and its ``local`` id, its place in its tree's creation
    order: the id it has when its tree grows alone (:meth:`of_tree`)."""

    def __init__(self, root_stats):
        n_trees = root_stats.shape[0]
        self.feature = np.full(n_trees, -1, dtype=np.int64)
        self.bin = np.zeros(n_trees, dtype=np.int64)
        self.right_bin = np.ones(n_trees, dtype=np.int64)
        self.missing_left = np.zeros(n_trees, dtype=np.bool_)
        self.left = np.full(n_trees, -1, dtype=np.int64)
        self.right = np.full(n_trees, -1, dtype=np.int64)
        self.stats = np.array(root_stats, dtype=np.float64)
        self.bounds = np.tile([-np.inf, np.inf], (n_trees, 1))
        self.decrease = np.zeros(n_trees)
        self.tree = np.arange(n_trees)
        self.local = np.zeros(n_trees, dtype=np.int64)
        self._sizes = np.ones(n_trees, dtype=np.int64)

    @property
    def node_count(self):
        return int(self.feature.shape[0])

    def add_children(self, parents, left_stats, right_stats, left_bounds, right_bounds):
        """Append the two children of each parent; returns their ids (left, right)."""
        n = parents.shape[0]
        first = self._append(
            np.repeat(self.tree[parents], 2),
            stats=np.stack([left_stats, right_stats], axis=1).reshape(2 * n, left_stats.shape[1]),
            bounds=np.stack([left_bounds, right_bounds], axis=1).reshape(2 * n, 2),
        )
        left_ids = first + 2 * np.arange(n)
        self.left[parents], self.right[parents] = left_ids, left_ids + 1
        return left_ids, left_ids + 1

    def graft(self, roots, ints, floats):
        """Graft subtrees grown on one rank each onto their ``roots`` (node ids),
        their nodes given subtree by subtree, each root first: ``ints``
        (nodes, 7) their place in the subtree, feature (-1: a leaf), bin,
        first bin right, NaN side and their children's places; ``floats``
        (nodes, 1 + statistics) their impurity decrease and statistics. The
        nodes other than the roots are appended in that order."""
        place, feature = ints[:, 0], ints[:, 1]
        root = place == 0
        new = ~root
        ids = np.empty(ints.shape[0], dtype=np.int64)
        ids[root] = roots
        ids[new] = self.node_count + np.arange(int(new.sum()))
        first_row = np.flatnonzero(root)[np.cumsum(root) - 1]  # each row's subtree's root
        split = feature >= 0
        columns = {
            "feature": feature,
            "bin": ints[:, 2],
            "right_bin": ints[:, 3],
            "missing_left": ints[:, 4] > 0,
            "left": np.where(split, ids[first_row + np.maximum(ints[:, 5], 0)], -1),
            "right": np.where(split, ids[first_row + np.maximum(ints[:, 6], 0)], -1),
            "decrease": floats[:, 0],
        }
        for name, values in columns.items():  # the roots' splits
            getattr(self, name)[roots] = values[root]
        self._append(
            self.tree[ids[first_row[new]]],
            stats=floats[new, 1:],
            **{name: values[new] for name, values in columns.items()},
        )

    def _append(self, tree, **values):
        """Append nodes of the trees ``tree`` (non-decreasing), their arrays'
        ``values`` where given, else a leaf's (no statistics, no bounds);
        returns the first's id."""
        first, n = self.node_count, tree.shape[0]
        counts = np.bincount(tree, minlength=self._sizes.shape[0])
        # each tree's next ids, in order
        local = np.arange(n) - np.repeat(np.cumsum(counts) - counts - self._sizes, counts)
        self._sizes += counts
        self.tree = np.concatenate([self.tree, tree])
        self.local = np.concatenate([self.local, local])
        for name, fill in _NODE_DEFAULTS.items():
            array = getattr(self, name)
            extra = values.get(name)
            if extra is None:
                extra = np.full((n, *array.shape[1:]), fill, dtype=array.dtype)
                if name == "bounds":
                    extra[:, 0] = -np.inf
            setattr(self, name, np.concatenate([array, extra.astype(array.dtype, copy=False)]))
        return first

    def of_tree(self, t):
        """Tree ``t`` of the batch alone, its nodes numbered as when it grows
        alone (``local``)."""
        nodes = np.flatnonzero(self.tree == t)  # by id: by local id, 0, 1, ...
        columns = {name: getattr(self, name)[nodes] for name in _NODE_DEFAULTS}
        for name in ("left", "right"):
            columns[name] = np.where(columns[name] >= 0, self.local[columns[name]], -1)
        return _Tree._single(**columns)

    @classmethod
    def _single(cls, **columns):
        """One tree of the node arrays ``columns`` (every name of ``_NODE_DEFAULTS``)."""
        tree = object.__new__(cls)
        for name in _NODE_DEFAULTS:
            setattr(tree, name, columns[name])
        n = tree.node_count
        tree.tree, tree.local = np.zeros(n, dtype=np.int64), np.arange(n)
        tree._sizes = np.array([n])
        return tree

    def depth_first(self, kernels):
        """This tree with its nodes numbered as scikit-learn's depth-first builder
        numbers them (preorder, left child first), and the new id of each node."""
        order = np.empty(self.node_count, dtype=np.int64)
        count = kernels.preorder(self.left, self.right, self.feature >= 0, order)
        return self._renumbered(order[:count], kernels)

    def best_first(self, max_leaf_nodes, kernels):
        """The subtree that best-first growth (scikit-learn's with ``max_leaf_nodes``)
        makes of this tree, numbered as scikit-learn's best-first builder numbers
        it: from the root, split the open node of largest impurity decrease (ties
        to the node first in depth-first order: the tree's shape decides, not
        the order its nodes were made in) until there are ``max_leaf_nodes`` leaves.

        Returns the subtree and, for each node of this tree, the id in the subtree
        of the node its rows end in (itself or its deepest kept ancestor).
        """
        preorder = np.empty(self.node_count, dtype=np.int64)
        count = kernels.preorder(self.left, self.right, self.feature >= 0, preorder)
        place = np.empty(self.node_count, dtype=np.int64)
        place[preorder[:count]] = np.arange(count)
        order = [0]
        heap = [(-self.decrease[0], 0, 0)] if self.feature[0] >= 0 else []
        expanded = set()
        while heap and len(expanded) + 1 < max_leaf_nodes:
            node = heapq.heappop(heap)[2]
            expanded.add(node)
            for child in (self.left[node], self.right[node]):
                order.append(child)
                if self.feature[child] >= 0:
                    heapq.heappush(heap, (-self.decrease[child], place[child], child))
        subtree, new_id = self._renumbered(np.asarray(order, dtype=np.int64), kernels, expanded)
        return subtree, new_id

    def _renumbered(self, order, kernels, split=None):
        """The tree of the nodes ``order`` (old ids, parents first), node ``order[i]``
        becoming node ``i``; only the nodes in ``split`` (all split nodes when None)
        keep their split. Also returns, for each old node, the new id of the node
        its rows end in (itself or its deepest kept ancestor)."""
        keep = self.feature[order] >= 0
        if split is not None:
            keep &= np.isin(order, np.fromiter(split, dtype=np.int64, count=len(split)))
        new_id = np.full(self.node_count, -1, dtype=np.int64)
        new_id[order] = np.arange(order.shape[0])
        ends = kernels.inherit(self.left, self.right, self.feature >= 0, new_id.copy(), 0)
        tree = _Tree._single(
            stats=self.stats[order],
            bounds=self.bounds[order],
            decrease=np.where(keep, self.decrease[order], 0.0),
            feature=np.where(keep, self.feature[order], -1),
            bin=self.bin[order],
            right_bin=self.right_bin[order],
            missing_left=self.missing_left[order],
            left=np.where(keep, new_id[self.left[order]], -1),
            right=np.where(keep, new_id[self.right[order]], -1),
        )
        return tree, ends


class _LevelRows:
    """This rank's rows of the open nodes of a level, grouped by node in arrays
    of their own: their ids (in the arrays of the whole shard), bins and
    statistics. The kernels read them in order, where reading them through
    the ids jumped about the shard's arrays (three times the time)."""

    def __init__(self, ids, binned, stats):
        self.ids, self.binned, self.stats = ids, binned, stats

    def take(self, order, kernels):
        """The rows at positions ``order``, in that order (gathered by the kernel
        ``forest.take_rows``)."""
        take = kernels.take_rows
        return _LevelRows(
            gathered(self.ids, order, take),
            gathered(self.binned, order, take),
            self.stats.take(order, take),
        )


class _Draws:
    """The random draws of a batch of trees: tree ``t``'s from its own
    generator (``rngs[t]``, seeded alike on every rank), in the order its
    growth alone makes them, so that no tree depends on those grown beside it."""

    def __init__(self, rngs):
        self.rngs = rngs

    def uniform(self, trees, *shape):
        """Uniform draws of ``shape`` for each node of ``trees`` (its tree; grouped
        by tree, in increasing order): each tree's nodes', in order, from its
        generator."""
        counts = np.bincount(trees, minlength=len(self.rngs))
        out = np.empty((trees.shape[0], *shape))
        first = 0
        for t in np.flatnonzero(counts):
            out[first : first + counts[t]] = self.rngs[t].random((counts[t], *shape))
            first += counts[t]
        return out


class _Level:
    """The open nodes of one level, grouped by tree in increasing order: their
    ids and ``trees``, the features known to be constant in each, each node's
    random order of the features (:class:`_Draws`) and its first
    ``n_sampled`` of them (``features``, by increasing index; ``drawn_at``
    their places in the order; ``valid`` False for known constants)."""

    def __init__(self, node_ids, trees, constant, n_sampled, draws):
        self.node_ids, self.trees = node_ids, trees
        self.constant = constant
        self.order = np.argsort(draws.uniform(trees, constant.shape[1]), axis=1, kind="stable")
        self.features = np.sort(self.order[:, :n_sampled], axis=1)
        self.valid = ~np.take_along_axis(constant, self.features, axis=1)
        place = np.empty_like(self.order)
        np.put_along_axis(place, self.order, np.arange(self.order.shape[1])[None, :], axis=1)
        self.drawn_at = np.take_along_axis(place, self.features, axis=1)
        self.n_sampled = n_sampled

    def subset(self, keep):
        """This level with only the open nodes at positions ``keep``."""
        level = object.__new__(_Level)
        for name in ("node_ids", "trees", "constant", "order", "features", "valid", "drawn_at"):
            setattr(level, name, getattr(self, name)[keep])
        level.n_sampled = self.n_sampled
        return level

    def continuations(self, nodes, constant):
        """For ``nodes`` (positions) all of whose drawn features were constant
        (``constant``: known now), the undrawn features not known to be
        constant, in the node's order: ``(features, valid)``, padded."""
        rest = self.order[nodes, self.n_sampled :]
        usable = ~np.take_along_axis(constant[nodes], rest, axis=1)
        # stable: usable features first, in order
        keep = np.argsort(~usable, axis=1, kind="stable")[
            :, : max(1, int(usable.sum(axis=1).max(initial=0)))
        ]
        return np.take_along_axis(rest, keep, axis=1), np.take_along_axis(usable, keep, axis=1)


def grow_trees(
    binned,
    row_stats,
    active,
    *,
    root_stats,
    n_bins,
    constant_features,
    rules,
    n_sampled,
    rngs,
    comms,
    kernels,
    hist_dtype=np.float64,
    subtree_seeds=None,
):
    """Grow a batch of trees together, each on its rows of positive weight:
    one set of collectives a level for all of them. Each tree is the one it
    would be grown alone (its own draws, exact sums).

    Parameters
    ----------
    binned : ndarray of shape (n_local, n_features), uint8
    row_stats : list of RowStats
        Per tree, each row's contribution to its node's statistics (``_criteria``).
    active : list of ndarray of int64
        Per tree, this rank's rows in it (positive bootstrap weight).
    root_stats : ndarray of shape (n_trees, n_statistics)
        Per tree, the global statistics of all its rows (scaled as
        ``rules.scale`` says).
    n_bins : int
        Bins of the widest feature, the missing bin included.
    constant_features : ndarray of shape (n_features,), bool
        Features with a single bin (never searched).
    rules : SplitRules
        The trees' rules (the same for all of them).
    n_sampled : int
        Features drawn per node (``max_features`` resolved).
    rngs : list of numpy.random.Generator
        Per tree, seeded alike on every rank: the feature draws and
        ExtraTrees' thresholds.
    hist_dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        The histograms' type, built and reduced: float32 only where every
        sum is an integer that float32 holds exactly (half the bytes); then
        uint8 for nodes of at most 255 counts (:meth:`_Search._byte_counts`).
    subtree_seeds : sequence of int or None, default=None
        Per tree, the key of the draws of the subtrees that small nodes grow
        on one rank (:mod:`._subtrees`); None: every node is grown level by level.

    Yields
    ------
    tree, leaf_of_row
        Tree by tree, in order, as its subtrees are done: the tree (a
        :class:`_Tree`, the same on every rank) and an int64 array of shape
        (n_local,): ``-2 - node`` for every row of its ``active``, the leaf
        the row reached, or the root of the subtree grown on one rank that it
        went into. A tree's nodes are freed once the caller drops it.

    Notes
    -----
    This function is collective; every rank consumes the whole generator.
    """
    n_trees, n_local = len(row_stats), binned.shape[0]
    leaf_of_row = np.zeros((n_trees, n_local), dtype=np.int64)
    tree = _Tree(root_stats)
    draws = _Draws(rngs)
    roots = np.flatnonzero(rules.may_split(tree.stats, 0))
    level = _Level(roots, roots, np.tile(constant_features, (roots.shape[0], 1)), n_sampled, draws)
    for t in np.setdiff1d(np.arange(n_trees), roots):
        leaf_of_row[t, active[t]] = -2 - t
    search = _Search(row_stats[0].n_stats, n_bins, rules, draws, comms, kernels, hist_dtype)
    subtrees = None
    if subtree_seeds is not None and rules.grows_subtrees:
        subtrees = Subtrees(subtree_seeds, n_sampled, rules, comms, kernels, binned, row_stats)
    rows = _first_rows(binned, row_stats, active, roots, kernels)
    leaf_of_row = leaf_of_row.reshape(-1)  # rows.ids index it
    # the level's rows are rows[order], open node m's at starts[m]:starts[m + 1]
    order = np.arange(rows.ids.shape[0])
    starts = group_starts([active[t].shape[0] for t in roots])
    depth = 0
    while True:
        if subtrees is not None:
            level, order, starts = subtrees.hand_off(
                tree, level, rows, order, starts, depth, leaf_of_row
            )
        if not level.node_ids.shape[0]:
            break
        if depth or order.shape[0] < rows.ids.shape[0]:  # else already in level order
            rows = rows.take(order, kernels)
        best, constant = search.level(tree, level, rows, starts)
        left = search.left_stats(best, rows, starts)
        level, targets, split = _decide(
            tree, level, best, left, constant, depth, rules, n_sampled, draws
        )
        order = np.empty(rows.ids.shape[0], dtype=np.int64)
        next_starts = np.empty(level.node_ids.shape[0] + 1, dtype=np.int64)
        kept = kernels.route_rows(
            rows.binned,
            starts,
            split["feature"],
            split["bin"],
            split["missing_left"],
            rules.missing_bin,
            targets,
            rows.ids,
            leaf_of_row,
            order,
            next_starts,
        )
        order, starts = order[:kept], next_starts
        depth += 1
    leaf_of_row = leaf_of_row.reshape(n_trees, n_local)
    reached = leaf_of_row < 0
    leaf_of_row[reached] = -2 - tree.local[-2 - leaf_of_row[reached]]
    trees = [tree.of_tree(t) for t in range(n_trees)]  # the levels' nodes
    chunks = [range(n_trees)] if subtrees is None else subtrees.grow(tree, trees)
    for chunk in chunks:
        for t in chunk:
            done, trees[t] = trees[t], None
            yield done, leaf_of_row[t]


def _first_rows(binned, row_stats, active, roots, kernels):
    """The rows of the open ``roots`` (trees of the batch), tree by tree, as
    :class:`_LevelRows`: a row's id is ``t * n_local + row`` in tree ``t``."""
    take = kernels.take_rows
    n_local = binned.shape[0]
    local_rows = [active[t] for t in roots]
    ids = [t * n_local + rows for t, rows in zip(roots, local_rows, strict=True)]
    together = np.concatenate(local_rows) if roots.shape[0] else np.zeros(0, dtype=np.int64)
    return _LevelRows(
        np.concatenate(ids) if ids else together,
        gathered(binned, together, take),
        RowStats.concatenate(
            [row_stats[t].take(rows, take) for t, rows in zip(roots, local_rows, strict=True)],
            row_stats[0],
        ),
    )


class _Search:
    """The split search of a level, the same on every rank."""

    def __init__(self, n_stats, n_bins, rules, draws, comms, kernels, hist_dtype):
        self.n_stats, self.n_bins = n_stats, n_bins
        self.rules, self.draws, self.comms, self.kernels = rules, draws, comms, kernels
        self.hist_dtype = hist_dtype
        # (node ids, reduced histograms, their index of each node) of the last
        # level, by feature (_by_feature), and the level before's memory
        self.kept, self._spare = None, None

    def level(self, tree, level, rows, starts):
        """Best split of every open node: ``(best, constant)``, ``best`` (nodes,
        FOUND_COLUMNS + statistics) as :func:`_pick` gives it, and the features now known to
        be constant in each node. The level's rows are ``rows`` (:class:`_LevelRows`),
        open node ``m``'s at ``starts[m]:starts[m + 1]``."""
        n_open = level.node_ids.shape[0]
        totals = tree.stats[level.node_ids][:, self.rules.criterion.search_columns]
        bounds = tree.bounds[level.node_ids]
        rows = (rows, starts)
        found = self._by_feature(tree, level, totals, bounds, rows)
        if found is None:
            found = self.pairs(
                np.arange(n_open), level.trees, level.features, level.valid, totals, bounds, rows
            )
        constant = level.constant.copy()
        drawn_constant = found[:, :, 3] > 0
        rows_, cols = np.nonzero(drawn_constant)
        constant[rows_, level.features[rows_, cols]] = True
        searched = level.valid & ~drawn_constant
        best = _pick(found, level.features, searched, level.drawn_at)
        stuck = np.flatnonzero(~searched.any(axis=1))
        if stuck.shape[0]:
            features, valid = level.continuations(stuck, constant)
            if valid.any():
                more = self.pairs(
                    stuck,
                    level.trees[stuck],
                    features,
                    valid,
                    totals[stuck],
                    bounds[stuck],
                    rows,
                )
                more_constant = more[:, :, 3] > 0
                rows_, cols = np.nonzero(more_constant & valid)
                constant[stuck[rows_], features[rows_, cols]] = True
                best[stuck] = _pick(more, features, valid & ~more_constant)
        return best, constant

    def left_stats(self, best, rows, starts):
        """The statistics, in the criterion's full layout, of the left child of
        each open node's best split (``best``, from :meth:`level`): those the
        search read, and the others (the moments' Σwy², Σw y log y) summed over
        the rows that go left on every rank, in one allreduce (exact: the
        statistics lie on exact grids). This method is collective where the
        criterion has such statistics."""
        feature = np.where(np.isfinite(best[:, 0]), best[:, 3], -1).astype(np.int64)
        split = (feature, best[:, 1].astype(np.int64), best[:, 2] > 0)
        extra = rows.stats.left_extra(
            self.kernels, rows.binned, starts, split, self.rules.missing_bin
        )
        if extra.shape[1]:
            extra = self.comms.allreduce(extra)
        return rows.stats.full(best[:, FOUND_COLUMNS:], extra)

    def _by_feature(self, tree, level, totals, bounds, rows):
        """:meth:`pairs` of a level whose nodes draw every feature, the ranks
        sharing out the features (each the same ones at every level), or None
        where that does not apply (fewer features drawn, fewer features than
        ranks, or more histograms than ``_KEPT_BYTES`` on a rank).

        Each rank keeps the reduced histograms of its features for the level's
        nodes, so that of two open siblings at the next level only the one
        with fewer global rows is built and reduced: the other is the parent's
        histogram less it (exact: the statistics are integers or lie on exact
        grids, so the same bits as building it). The histograms are stored
        built nodes first, then derived ones (``order``: positions among the
        histogram nodes). Nodes whose rows take fewer bytes than their
        histograms (:meth:`_direct`) are searched from their rows instead
        (:meth:`_in_rows`), and keep none."""
        level_rows, starts = rows
        n_nodes, n_features = level.features.shape
        by_feature = Blocks(n_features, self.comms)
        owned = np.arange(by_feature.start, by_feature.stop)
        global_rows = tree.stats[level.node_ids, -1]
        direct = self._direct(global_rows, n_features)
        dense = np.flatnonzero(~direct)
        n_dense = dense.shape[0]
        shape = (owned.shape[0], n_dense, self.n_bins, self.n_stats)
        largest = by_feature.counts[0] * int(np.prod(shape[1:]))
        if (  # the same answer on every rank
            n_features != level.constant.shape[1]
            or self.comms.size > n_features
            or largest * np.dtype(self.hist_dtype).itemsize > _KEPT_BYTES
        ):
            self.kept = None
            return None
        uniform = np.empty((n_nodes, 0, 2))
        if self.rules.random_thresholds:  # drawn in level order, as pairs() draws them
            uniform = self.draws.uniform(level.trees, n_features, 2)
        found = np.empty((n_nodes, n_features, FOUND_COLUMNS + self.n_stats))
        if direct.any():
            small = np.flatnonzero(direct)
            found[small] = self._in_rows(
                small,
                level.features[small],
                level.valid[small],
                totals[small],
                bounds[small],
                uniform[small],
                global_rows[small],
                rows,
            )
        built, derived, parent, sibling = self._derivable(tree, level.node_ids[dense])
        order = np.concatenate([built, derived])
        where = np.empty(n_dense, dtype=np.int64)
        where[order] = np.arange(n_dense)
        hist = self._buffer(shape)
        chunk = max(1, _HISTOGRAM_ELEMENTS // (n_features * self.n_bins * self.n_stats))
        slot = np.full(starts.shape[0] - 1, -1, dtype=np.int64)
        for first in range(0, built.shape[0], chunk):
            these = built[first : first + chunk]
            local = np.zeros((n_features, these.shape[0], *shape[2:]), self.hist_dtype)
            slot[:] = -1
            slot[dense[these]] = np.arange(these.shape[0])
            level_rows.stats.histograms(
                self.kernels,
                level_rows.binned,
                starts,
                slot,
                level.features[dense[these]],
                local.transpose(1, 0, 2, 3),
            )
            block = by_feature.reduce(local.reshape(n_features, -1))
            hist[:, first : first + these.shape[0]] = block.reshape(
                owned.shape[0], these.shape[0], *shape[2:]
            )
        if derived.shape[0]:
            kept_hist, kept_where = self.kept[1:]
            self.kernels.subtract_histograms(
                kept_hist.reshape(*kept_hist.shape[:2], -1),
                kept_where[parent],
                hist.reshape(*shape[:2], -1),
                where[sibling],
                built.shape[0],
            )
        if self.kept is not None:
            self._spare = self.kept[1].base  # the flat buffer under it
        self.kept = (level.node_ids[dense], hist, where)
        if not n_dense:
            return found
        ordered = dense[order]
        searched = self.rules.search(
            hist.reshape(-1, *shape[2:]),
            np.tile(ordered, owned.shape[0]),
            np.repeat(level.features[0, owned], n_dense),
            level.valid[ordered][:, owned].T.ravel(),
            totals,
            bounds,
            uniform[ordered][:, owned].transpose(1, 0, 2).reshape(-1, 2)
            if uniform.shape[1]
            else np.empty((0, 2)),
        )
        searched = searched.reshape(owned.shape[0], n_dense, -1)[:, where]
        every = by_feature.gather(searched.reshape(owned.shape[0], -1))
        found[dense] = every.reshape(n_features, n_dense, -1).transpose(1, 0, 2)
        return found

    def _direct(self, global_rows, n_features):
        """Which nodes of a level sharing out the features are searched from
        their rows: those whose rows (bins, statistics and a tag) take fewer
        bytes than the half of their histograms that is built and reduced.
        (Rows weighed at half or twice their bytes timed alike on 500k × 20.)"""
        row_bytes = n_features + 8 * self.n_stats + 8
        histogram_bytes = (
            n_features * self.n_bins * self.n_stats * np.dtype(self.hist_dtype).itemsize
        )
        return global_rows * row_bytes <= histogram_bytes / 2

    def _buffer(self, shape):
        """An array of ``shape`` in the histograms' dtype, in the memory of the
        level before last where it is large enough (no new pages a level)."""
        size = int(np.prod(shape))
        spare, self._spare = self._spare, None
        if spare is None or spare.size < size:
            spare = np.empty(size, dtype=self.hist_dtype)
        return spare[:size].reshape(shape)  # a view: its .base is the flat buffer

    def _derivable(self, tree, nodes):
        """For the open ``nodes`` of a level: ``(built, derived, parent, sibling)``:
        the positions of the nodes whose histograms are built, those of the
        nodes whose histograms are their parent's (kept, at position
        ``parent`` of the last level) less their open sibling's (at position
        ``sibling`` here), each in level order. Of two open siblings, the one
        with more global rows is derived (the left one on a tie)."""
        n = nodes.shape[0]
        empty = np.zeros(0, dtype=np.int64)
        if self.kept is None:
            return np.arange(n), empty, empty, empty
        parents = self.kept[0]
        position = np.full(tree.node_count, -1, dtype=np.int64)
        position[nodes] = np.arange(n)
        left, right = tree.left[parents], tree.right[parents]
        both = (left >= 0) & (right >= 0)
        both[both] = (position[left[both]] >= 0) & (position[right[both]] >= 0)
        families = np.flatnonzero(both)
        left, right = position[left[families]], position[right[families]]
        rows = tree.stats[nodes, -1]
        left_larger = rows[left] >= rows[right]
        larger = np.where(left_larger, left, right)
        by_position = np.argsort(larger)
        derived = larger[by_position]
        is_derived = np.zeros(n, dtype=bool)
        is_derived[derived] = True
        sibling = np.where(left_larger, right, left)[by_position]
        return np.flatnonzero(~is_derived), derived, families[by_position], sibling

    def pairs(self, nodes, trees, features, valid, totals, bounds, rows):
        """The best split of every (node, feature) pair of ``nodes`` (positions
        in the level, increasing; ``trees`` theirs) and their ``features`` (padding where not
        ``valid``): (nodes, slots, FOUND_COLUMNS + statistics). The nodes go in chunks of
        one histogram dtype (:meth:`_byte_counts`), each chunk's nodes in
        level order; ExtraTrees' draws are made for all pairs at once, in
        level order, so the chunks do not change them.
        ``rows``: the level's ``(_LevelRows, starts)``."""
        level_rows, starts = rows
        n_nodes, n_slots = features.shape
        chunk = max(1, _HISTOGRAM_ELEMENTS // (n_slots * self.n_bins * self.n_stats))
        in_bytes = self._byte_counts(totals)
        uniform = (
            self.draws.uniform(trees, n_slots, 2)
            if self.rules.random_thresholds
            else np.empty((n_nodes, 0, 2))
        )
        slot = np.full(starts.shape[0] - 1, -1, dtype=np.int64)
        found = np.empty((n_nodes, n_slots, FOUND_COLUMNS + self.n_stats))
        for group, dtype in ((~in_bytes, self.hist_dtype), (in_bytes, np.uint8)):
            members = np.flatnonzero(group)
            for first in range(0, members.shape[0], chunk):
                these = members[first : first + chunk]
                slot[:] = -1
                slot[nodes[these]] = np.arange(these.shape[0])
                found[these] = self._chunk(
                    features[these],
                    valid[these],
                    totals[these],
                    bounds[these],
                    uniform[these].reshape(-1, 2),
                    (level_rows, starts, slot),
                    dtype,
                ).reshape(these.shape[0], n_slots, -1)
        return found

    def _in_rows(self, nodes, features, valid, totals, bounds, uniform, global_rows, rows):
        """The best split of every (node, feature) pair of ``nodes`` (positions
        in the level, increasing; ``global_rows``: each one's rows on every
        rank) and their ``features``, from the nodes' rows: the nodes go to
        the ranks as :func:`owners` deals them (by global rows), each rank
        sends every node's rows (bins, statistics and the node) to its rank in
        one all-to-all, which searches the node from them
        (:meth:`SplitRules.search_rows`: the same sums as the reduced
        histograms, exactly), and one allgather gives every rank the results:
        (nodes, slots, FOUND_COLUMNS + statistics), as :meth:`pairs` gives them. A rank
        receives about 1/P of the nodes' rows, each node's bounded by
        :meth:`_direct`."""
        level_rows, starts = rows
        take = self.kernels.take_rows
        n_nodes, n_slots = features.shape
        owner = owners(global_rows, self.comms.size)
        index = level_positions(nodes[rank_after_rank(owner)], starts)
        gathered_rows = (
            gathered(level_rows.binned, index, take),
            level_rows.stats.histogram_rows(index, take),
        )
        lengths = starts[nodes + 1] - starts[nodes]
        mine, binned, stats, node_starts = rows_to_owners(
            owner, lengths, gathered_rows, self.comms, take
        )
        found = self.rules.search_rows(
            binned,
            node_starts,
            np.ascontiguousarray(features[mine]),
            stats,
            np.ascontiguousarray(valid[mine]).ravel(),
            totals[mine],
            bounds[mine],
            uniform[mine].reshape(-1, 2),
            self.n_bins,
        )
        found = self.comms.allgatherv(found.reshape(mine.shape[0], n_slots * found.shape[1]))
        return in_node_order(found, owner).reshape(n_nodes, n_slots, -1)

    def _byte_counts(self, totals):
        """Per node, whether its histograms can be uint8: statistics that are
        integer counts (float32 histograms, no class weights) of at most 255 in
        the node, so that every bin's sum, on a rank and over all of them, fits
        a byte exactly. The same integers, in a quarter of float32's bytes to
        zero, build, reduce and scan: most nodes of deep trees are that small."""
        if self.hist_dtype != np.float32 or np.any(np.asarray(self.rules.scale) != 1.0):
            return np.zeros(totals.shape[0], dtype=bool)
        return totals.max(axis=1, initial=0.0) <= _BYTE_COUNTS

    def _chunk(self, features, valid, totals, bounds, uniform, rows, hist_dtype):
        n_nodes, n_slots = features.shape
        n_stats = self.n_stats
        level_rows, starts, slot = rows
        hist = np.zeros((n_nodes, n_slots, self.n_bins, n_stats), dtype=hist_dtype)
        level_rows.stats.histograms(self.kernels, level_rows.binned, starts, slot, features, hist)
        blocks = Blocks(n_nodes * n_slots, self.comms)
        block = blocks.reduce(hist.reshape(n_nodes * n_slots, self.n_bins, n_stats))
        mine = blocks.owned
        pair_node = np.repeat(np.arange(n_nodes), n_slots)[mine]
        found = self.rules.search(
            block,
            pair_node,
            features.ravel()[mine],
            valid.ravel()[mine],
            totals,
            bounds,
            uniform[mine] if uniform.shape[0] else uniform,
        )
        return blocks.gather(found)


def _pick(found, features, searched, drawn_at=None):
    """Per node, the pair of ``found`` (nodes, slots, FOUND_COLUMNS + statistics)
    among the ``searched`` slots with the largest gain, ties to the feature
    drawn first (``drawn_at``: each slot's place in the node's random order,
    as scikit-learn keeps the first of equal splits in the order it draws the
    features), or without ``drawn_at`` the first searched slot; rows with gain
    -inf where none. Column 1 of the result (the bin) is kept; the feature is
    put in column 3."""
    gain = np.where(searched, found[:, :, 0], -np.inf)
    if drawn_at is None:
        slot = np.argmax(searched, axis=1)
    else:
        tied = gain == gain.max(axis=1, initial=-np.inf, keepdims=True)
        slot = np.argmin(np.where(tied, drawn_at, drawn_at.shape[1]), axis=1)
    rows = np.arange(found.shape[0])
    best = found[rows, slot].copy()
    best[:, 0] = gain[rows, slot]
    best[:, 3] = features[rows, slot]
    return best


def _decide(tree, level, best, left, constant, depth, rules, n_sampled, draws):
    """Record the level's splits, open the children worth a histogram, and
    say where each open node's rows go (``targets``: next open node, or -2 - leaf).
    ``left``: the statistics of each node's best left child (full layout).
    The next level's nodes are each tree's open left children, then its open
    right children (the order of a tree grown alone)."""
    nodes = level.node_ids
    totals = tree.stats[nodes]
    gain = best[:, 0]
    split = np.isfinite(gain)
    split[split] = ~rules.weak(gain[split])
    open_idx = np.flatnonzero(split)
    split_feature = np.full(nodes.shape[0], -1, dtype=np.int64)
    split_feature[open_idx] = best[open_idx, 3].astype(np.int64)
    split_bin = best[:, 1].astype(np.int64)
    missing_left = best[:, 2] > 0  # for the rows: a node with no NaN has none to route
    parents = nodes[open_idx]
    left = left[open_idx]
    right = totals[open_idx] - left
    tree.feature[parents] = split_feature[open_idx]
    tree.bin[parents] = split_bin[open_idx]
    tree.right_bin[parents] = best[open_idx, 4].astype(np.int64)
    tree.missing_left[parents] = missing_goes_left(best[open_idx, 2], left, right)
    tree.decrease[parents] = gain[open_idx]
    bounds = rules.child_bounds(split_feature[open_idx], tree.bounds[parents], left, right)
    children = np.stack(tree.add_children(parents, left, right, *bounds))  # (side, parent)
    worth = rules.may_split(tree.stats[children], depth + 1)
    targets = np.repeat((-2 - nodes)[:, None], 2, axis=1)
    targets[open_idx] = (-2 - children).T
    side, parent = np.nonzero(worth)  # left children first, each side in level order
    by_tree = np.argsort(tree.tree[children[side, parent]], kind="stable")
    position = np.empty(by_tree.shape[0], dtype=np.int64)
    position[by_tree] = np.arange(by_tree.shape[0])
    targets[open_idx[parent], side] = position
    next_ids = children[side, parent][by_tree]
    next_constant = constant[open_idx[parent[by_tree]]]  # constant in a node: in its children
    next_level = _Level(next_ids, tree.tree[next_ids], next_constant, n_sampled, draws)
    split = {"feature": split_feature, "bin": split_bin, "missing_left": missing_left}
    return next_level, targets, split
