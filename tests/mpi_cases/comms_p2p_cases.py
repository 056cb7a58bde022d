"""sendrecv, isendrecv and alltoallv of the default comms, checked against
values every rank can compute.

``MLMPI_TEST_XP=cupy`` runs the same cases on CuPy arrays
(``tests/test_comms_p2p_mpi.py`` with ``MLMPI_COMMS`` choosing MPI or NCCL).
"""

import os

import numpy as np
import pytest

from mlmpi import get_comms
from mlmpi.comms import profile

DTYPES = (np.float32, np.float64, np.int64)

if os.environ.get("MLMPI_TEST_XP") == "cupy":
    import cupy as xp
else:
    xp = np


def _block(rank, dtype, rows=None):
    """Rank ``rank``'s block: ``rank`` rows (rank 0 has none) of 3 columns."""
    rows = rank if rows is None else rows
    return (np.arange(rows * 3).reshape(rows, 3) + 100 * rank).astype(dtype)


def _host(out, dtype, shape):
    assert isinstance(out, xp.ndarray), type(out)
    assert out.dtype == dtype and out.shape == shape, (out.dtype, out.shape, dtype, shape)
    return out.get() if xp is not np else out


def case_sendrecv_ring_both_directions():
    comms = get_comms()
    r, n = comms.rank, comms.size
    for dtype in DTYPES:
        mine = xp.asarray(_block(r, dtype))
        for step in (1, -1):
            dest, source = (r + step) % n, (r - step) % n
            out = comms.sendrecv(mine, dest=dest, source=source)
            np.testing.assert_array_equal(_host(out, dtype, (source, 3)), _block(source, dtype))


def case_isendrecv_overlaps_and_rotates_all_blocks():
    comms = get_comms()
    r, n = comms.rank, comms.size
    block = xp.asarray(_block(r, np.float64))
    seen = []
    for _ in range(n):
        request = comms.isendrecv(block, dest=(r + 1) % n, source=(r - 1) % n)
        seen.append(float(block.sum()))  # work on the block in flight
        block = request.wait()
        assert request.test()
    expected = [float(_block((r - s) % n, np.float64).sum()) for s in range(n)]
    assert seen == expected
    np.testing.assert_array_equal(_host(block, np.float64, (r, 3)), _block(r, np.float64))


def case_sendrecv_pairs_swap():
    comms = get_comms()
    r, n = comms.rank, comms.size
    partner = r ^ 1 if (r ^ 1) < n else r
    out = comms.sendrecv(xp.asarray(_block(r, np.float32, rows=2)), dest=partner, source=partner)
    np.testing.assert_array_equal(
        _host(out, np.float32, (2, 3)), _block(partner, np.float32, rows=2)
    )


def case_sendrecv_mismatch_raises_on_every_rank():
    comms = get_comms()
    r, n = comms.rank, comms.size
    last = r == n - 1
    if n > 1:
        dtype = np.float32 if last else np.float64
        with pytest.raises(ValueError, match="same trailing shape and dtype on every rank"):
            comms.sendrecv(xp.asarray(_block(r, dtype)), dest=(r + 1) % n, source=(r - 1) % n)
    with pytest.raises(ValueError, match="sendrecv pairs do not match|sends to"):
        source = (r - 1) % n if not last else n  # out of range on the last rank
        comms.sendrecv(xp.asarray(_block(r, np.float64)), dest=(r + 1) % n, source=source)
    if n > 2:
        with pytest.raises(ValueError, match="sendrecv pairs do not match"):
            comms.sendrecv(xp.asarray(_block(r, np.float64)), dest=(r + 1) % n, source=(r + 1) % n)
    # the comms still works after the errors
    out = comms.sendrecv(xp.asarray(_block(r, np.int64)), dest=r, source=r)
    np.testing.assert_array_equal(_host(out, np.int64, (r, 3)), _block(r, np.int64))


def _alltoallv_counts(rank, size):
    """Rows rank ``rank`` sends to each rank: ``(rank + dest) % 3`` (zeros included)."""
    return [(rank + dest) % 3 for dest in range(size)]


