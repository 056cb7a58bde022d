"""Nearest-neighbour kernels for SciPy CSR rows (the ``knn`` family's sparse
layout). Pure local compute into caller-owned buffers; nothing here
communicates.

Distances come from sparse dot products and squared norms, as
scikit-learn's ``euclidean_distances`` (cosine: ``1 - q·x`` of unit rows),
in float64; the best ``k`` of each query are ordered by (distance, global
index), so ties go to the smaller global index.
"""

import numpy as np
from scipy import sparse


def unit_rows(X):
    """``X`` with every row scaled to unit length (zero rows stay zero)."""
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1
    return sparse.diags(1.0 / norms) @ X


def squared_norms(X):
    """``||x||²`` of every row, float64."""
    return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()


def _distances(Q, X, x_norms, metric):
    """Dense ``(len(Q), len(X))`` distances; X is unit rows for cosine."""
    products = np.asarray((Q @ X.T).toarray(), dtype=np.float64)
    if metric == "cosine":
        return np.clip(1.0 - products, 0, 2)
    return np.sqrt(np.maximum(squared_norms(Q)[:, None] - 2 * products + x_norms[None, :], 0))


def best_k(dist, index, out_dist, out_index):
    """The ``k = out_dist.shape[1]`` smallest of each row of ``dist`` by
    (distance, ``index``) into ``out_dist``/``out_index``, ascending; where a row
    has fewer than ``k`` entries, the rest is ``inf`` / ``iinfo(int64).max``."""
    k = out_dist.shape[1]
    order = np.lexsort((index, dist), axis=1)[:, :k]
    found = order.shape[1]
    out_dist[:, :found] = np.take_along_axis(dist, order, axis=1)
    out_index[:, :found] = np.take_along_axis(index, order, axis=1)
    out_dist[:, found:] = np.inf
    out_index[:, found:] = np.iinfo(np.int64).max


def local_topk(Q, X, x_norms, metric, start, out_dist, out_index):
    """The best ``k = out_dist.shape[1]`` rows of the shard ``X`` (global rows
    ``start, start + 1, ...``) for every query of ``Q``, as :func:`best_k`.

    Parameters
    ----------
    Q, X : CSR matrices
        Queries and this rank's rows (unit rows for cosine, :func:`unit_rows`).
    x_norms : ndarray of shape (len(X),)
        :func:`squared_norms` of ``X``.
    metric : {'euclidean', 'cosine'}
    start : int
        Global index of ``X[0]``.
    out_dist : ndarray of shape (len(Q), k), float64
    out_index : ndarray of shape (len(Q), k), int64
        Overwritten.
    """
    dist = _distances(Q, X, x_norms, metric)
    index = np.broadcast_to(np.arange(start, start + X.shape[0]), dist.shape)
    best_k(dist, index, out_dist, out_index)
