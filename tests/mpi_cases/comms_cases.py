"""Collectives of the default comms, checked against values every rank can compute.

``MLMPI_TEST_XP=cupy`` runs the same cases on CuPy arrays (``tests/test_comms_gpu.py``,
with ``MLMPI_COMMS`` choosing MPI host staging or NCCL).
"""

import os

import numpy as np
import pytest
from shards import layouts

from mlmpi import get_comms
from mlmpi.comms import MPIComms, profile
from mlmpi.datasets import shard

DTYPES = (np.float32, np.float64, np.int64)

if os.environ.get("MLMPI_TEST_XP") == "cupy":
    from _fake_cupy import install_if_requested  # the CPU stand-in, for tests/test_device_path.py

    install_if_requested()
    import cupy as xp
else:
    xp = np


def _local(rank, dtype, shape=(3, 2)):
    return xp.asarray((np.arange(np.prod(shape)).reshape(shape) + 10 * rank).astype(dtype))


def _host(out, dtype=None, shape=None):
    """``out`` as NumPy, after checking it kept the input's array type, dtype and shape."""
    assert isinstance(out, xp.ndarray), type(out)
    if dtype is not None:
        assert out.dtype == dtype, (out.dtype, dtype)
    if shape is not None:
        assert out.shape == shape, (out.shape, shape)
    return out.get() if xp is not np else out


def case_allreduce_ops():
    comms = get_comms()
    for dtype in DTYPES:
        parts = [_local(r, dtype) for r in range(comms.size)]
        mine = parts[comms.rank]
        host = [_host(p) for p in parts]
        for op, expected in (
            ("sum", np.sum(host, axis=0)),
            ("max", np.max(host, axis=0)),
            ("min", np.min(host, axis=0)),
            ("PROD", np.prod(host, axis=0)),
        ):
            out = _host(comms.allreduce(mine, op=op), dtype, mine.shape)
            if op == "PROD" and dtype != np.int64:  # the order of the products rounds
                np.testing.assert_allclose(out, expected.astype(dtype), rtol=1e-5)
            else:
                np.testing.assert_array_equal(out, expected.astype(dtype))
        _host(comms.allreduce(xp.empty((0, 4), dtype)), dtype, (0, 4))
        zero_d = comms.allreduce(xp.asarray(dtype(comms.rank + 1)), op="max")
        assert _host(zero_d, dtype, ()) == comms.size
    assert float(comms.allreduce(1.5)) == 1.5 * comms.size


def case_allreduce_does_not_alias_input():
    comms = get_comms()
    x = xp.ones(4)
    out = comms.allreduce(x)
    out[:] = -1
    np.testing.assert_array_equal(_host(x), np.ones(4))


def case_reduce_to_every_root():
    comms = get_comms()
    for root in range(comms.size):
        for dtype in DTYPES:
            parts = [_host(_local(r, dtype)) for r in range(comms.size)]
            out = comms.reduce(_local(comms.rank, dtype), op="sum", root=root)
            if comms.rank == root:
                np.testing.assert_array_equal(_host(out, dtype, (3, 2)), np.sum(parts, axis=0))
            else:
                assert out is None
        out = comms.reduce(xp.asarray(float(comms.rank)), op="max", root=root)
        assert out is None if comms.rank != root else float(_host(out)) == comms.size - 1


def case_reduce_scatter_blocks():
    comms = get_comms()
    for dtype in DTYPES:
        parts = [_host(_local(r, dtype, shape=(7, 3))) for r in range(comms.size)]
        total = np.sum(parts, axis=0)
        for counts in layouts(7, comms.size).values():
            block = comms.reduce_scatter(_local(comms.rank, dtype, shape=(7, 3)), counts)
            start = sum(counts[: comms.rank])
            expected = total[start : start + counts[comms.rank]]
            np.testing.assert_array_equal(_host(block, dtype, expected.shape), expected)
    top = comms.reduce_scatter(
        xp.asarray([float(comms.rank)] * comms.size), [1] * comms.size, "max"
    )
    assert float(_host(top, np.float64, (1,))[0]) == comms.size - 1
    with pytest.raises(ValueError, match="one non-negative count per rank"):
        comms.reduce_scatter(xp.ones((3, 2)), [3] + [1] * comms.size)


def case_bcast_from_every_root():
    comms = get_comms()
    for root in range(comms.size):
        for dtype in DTYPES:
            sent = _local(root, dtype, shape=(4, 3))
            # Non-roots pass None, or a placeholder of another shape and dtype.
            placeholder = None if comms.rank % 2 else xp.zeros(1, dtype=np.int8)
            out = comms.bcast(sent if comms.rank == root else placeholder, root=root)
            np.testing.assert_array_equal(_host(out, dtype, (4, 3)), _host(sent))
            if comms.rank == root:
                out[...] = 0  # the root gets a copy, not its own array
                assert _host(sent).any()
        zero_d = comms.bcast(xp.asarray(7.5) if comms.rank == root else None, root=root)
        assert _host(zero_d, np.float64, ()) == 7.5
        empty = comms.bcast(xp.empty((0, 5), np.float32) if comms.rank == root else None, root=root)
        _host(empty, np.float32, (0, 5))


