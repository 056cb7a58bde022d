"""The fitted trees: scikit-learn tree estimators for the users, and the
same trees concatenated in array form for a vectorised local prediction.
Both are picklable and usable without MPI."""

import numpy as np

from .._sklearn_compat import NODE_DTYPE, Tree, _build_pruned_tree_ccp
from ..kernels import kernels_for


class HistogramForest:
    """Every tree of a fitted forest, in array form for a vectorised local
    prediction.

    A fitted forest estimator holds one as ``forest_`` (replicated), built
    from its ``estimators_`` by :meth:`from_estimators`; prediction with it
    is local.

    Parameters
    ----------
    trees : list of tuple
        Each tree's ``(feature, threshold, missing_left, children_left,
        children_right, value, n_node_samples)``, as the attributes below
        describe them for the whole forest (node ids within the tree).

    Attributes
    ----------
    trees : list of tuple
        The parameter. :meth:`from_estimators` makes them views of the
        estimators' ``tree_`` arrays: a forest of full-depth trees has
        millions of nodes, and a copy of them would show in the fit's time.
    feature : ndarray of shape (n_nodes,), int64
        Split feature of each node of all trees, one tree after the other;
        negative for a leaf.
    threshold : ndarray of shape (n_nodes,), float64
        Split threshold in the units of ``X``: rows with ``float32(x) <= threshold``
        go left.
    missing_left : ndarray of shape (n_nodes,), bool
        Whether rows whose value is NaN go left.
    children_left, children_right : ndarray of shape (n_nodes,), int64
        Node ids of the children (-1 for a leaf).
    value : ndarray of shape (n_nodes, n_values), float64
        Class probabilities (classification, the outputs one after the other)
        or the predicted targets (regression).
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

    def __init__(self, trees):
        self.trees = list(trees)

    @classmethod
    def from_estimators(cls, estimators):
        """The forest of fitted scikit-learn tree estimators.

        Parameters
        ----------
        estimators : list of DecisionTreeClassifier or DecisionTreeRegressor
            Fitted trees (their ``tree_`` is read, not copied).

        Returns
        -------
        forest : HistogramForest
            Their nodes; values flattened per node.
        """
        trees = []
        for estimator in estimators:
            tree = estimator.tree_
            trees.append(
                (
                    tree.feature,
                    tree.threshold,
                    tree.missing_go_to_left,
                    tree.children_left,
                    tree.children_right,
                    tree.value.reshape(tree.node_count, -1),
                    tree.n_node_samples,
                )
            )
        return cls(trees)

    @property
    def n_trees(self):
        """Number of trees."""
        return len(self.trees)

    @property
    def n_values(self):
        """Values per node: ``value.shape[1]``."""
        return int(self.trees[0][5].shape[1])

    def _joined(self, column, dtype):
        """Column ``column`` of every tree's tuple, concatenated."""
        return np.concatenate([tree[column] for tree in self.trees]).astype(dtype, copy=False)

    @property
    def feature(self):
        """Every tree's split features, concatenated (see the class docstring)."""
        return self._joined(0, np.int64)

    @property
    def threshold(self):
        """Every tree's thresholds, concatenated."""
        return self._joined(1, np.float64)

    @property
    def missing_left(self):
        """Every tree's NaN sides, concatenated."""
        return self._joined(2, np.bool_)

    @property
    def children_left(self):
        """Every tree's left children, as node ids of the whole forest."""
        return self._children(3)

    @property
    def children_right(self):
        """Every tree's right children, as node ids of the whole forest."""
        return self._children(4)

    def _children(self, column):
        """Children ids (column ``column``) as node ids of the whole forest."""
        ids = self._joined(column, np.int64)
        shift = np.repeat(self.roots, [tree[0].shape[0] for tree in self.trees])
        return np.where(ids >= 0, ids + shift, -1)

    @property
    def value(self):
        """Every tree's node values, concatenated."""
        return self._joined(5, np.float64)

    @property
    def n_node_samples(self):
        """Every tree's training rows per node, concatenated."""
        return self._joined(6, np.int64)

    @property
    def roots(self):
        """The node id of each tree's root in the concatenated arrays."""
        counts = np.array([tree[0].shape[0] for tree in self.trees], dtype=np.int64)
        return np.cumsum(counts) - counts

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
        out = np.zeros((X.shape[0], self.n_values))
        if X.shape[0]:
            X = np.ascontiguousarray(X)
            accumulate = kernels_for("forest", X).accumulate_leaves
            for t in range(self.n_trees) if trees is None else trees:
                accumulate(X, *self.trees[t][:6], out)
        return out


