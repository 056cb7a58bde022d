"""Global sufficient statistics of a row-sharded least-squares problem.

Every linear regressor here reduces the global data to small replicated
matrices, then solves on every rank identically (CSR rows too: their Gram
matrices come from the sparse kernels, centred implicitly):

* :func:`centred_moments` -- the weighted means and the Gram matrices of the
  centred, ``sqrt(w)``-scaled data (the normal equations), from one read of
  dense rows, in two allreduces;
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
from ._base import targets

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


def _shift(A, rows=256):
    """A shift near the mean of this rank's rows: the float64 mean of the first
    ``rows`` (zeros without rows). Products about it lose no precision to
    cancellation when the data's means are large."""
    xp = get_namespace(A)
    if A.shape[0] == 0:
        return xp.zeros(A.shape[1], dtype=xp.float64)
    return A[:rows].astype(xp.float64).mean(axis=0)


def _products_about(X, Y, sample_weight, shift, moments=None):
    """``AᵀA`` (host float64) of this rank's augmented dense rows
    ``√w [X - c, Y - c_y, 1]`` about ``shift = [c, c_y]``, from one read of
    the rows (the kernel ``linear.add_shifted_products``, which adds X's
    column moments into ``moments``, X's namespace); no communication."""
    xp = get_namespace(X)
    d, t = X.shape[1], Y.shape[1]
    products = xp.zeros((d + t + 1, d + t + 1), dtype=xp.float64)
    kernels_for("linear", X).add_shifted_products(
        X, Y, sample_weight, xp.asarray(shift[:d]), xp.asarray(shift[d:]), products, moments
    )
    return to_host(products)


def local_products(X, Y, sample_weight, fit_intercept, moments=None):
    """``(shift, products)``: :func:`_products_about` a shift near the mean of
    this rank's first rows (zero without ``fit_intercept``); no communication."""
    if not fit_intercept:
        shift = np.zeros(X.shape[1] + Y.shape[1])
    else:
        shift = np.concatenate([to_host(_shift(X)), to_host(_shift(Y))])
    return shift, _products_about(X, Y, sample_weight, shift, moments)


class ProductsPass:
    """The least-squares solvers' first read of dense rows, as the fit's
    validation's row pass (``validate_fit_data(row_pass=...)``): this rank's
    :func:`local_products`, and X's column moments from the same read.

    Parameters
    ----------
    fit_intercept : bool

    Attributes
    ----------
    local : tuple or None
        ``(shift, products)`` of the validated dense rows; None for sparse
        rows (their products come from the sparse kernels) and empty shards.
    """

    def __init__(self, fit_intercept):
        self.fit_intercept = fit_intercept
        self.local = None

    def __call__(self, X, y, sample_weight):
        # An empty shard reads nothing, and its placeholder (X=[]) may not
        # have the width the ranks agree on: its products are formed later.
        if is_sparse(X) or X.dtype.kind != "f" or X.shape[0] == 0:
            return None
        xp = get_namespace(X)
        moments = xp.zeros((2, X.shape[1]), dtype=xp.float64)
        Y = targets(y, X.dtype)
        self.local = local_products(X, Y, sample_weight, self.fit_intercept, moments)
        return to_host(moments)


def _dense_moments(X, Y, sample_weight, comms, fit_intercept, local=None):
    """``(Σw, x̄, ȳ, products of [X, Y] centred at the global means)`` for dense
    rows, from one read of them (:func:`local_products`, or ``local`` when
    the validation's row pass formed them), in two allreduces. Each rank
    forms its products about a shift near its own mean, centres them at its
    own mean, and the ranks merge them at the global mean as Chan's pairwise
    update does (each rank adds ``w_r (m_r - m)(m_r - m)ᵀ``). Without
    ``fit_intercept``: the means are zeros and the products uncentred, in one
    allreduce. This function is collective."""
    d, t = X.shape[1], Y.shape[1]
    shift, products = local_products(X, Y, sample_weight, fit_intercept) if local is None else local
    if not fit_intercept:
        total = to_host(comms.allreduce(products))
        return float(total[-1, -1]), np.zeros(d), np.zeros(t), total[:-1, :-1]
    weight = float(products[-1, -1])
    mean, centred = np.zeros(d + t), np.zeros((d + t, d + t))
    if weight > 0:
        offset = products[-1, :-1] / weight  # this rank's mean, less the shift
        mean = shift + offset
        centred = products[:-1, :-1] - weight * np.outer(offset, offset)
    total = to_host(comms.allreduce(np.concatenate([[weight], weight * mean])))
    weight_sum = float(total[0])
    centre = total[1:] / weight_sum if weight_sum > 0 else np.zeros(d + t)
    centred += weight * np.outer(mean - centre, mean - centre)
    return weight_sum, centre[:d], centre[d:], to_host(comms.allreduce(centred))


