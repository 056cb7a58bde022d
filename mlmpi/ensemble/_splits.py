"""Best splits of open nodes from their global histograms (no communication).

A node's statistics are a vector: the weighted class counts and the row
count for classification, ``(W, Σwy, Σwy², rows)`` for regression. Every
criterion is written as a "proxy" additive over children, so that the
weighted impurity decrease of a split is ``proxy(L) + proxy(R) - proxy(T)``
(scikit-learn's ``proxy_impurity_improvement``), and a "mass"
``W · impurity``.
"""

import numpy as np

from ..kernels import kernels_for

EPSILON = np.finfo(np.float64).eps
_CRITERIA = {"gini": 0, "entropy": 1, "squared_error": 2}


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
        return (counts**2).sum(axis=-1) / weight
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

    def __init__(
        self,
        *,
        criterion,
        max_depth,
        min_samples_split,
        min_samples_leaf,
        min_weight_leaf,
        min_impurity_decrease,
        total_weight,
        random_thresholds,
        edges,
        edge_starts,
        scale,
    ):
        self.criterion = criterion
        self.classification = criterion != "squared_error"
        self.max_depth = np.inf if max_depth is None else max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_leaf = min_weight_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.total_weight = total_weight
        self.random_thresholds = random_thresholds
        self.edges, self.edge_starts = edges, edge_starts
        self.scale = scale

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

    def best(self, hist, valid, features, rng):
        """Best split of each node of a histogram chunk.

        Parameters
        ----------
        hist : ndarray of shape (nodes, sampled features, bins, statistics)
            Global histograms; each node's sampled features in increasing order.
        valid : ndarray of shape (nodes, sampled features), bool
            False for padding slots.
        features : ndarray of shape (nodes, sampled features)
            The sampled features.
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
        if np.any(self.scale != 1.0):  # class weights, after the (exact) reduction
            hist = hist * self.scale
        n_nodes, n_slots, _, n_stats = hist.shape
        slot = np.empty(n_nodes, dtype=np.int64)
        split_bin = np.zeros(n_nodes, dtype=np.int64)
        decrease = np.empty(n_nodes)
        left = np.zeros((n_nodes, n_stats))
        total = np.empty((n_nodes, n_stats))
        constant = np.empty((n_nodes, n_slots), dtype=bool)
        uniform = rng.random((n_nodes, n_slots)) if self.random_thresholds else np.empty((0, 0))
        kernels_for("forest", hist).find_splits(
            hist,
            valid,
            features,
            self.edges,
            self.edge_starts,
            _CRITERIA[self.criterion],
            self.min_samples_leaf,
            max(self.min_weight_leaf, EPSILON),
            uniform,
            slot,
            split_bin,
            decrease,
            left,
            total,
            constant,
        )
        weak = decrease / max(self.total_weight, EPSILON) + EPSILON < self.min_impurity_decrease
        slot[weak] = -1
        return slot, split_bin, decrease, left, total, constant
