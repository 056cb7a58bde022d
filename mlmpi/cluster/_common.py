"""Pieces shared by the k-means solvers: small distance, selection and reduction helpers."""

import numpy as np

from .._array import get_namespace, is_sparse, to_host


def row_sq_norms(X):
    """``||x||²`` of every row, in ``X``'s dtype."""
    xp = get_namespace(X)
    if is_sparse(X):
        return xp.asarray(X.multiply(X).sum(axis=1), dtype=X.dtype).ravel()
    return xp.einsum("ij,ij->i", X, X)


def largest_first(values, m):
    """Indices of the ``m`` largest of host ``values``, largest first, ties to the smaller index.

    The same indices as ``np.lexsort((np.arange(n), -values))[:m]`` in linear
    time: a partition finds the ``m``-th largest value, and only the values at
    or above it are sorted.
    """
    n = values.shape[0]
    if m >= n:
        return np.lexsort((np.arange(n), -values))
    if m <= 0:
        return np.empty(0, dtype=np.intp)
    threshold = np.partition(values, n - m)[n - m]
    candidates = np.flatnonzero(values >= threshold)
    return candidates[np.lexsort((candidates, -values[candidates]))[:m]]


def dense_rows(X, rows):
    """Rows ``rows`` (indices in ``X``'s namespace) of dense or sparse ``X``, as a dense array."""
    picked = X[rows]
    return picked.toarray() if is_sparse(picked) else picked


def sq_distances(X, Y, X_sq_norms=None):
    """Squared Euclidean distances ``(X.shape[0], len(Y))``, clipped at zero
    (``X`` dense or CSR, ``Y`` dense).

    ``||x||² - 2 x·y + ||y||²`` with one GEMM, like scikit-learn's
    ``_euclidean_distances`` for the same dtype.
    """
    xp = get_namespace(X)
    if X_sq_norms is None:
        X_sq_norms = row_sq_norms(X)
    if is_sparse(X):
        dist = xp.asarray(X @ Y.T)
    else:
        # (Y @ X.T).T: a wide GEMM, much faster in OpenBLAS than a tall one with few columns.
        dist = (Y @ X.T).T
    dist *= -2
    dist += X_sq_norms[:, None]
    dist += row_sq_norms(Y)[None, :]
    return xp.maximum(dist, 0, out=dist)


def global_max(values, comms):
    """The largest of every rank's ``values`` (float64). This function is collective."""
    xp = get_namespace(values)
    local = values.reshape(-1).max(keepdims=True) if values.size else xp.zeros(1)
    return float(to_host(comms.allreduce(local.astype(xp.float64), op="max"))[0])
