"""DBSCAN kernels for NumPy arrays (SciPy's k-d tree and graph routines).

Pure local compute; nothing here communicates.

- :func:`eps_pairs`: every (local row, block row) pair within ``eps`` in a
  Minkowski metric, by one dual-tree traversal of the two k-d trees.
- :func:`component_minima`: the connected components of an undirected
  graph given as edge lists over arbitrary integer node ids, each node
  mapped to the smallest id of its component.
"""

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree


def build_tree(X, leaf_size):
    """k-d tree of the rows of ``X`` (SciPy's ``cKDTree``)."""
    return cKDTree(X, leafsize=leaf_size, balanced_tree=False, compact_nodes=False)


def eps_pairs(tree, block_tree, eps, p):
    """``(rows, cols)``: every pair of a row of ``tree`` and a row of
    ``block_tree`` at Minkowski-``p`` distance <= ``eps`` (int64 arrays).

    The distance is compared with ``eps`` in the ``p``-th power, as
    scikit-learn's k-d tree does.
    """
    pairs = tree.sparse_distance_matrix(block_tree, eps, p=p, output_type="ndarray")
    return pairs["i"].astype(np.int64), pairs["j"].astype(np.int64)


def component_minima(left, right):
    """``(nodes, minima)``: the sorted distinct node ids of the edges
    ``left[i] -- right[i]`` and, for each, the smallest id of its connected
    component."""
    nodes, inverse = np.unique(np.concatenate([left, right]), return_inverse=True)
    if nodes.size == 0:
        return nodes.astype(np.int64), nodes.astype(np.int64)
    n_edges = left.shape[0]
    graph = coo_matrix(
        (np.ones(n_edges, dtype=np.int8), (inverse[:n_edges], inverse[n_edges:])),
        shape=(nodes.size, nodes.size),
    )
    _, component = connected_components(graph, directed=False)
    _, first = np.unique(component, return_index=True)  # nodes are sorted: first = smallest
    return nodes.astype(np.int64), nodes[first][component].astype(np.int64)
