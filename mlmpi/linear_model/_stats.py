"""Global sufficient statistics of a row-sharded least-squares problem.

Every linear regressor here reduces the global data to small replicated
matrices, then solves on every rank identically (CSR rows too: their Gram
matrices come from the sparse kernels, centred implicitly):

* :func:`centred_moments` -- the weighted means and the Gram matrices of the
  centred, ``sqrt(w)``-scaled data (the normal equations), in two allreduces;
* :func:`merge_moments` -- the moments of two sets of rows together
  (``partial_fit`` streams batches through it);
* :func:`reduced_qr` -- a small ``(R, Z)`` with ``||Xc b - Yc||`` equal to
  ``||R b - Z||`` up to a constant, by TSQR of the centred augmented matrix
  ``[Xc, Yc]`` (exact: no normal equations), in one allgatherv.
"""

from dataclasses import dataclass

import numpy as np

from .._array import get_namespace, is_sparse, to_host
from .._linalg import tsqr_r
from ..kernels import kernels_for
from ..utils.stats import weighted_means

_CACHE_BYTES = 1 << 19


@dataclass(frozen=True)
class LeastSquaresStats:
    """Replicated (host, float64) statistics of the global weighted data.

    Attributes
    ----------
    weight_sum : float
        Σw (the number of samples without weights).
    x_mean, y_mean : ndarray of shape (n_features,), (n_targets,)
        Weighted means (zeros without ``fit_intercept``).
    gram : ndarray of shape (n_features, n_features)
        ``XcᵀWXc`` of the centred X.
    xty : ndarray of shape (n_features, n_targets)
        ``XcᵀWYc``.
    yty : ndarray of shape (n_targets,)
        ``Σw (y - ȳ)²`` per target.

    ``gram``, ``xty`` and ``yty`` are None when only the means were asked for.
    """

    weight_sum: float
    x_mean: np.ndarray
    y_mean: np.ndarray
    gram: np.ndarray
    xty: np.ndarray
    yty: np.ndarray


