"""HDBSCAN's prediction of new points, as the hdbscan package's ``approximate_predict``.

The hdbscan package (``hdbscan/prediction.py``) places a new point in the
condensed tree of the fit without changing it: among the point's
``2 · min_samples`` nearest training rows, the nearest one in mutual
reachability (the largest of the two core distances and the distance; the
point's own core distance is the distance to its ``min_samples + 1``-th
neighbour) is where it joins, at ``lambda = 1 / reachability``. The point
then belongs to the cluster that neighbour falls out of or, if the
neighbour stays longer, to the first ancestor born after that ``lambda``;
the label is that of the selected cluster above it (noise if none), the
strength ``lambda`` over the selected cluster's largest ``lambda``.

:class:`PredictionData` is that walk's part of the condensed tree, built
once at fit from the single-linkage tree every rank holds (replicated);
:func:`assign` is the walk, for arrays of points.
"""

from typing import NamedTuple

import numpy as np

from .._sklearn_compat import _condense_tree


class PredictionData(NamedTuple):
    """The condensed tree as prediction walks it (replicated). Cluster ``c``
    of the tree is entry ``c - root`` of the cluster arrays."""

    point_cluster: np.ndarray  # each training row: the cluster it falls out of
    point_lambda: np.ndarray  # and the lambda at which it does
    up: np.ndarray  # each cluster's parent (the root: itself)
    birth: np.ndarray  # the lambda at which each cluster is born (the root: -inf)
    label: np.ndarray  # the label of the selected cluster above or at it, else -1
    max_lambda: np.ndarray  # that selected cluster's largest lambda


def prediction_data(single_linkage_tree, labels, min_cluster_size):
    """:class:`PredictionData` of the fit whose single-linkage tree and labels
    (of every global row, noise -1) are given."""
    condensed = _condense_tree(single_linkage_tree, min_cluster_size)
    root = labels.shape[0]
    points = condensed[condensed["child"] < root]
    clusters = condensed[condensed["child"] >= root]
    n_clusters = int(condensed["parent"].max()) - root + 1
    point_cluster = np.empty(root, dtype=np.int64)
    point_lambda = np.empty(root)
    point_cluster[points["child"]] = points["parent"] - root
    point_lambda[points["child"]] = points["value"]
    up = np.zeros(n_clusters, dtype=np.int64)
    birth = np.full(n_clusters, -np.inf)
    up[clusters["child"] - root] = clusters["parent"] - root
    birth[clusters["child"] - root] = clusters["value"]
    label, max_lambda = _selected(condensed, point_cluster, labels, up, root)
    if clusters.shape[0] == 0:  # the hdbscan package predicts noise without a cluster tree
        label[:] = -1
    return PredictionData(point_cluster, point_lambda, up, birth, label, max_lambda)


def _selected(condensed, point_cluster, labels, up, root):
    """Each cluster's label and largest lambda: those of the selected cluster
    at or above it. The cluster selected for a label is the lowest common
    ancestor of the clusters its rows fall out of (they all lie below it, and
    clusters split in pairs that each keep some of them); its largest lambda
    is over its own rows of the condensed tree, as in the hdbscan package."""
    n_clusters = up.shape[0]
    deepest = np.full(n_clusters, -np.inf)
    np.maximum.at(deepest, condensed["parent"] - root, condensed["value"])
    label = np.full(n_clusters, -1, dtype=labels.dtype)
    max_lambda = np.zeros(n_clusters)
    for value in range(int(labels.max(initial=-1)) + 1):
        cluster = _common_ancestor(set(point_cluster[labels == value].tolist()), up)
        label[cluster], max_lambda[cluster] = value, deepest[cluster]
    for cluster in range(1, n_clusters):  # parents come before their children
        if label[cluster] < 0:
            label[cluster], max_lambda[cluster] = label[up[cluster]], max_lambda[up[cluster]]
    return label, max_lambda


def _common_ancestor(clusters, up):
    """The lowest common ancestor of a set of clusters (a parent's number is
    smaller than its children's)."""
    while len(clusters) > 1:
        deepest = max(clusters)
        clusters.remove(deepest)
        clusters.add(int(up[deepest]))
    return clusters.pop()


def assign(data, distances, indices, core_distances, min_samples):
    """Labels and strengths of new points, from their ``2 · min_samples``
    nearest training rows (``distances``, global ``indices``, sorted by
    distance then index) and those rows' ``core_distances``. Ties in mutual
    reachability go to the first neighbour in that order, as ``argmin`` in
    the hdbscan package."""
    own_core = distances[:, min_samples : min_samples + 1]
    reach = np.maximum(np.maximum(core_distances, own_core), distances)
    rows = np.arange(distances.shape[0])
    best = reach.argmin(axis=1)
    nearest, reach = indices[rows, best], reach[rows, best]
    lam = np.full(reach.shape, np.finfo(np.float64).max)
    np.divide(1.0, reach, out=lam, where=reach > 0)
    cluster = _climb(data, data.point_cluster[nearest], data.point_lambda[nearest] > lam, lam)
    labels = data.label[cluster]
    max_lambda = data.max_lambda[cluster]
    strengths = np.ones(labels.shape)
    positive = max_lambda > 0
    strengths[positive] = np.minimum(max_lambda, lam)[positive] / max_lambda[positive]
    strengths[labels < 0] = 0.0
    return labels, strengths


def _climb(data, cluster, climbing, lam):
    """Each point's cluster once it has climbed from ``cluster`` (where
    ``climbing``) through the ancestors born at or after its ``lam``."""
    cluster = cluster.copy()
    while True:
        climbing &= data.birth[cluster] >= lam  # the root's birth is -inf: it stops there
        if not climbing.any():
            return cluster
        cluster[climbing] = data.up[cluster[climbing]]
