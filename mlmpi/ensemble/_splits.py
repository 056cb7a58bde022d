"""Best splits of open nodes from their global histograms (no communication).

A node's statistics are a vector: the weighted class counts and the row
count for classification, ``(W, Σwy, Σwy², rows)`` for regression. Every
criterion is written as a "proxy" additive over children, so that the
weighted impurity decrease of a split is ``proxy(L) + proxy(R) - proxy(T)``
(scikit-learn's ``proxy_impurity_improvement``), and a "mass"
``W · impurity``.
"""

import numpy as np

EPSILON = np.finfo(np.float64).eps


def _weight(stats, classification):
    return stats[..., :-1].sum(axis=-1) if classification else stats[..., 0]


def _safe(weight):
    return np.where(weight > 0, weight, 1.0)


def proxy(stats, criterion):
    """Additive part of the criterion; see the module docstring."""
    if criterion == "squared_error":
        return stats[..., 1] ** 2 / _safe(stats[..., 0])
    counts = stats[..., :-1]
    weight = _safe(counts.sum(axis=-1))
    if criterion == "gini":
        return (counts ** 2).sum(axis=-1) / weight
    with np.errstate(divide="ignore", invalid="ignore"):  # entropy/log_loss in bits
        terms = np.where(counts > 0, counts * np.log2(np.where(counts > 0, counts, 1.0)), 0.0)
    return terms.sum(axis=-1) - weight * np.log2(weight)


def impurity(stats, criterion):
    """Impurity of nodes with these statistics (scikit-learn's ``node_impurity``)."""
    classification = criterion != "squared_error"
    weight = _safe(_weight(stats, classification))
    if criterion == "squared_error":
        return stats[..., 2] / weight - (stats[..., 1] / weight) ** 2
    base = weight if criterion == "gini" else 0.0
    return (base - proxy(stats, criterion)) / weight


class SplitRules:
    """The stopping and validity rules of one fit (scikit-learn's tree parameters)."""

    def __init__(self, *, criterion, max_depth, min_samples_split, min_samples_leaf,
                 min_weight_leaf, min_impurity_decrease, total_weight, random_thresholds):
        self.criterion = criterion
        self.classification = criterion != "squared_error"
        self.max_depth = np.inf if max_depth is None else max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_leaf = min_weight_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.total_weight = total_weight
        self.random_thresholds = random_thresholds

    def may_split(self, stats, depth):
        """Whether nodes with these statistics at ``depth`` are worth a histogram."""
        rows = stats[..., -1]
        weight = _weight(stats, self.classification)
        return (
            (depth < self.max_depth)
            & (rows >= self.min_samples_split)
            & (rows >= 2 * self.min_samples_leaf)
            & (weight >= 2 * self.min_weight_leaf)
            & (impurity(stats, self.criterion) > EPSILON)
        )

    def best(self, hist, valid, rng):
        """Best split of each node of a histogram chunk.

        Parameters
        ----------
        hist : ndarray of shape (nodes, sampled features, bins, statistics)
            Global histograms; each node's sampled features in increasing order.
        valid : ndarray of shape (nodes, sampled features), bool
            False for padding slots.
        rng : numpy.random.Generator
            Draws ExtraTrees' thresholds (unused otherwise).

        Returns
        -------
        slot, bin : ndarray of shape (nodes,)
            The winning feature slot (-1: no split) and the last bin that goes left.
        decrease : ndarray of shape (nodes,)
            Weighted impurity decrease of the split.
        left, total : ndarray of shape (nodes, statistics)
            Statistics of the left child and of the node.
        constant : ndarray of shape (nodes, sampled features), bool
            Features with a single occupied bin in the node (constant below it).

        Ties go to the smaller feature index, then to the smaller bin.
        """
        constant = (hist[..., -1] > 0).sum(axis=2) <= 1
        left = np.cumsum(hist, axis=2)
        total = left[:, 0, -1, :]
        if self.random_thresholds:
            left, bins, valid = _random_candidates(left, valid, rng)
        else:
            bins = np.broadcast_to(np.arange(left.shape[2]), left.shape[:3])
        rows = left[..., -1]
        right = total[:, None, None, :] - left
        weight_left = _weight(left, self.classification)
        weight_right = _weight(right, self.classification)
        ok = (
            valid[:, :, None]
            & (rows >= self.min_samples_leaf)
            & (right[..., -1] >= self.min_samples_leaf)
            & (weight_left >= max(self.min_weight_leaf, EPSILON))
            & (weight_right >= max(self.min_weight_leaf, EPSILON))
        )
        gain = proxy(left, self.criterion) + proxy(right, self.criterion)
        gain = np.where(ok, gain - proxy(total, self.criterion)[:, None, None], -np.inf)
        flat = gain.reshape(gain.shape[0], -1).argmax(axis=1)
        slot, candidate = np.unravel_index(flat, gain.shape[1:])
        nodes = np.arange(gain.shape[0])
        decrease = gain[nodes, slot, candidate]
        splits = np.isfinite(decrease) & (
            decrease / self.total_weight + EPSILON >= self.min_impurity_decrease
        )
        return (np.where(splits, slot, -1), bins[nodes, slot, candidate], decrease,
                left[nodes, slot, candidate], total, constant)


def _random_candidates(left, valid, rng):
    """ExtraTrees: one threshold per (node, feature), uniform among the bin
    boundaries between the node's lowest and highest occupied bins."""
    rows = left[..., -1]
    occupied = np.diff(rows, axis=2, prepend=0.0) > 0
    n_bins = occupied.shape[2]
    low = occupied.argmax(axis=2)
    high = n_bins - 1 - occupied[:, :, ::-1].argmax(axis=2)
    chosen = low + np.floor(rng.random(low.shape) * (high - low)).astype(np.int64)
    picked = np.take_along_axis(left, chosen[:, :, None, None], axis=2)
    return picked, chosen[:, :, None], valid & (high > low)
