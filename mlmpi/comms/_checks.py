"""The checks of the comms' collectives' arguments.

Each ``*_arguments`` function checks a collective's arguments on this rank
and returns ``(values, agreed)``: the checked values, and the ``(name,
description)`` pairs that must be the same on every rank (compared when the
collective is called outside any collective method, see
:meth:`mlmpi.comms.Comms._checked`). The ``agreed_*`` functions exchange
what the variable-size collectives need from every rank and raise the same
error on every rank when the layouts differ.
"""

import operator
import zlib

import numpy as np

from .._array import get_namespace, is_device_array
from ._types import ReduceOp


def as_array(x):
    if isinstance(x, np.ndarray) or is_device_array(x):
        return x
    return np.asarray(x)


def check_root(root, size):
    if not 0 <= root < size:
        raise ValueError(f"root={root} is not a rank of this comms (size {size}).")


def check_out(x, out):
    """``x`` (C-contiguous) after checking that ``out`` can receive its reduction."""
    if is_device_array(out) != is_device_array(x) or not hasattr(out, "flags"):
        raise TypeError(
            f"out must be an array of the same type as x ({type(x).__name__}), "
            f"got {type(out).__name__}."
        )
    if out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(
            f"out must have x's shape {x.shape} and dtype {x.dtype}, "
            f"got shape {out.shape} and dtype {out.dtype}."
        )
    if not out.flags.c_contiguous or not getattr(out.flags, "writeable", True):
        raise ValueError("out must be a writeable C-contiguous array.")
    if x is out:
        return x
    return get_namespace(x).ascontiguousarray(x)


def _layout(x):
    return (("shape", tuple(x.shape)), ("dtype", x.dtype.str))


def reduction_arguments(x, op, out=None, root=None, size=1):
    """allreduce, iallreduce and reduce: ``(x, op)``."""
    x = as_array(x)
    op = ReduceOp.parse(op)
    if root is not None:
        check_root(root, size)
    if out is not None:
        x = check_out(x, out)
    return (x, op), (("op", op.value), ("root", root), *_layout(x))


def reduce_scatter_arguments(x, counts, op, size):
    """``(x, counts, op)`` of a reduce_scatter."""
    x = as_array(x)
    op = ReduceOp.parse(op)
    try:
        counts = [operator.index(c) for c in counts]
    except TypeError:
        raise TypeError(f"counts must be integers, got {counts!r}.") from None
    if x.ndim == 0 or len(counts) != size or min(counts) < 0 or sum(counts) != len(x):
        raise ValueError(
            f"reduce_scatter needs one non-negative count per rank ({size}) adding up "
            f"to the rows of x ({x.shape[0] if x.ndim else 'a 0-d array'}); got {counts}."
        )
    x = get_namespace(x).ascontiguousarray(x)
    return (x, counts, op), (("op", op.value), ("counts", tuple(counts)), *_layout(x))


def root_arguments(root, size):
    """The collectives with a root and nothing else to agree on."""
    check_root(root, size)
    return root, (("root", root),)


def color_arguments(color):
    if color is not None and int(color) < 0:
        raise ValueError(f"color must be None or a non-negative int, got {color!r}.")
    return color, ()


def array_arguments(x, agree_layout):
    """An array collective's ``x``; its shape and dtype must agree with
    ``agree_layout`` (allgather), or are checked by the collective itself."""
    x = as_array(x)
    return x, _layout(x) if agree_layout else ()


def _layout_error(comms, op, x):
    """The same ValueError on every rank, describing every rank's layout."""
    layouts = comms._allgather_object((x.shape, x.dtype.str))
    described = ", ".join(
        f"rank {r}: shape {shape} dtype {np.dtype(dtype)}"
        for r, (shape, dtype) in enumerate(layouts)
    )
    return ValueError(
        f"{op} needs arrays with at least one dimension and the same trailing shape and "
        "dtype on every rank; got " + described
    )


def _layout_key(x):
    return zlib.crc32(repr((x.shape[1:], x.dtype.str)).encode())


