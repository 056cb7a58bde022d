"""Two-limb fixed-point sums: the representation that makes a float sum exact.

A value ``v`` is put on the power-of-two grid of its column, ``q =
trunc(v * 2**s)``, an int64 of magnitude at most ``2**GRID_BITS`` (``s`` from
the column's largest magnitude over every rank,
``mlmpi.utils._exact.limb_exponents``): any ``2**(62 - GRID_BITS)`` of them
add up exactly in one int64. A sum is kept as two limbs: ``q >> LIMB_BITS``
(the floor of ``q / 2**31``, signed) into one int64 and ``q & LIMB_MASK`` (in
``[0, 2**31)``) into another, per value or per int64 partial sum. All of it
is integer addition, exact in any order and on any device, so the sums do
not depend on how the rows are split over ranks, threads or blocks, and the
total ``hi * 2**31 + lo`` can outgrow one int64. Kernels fill limbs; the
solvers carry, reduce and convert them (``mlmpi.utils._exact``).
"""

from ..._array import get_namespace

#: Values on a grid are integers of at most this many bits (and a sign).
GRID_BITS = 50
#: Bits of the low limb.
LIMB_BITS = 31
LIMB_MASK = (1 << LIMB_BITS) - 1


def split(q):
    """``(q >> LIMB_BITS, q & LIMB_MASK)`` of int64 ``q`` (NumPy or CuPy).

    Examples
    --------
    >>> import numpy as np
    >>> split(np.array([-1, 2**31 + 5]))
    (array([-1,  1]), array([2147483647,          5]))
    """
    return q >> LIMB_BITS, q & LIMB_MASK


def on_grid(values, scales):
    """``trunc(values * scales)`` as int64, in ``values``' namespace (float64 products:
    ``scales`` are powers of two, so only the truncation rounds)."""
    xp = get_namespace(values)
    return (values.astype(xp.float64, copy=False) * scales).astype(xp.int64)
