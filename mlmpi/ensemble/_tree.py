"""The fitted forest in compact array form: local, vectorised prediction,
picklable, usable without MPI."""

import numpy as np

from ..kernels import kernels_for


class HistogramForest:
    """Every tree of a fitted forest, concatenated.

    A fitted forest estimator holds one as ``forest_`` (replicated);
    prediction with it is local.

    Parameters
    ----------
    feature, threshold, children_left, children_right, value, n_node_samples, roots
        The arrays of the attributes below.

    Attributes
    ----------
    feature : ndarray of shape (n_nodes,), int64
        Split feature of each node; -1 for a leaf.
    threshold : ndarray of shape (n_nodes,), float64
        Split threshold in the units of ``X``: rows with ``x <= threshold`` go left.
    children_left, children_right : ndarray of shape (n_nodes,), int64
        Node ids of the children (-1 for a leaf).
    value : ndarray of shape (n_nodes, n_values), float64
        Class probabilities (classification) or the mean target (regression).
    n_node_samples : ndarray of shape (n_nodes,), int64
        Training rows (distinct, in the tree's bootstrap sample) of each node.
    roots : ndarray of shape (n_trees,), int64
        Node id of each tree's root.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import RandomForestRegressor
    >>> X, y = np.arange(8.0).reshape(-1, 1), np.array([0, 0, 0, 0, 1, 1, 1, 1.0])
    >>> forest = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y).forest_
    >>> forest.n_trees
    3
    >>> forest.sum_leaf_values(X).shape  # summed over the trees: 3 times the mean
    (8, 1)
    """

    def __init__(
        self, feature, threshold, children_left, children_right, value, n_node_samples, roots
    ):
        self.feature = feature
        self.threshold = threshold
        self.children_left = children_left
        self.children_right = children_right
        self.value = value
        self.n_node_samples = n_node_samples
        self.roots = roots

    @property
    def n_trees(self):
        """Number of trees."""
        return int(self.roots.shape[0])

    def sum_leaf_values(self, X, trees=None):
        """Sum over the trees (all, or the ids in ``trees``) of each row's leaf value.

        Local: no communication.

        Parameters
        ----------
        X : ndarray of shape (n_local, n_features)
            Rows, in the units the forest was fitted on.
        trees : array-like of int, default=None
            Ids of the trees to sum; None means all.

        Returns
        -------
        sums : ndarray of shape (n_local, n_values), float64
        """
        out = np.zeros((X.shape[0], self.value.shape[1]))
        roots = self.roots if trees is None else self.roots[trees]
        if X.shape[0] and roots.shape[0]:
            kernels_for("forest", X).accumulate_leaves(
                np.ascontiguousarray(X),
                self.feature,
                self.threshold,
                self.children_left,
                self.children_right,
                self.value,
                roots,
                out,
            )
        return out


def assemble(trees, edges, edge_starts, leaf_value):
    """One :class:`HistogramForest` from rank 0's grown trees (``_grow._Tree``);
    ``leaf_value(stats)`` turns node statistics into node values."""
    parts = {name: [] for name in ("feature", "threshold", "left", "right", "value", "rows")}
    roots, offset = [], 0
    for tree in trees:
        feature, stats = tree.feature, tree.stats
        split = feature >= 0
        threshold = np.zeros(feature.shape[0])
        threshold[split] = edges[edge_starts[feature[split]] + tree.bin[split]]
        for name, ids in (("left", tree.left), ("right", tree.right)):
            parts[name].append(np.where(ids >= 0, ids + offset, -1))
        parts["feature"].append(feature)
        parts["threshold"].append(threshold)
        parts["value"].append(leaf_value(stats))
        parts["rows"].append(stats[:, -1].astype(np.int64))
        roots.append(offset)
        offset += feature.shape[0]
    joined = {name: np.concatenate(values) for name, values in parts.items()}
    return HistogramForest(
        joined["feature"],
        joined["threshold"],
        joined["left"],
        joined["right"],
        joined["value"],
        joined["rows"],
        np.asarray(roots, dtype=np.int64),
    )


def feature_importances(trees, n_features):
    """Mean over the trees of their normalised impurity decreases, normalised
    (scikit-learn's ``feature_importances_``); trees without splits are left out."""
    per_tree = []
    for tree in trees:
        split = tree.feature >= 0
        if not split.any():
            continue
        decrease = np.bincount(
            tree.feature[split], weights=tree.decrease[split], minlength=n_features
        )
        per_tree.append(decrease / decrease.sum() if decrease.sum() > 0 else decrease)
    if not per_tree:
        return np.zeros(n_features)
    mean = np.mean(per_tree, axis=0)
    return mean / mean.sum() if mean.sum() > 0 else mean