def _sparse_products(X, Y, y_mean, sample_weight, out):
    """Add this rank's ``[XᵀWX, XᵀW(Y - ȳ), Σw(y - ȳ)²]`` into ``out`` (packed,
    float64, X's namespace) for CSR rows: X is centred implicitly, on the
    global sums (:func:`centred_moments`). No communication."""
    d, t = X.shape[1], Y.shape[1]
    gram = out[: d * d].reshape(d, d)
    xty = out[d * d : d * d + d * t].reshape(d, t)
    yty = out[d * d + d * t :]
    xp = get_namespace(Y)
    kernels = kernels_for("linear", X)
    w = None if sample_weight is None else sample_weight.astype(xp.float64)
    kernels.add_weighted_gram(X, w, gram)
    Yc = Y.astype(xp.float64) - xp.asarray(y_mean)
    weighted = Yc if w is None else Yc * w[:, None]
    kernels.add_transpose_product(X, weighted, xty)
    yty += (weighted * Yc).sum(axis=0)


def centred_moments(X, Y, sample_weight, comms, *, fit_intercept, products=True, local=None):
    """Global :class:`LeastSquaresStats` of the weighted data, centred at the global means.

    Dense rows are read once: each rank forms its products about a shift
    near its rows' mean (the mean of its first rows), from them its own
    weighted mean and centred products, and the ranks merge these at the
    global means as Chan's pairwise update does. No precision is lost to
    cancellation when the means are large. CSR rows: the uncentred sparse
    products, centred on the global sums (their means are small against
    their spread wherever sparsity makes sense). Two allreduces: the means
    (d + t + 1 numbers), then the products.

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
    local : tuple, default=None
        This rank's ``(shift, products)`` of dense rows from the fit's
        validation (:attr:`ProductsPass.local`), so that the rows are not
        read again; None to form them here. Ignored for CSR rows.

    Returns
    -------
    LeastSquaresStats

    Notes
    -----
    This function is collective.
    """
    xp = get_namespace(X)
    d, t = X.shape[1], Y.shape[1]
    if products and not is_sparse(X):
        weight_sum, x_mean, y_mean, total = _dense_moments(
            X, Y, sample_weight, comms, fit_intercept, local
        )
        gram = total[:d, :d]
        return LeastSquaresStats(
            weight_sum=weight_sum,
            x_mean=x_mean,
            y_mean=y_mean,
            gram=(gram + gram.T) / 2,  # exactly symmetric, whatever BLAS did
            xty=total[:d, d:].copy(),
            yty=np.diag(total[d:, d:]).copy(),
        )
    weight_sum, x_mean, y_mean = weighted_means(X, Y, sample_weight, comms)
    if not fit_intercept:
        x_mean, y_mean = np.zeros(d), np.zeros(t)
    if not products:
        return LeastSquaresStats(weight_sum, x_mean, y_mean, gram=None, xty=None, yty=None)
    packed = xp.zeros(d * d + d * t + t, dtype=xp.float64)
    _sparse_products(X, Y, y_mean, sample_weight, packed)
    total = to_host(comms.allreduce(packed))
    # implicit centring: XcᵀWXc = XᵀWX - Σw x̄x̄ᵀ (Σ w(y - ȳ) = 0)
    gram = total[: d * d].reshape(d, d) - weight_sum * np.outer(x_mean, x_mean)
    return LeastSquaresStats(
        weight_sum=weight_sum,
        x_mean=x_mean,
        y_mean=y_mean,
        gram=(gram + gram.T) / 2,
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
    augmented = xp.empty((X.shape[0], d + Y.shape[1]), dtype=xp.float64)
    xp.subtract(X, xp.asarray(moments.x_mean), out=augmented[:, :d])
    xp.subtract(Y, xp.asarray(moments.y_mean), out=augmented[:, d:])
    if sample_weight is not None:
        augmented *= xp.sqrt(sample_weight.astype(xp.float64))[:, None]
    R = to_host(tsqr_r(augmented, comms))
    return R[:, :d], R[:, d:]
