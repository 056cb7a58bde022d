"""``allreduce(..., out=)`` and ``iallreduce(..., out=)`` of the default comms.

``MLMPI_TEST_XP=cupy`` runs the same cases on CuPy arrays (``tests/test_comms_out_mpi.py``
on a GPU, with ``MLMPI_COMMS`` choosing MPI host staging or NCCL).
"""

import os

import numpy as np
import pytest

from mlmpi import get_comms
from mlmpi.comms import profile

if os.environ.get("MLMPI_TEST_XP") == "cupy":
    import cupy as xp
else:
    xp = np


def _host(a):
    return a.get() if xp is not np else a


def _parts(size, dtype, shape=(5, 3)):
    """Every rank's input (each rank can compute all of them)."""
    base = np.arange(np.prod(shape)).reshape(shape) % 7
    return [(base + 3 * r).astype(dtype) for r in range(size)]


def case_allreduce_into_out():
    comms = get_comms()
    for dtype in (np.float16, np.float32, np.float64, np.int64):
        parts = _parts(comms.size, dtype)
        x = xp.asarray(parts[comms.rank])
        for op, expected in (("sum", np.sum(parts, axis=0)), ("max", np.max(parts, axis=0))):
            out = xp.full(x.shape, -1, dtype=dtype)
            assert comms.allreduce(x, op=op, out=out) is out
            np.testing.assert_array_equal(_host(out), expected.astype(dtype))
            np.testing.assert_array_equal(_host(x), parts[comms.rank])  # input untouched


def case_allreduce_in_place():
    comms = get_comms()
    parts = _parts(comms.size, np.float32)
    x = xp.array(parts[comms.rank])  # a copy: parts stays the expected input
    for _ in range(2):  # reusing the same buffer
        assert comms.allreduce(x, out=x) is x
    expected = np.sum(parts, axis=0) * comms.size
    np.testing.assert_array_equal(_host(x), expected)
    zero_d = xp.asarray(np.float64(comms.rank))
    comms.allreduce(zero_d, op="max", out=zero_d)
    assert float(zero_d) == comms.size - 1
    empty = xp.empty((0, 4), np.float32)
    assert comms.allreduce(empty, out=empty).shape == (0, 4)


def case_iallreduce_out_several_in_flight():
    comms = get_comms()
    parts = [_parts(comms.size, np.float32, shape=(n,)) for n in (1, 1000, 70000)]
    buffers = [xp.array(p[comms.rank]) for p in parts]
    outs = [xp.empty_like(b) for b in buffers]
    requests = [comms.iallreduce(b, out=o) for b, o in zip(buffers[:2], outs[:2])]
    requests.append(comms.iallreduce(buffers[2], out=buffers[2]))  # in place
    for request in reversed(requests):  # waiting in any order is fine
        request.wait()
        assert request.test()
    assert requests[0].wait() is outs[0] and requests[2].wait() is buffers[2]
    for got, p in zip([outs[0], outs[1], buffers[2]], parts):
        np.testing.assert_array_equal(_host(got), np.sum(p, axis=0))


def case_bad_out_raises_on_every_rank():
    comms = get_comms()
    x = xp.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="shape"):
        comms.allreduce(x, out=xp.empty((3, 4), np.float32))
    with pytest.raises(ValueError, match="dtype"):
        comms.iallreduce(x, out=xp.empty((4, 3), np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        comms.allreduce(x[:, :2], out=xp.empty((4, 6), np.float32)[:, :2])
    with pytest.raises(TypeError, match="same type"):
        comms.allreduce(x, out=[[0.0] * 3] * 4)
    # the comms still works after the refused calls
    np.testing.assert_array_equal(_host(comms.allreduce(x, out=xp.empty_like(x))), comms.size)


def case_out_is_profiled_with_its_bytes():
    comms = get_comms()
    x = xp.ones(256, np.float64)
    with profile() as prof:
        comms.allreduce(x, out=x)
        comms.iallreduce(x, out=x).wait()
    rows = {op: (calls, nbytes) for op, calls, nbytes, _ in prof.rows()}
    assert rows["allreduce"] == (1, 2048)
    assert rows["iallreduce"] == (1, 2048)
    assert rows["iallreduce.wait"][0] == 1