def agreed_rows(comms, x):
    """Rows of ``x`` on every rank, after checking on every rank that all have
    at least one dimension and the same trailing shape and dtype.

    One allgather of three integers per rank (ndim, rows, a checksum of the
    trailing shape and dtype); only on a mismatch do the ranks exchange their
    layouts to say which rank differs.
    """
    mine = np.array([x.ndim, x.shape[0] if x.ndim else 0, _layout_key(x)], dtype=np.int64)
    ndims, rows, keys = zip(*comms._allgather(mine).reshape(comms.size, 3).tolist())
    if 0 in ndims or len(set(keys)) > 1:
        raise _layout_error(comms, "allgatherv", x)
    return list(rows)


def agreed_exchange(comms, x, op, ints):
    """Every rank's ``ints`` (one list per rank), after checking on every rank
    that all ``x`` have at least one dimension and the same trailing shape
    and dtype, and that all ``ints`` are integers.

    One allgather; only on a mismatch do the ranks exchange their layouts to
    say which rank differs.
    """
    try:
        ints = [operator.index(i) for i in ints]
    except TypeError:
        ints = None
    gathered = comms._allgather_object((x.ndim, _layout_key(x), ints))
    if any(ndim == 0 for ndim, _, _ in gathered) or len({key for _, key, _ in gathered}) > 1:
        raise _layout_error(comms, op, x)
    wrong = [r for r, (_, _, values) in enumerate(gathered) if values is None]
    if wrong:
        raise ValueError(f"{op} needs integer ranks and counts (rank {wrong[0]} passed others).")
    return [values for _, _, values in gathered]


def agreed_pairs(comms, x, dest, source):
    """Rows that ``source`` sends to this rank, after checking on every rank
    that the (dest, source) pairs match and the layouts agree."""
    matrix = agreed_exchange(comms, x, "sendrecv", [x.shape[0] if x.ndim else -1, dest, source])
    size = comms.size
    for r, (_, d, s) in enumerate(matrix):
        if not (0 <= d < size and 0 <= s < size) or matrix[d][2] != r:
            raise ValueError(
                f"sendrecv pairs do not match: rank {r} sends to {d} and receives from {s}, "
                + (
                    f"but rank {d} receives from {matrix[d][2]}."
                    if 0 <= d < size
                    else f"but the comms has {size} ranks."
                )
            )
    return int(matrix[int(source)][0])


def alltoallv_counts(comms, x, counts):
    """``(send, recv)`` row counts of an alltoallv, after checking on every
    rank that every rank's counts fit its rows and the layouts agree.

    ``O(P)`` per rank: one allreduce of four integers (every rank's verdict
    on its own counts, and the layout), then each rank sends one count to
    every rank. Only on a mismatch do the ranks exchange everything to say
    which rank is wrong.
    """
    try:
        send = [int(c) for c in counts]
    except (TypeError, ValueError):
        send = None
    rows = x.shape[0] if x.ndim else -1
    fine = send is not None and len(send) == comms.size
    fine = fine and min(send, default=0) >= 0 and sum(send) == rows
    key = _layout_key(x)
    flags = np.array([x.ndim == 0, key, -key, not fine], dtype=np.int64)
    flags = comms._allreduce(flags, ReduceOp.MAX)
    if flags[0] or flags[1] != -flags[2] or flags[3]:
        _explain_counts(comms, x, [rows] + (send if send is not None else [None]))
    ones = [1] * comms.size
    recv = comms._alltoallv(np.asarray(send, dtype=np.int64), ones, ones)
    return send, [int(c) for c in recv.tolist()]


def _explain_counts(comms, x, ints):
    """Raise, on every rank, the error that says which rank's layout or counts
    are wrong (the ranks found that some are); ``ints``: this rank's rows and
    counts."""
    matrix = agreed_exchange(comms, x, "alltoallv", ints)
    size = comms.size
    bad = [
        r
        for r, row in enumerate(matrix)
        if len(row) != size + 1 or min(row[1:], default=0) < 0 or sum(row[1:]) != row[0]
    ] or [0]
    raise ValueError(
        f"alltoallv needs one non-negative count per rank ({size}) adding up to "
        f"the rows of x; rank {bad[0]} passed counts {matrix[bad[0]][1:]} for "
        f"{matrix[bad[0]][0]} rows."
    )
