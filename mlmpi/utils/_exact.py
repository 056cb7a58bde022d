"""Sums over the ranks that do not depend on how the rows are split.

A float sum changes in its last bits with the order of the additions, so a
plain allreduce of per-rank partial sums gives a rank-count-dependent result.
:func:`exact_sums` adds the values exactly (integer buckets per binary
exponent, ``mlmpi.kernels.cpu.exact``), reduces the buckets over the ranks
(integer sums: any order gives the same) and rounds the total once: the
correctly rounded sum of the concatenated values, at any number of ranks.

:func:`fixed_point_exponent` gives the other way, for many sums at once
(histograms): round every value onto a power-of-two grid fine enough for the
data and coarse enough that every partial sum is an exact integer multiple
of the grid, in an int64 or in a float64's significand. The additions are
then exact in any order.
"""

import math

import numpy as np

from ..kernels import kernels_for
from ..kernels.cpu.exact import EXPONENT_SHIFT, LOW_BITS, N_BUCKETS, SIGNIFICAND_BITS

_CHUNK = 1 << 30  # values per local accumulation: far below the 2**36 a bucket holds


def fixed_point_exponent(largest, n_rows, bits=62):
    """The power of two ``s`` of the grid ``2**-s`` on which values of
    magnitude at most ``largest`` are rounded, so that the sum of any
    ``n_rows`` of them is below ``2**bits`` units: 62 for an int64 with a bit
    to spare, 52 for a float64 (whose integers are exact up to ``2**53``)."""
    if largest == 0:
        return 0
    return bits - math.frexp(largest)[1] - max(1, int(n_rows).bit_length())


def on_exact_grids(values, n_rows, comms):
    """This rank's ``values`` rounded onto the power-of-two grids on which a
    float64 sum of any ``n_rows`` values of every rank is exact, in any order.

    Each column of a 2-D ``values`` (a 1-D one is one column) has its own
    grid, from its largest magnitude on every rank; the rounding moves a
    value by at most ``n_rows * 2**-53`` of that magnitude.

    This function is collective: one allreduce of each column's largest magnitude.
    """
    values = np.asarray(values, dtype=np.float64)
    largest = comms.allreduce(np.atleast_1d(np.abs(values).max(axis=0, initial=0.0)), op="max")
    exponents = np.array([fixed_point_exponent(v, n_rows, bits=52) for v in largest])
    return np.ldexp(np.rint(np.ldexp(values, exponents)), -exponents)


def exact_sums(columns, comms):
    """Correctly rounded global sum of each of ``columns``.

    Parameters
    ----------
    columns : sequence of array-like of shape (n_local_j,)
        This rank's finite values of each sum (host); the lengths may differ
        and a rank may hold none.
    comms : Comms

    Returns
    -------
    sums : ndarray of shape (len(columns),), float64
        The sum of every rank's values of each column, rounded once;
        identical on every rank and at any number of ranks.

    Notes
    -----
    This function is collective: one allreduce of ``len(columns) * 4200`` int64.
    """
    limbs = np.zeros((len(columns), 2, N_BUCKETS), dtype=np.int64)
    accumulate = kernels_for("exact", np.empty(0)).accumulate
    for j, column in enumerate(columns):
        values = np.asarray(column, dtype=np.float64).reshape(-1, 1)
        for start in range(0, values.shape[0], _CHUNK):
            accumulate(values[start : start + _CHUNK], limbs[j : j + 1])
    limbs = comms.allreduce(limbs)
    return np.array([_rounded(column) for column in limbs])


def _rounded(limbs):
    """The float64 nearest to ``sum_e (high_e * 2**26 + low_e) * 2**(e - 1127)``."""
    used = np.flatnonzero(limbs[0] | limbs[1])
    total = 0
    for bucket in used.tolist():
        total += ((int(limbs[0, bucket]) << LOW_BITS) + int(limbs[1, bucket])) << bucket
    return total / (1 << (EXPONENT_SHIFT + SIGNIFICAND_BITS))
