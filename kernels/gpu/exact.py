"""The column statistics behind sums on fixed-point grids, for CuPy arrays;
same functions and IN/OUT signatures as ``kernels/cpu/exact.py``. Pure local
compute, nothing here communicates.

Written against the NumPy-compatible API of the arrays' own namespace (the
CPU tests run these functions on NumPy arrays and compare them with the
numba kernels). Dense rows go in blocks of ``BLOCK_ROWS``, so the float64
and int64 temporaries stay bounded; CSR rows scatter their stored entries
into the columns' limbs with integer atomics (exact in any order).
"""

from ..._array import get_namespace, is_sparse
from ..shared.limbs import on_grid, split

#: Rows per block of the dense temporaries.
BLOCK_ROWS = 1 << 16


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
    for start in range(0, X.shape[0], BLOCK_ROWS):
        block = X[start : start + BLOCK_ROWS]
        xp.minimum(low, block.min(axis=0).astype(xp.float64), out=low)
        xp.maximum(high, block.max(axis=0).astype(xp.float64), out=high)


def moment_limbs(X, shift, scales, out):
    """See ``mlmpi.kernels.cpu.exact.moment_limbs`` (arrays of X's namespace)."""
    xp = get_namespace(out)
    if is_sparse(X):
        _sparse_moment_limbs(X, scales, out)
        return
    for start in range(0, X.shape[0], BLOCK_ROWS):
        y = X[start : start + BLOCK_ROWS].astype(xp.float64) - shift
        for m, values in enumerate((y, y * y)):
            high, low = split(on_grid(values, scales[m]))
            out[0, m] += high.sum(axis=0)
            out[1, m] += low.sum(axis=0)


def _sparse_moment_limbs(X, scales, out):
    import cupy as cp
    import cupyx

    x = X.data.astype(cp.float64)
    for m, values in enumerate((x, x * x)):
        for limb, part in enumerate(split(on_grid(values, scales[m][X.indices]))):
            cupyx.scatter_add(out[limb, m].view(cp.uint64), X.indices, part.view(cp.uint64))
