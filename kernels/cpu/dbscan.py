"""DBSCAN kernels for NumPy arrays (SciPy's k-d tree, numba).

Pure local compute; nothing here communicates.

- :func:`eps_pairs`: every (local row, block row) pair within ``eps`` in a
  Minkowski metric, by one dual-tree traversal of the two k-d trees;
  :func:`eps_pairs_within`: the same for the rows of one tree (a self-join).
- :func:`pairwise_eps_pairs`: the same by scikit-learn's ``pairwise_distances``
  of two blocks of rows, for a callable metric or CSR rows (brute force).
- :func:`component_minima`: the connected components of an undirected
  graph given as edge lists, each node mapped to the smallest node of its
  component.
"""

import numpy as np
from numba import njit
from scipy.spatial import cKDTree
from sklearn.metrics import pairwise_distances


def build_tree(X, leaf_size):
    """k-d tree of the rows of ``X`` (SciPy's ``cKDTree``)."""
    return cKDTree(X, leafsize=leaf_size)


def eps_pairs_within(tree, eps, p):
    """``(rows, cols)``: every ordered pair of rows of ``tree`` at
    Minkowski-``p`` distance <= ``eps``, each row with itself included
    (int64 arrays; one self-join of the tree)."""
    pairs = tree.query_pairs(eps, p=p, output_type="ndarray").astype(np.int64)
    own = np.arange(tree.n, dtype=np.int64)
    return (
        np.concatenate([own, pairs[:, 0], pairs[:, 1]]),
        np.concatenate([own, pairs[:, 1], pairs[:, 0]]),
    )


def eps_pairs(tree, block_tree, eps, p):
    """``(rows, cols)``: every pair of a row of ``tree`` and a row of
    ``block_tree`` at Minkowski-``p`` distance <= ``eps`` (int64 arrays).

    The distance is compared with ``eps`` in the ``p``-th power, as
    scikit-learn's k-d tree does.
    """
    pairs = tree.sparse_distance_matrix(block_tree, eps, p=p, output_type="ndarray")
    return pairs["i"].astype(np.int64), pairs["j"].astype(np.int64)


def pairwise_eps_pairs(Q, block, eps, metric, params):
    """``(rows, cols)``: every pair of a row of ``Q`` and a row of ``block``
    whose distance ``pairwise_distances(Q, block, metric, **params)`` is at
    most ``eps`` (int64 arrays).

    ``metric`` is a callable (called as ``metric(q, x, **params)`` on every
    pair) or a metric scikit-learn computes for CSR rows ('euclidean',
    'manhattan', 'cosine'); ``Q`` and ``block`` are dense or CSR.
    """
    distances = pairwise_distances(Q, block, metric=metric, **params)
    rows, cols = np.nonzero(distances <= eps)
    return rows.astype(np.int64), cols.astype(np.int64)


@njit(cache=True, nogil=True)
def _root(parent, node):
    root = node
    while parent[root] != root:
        root = parent[root]
    while parent[node] != root:  # path compression
        parent[node], node = root, parent[node]
    return root


@njit(cache=True, nogil=True)
def component_minima(left, right, n_nodes):
    """For every node ``0 .. n_nodes - 1``, the smallest node of its
    connected component in the undirected graph of the edges
    ``left[i] -- right[i]`` (a node without edges is its own component).

    A union-find whose root is always the smallest node of its set.
    """
    parent = np.arange(n_nodes)
    for i in range(left.shape[0]):
        a = _root(parent, left[i])
        b = _root(parent, right[i])
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    for node in range(n_nodes):
        parent[node] = _root(parent, node)
    return parent
