"""Collectives of the default comms, checked against values every rank can compute."""

import numpy as np

from mlmpi import get_comms

DTYPES = (np.float32, np.float64, np.int64)


def _local(rank, dtype, shape=(3, 2)):
    return (np.arange(np.prod(shape)).reshape(shape) + 10 * rank).astype(dtype)


def case_allreduce_ops():
    comms = get_comms()
    for dtype in DTYPES:
        parts = [_local(r, dtype) for r in range(comms.size)]
        mine = parts[comms.rank]
        for op, expected in (
            ("sum", np.sum(parts, axis=0)),
            ("max", np.max(parts, axis=0)),
            ("min", np.min(parts, axis=0)),
            ("prod", np.prod(parts, axis=0)),
        ):
            out = comms.allreduce(mine, op=op)
            assert out.dtype == dtype and out.shape == mine.shape
            np.testing.assert_array_equal(out, expected.astype(dtype))
        assert comms.allreduce(np.empty((0, 4), dtype)).shape == (0, 4)
    assert float(comms.allreduce(1.5)) == 1.5 * comms.size