def _centred_blocks(X, Y, x_mean, y_mean, sample_weight):
    """Yield ``(Xb, Yb)``: blocks of centred, ``sqrt(w)``-scaled rows in float64.

    NumPy blocks fit in cache, so the centring costs no extra pass over memory;
    CuPy blocks of 2**17 rows keep the float64 copies bounded on the device.
    """
    xp = get_namespace(X)
    n = X.shape[0]
    if xp is np:
        block = max(64, _CACHE_BYTES // (8 * (X.shape[1] + Y.shape[1])))
    else:
        block = 1 << 17
    x_mean = xp.asarray(x_mean)
    y_mean = xp.asarray(y_mean)
    for start in range(0, n, block):
        stop = min(start + block, n)
        Xb = X[start:stop] - x_mean
        Yb = Y[start:stop] - y_mean
        if sample_weight is not None:
            root = xp.sqrt(sample_weight[start:stop].astype(xp.float64))[:, None]
            Xb *= root
            Yb *= root
        yield Xb, Yb


def centred_products(X, Y, x_mean, y_mean, sample_weight, out):
    """Add this rank's ``[XcᵀWXc, XcᵀWYc, Σw(y-ȳ)²]`` into ``out`` (a kernel: no communication).

    Parameters
    ----------
    X : array of shape (n_local, d); Y : array of shape (n_local, t)
    x_mean, y_mean : ndarray of shape (d,), (t,)
    sample_weight : array of shape (n_local,) or None
    out : float64 array of shape (d * d + d * t + t,), X's namespace
    """
    d, t = X.shape[1], Y.shape[1]
    gram = out[: d * d].reshape(d, d)
    xty = out[d * d : d * d + d * t].reshape(d, t)
    yty = out[d * d + d * t :]
    if is_sparse(X):
        _sparse_products(X, Y, y_mean, sample_weight, gram, xty, yty)
        return
    for Xb, Yb in _centred_blocks(X, Y, x_mean, y_mean, sample_weight):
        gram += Xb.T @ Xb
        xty += Xb.T @ Yb
        yty += (Yb * Yb).sum(axis=0)


def _sparse_products(X, Y, y_mean, sample_weight, gram, xty, yty):
    """The products of :func:`centred_products` for CSR rows, X uncentred (its
    centring is applied to the global sums by :func:`centred_moments`)."""
    xp = get_namespace(Y)
    kernels = kernels_for("linear", X)
    w = None if sample_weight is None else sample_weight.astype(xp.float64)
    kernels.add_weighted_gram(X, w, gram)
    Yc = Y.astype(xp.float64) - xp.asarray(y_mean)
    weighted = Yc if w is None else Yc * w[:, None]
    kernels.add_transpose_product(X, weighted, xty)
    yty += (weighted * Yc).sum(axis=0)


def centred_moments(X, Y, sample_weight, comms, *, fit_intercept, products=True):
    """Global :class:`LeastSquaresStats` of the weighted data, centred at the global means.

    Centring uses the global weighted means (never the local ones), subtracted
    before the products, so no precision is lost to cancellation when the
    means are large. Two allreduces: the means (d + t + 1 numbers), then the
    packed products.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
    Y : array of shape (n_local, n_targets)
    sample_weight : array of shape (n_local,) or None
    comms : Comms
    fit_intercept : bool
        False: no centring (the means are reported as zeros).
    products : bool, default=True
        False: only the means (one allreduce, for a solver that never reads
        the Gram matrices).

    Returns
    -------
    LeastSquaresStats

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    d, t = X.shape[1], Y.shape[1]
    weight_sum, x_mean, y_mean = weighted_means(X, Y, sample_weight, comms)
    if not fit_intercept:
        x_mean, y_mean = np.zeros(d), np.zeros(t)
    if not products:
        return LeastSquaresStats(weight_sum, x_mean, y_mean, gram=None, xty=None, yty=None)
    packed = xp.zeros(d * d + d * t + t, dtype=xp.float64)
    centred_products(X, Y, x_mean, y_mean, sample_weight, packed)
    total = to_host(comms.allreduce(packed))
    gram = total[: d * d].reshape(d, d)
    if is_sparse(X):  # implicit centring: XcᵀWXc = XᵀWX - Σw x̄x̄ᵀ (Σ w(y - ȳ) = 0)
        gram -= weight_sum * np.outer(x_mean, x_mean)
    return LeastSquaresStats(
        weight_sum=weight_sum,
        x_mean=x_mean,
        y_mean=y_mean,
        gram=(gram + gram.T) / 2,  # exactly symmetric, whatever BLAS did
        xty=total[d * d : d * d + d * t].reshape(d, t),
        yty=total[d * d + d * t :],
    )


def merge_moments(first, second):
    """The :class:`LeastSquaresStats` of the rows of ``first`` and ``second`` together.

    Chan's pairwise update of the weighted means and centred products, exact
    up to rounding (no cancellation: the products stay centred), so that a
    stream of batches gives the moments of all their rows. Both must have
    their products; with ``fit_intercept=False`` their means are zeros and
    the products just add.
    """
    total = first.weight_sum + second.weight_sum
    if first.weight_sum == 0 or second.weight_sum == 0:
        return second if first.weight_sum == 0 else first
    share = second.weight_sum / total
    spread = first.weight_sum * share
    dx = second.x_mean - first.x_mean
    dy = second.y_mean - first.y_mean
    return LeastSquaresStats(
        weight_sum=total,
        x_mean=first.x_mean + share * dx,
        y_mean=first.y_mean + share * dy,
        gram=first.gram + second.gram + spread * np.outer(dx, dx),
        xty=first.xty + second.xty + spread * np.outer(dx, dy),
        yty=first.yty + second.yty + spread * dy * dy,
    )


def reduced_qr(X, Y, moments, sample_weight, comms):
    """``(R, Z)`` with ``Xc = Q R`` and ``Z = QᵀYc`` for the centred, weighted data.

    TSQR of the augmented ``[Xc, Yc]``: its R factor is ``[[R, Z], [0, *]]``,
    so ``Qᵀ Yc`` comes without forming Q. Exact in one round of
    communication; the singular values of ``R`` are those of ``Xc``.

    Returns
    -------
    R : ndarray of shape (k, n_features), host float64
    Z : ndarray of shape (k, n_targets), host float64
        ``k = min(n_samples, n_features + n_targets)``; rows of ``R`` below the
        first ``n_features`` are zero.

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    d = X.shape[1]
    blocks = list(_centred_blocks(X, Y, moments.x_mean, moments.y_mean, sample_weight))
    if blocks:
        augmented = xp.concatenate([xp.concatenate(pair, axis=1) for pair in blocks])
    else:
        augmented = xp.empty((0, d + Y.shape[1]), dtype=xp.float64)
    R = to_host(tsqr_r(augmented, comms))
    return R[:, :d], R[:, d:]