def thresholds(grown, bins, ranges):
    """Split thresholds of a grown tree in the units of ``X``.

    As scikit-learn's, midway between the values on either side (its fallback
    included: the left value where the midpoint rounds to the right one): the
    largest value of the last bin that goes left and the smallest of the first
    occupied bin that goes right, exact where each bin holds one value.
    ``ranges`` are ``Bins.value_ranges``; None (ExtraTrees, whose thresholds
    were drawn) puts them on the edge after the last bin going left. +inf past
    a feature's last edge (only the missing rows go right).
    """
    threshold = np.full(grown.node_count, -2.0)
    split = np.flatnonzero(grown.feature >= 0)
    feature, last = grown.feature[split], grown.bin[split]
    inside = last < bins.edge_starts[feature + 1] - bins.edge_starts[feature]
    threshold[split] = np.inf
    split, feature, last = split[inside], feature[inside], last[inside]
    if ranges is None:
        threshold[split] = bins.edges[bins.edge_starts[feature] + last]
        return threshold
    low, high = ranges
    left, right = high[feature, last], low[feature, grown.right_bin[split]]
    middle = left / 2.0 + right / 2.0
    threshold[split] = np.where((middle == right) | np.isinf(middle), left, middle)
    return threshold


def sklearn_tree(grown, threshold, values, *, criterion, n_features, n_classes):
    """scikit-learn's ``Tree`` holding a grown tree (``_grow._Tree``).

    ``values`` are the nodes' ``tree_.value`` (nodes, n_outputs, max classes);
    ``n_classes`` the classes of each output (ones for regression).
    """
    n = grown.node_count
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    leaf = grown.feature < 0
    nodes["left_child"] = np.where(leaf, -1, grown.left)
    nodes["right_child"] = np.where(leaf, -1, grown.right)
    nodes["feature"] = np.where(leaf, -2, grown.feature)
    nodes["threshold"] = threshold
    nodes["impurity"] = criterion.impurity(grown.stats)
    nodes["n_node_samples"] = grown.stats[:, -1]
    nodes["weighted_n_node_samples"] = criterion.weight(grown.stats)
    nodes["missing_go_to_left"] = grown.missing_left & ~leaf
    tree = Tree(n_features, np.asarray(n_classes, dtype=np.intp), len(n_classes))
    tree.__setstate__(
        {
            "max_depth": _max_depth(grown.left, grown.right, leaf),
            "node_count": n,
            "nodes": nodes,
            "values": np.ascontiguousarray(values, dtype=np.float64),
        }
    )
    return tree


def _max_depth(left, right, leaf):
    depth = np.full(left.shape[0], -1, dtype=np.int64)
    depth[0] = 0
    kernels_for("forest", np.empty(0)).inherit(left, right, ~leaf, depth, 1)
    return int(depth.max(initial=0))


def pruned(tree, ccp_alpha, n_features, n_classes):
    """scikit-learn's minimal cost-complexity pruning of ``tree`` (a ``Tree``)."""
    if ccp_alpha == 0.0:
        return tree
    out = Tree(n_features, np.asarray(n_classes, dtype=np.intp), len(n_classes))
    _build_pruned_tree_ccp(out, tree, ccp_alpha)
    return out


def feature_importances(estimators, n_features):
    """scikit-learn's forest ``feature_importances_`` from its trees."""
    per_tree = [e.feature_importances_ for e in estimators if e.tree_.node_count > 1]
    if not per_tree:
        return np.zeros(n_features)
    mean = np.mean(per_tree, axis=0, dtype=np.float64)
    return mean / np.sum(mean)
