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

The two-limb sums (:func:`limb_exponents`, :func:`reduce_limbs`,
:func:`limbs_to_float`; the representation is ``mlmpi.kernels.shared.limbs``)
do the same for sums of any number of rows: k-means's centre sums, its
inertia and the moments of :func:`exact_moments`.
"""

import math
from typing import NamedTuple

import numpy as np

from .._array import get_namespace, is_sparse, to_host, to_namespace
from ..kernels import kernels_for
from ..kernels.cpu.exact import EXPONENT_SHIFT, LOW_BITS, N_BUCKETS, SIGNIFICAND_BITS
from ..kernels.shared.limbs import GRID_BITS, LIMB_BITS, LIMB_MASK, on_grid, split

_CHUNK = 1 << 30  # values per local accumulation: far below the 2**36 a bucket holds


def fixed_point_exponent(largest, n_rows, bits=62):
    """The power of two ``s`` of the grid ``2**-s`` on which values of
    magnitude at most ``largest`` are rounded, so that the sum of any
    ``n_rows`` of them is below ``2**bits`` units: 62 for an int64 with a bit
    to spare, 52 for a float64 (whose integers are exact up to ``2**53``)."""
    if largest == 0:
        return 0
    return bits - math.frexp(largest)[1] - max(1, int(n_rows).bit_length())


def onto_exact_grid(values, largest, n_rows):
    """``values`` rounded onto the power-of-two grid on which a float64 sum of
    any ``n_rows`` values of magnitude at most ``largest`` is exact, in any order.

    ``largest`` is a scalar, or one bound per column of a 2-D ``values``; the
    rounding moves a value by at most ``n_rows * 2**-53`` of its bound. No
    communication: the caller knows the global ``largest`` and ``n_rows``.
    """
    exponents = np.array(
        [fixed_point_exponent(v, n_rows, bits=52) for v in np.atleast_1d(largest)]
    ).reshape(np.shape(largest))
    values = np.asarray(values, dtype=np.float64)
    return np.ldexp(np.rint(np.ldexp(values, exponents)), -exponents)


def on_exact_grids(values, n_rows, comms):
    """This rank's ``values`` rounded onto the power-of-two grids on which a
    float64 sum of any ``n_rows`` values of every rank is exact, in any order.

    Each column of a 2-D ``values`` (a 1-D one is one column) has its own
    grid, from its largest magnitude on every rank (:func:`onto_exact_grid`).

    This function is collective: one allreduce of each column's largest magnitude.
    """
    values = np.asarray(values, dtype=np.float64)
    largest = comms.allreduce(np.atleast_1d(np.abs(values).max(axis=0, initial=0.0)), op="max")
    return onto_exact_grid(values, largest if values.ndim > 1 else largest[0], n_rows)


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


# -- two-limb fixed-point sums (mlmpi.kernels.shared.limbs) ------------------------------


def limb_exponents(largest):
    """Exponents ``s`` of the grids ``2**-s`` of two-limb sums
    (``mlmpi.kernels.shared.limbs``) of values of magnitude at most ``largest``,
    one per column.

    A value scaled by ``2**s`` and truncated is an integer of magnitude at most
    ``2**GRID_BITS`` (``2**50``; ``largest`` below ``2**e`` gives ``s = 50 -
    e``, so a product ``w·x`` that ``largest`` bounds keeps this after its own
    rounding): 50 bits below the largest value, and any ``2**11`` of them add
    up exactly in one int64. A column of zeros gets ``s = 0``, and the tiniest
    columns (below about ``2**-970``) a grid capped at ``2**-1023``.

    Parameters
    ----------
    largest : array-like of shape (n_columns,)
        Bounds on the magnitudes, the same on every rank (a global maximum).

    Returns
    -------
    exponents : ndarray of shape (n_columns,), int64
    """
    largest = np.atleast_1d(np.asarray(largest, dtype=np.float64))
    exponents = GRID_BITS - np.frexp(largest)[1].astype(np.int64)
    return np.where(largest > 0, np.minimum(exponents, 1023), 0)


def limb_scales(exponents):
    """``2.0 ** exponents`` (float64, host): the factors that put values on their grids."""
    return np.ldexp(1.0, np.asarray(exponents, dtype=np.int64))


def carry(limbs):
    """Move the low limbs' carries into the high limbs, in place (NumPy or CuPy):
    afterwards every low limb is in ``[0, 2**31)``, so ``(high, low)`` is the one
    representation of its total. ``limbs[0]`` are the high limbs, ``limbs[1]`` the low."""
    limbs[0] += limbs[1] >> LIMB_BITS
    limbs[1] &= LIMB_MASK
    return limbs


def reduce_limbs(limbs, comms):
    """The global two-limb sums of every rank's ``limbs`` (int64, ``limbs[0]`` high,
    ``limbs[1]`` low; NumPy or CuPy), carried: the same on every rank and at any
    number of ranks.

    This function is collective: one allreduce of ``limbs``.
    """
    return carry(comms.allreduce(carry(limbs)))


def limbs_to_float(limbs, exponents):
    """The float64 value of carried two-limb sums: ``(high * 2**31 + low) * 2**-s``.

    A function of the exact total only (the limbs are carried), so it is the
    same at any number of ranks; within two roundings of the exact sum.

    Parameters
    ----------
    limbs : ndarray of shape (2, ...), int64 (host)
    exponents : ndarray broadcastable to ``limbs[0]``, int64
    """
    high = np.ldexp(limbs[0].astype(np.float64), LIMB_BITS)
    return np.ldexp(high + limbs[1].astype(np.float64), -np.asarray(exponents))


def exact_column_sums(values, comms):
    """Global sums of the columns of ``values`` on two-limb fixed-point grids:
    the same on every rank and at any number of ranks.

    Parameters
    ----------
    values : array of shape (n_local, n_columns) or (n_local,)
        This rank's finite values (NumPy or CuPy); a rank may hold none.
    comms : Comms

    Returns
    -------
    sums : ndarray of shape (n_columns,) (or a float for 1-D ``values``), float64
        Each column's sum of its values rounded onto its grid
        (:func:`limb_exponents`).

    Notes
    -----
    This function is collective: one allreduce of the columns' largest
    magnitudes (``n_columns`` float64), then one of ``2 * n_columns`` int64.
    """
    xp = get_namespace(values)
    columns = values[:, None] if values.ndim == 1 else values
    local = xp.abs(columns).max(axis=0) if columns.shape[0] else xp.zeros(columns.shape[1])
    largest = to_host(comms.allreduce(local.astype(xp.float64), op="max"))
    exponents = limb_exponents(largest)
    high, low = split(on_grid(columns, to_namespace(limb_scales(exponents), xp)))
    limbs = xp.stack([high.sum(axis=0), low.sum(axis=0)])
    sums = limbs_to_float(to_host(reduce_limbs(limbs, comms)), exponents)
    return sums if values.ndim > 1 else float(sums[0])


class ExactMoments(NamedTuple):
    """Global column statistics from :func:`exact_moments` (float64, host)."""

    low: np.ndarray
    high: np.ndarray
    mean: np.ndarray
    variance: np.ndarray


def exact_moments(X, n_samples, comms):
    """Column extrema, means and (population) variances of the global rows,
    the same on every rank and at any number of ranks.

    Dense columns are shifted by their mid-range, ``y = x - (low + high) / 2``,
    and ``Σy`` and ``Σy²`` taken on two-limb grids fitted to the column's
    spread (:func:`limb_exponents`), so an offset column keeps its precision;
    the mean is the shift plus ``Σy / n``, the variance ``Σy²/n - (Σy/n)²``.
    A CSR shard adds its stored entries (not shifted: its variance loses about
    ``log10(mean² / variance)`` of its 16 digits), its implicit zeros counted
    in ``n_samples`` and in the extrema.

    Parameters
    ----------
    X : array of shape (n_local, n_features) or CSR, NumPy or CuPy
        This rank's finite rows; a rank may hold none.
    n_samples : int
        The global number of rows (positive).
    comms : Comms

    Returns
    -------
    moments : ExactMoments

    Notes
    -----
    This function is collective: one allreduce of ``2 * n_features`` float64
    (the extrema) and one of ``4 * n_features`` int64 (the limbs).
    """
    xp = get_namespace(X)
    kernels = kernels_for("exact", X)
    d = X.shape[1]
    low, high = xp.full(d, np.inf), xp.full(d, -np.inf)
    kernels.column_extrema(X, low, high)
    extrema = to_host(comms.allreduce(xp.concatenate([-low, high]), op="max"))
    low, high = -extrema[:d], extrema[d:]
    if is_sparse(X):
        shift, spread = np.zeros(d), np.maximum(np.abs(low), np.abs(high))
    else:
        shift, spread = (low + high) / 2, high - low
    exponents = limb_exponents(np.concatenate([spread, spread * spread])).reshape(2, d)
    limbs = xp.zeros((2, 2, d), dtype=xp.int64)
    scales = to_namespace(limb_scales(exponents), xp)
    kernels.moment_limbs(X, to_namespace(shift, xp), scales, limbs)
    sums = limbs_to_float(to_host(reduce_limbs(limbs, comms)), exponents) / n_samples
    mean = sums[0] + shift
    return ExactMoments(low, high, mean, np.maximum(sums[1] - sums[0] ** 2, 0.0))


def exact_cross_products(A, B, comms):
    """``Aᵀ B`` over the global rows on two-limb grids: the same on every rank and
    at any number of ranks.

    Parameters
    ----------
    A : ndarray of shape (n_local, p), float64
    B : ndarray of shape (n_local, q), float64
        This rank's finite rows (host); a rank may hold none.
    comms : Comms

    Returns
    -------
    products : ndarray of shape (p, q), float64
        Each entry's sum of products rounded onto its grid, 50 bits below
        the product of the two columns' largest magnitudes.

    Notes
    -----
    This function is collective: one allreduce of ``p + q`` float64 (the
    columns' largest magnitudes), then one of ``2 · p · q`` int64.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    p, q = A.shape[1], B.shape[1]
    local = np.concatenate([np.abs(A).max(axis=0, initial=0.0), np.abs(B).max(axis=0, initial=0.0)])
    largest = comms.allreduce(local, op="max")
    exponents = limb_exponents(np.outer(largest[:p], largest[p:]).ravel()).reshape(p, q)
    limbs = np.zeros((2, p, q), dtype=np.int64)
    kernels_for("exact", A).cross_product_limbs(A, B, limb_scales(exponents), limbs)
    return limbs_to_float(reduce_limbs(limbs, comms), exponents)