def _alltoallv_rows(source, dest, size, dtype):
    counts = _alltoallv_counts(source, size)
    start = sum(counts[:dest])
    return _block(source, dtype, rows=sum(counts))[start : start + counts[dest]]


def case_alltoallv():
    comms = get_comms()
    r, n = comms.rank, comms.size
    for dtype in DTYPES:
        counts = _alltoallv_counts(r, n)
        mine = xp.asarray(_block(r, dtype, rows=sum(counts)))
        out = comms.alltoallv(mine, counts)
        expected = np.concatenate([_alltoallv_rows(s, r, n, dtype) for s in range(n)])
        np.testing.assert_array_equal(_host(out, dtype, expected.shape), expected)
    one_d = comms.alltoallv(xp.arange(n, dtype=np.int64) + 10 * r, [1] * n)
    np.testing.assert_array_equal(_host(one_d, np.int64, (n,)), 10 * np.arange(n) + r)


def case_alltoallv_bad_counts_raise_on_every_rank():
    comms = get_comms()
    r, n = comms.rank, comms.size
    last = r == n - 1
    x = xp.asarray(_block(r, np.float64, rows=n))
    counts = [1] * n
    with pytest.raises(ValueError, match="one non-negative count per rank"):
        comms.alltoallv(x, counts + [0] if last else counts)
    with pytest.raises(ValueError, match="one non-negative count per rank"):
        comms.alltoallv(x, [2] + [1] * (n - 1) if last else counts)
    if n > 1:
        with pytest.raises(ValueError, match="same trailing shape and dtype"):
            comms.alltoallv(x[:, :2] if last else x, counts)


def case_profile_records_p2p():
    comms = get_comms()
    r, n = comms.rank, comms.size
    with profile() as prof:
        comms.sendrecv(xp.ones((2, 2)), dest=(r + 1) % n, source=(r - 1) % n)
        comms.isendrecv(xp.ones((2, 2)), dest=(r + 1) % n, source=(r - 1) % n).wait()
        comms.alltoallv(xp.ones((n, 2)), [1] * n)
        comms.alltoallv(xp.ones((2 * n, 2)), [2] * n)
    rows = {op: (calls, nbytes) for op, calls, nbytes, _ in prof.rows()}
    assert rows["sendrecv"] == (1, 32) and rows["isendrecv"] == (1, 32)
    assert rows["isendrecv.wait"] == (1, 0)
    assert rows["alltoallv"] == (2, 16 * n + 32 * n)
    received = [(op, got) for op, *_, got in prof.events if "agree" not in op]
    assert received == [
        ("sendrecv", 32),
        ("isendrecv", 0),
        ("isendrecv.wait", 32),
        ("alltoallv", 16 * n),
        ("alltoallv", 32 * n),
    ]


def case_alltoallv_returns_the_received_counts():
    comms = get_comms()
    r, n = comms.rank, comms.size
    counts = _alltoallv_counts(r, n)
    out, received = comms.alltoallv(
        xp.asarray(_block(r, np.float64, rows=sum(counts))), counts, return_counts=True
    )
    assert received == [_alltoallv_counts(s, n)[r] for s in range(n)]
    assert out.shape[0] == sum(received)


def case_isendrecv_with_known_rows_skips_the_agreement():
    comms = get_comms()
    r, n = comms.rank, comms.size
    left = (r - 1) % n
    exchanged = []
    gather = comms._allgather_object  # how the ranks agree on a layout
    comms._allgather_object = lambda obj: exchanged.append(obj) or gather(obj)
    try:
        for recv_rows in (left + 1, None):
            exchanged.clear()
            out = comms.isendrecv(
                xp.asarray(_block(r, np.float32, rows=r + 1)),
                dest=(r + 1) % n,
                source=left,
                recv_rows=recv_rows,
            ).wait()
            np.testing.assert_array_equal(
                _host(out, np.float32, (left + 1, 3)), _block(left, np.float32, rows=left + 1)
            )
            assert (len(exchanged) == 0) == (recv_rows is not None), exchanged
    finally:
        del comms._allgather_object
