"""Exact sums of float64 values (numba, host).

:func:`accumulate` splits every value into its binary exponent and two
integer halves of its 53-bit significand and adds the halves into int64
buckets, one per exponent: integer sums, exact and independent of the order
of the values. ``mlmpi.utils._exact`` reduces the buckets over the ranks and
rounds their total once.
"""

import math

import numpy as np
from numba import njit

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
