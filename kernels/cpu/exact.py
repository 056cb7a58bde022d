"""Exact sums of float64 values (numba, host), and the column statistics
behind sums on fixed-point grids.

:func:`accumulate` splits every value into its binary exponent and two
integer halves of its 53-bit significand and adds the halves into int64
buckets, one per exponent: integer sums, exact and independent of the order
of the values. ``mlmpi.utils._exact`` reduces the buckets over the ranks and
rounds their total once.
"""

import math

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..shared.limbs import LIMB_BITS, LIMB_MASK

N_BUCKETS = 2100  # binary exponents of float64 (frexp) from -1073 to 1024, shifted by 1074
EXPONENT_SHIFT = 1074
SIGNIFICAND_BITS = 53
LOW_BITS = 26  # the low half of a significand; the high half has at most 27 bits


def accumulate(values, out):
    """Add every value of column ``j`` of ``values`` into ``out[j]``
    (zeros, infinities and NaN are skipped: callers check for them).

    Parameters
    ----------
    values : ndarray of shape (n, n_columns), float64
    out : ndarray of shape (n_columns, 2, N_BUCKETS), int64
        ``out[j, 0, e + 1074]`` and ``out[j, 1, e + 1074]`` add the high and
        low halves of ``m * 2**53`` for each value ``m * 2**e`` (``0.5 <= |m|
        < 1``), so that column ``j`` sums to ``sum_e (out[j, 0, e] * 2**26 +
        out[j, 1, e]) * 2**(e - 1074 - 53)``. Exact for fewer than 2**36 values.
    """
    _accumulate(values, out)
    return out


@njit(cache=True, nogil=True)
def _accumulate(values, out):
    low_mask = (1 << LOW_BITS) - 1
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            x = values[i, j]
            if x == 0.0 or not math.isfinite(x):
                continue
            m, e = math.frexp(x)
            significand = np.int64(m * 9007199254740992.0)  # m * 2**53, an integer
            bucket = e + EXPONENT_SHIFT
            out[j, 0, bucket] += significand >> LOW_BITS
            out[j, 1, bucket] += significand & low_mask


def column_extrema(X, low, high):
    """``low = min(low, X.min(axis=0))`` and ``high = max(high, X.max(axis=0))``
    (float64), in one pass; CSR rows count their implicit zeros, as a bound.

    Parameters
    ----------
    X : ndarray of shape (n, n_features), or scipy.sparse CSR  (IN)
    low, high : ndarray of shape (n_features,), float64  (INOUT)
    """
    if sp.issparse(X):
        _sparse_extrema(X.data, X.indices, low, high)
        low[:] = np.minimum(low, 0.0)
        high[:] = np.maximum(high, 0.0)
    elif X.shape[0]:
        _dense_extrema(X, low, high)


@njit(cache=True, nogil=True)
def _dense_extrema(X, low, high):
    for i in range(X.shape[0]):
        for f in range(X.shape[1]):
            x = np.float64(X[i, f])
            low[f] = min(low[f], x)
            high[f] = max(high[f], x)


@njit(cache=True, nogil=True)
def _sparse_extrema(data, indices, low, high):
    for p in range(data.shape[0]):
        x = np.float64(data[p])
        low[indices[p]] = min(low[indices[p]], x)
        high[indices[p]] = max(high[indices[p]], x)


def moment_limbs(X, shift, scales, out):
    """Two-limb sums (``kernels/shared/limbs.py``) of ``y = x - shift`` and of
    ``y²`` per column, each value on its grid: ``out[0, m]`` and ``out[1, m]``
    gain the high and low limbs of ``Σ trunc(v · scales[m])`` for ``v`` the
    ``m``-th of ``(y, y²)``, in float64. CSR rows add their stored entries
    only (``shift`` must be zero there). Exact for fewer than ``2**32`` rows.

    Parameters
    ----------
    X : ndarray of shape (n, n_features), or scipy.sparse CSR  (IN)
    shift : ndarray of shape (n_features,), float64  (IN)
    scales : ndarray of shape (2, n_features), float64 powers of two  (IN)
    out : ndarray of shape (2, 2, n_features), int64  (INOUT)

    Examples
    --------
    >>> import numpy as np
    >>> out = np.zeros((2, 2, 1), dtype=np.int64)
    >>> moment_limbs(np.array([[1.0], [4.0]]), np.array([2.0]), np.ones((2, 1)), out)
    >>> (out[0] << 31) + out[1]  # Σ(x - 2) and Σ(x - 2)² on a grid of 1
    array([[1],
           [5]])
    """
    if sp.issparse(X):
        _sparse_moment_limbs(X.data, X.indices, scales, out)
    elif X.shape[0]:
        _dense_moment_limbs(X, shift, scales, out)


@njit(cache=True, nogil=True)
def _add_limbs(out, m, f, value, scale):
    q = np.int64(value * scale)
    out[0, m, f] += q >> LIMB_BITS
    out[1, m, f] += q & LIMB_MASK


#: Rows whose values on a grid (at most ``2**50`` each) add up in one int64.
_EXACT_ROWS = 2048


@njit(cache=True, nogil=True)
def _dense_moment_limbs(X, shift, scales, out):
    """By blocks of rows: each column's int64 sums of the block (exact), then
    split into the limbs; the loop over a row's features vectorises."""
    n, d = X.shape
    first = np.zeros(d, dtype=np.int64)
    second = np.zeros(d, dtype=np.int64)
    for start in range(0, n, _EXACT_ROWS):
        for i in range(start, min(start + _EXACT_ROWS, n)):
            for f in range(d):
                y = np.float64(X[i, f]) - shift[f]
                first[f] += np.int64(y * scales[0, f])
                second[f] += np.int64(y * y * scales[1, f])
        for f in range(d):
            out[0, 0, f] += first[f] >> LIMB_BITS
            out[1, 0, f] += first[f] & LIMB_MASK
            out[0, 1, f] += second[f] >> LIMB_BITS
            out[1, 1, f] += second[f] & LIMB_MASK
            first[f] = 0
            second[f] = 0


@njit(cache=True, nogil=True)
def _sparse_moment_limbs(data, indices, scales, out):
    for p in range(data.shape[0]):
        f = indices[p]
        x = np.float64(data[p])
        _add_limbs(out, 0, f, x, scales[0, f])
        _add_limbs(out, 1, f, x * x, scales[1, f])


@njit(cache=True, nogil=True)
def cross_product_limbs(A, B, scales, out):
    """Two-limb sums of the products ``A[i, a] · B[i, b]`` over the rows, each
    product on its grid: ``out[0, a, b]`` and ``out[1, a, b]`` gain the high and
    low limbs of ``Σ_i trunc(A[i, a] · B[i, b] · scales[a, b])``. Exact for fewer
    than ``2**32`` rows.

    Parameters
    ----------
    A : ndarray of shape (n, p), float64  (IN)
    B : ndarray of shape (n, q), float64  (IN)
    scales : ndarray of shape (p, q), float64 powers of two  (IN)
    out : ndarray of shape (2, p, q), int64  (INOUT)
    """
    n, p = A.shape
    q = B.shape[1]
    block = np.zeros((p, q), dtype=np.int64)
    for start in range(0, n, _EXACT_ROWS):
        for i in range(start, min(start + _EXACT_ROWS, n)):
            for a in range(p):
                for b in range(q):
                    block[a, b] += np.int64(A[i, a] * B[i, b] * scales[a, b])
        for a in range(p):
            for b in range(q):
                out[0, a, b] += block[a, b] >> LIMB_BITS
                out[1, a, b] += block[a, b] & LIMB_MASK
                block[a, b] = 0
