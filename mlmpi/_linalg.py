"""Distributed building blocks of linear algebra on row-sharded matrices."""

import numpy as np

from ._array import get_namespace

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
    (as a tree of row-block QRs on the host), the small R factors are
    gathered, and every rank factors their stack the same way. Exact (no
    normal equations), so it is safe for ill-conditioned and rank-deficient
    ``X``. Ranks may hold fewer rows than columns, or none.

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
