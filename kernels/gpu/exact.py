"""The column statistics behind sums on fixed-point grids, for CuPy arrays;
same functions and IN/OUT signatures as ``kernels/cpu/exact.py``. Pure local
compute, nothing here communicates.

Written against the NumPy-compatible API of the arrays' own namespace (the
CPU tests run these functions on NumPy arrays and compare them with the
numba kernels). Dense rows go in blocks (:func:`block_rows`), so the float64
and int64 temporaries stay bounded, and columns are reduced in stages
(:mod:`mlmpi.kernels.shared.columns`); CSR rows scatter their stored entries
into the columns' limbs with integer atomics (exact in any order).
"""

from ..._array import get_namespace, is_sparse, scratch_bytes
from ..shared.columns import column_reduce
from ..shared.limbs import on_grid, split

#: Bytes of a block's temporaries (about eight float64 or int64 copies of its
#: rows) on NumPy arrays (the CPU tests of this code), and at most on a GPU,
#: where each block costs a dozen kernel launches.
BLOCK_BYTES, DEVICE_BLOCK_BYTES = 1 << 27, 1 << 31


def block_rows(xp, n_features):
    """Rows per block of the dense temporaries."""
    return max(1024, scratch_bytes(xp, BLOCK_BYTES, DEVICE_BLOCK_BYTES) // (64 * n_features))


def column_extrema(X, low, high):
    """See ``mlmpi.kernels.cpu.exact.column_extrema`` (``low``/``high`` of X's namespace)."""
    xp = get_namespace(low)
    if is_sparse(X):
        import cupyx

        if X.nnz:
            cupyx.scatter_min(low, X.indices, X.data.astype(xp.float64))
            cupyx.scatter_max(high, X.indices, X.data.astype(xp.float64))
        xp.minimum(low, 0.0, out=low)
        xp.maximum(high, 0.0, out=high)
        return
    if X.shape[0]:
        xp.minimum(low, column_reduce(X, "min").astype(xp.float64), out=low)
        xp.maximum(high, column_reduce(X, "max").astype(xp.float64), out=high)


def moment_limbs(X, shift, scales, out):
    """See ``mlmpi.kernels.cpu.exact.moment_limbs`` (arrays of X's namespace)."""
    xp = get_namespace(out)
    if is_sparse(X):
        _sparse_moment_limbs(X, scales, out)
        return
    rows = block_rows(xp, X.shape[1])
    for start in range(0, X.shape[0], rows):
        y = X[start : start + rows].astype(xp.float64) - shift
        for m, values in enumerate((y, y * y)):
            high, low = split(on_grid(values, scales[m]))
            out[0, m] += column_reduce(high, "sum")
            out[1, m] += column_reduce(low, "sum")


def _sparse_moment_limbs(X, scales, out):
    import cupy as cp
    import cupyx

    x = X.data.astype(cp.float64)
    for m, values in enumerate((x, x * x)):
        for limb, part in enumerate(split(on_grid(values, scales[m][X.indices]))):
            cupyx.scatter_add(out[limb, m].view(cp.uint64), X.indices, part.view(cp.uint64))
