"""Pieces shared by the k-means solvers: kernel dispatch and small distance helpers."""

from .._array import get_namespace, is_device_array


def kernels_for(X):
    """The kernel module for ``X``'s namespace (numba for NumPy, CuPy for CuPy)."""
    if is_device_array(X):
        from ..kernels.gpu import kmeans
    else:
        from ..kernels.cpu import kmeans
    return kmeans


def row_sq_norms(X):
    """``||x||²`` of every row, in ``X``'s dtype."""
    xp = get_namespace(X)
    return xp.einsum("ij,ij->i", X, X)


def sq_distances(X, Y, X_sq_norms=None):
    """Squared Euclidean distances ``(len(X), len(Y))``, clipped at zero.

    ``||x||² - 2 x·y + ||y||²`` with one GEMM, like scikit-learn's
    ``_euclidean_distances`` for the same dtype.
    """
    xp = get_namespace(X)
    if X_sq_norms is None:
        X_sq_norms = row_sq_norms(X)
    # (Y @ X.T).T: a wide GEMM, much faster in OpenBLAS than a tall one with few columns.
    dist = (Y @ X.T).T
    dist *= -2
    dist += X_sq_norms[:, None]
    dist += row_sq_norms(Y)[None, :]
    return xp.maximum(dist, 0, out=dist)