def case_allgather():
    comms = get_comms()
    for dtype in DTYPES:
        out = comms.allgather(_local(comms.rank, dtype))
        expected = np.concatenate([_host(_local(r, dtype)) for r in range(comms.size)])
        np.testing.assert_array_equal(_host(out, dtype, (3 * comms.size, 2)), expected)
    ranks = comms.allgather(xp.asarray(comms.rank, dtype=np.int64))
    np.testing.assert_array_equal(_host(ranks, np.int64, (comms.size,)), np.arange(comms.size))
    _host(comms.allgather(xp.empty((0, 2), np.float32)), np.float32, (0, 2))


def case_allgatherv_layouts():
    comms = get_comms()
    for dtype in DTYPES:
        for trailing in ((), (3,), (2, 2)):
            n = 11
            full = np.arange(n * int(np.prod(trailing)), dtype=dtype).reshape((n,) + trailing)
            for name, counts in layouts(n, comms.size).items():
                local = shard(xp.asarray(full), comms, counts=counts)
                out = _host(comms.allgatherv(local), dtype, full.shape)
                np.testing.assert_array_equal(out, full, err_msg=name)
    # Every rank contributes zero rows.
    _host(comms.allgatherv(xp.empty((0, 3), np.float64)), np.float64, (0, 3))
    # Only the last rank contributes.
    last = comms.rank == comms.size - 1
    local = xp.ones((5 if last else 0, 2), np.float32)
    _host(comms.allgatherv(local), np.float32, (5, 2))


def case_allgatherv_mismatch_raises_on_every_rank():
    comms = get_comms()
    if comms.size > 1:
        dtype = np.float32 if comms.rank == 0 else np.float64
        with pytest.raises(ValueError, match="same trailing shape and dtype"):
            comms.allgatherv(xp.ones((2, 3), dtype))
        width = 3 if comms.rank else 4
        with pytest.raises(ValueError, match="rank 0: shape \\(2, 4\\)"):
            comms.allgatherv(xp.ones((2, width)))
    scalar = xp.asarray(1.0) if comms.rank == 0 else xp.ones(1)
    with pytest.raises(ValueError, match="at least one dimension"):
        comms.allgatherv(scalar)
    # The comms is still usable afterwards.
    assert float(_host(comms.allreduce(xp.ones(1)))[0]) == comms.size


def case_iallreduce():
    comms = get_comms()
    x = xp.full(6, comms.rank + 1, dtype=np.float32)
    first = comms.iallreduce(x)
    second = comms.iallreduce(xp.asarray(comms.rank, dtype=np.int64), op="max")
    out = _host(first.wait(), np.float32, (6,))
    np.testing.assert_array_equal(out, np.full(6, comms.size * (comms.size + 1) / 2))
    assert first.test() and first.wait() is first.wait()
    while not second.test():  # test() drives the request to completion without blocking
        pass
    assert int(_host(second.wait(), np.int64, ())) == comms.size - 1
    empty = comms.iallreduce(xp.empty((0, 2)))
    _host(empty.wait(), np.float64, (0, 2))


def case_objects_and_barrier():
    comms = get_comms()
    for root in range(comms.size):
        obj = {"root": root, "payload": [1, "two", 3.0]} if comms.rank == root else None
        assert comms.bcast_object(obj, root=root) == {"root": root, "payload": [1, "two", 3.0]}
    gathered = comms.allgather_object(("rank", comms.rank, None))
    assert gathered == [("rank", r, None) for r in range(comms.size)]
    comms.barrier()
    assert comms.exclusive_scan_rows(comms.rank + 1) == (
        sum(r + 1 for r in range(comms.rank)),
        comms.size * (comms.size + 1) // 2,
    )


def _check_sub(sub, members):
    """Collectives on ``sub``, whose ranks are the world ranks ``members`` (in order)."""
    world = get_comms().rank
    assert sub.size == len(members) and members[sub.rank] == world
    assert sub.backend == get_comms().backend
    total = sub.allreduce(xp.asarray([world, 1], dtype=np.int64))
    np.testing.assert_array_equal(_host(total), [sum(members), len(members)])
    rows = sub.allgatherv(xp.full((world % 3, 2), world, dtype=np.float64))
    expected = np.concatenate([np.full((m % 3, 2), m, dtype=np.float64) for m in members])
    np.testing.assert_array_equal(_host(rows), expected)
    root = sub.size - 1
    out = sub.bcast(xp.asarray([world]) if sub.rank == root else None, root=root)
    assert int(_host(out)[0]) == members[root]
    assert sub.allgather_object(world) == members
    sub.barrier()


