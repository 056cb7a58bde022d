"""Distributed building blocks of linear algebra on row-sharded matrices."""

import numpy as np

from ._array import get_namespace, to_host


def tsqr_r(X, comms):
    """R factor of the QR decomposition of the global row-sharded ``X``.

    Communication-avoiding TSQR in one round: each rank factors its rows,
    the small R factors are gathered, and every rank factors their stack
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
    if X.shape[0] > X.shape[1]:
        local_r = xp.linalg.qr(X, mode="r")
    else:
        local_r = X
    stacked = comms.allgatherv(xp.ascontiguousarray(local_r))
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
