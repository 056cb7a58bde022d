"""Distributed building blocks of linear algebra on row-sharded matrices."""

import numpy as np

from ._array import get_namespace, to_host

# Rows per local QR on the host: small blocks stay in cache, which makes the
# tree of block QRs several times faster than one LAPACK QR of a tall matrix.
_TSQR_BLOCK_ROWS = 1024


def _local_r(X):
    """R of this rank's rows: a tree of QRs of row blocks on the host, one QR on the GPU."""
    xp = get_namespace(X)
    if xp is np:
        block = max(_TSQR_BLOCK_ROWS, 4 * X.shape[1])
        while X.shape[0] > block:
            X = np.concatenate(
                [np.linalg.qr(X[s : s + block], mode="r") for s in range(0, X.shape[0], block)]
            )
    if X.shape[0] > X.shape[1]:
        return xp.linalg.qr(X, mode="r")
    return X


def tsqr_r(X, comms):
    """R factor of the QR decomposition of the global row-sharded ``X``.

    Communication-avoiding TSQR in one round: each rank factors its rows
    (as a tree of row-block QRs on the host), the small R factors are gathered, and every rank factors their stack
    the same way. Exact (no normal equations), so it is safe for
    ill-conditioned and rank-deficient ``X``. Ranks may hold fewer rows
    than columns, or none.

    Parameters
    ----------
    X : array of shape (n_local, n_features), NumPy or CuPy
    comms : Comms

    Returns
    -------
    R : array of shape (min(n_samples, n_features), n_features)
        Upper triangular (trapezoidal when ``n_samples < n_features``), on
        every rank, in ``X``'s namespace; the sign of its rows is not
        normalised (LAPACK's convention).

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    stacked = comms.allgatherv(xp.ascontiguousarray(_local_r(X)))
    return xp.linalg.qr(stacked, mode="r")


def weighted_moments(X, comms, sample_weight=None):
    """Global ``(Σw, Σw·x, XᵀWX)`` in one allreduce, accumulated in float64.

    Parameters
    ----------
    X : array of shape (n_local, n_features), NumPy or CuPy
    comms : Comms
    sample_weight : array of shape (n_local,), default=None

    Returns
    -------
    weight_sum : float
    weighted_sum : ndarray of shape (n_features,), float64
    gram : ndarray of shape (n_features, n_features), float64
        Uncentred; centre with ``gram - outer(s, s) / weight_sum``.

    Notes
    -----
    This function is collective. Results are on the host (NumPy), the same
    on every rank.
    """
    xp = get_namespace(X)
    d = X.shape[1]
    X64 = X.astype(xp.float64, copy=False)
    packed = xp.empty(1 + d + d * d, dtype=xp.float64)
    if sample_weight is None:
        packed[0] = X.shape[0]
        packed[1 : 1 + d] = X64.sum(axis=0)
        packed[1 + d :] = (X64.T @ X64).ravel()
    else:
        w = sample_weight.astype(xp.float64, copy=False)
        packed[0] = w.sum()
        packed[1 : 1 + d] = w @ X64
        packed[1 + d :] = ((X64 * w[:, None]).T @ X64).ravel()
    total = to_host(comms.allreduce(packed))
    return float(total[0]), total[1 : 1 + d], total[1 + d :].reshape(d, d)