def case_split_by_parity():
    comms = get_comms()
    sub = comms.split(comms.rank % 2)
    _check_sub(sub, [r for r in range(comms.size) if r % 2 == comms.rank % 2])
    # key orders the ranks of the sub-communicator: here reversed.
    backwards = comms.split(0, key=-comms.rank)
    _check_sub(backwards, list(range(comms.size))[::-1])
    # Splits of splits.
    inner = sub.split(0)
    _check_sub(inner, [r for r in range(comms.size) if r % 2 == comms.rank % 2])


def case_split_with_color_none():
    comms = get_comms()
    left_out = comms.size - 1
    sub = comms.split(None if comms.rank == left_out else 0)
    if comms.rank == left_out:
        assert sub is None
    else:
        _check_sub(sub, list(range(comms.size - 1)))
    comms.barrier()


def case_mpicomms_on_user_split_communicator():
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    user = world.Split(world.rank % 2, world.rank)
    comms = MPIComms(user)
    members = [r for r in range(world.size) if r % 2 == world.rank % 2]
    assert (comms.rank, comms.size) == (user.rank, user.size)
    out = comms.allreduce(np.asarray([world.rank], dtype=np.int64))
    assert int(out[0]) == sum(members)
    assert comms.allgather_object(world.rank) == members
    assert comms.comm != user  # mlmpi talks on its own duplicate
    with pytest.raises(TypeError, match="intracommunicator"):
        MPIComms(MPI.COMM_NULL)
    user.Free()


def case_bad_root_and_op_raise_on_every_rank():
    comms = get_comms()
    for bad in (comms.size, -1):
        with pytest.raises(ValueError, match=f"root={bad} is not a rank"):
            comms.reduce(xp.ones(2), root=bad)
        with pytest.raises(ValueError, match=f"root={bad} is not a rank"):
            comms.bcast(xp.ones(2), root=bad)
        with pytest.raises(ValueError, match=f"root={bad} is not a rank"):
            comms.bcast_object("x", root=bad)
    for call in (comms.allreduce, comms.reduce, comms.iallreduce):
        with pytest.raises(ValueError, match="Unknown reduction op 'avg'"):
            call(xp.ones(2), op="avg")
    assert float(_host(comms.allreduce(xp.ones(1)))[0]) == comms.size


def case_profile_summary():
    comms = get_comms()
    with profile() as prof:
        for _ in range(3):
            comms.allreduce(xp.ones(10, dtype=np.float64))
        comms.bcast(xp.ones(4, dtype=np.float32) if comms.rank == 0 else None)
        comms.iallreduce(xp.ones(2, dtype=np.int64)).wait()
        comms.barrier()
    rows = {op: (calls, nbytes) for op, calls, nbytes, _ in prof.rows()}
    assert rows["allreduce"] == (3, 240)
    assert rows["bcast"] == (1, 16 if comms.rank == 0 else 0)
    assert rows["iallreduce"] == (1, 16) and rows["iallreduce.wait"] == (1, 0)
    assert rows["barrier"] == (1, 0)
    # Called by user code (outside any collective method), every collective but a
    # wait first agrees on the call: one allreduce of 64 bytes, named after it.
    agreements = {op: row for op, row in rows.items() if op.endswith("/agree")}
    if comms.size > 1:
        assert agreements == {
            "Comms.allreduce/agree": (3, 192),
            "Comms.bcast/agree": (1, 64),
            "Comms.iallreduce/agree": (1, 64),
            "Comms.barrier/agree": (1, 64),
        }
    else:
        assert agreements == {}
    assert prof.total_bytes == sum(nbytes for _, nbytes in rows.values())
    received = {}
    for op, *_, got in prof.events:
        received[op] = received.get(op, 0) + got
    assert received["allreduce"] == 240 and received["iallreduce.wait"] == 16
    assert received["bcast"] == (0 if comms.rank == 0 else 16)  # the root receives nothing
    assert received["barrier"] == received["iallreduce"] == 0
    assert prof.total_received == sum(received.values())
    assert all(seconds >= 0 for *_, seconds in prof.rows())
    table = prof.table()
    assert table.splitlines()[0].split() == ["op", "calls", "bytes", "seconds"]
    assert "allreduce" in table and table.splitlines()[-1].startswith("total")
    # Nothing is recorded outside the block.
    comms.barrier()
    assert len(prof.events) == 7 + sum(calls for calls, _ in agreements.values())


def case_nccl_unavailable_raises_on_every_rank():
    from mlmpi.comms.nccl import NCCLComms, unavailable_reason

    if unavailable_reason() is not None:  # else tests/test_comms_gpu.py runs NCCL itself
        assert NCCLComms.available() is False
        with pytest.raises(RuntimeError, match=r"NCCLComms is unavailable: .+ \(on rank 0\)\."):
            NCCLComms()
