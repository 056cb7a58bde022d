"""Single-run solver: grows one tree level by level from global histograms.

Per level, every rank builds the histograms of its active rows for every
open node and that node's sampled features (a kernel), rank 0 receives
their sum (one ``reduce`` per chunk of nodes), picks every split and draws
the next level's feature subsets, and broadcasts these decisions (one
``bcast_object``), so that every rank routes its rows alike. Only rank 0
records the tree; the caller broadcasts the finished forest.
"""

import numpy as np

_HISTOGRAM_ELEMENTS = 1 << 21  # float64 values of one reduced histogram chunk (16 MiB)


class _Tree:
    """The growing tree on rank 0: arrays indexed by node id (creation order)."""

    def __init__(self, n_stats):
        self.feature = np.full(1, -1, dtype=np.int64)
        self.bin = np.zeros(1, dtype=np.int64)
        self.left = np.full(1, -1, dtype=np.int64)
        self.right = np.full(1, -1, dtype=np.int64)
        self.stats = np.zeros((1, n_stats))
        self.decrease = np.zeros(1)

    def add_children(self, parents, left_stats, right_stats):
        """Append the two children of each parent; returns their ids (left, right)."""
        n, first = parents.shape[0], self.feature.shape[0]
        left_ids = first + 2 * np.arange(n)
        self.left[parents], self.right[parents] = left_ids, left_ids + 1
        self.feature = np.concatenate([self.feature, np.full(2 * n, -1, dtype=np.int64)])
        self.bin = np.concatenate([self.bin, np.zeros(2 * n, dtype=np.int64)])
        self.left = np.concatenate([self.left, np.full(2 * n, -1, dtype=np.int64)])
        self.right = np.concatenate([self.right, np.full(2 * n, -1, dtype=np.int64)])
        pairs = np.stack([left_stats, right_stats], axis=1).reshape(2 * n, self.stats.shape[1])
        self.stats = np.concatenate([self.stats, pairs])
        self.decrease = np.concatenate([self.decrease, np.zeros(2 * n)])
        return left_ids, left_ids + 1


class _Level:
    """Rank 0's view of the open nodes of one level: their ids, the features
    known to be constant in each, and the features drawn for each."""

    def __init__(self, node_ids, constant, n_sampled, rng):
        self.node_ids = node_ids
        self.constant = constant
        n_features = constant.shape[1]
        keys = rng.random(constant.shape)
        keys[constant] = np.inf
        order = np.argsort(keys, axis=1, kind="stable")[:, :n_sampled]
        drawn = np.isfinite(np.take_along_axis(keys, order, axis=1))
        # increasing feature index, padding (a repeat of an undrawn feature) last
        features = np.where(drawn, order, n_features + order)
        features.sort(axis=1)
        self.valid = features < n_features
        self.features = np.where(self.valid, features, features - n_features)


def grow_tree(
    binned, row_stats, active, *, n_bins, constant_features, rules, n_sampled, rng, comms, kernels
):
    """Grow one tree on the rows with ``active`` (positive) weight.

    Parameters
    ----------
    binned : ndarray of shape (n_local, n_features), uint8
    row_stats : ndarray of shape (n_local, n_statistics), float64
        Each row's contribution to its node's statistics (see ``_splits``).
    active : ndarray of int64
        This rank's rows in the tree (positive bootstrap weight); consumed.
    n_bins : int
        Bins of the widest feature.
    constant_features : ndarray of shape (n_features,), bool
        Features with a single bin (never drawn).
    rules : SplitRules
    n_sampled : int
        Features drawn per node (``max_features`` resolved).
    rng : numpy.random.Generator or None
        Rank 0's generator of the shared choices (None on other ranks).

    Returns
    -------
    tree : _Tree or None
        On rank 0; None elsewhere.

    Notes
    -----
    This function is collective.
    """
    root = comms.rank == 0
    n_local = binned.shape[0]
    n_stats = row_stats.shape[1]
    node_of_row = np.zeros(n_local, dtype=np.int64)
    tree = level = None
    packet = None
    if root:
        tree = _Tree(n_stats)
        level = _Level(np.zeros(1, dtype=np.int64), constant_features[None, :], n_sampled, rng)
        packet = {"features": level.features}
    packet = comms.bcast_object(packet, root=0)
    depth = 0
    while packet["features"].shape[0]:
        features = packet["features"]
        n_open = features.shape[0]
        chunk = max(1, _HISTOGRAM_ELEMENTS // (features.shape[1] * n_bins * n_stats))
        decisions = [] if root else None
        for first in range(0, n_open, chunk):
            part = features[first : first + chunk]
            hist = np.zeros((part.shape[0], part.shape[1], n_bins, n_stats))
            kernels.build_histograms(binned, active, node_of_row, first, part, row_stats, hist)
            total = comms.reduce(hist, root=0)
            if root:
                decisions.append(rules.best(total, level.valid[first : first + chunk], part, rng))
        if root:
            level, packet = _decide(tree, level, decisions, depth, rules, n_sampled, rng)
        packet = comms.bcast_object(packet, root=0)
        grouped = np.empty_like(active)
        kept = kernels.route_rows(
            binned,
            active,
            node_of_row,
            packet["split_feature"],
            packet["split_bin"],
            packet["left_next"],
            packet["right_next"],
            packet["features"].shape[0],
            grouped,
        )
        active = grouped[:kept]
        depth += 1
    return tree


def _decide(tree, level, decisions, depth, rules, n_sampled, rng):
    """Record the level's splits and open the children worth a histogram."""
    slot, bins, decrease, left, total, constant_slots = (
        np.concatenate(parts) for parts in zip(*decisions)
    )
    nodes = level.node_ids
    tree.stats[nodes] = total
    split = (slot >= 0) & rules.may_split(total, depth)
    open_idx = np.flatnonzero(split)
    split_feature = np.full(nodes.shape[0], -1, dtype=np.int64)
    split_feature[open_idx] = level.features[open_idx, slot[open_idx]]
    parents = nodes[open_idx]
    tree.feature[parents] = split_feature[open_idx]
    tree.bin[parents] = bins[open_idx]
    tree.decrease[parents] = decrease[open_idx]
    right = total - left
    left_ids, right_ids = tree.add_children(parents, left[open_idx], right[open_idx])
    # a feature with one occupied bin in a node is constant in its children
    found = np.zeros_like(level.constant)
    rows, cols = np.nonzero(constant_slots & level.valid)
    found[rows, level.features[rows, cols]] = True
    constant = (level.constant | found)[open_idx]
    next_ids, next_constant, nxt = [], [], []
    for child_ids, child_stats in ((left_ids, left[open_idx]), (right_ids, right[open_idx])):
        worth = rules.may_split(child_stats, depth + 1)
        position = np.full(nodes.shape[0], -1, dtype=np.int64)
        position[open_idx[worth]] = sum(a.shape[0] for a in next_ids) + np.arange(worth.sum())
        next_ids.append(child_ids[worth])
        next_constant.append(constant[worth])
        nxt.append(position)
    next_level = _Level(np.concatenate(next_ids), np.concatenate(next_constant), n_sampled, rng)
    packet = {
        "split_feature": split_feature,
        "split_bin": bins,
        "left_next": nxt[0],
        "right_next": nxt[1],
        "features": next_level.features,
    }
    return next_level, packet
