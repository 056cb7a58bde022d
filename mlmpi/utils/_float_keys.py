"""Float64 values as unsigned integers in the same order (radix selection
and the pivots of a search over the values' bit patterns)."""

import numpy as np


def to_keys(values):
    """Order-preserving map of non-NaN float64 values to uint64 (-0.0 as 0.0)."""
    bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)
    negative = (bits >> np.uint64(63)).astype(bool)
    return np.where(negative, ~bits, bits | np.uint64(1 << 63))


def from_keys(keys):
    """The float64 values of keys made by :func:`to_keys`."""
    negative = (keys >> np.uint64(63)) == 0
    bits = np.where(negative, ~keys, keys & np.uint64((1 << 63) - 1))
    return bits.view(np.float64)
