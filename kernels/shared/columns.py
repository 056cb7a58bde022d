"""Sums, minima and maxima of a tall array's columns that use the whole GPU.

CuPy reduces ``x.sum(axis=0)`` of a C-ordered ``(n, d)`` array with one
thread block per 32 columns (``_get_block_specs`` in ``cupy/_core/_reduction.pyx``:
32 outputs a block, as many blocks as the outputs need): 4 blocks for 128
columns, whatever ``n``. On an H200 that read 10M×128 float32 at about 22 GB/s
(0.23 s a sum, against 1.3 ms at the memory's speed): 0.70 s of a 0.74 s PCA
fit, and more than half of a KMeans fit's, went to such sums.

:func:`column_reduce` reduces instead over groups of ``STAGE_ROWS`` rows
first: ``x.reshape(n / r, r, d)`` reduced over its middle axis has ``n / r``
times more outputs, so CuPy launches ``n·d / (32 r)`` blocks, each reading
whole 128-byte rows of 32 columns; the partial results, ``r`` times fewer
rows, are reduced the same way until ``r`` rows or fewer remain. NumPy
arrays are reduced by NumPy at once.
"""

import numpy as np

from ..._array import get_namespace

#: Rows reduced together in one stage.
STAGE_ROWS = 256

_COMBINE = {"sum": "add", "min": "minimum", "max": "maximum"}


def column_reduce(x, op, dtype=None):
    """``getattr(x, op)(axis=0, dtype=dtype)`` of a 2-D array, staged on a device.

    Parameters
    ----------
    x : array of shape (n, d), NumPy or CuPy
    op : {"sum", "min", "max"}
    dtype : dtype, optional
        Accumulator and result dtype of a sum (None: NumPy's rule).

    Returns
    -------
    out : array of shape (d,), in ``x``'s namespace

    Examples
    --------
    >>> import numpy as np
    >>> column_reduce(np.arange(6.0).reshape(3, 2), "sum")
    array([6., 9.])
    """
    if get_namespace(x) is np or not x.flags.c_contiguous:
        return _reduce(x, op, dtype)
    return staged_reduce(x, op, dtype)


def staged_reduce(x, op, dtype=None, stage_rows=STAGE_ROWS):
    """:func:`column_reduce`'s staged order for any C-ordered 2-D array (NumPy
    too, to test it)."""
    n, d = x.shape
    if n <= stage_rows:
        return _reduce(x, op, dtype)
    head = n - n % stage_rows
    groups = _reduce(x[:head].reshape(head // stage_rows, stage_rows, d), op, dtype, axis=1)
    total = staged_reduce(groups, op, None, stage_rows)
    if head == n:
        return total
    combine = getattr(get_namespace(x), _COMBINE[op])
    return combine(total, _reduce(x[head:], op, total.dtype if op == "sum" else None))


def _reduce(x, op, dtype, axis=0):
    kwargs = {} if op != "sum" or dtype is None else {"dtype": dtype}
    return getattr(x, op)(axis=axis, **kwargs)
