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
    """The growing tree on rank 0: one entry per node in creation order."""

    def __init__(self, n_features):
        self.n_features = n_features
        self.feature, self.bin, self.left, self.right = [], [], [], []
        self.stats, self.decrease, self.known_constant = [], [], []

    def add(self, stats, known_constant):
        self.feature.append(-1)
        self.bin.append(0)
        self.left.append(-1)
        self.right.append(-1)
        self.stats.append(stats)
        self.decrease.append(0.0)
        self.known_constant.append(known_constant)
        return len(self.feature) - 1


class _Level:
    """Rank 0's view of the open nodes of one level."""

    def __init__(self, node_ids, n_sampled, rng, tree):
        self.node_ids = node_ids
        constant = np.array([tree.known_constant[i] for i in node_ids], dtype=bool)
        constant = constant.reshape(len(node_ids), tree.n_features)
        keys = rng.random(constant.shape)
        keys[constant] = np.inf
        order = np.argsort(keys, axis=1, kind="stable")[:, :n_sampled]
        self.valid = np.isfinite(np.take_along_axis(keys, order, axis=1))
        # increasing feature index, padding (a repeat of a drawn feature) last
        features = np.where(self.valid, order, tree.n_features + order)
        features.sort(axis=1)
        self.valid = features < tree.n_features
        self.features = np.where(self.valid, features, features - tree.n_features)


def grow_tree(binned, row_stats, active, *, n_bins, constant_features, rules, n_sampled, rng,
              comms, kernels):
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
    n_local, n_features = binned.shape
    n_stats = row_stats.shape[1]
    node_of_row = np.zeros(n_local, dtype=np.int64)
    tree = level = None
    packet = None
    if root:
        tree = _Tree(n_features)
        tree.add(None, constant_features)
        level = _Level([0], n_sampled, rng, tree)
        packet = {"features": level.features}
    packet = comms.bcast_object(packet, root=0)
    depth = 0
    while packet["features"].shape[0]:
        features = packet["features"]
        n_open = features.shape[0]
        chunk = max(1, _HISTOGRAM_ELEMENTS // (features.shape[1] * n_bins * n_stats))
        decisions = [] if root else None
        for first in range(0, n_open, chunk):
            part = features[first:first + chunk]
            hist = np.zeros((part.shape[0], part.shape[1], n_bins, n_stats))
            kernels.build_histograms(binned, active, node_of_row, first, part, row_stats, hist)
            total = comms.reduce(hist, root=0)
            if root:
                decisions.append(rules.best(total, level.valid[first:first + chunk], rng))
        if root:
            level, packet = _decide(tree, level, decisions, depth, rules, n_sampled, rng)
        packet = comms.bcast_object(packet, root=0)
        kept = kernels.route_rows(binned, active, node_of_row, packet["split_feature"],
                                  packet["split_bin"], packet["left_next"],
                                  packet["right_next"])
        active = active[:kept]
        depth += 1
    return tree


def _decide(tree, level, decisions, depth, rules, n_sampled, rng):
    """Record the level's splits and open the children worth a histogram."""
    slot, bins, decrease, left, total, constant_slots = (
        np.concatenate(parts) for parts in zip(*decisions)
    )
    n_open = slot.shape[0]
    split_feature = np.full(n_open, -1, dtype=np.int64)
    split_bin = np.zeros(n_open, dtype=np.int64)
    left_next = np.full(n_open, -1, dtype=np.int64)
    right_next = np.full(n_open, -1, dtype=np.int64)
    next_ids = []
    for n, node in enumerate(level.node_ids):
        tree.stats[node] = total[n]
        if slot[n] < 0 or not rules.may_split(total[n], depth):
            continue
        feature = int(level.features[n, slot[n]])
        constant = tree.known_constant[node].copy()
        constant[level.features[n][constant_slots[n] & level.valid[n]]] = True
        split_feature[n], split_bin[n] = feature, bins[n]
        tree.feature[node], tree.bin[node], tree.decrease[node] = feature, int(bins[n]), decrease[n]
        for child_stats, side, nxt in ((left[n], tree.left, left_next),
                                      (total[n] - left[n], tree.right, right_next)):
            child = tree.add(child_stats, constant)
            side[node] = child
            if rules.may_split(child_stats, depth + 1):
                nxt[n] = len(next_ids)
                next_ids.append(child)
    next_level = _Level(next_ids, n_sampled, rng, tree)
    packet = {"split_feature": split_feature, "split_bin": split_bin, "left_next": left_next,
              "right_next": right_next, "features": next_level.features}
    return next_level, packet

