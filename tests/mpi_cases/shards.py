"""How test data is split over the ranks, and gathering helpers for cases."""

import os
import shutil
import tempfile
from contextlib import contextmanager

import numpy as np

from mlmpi import get_comms
from mlmpi.datasets import even_counts, shard


def layouts(n_samples, size):
    """Row counts per rank: ``even``, ``uneven`` (rank r holds ~ r+1 parts) and
    ``empty`` (rank 0 holds no rows; at 1 rank the same as ``even``)."""
    weights = np.arange(1, size + 1, dtype=np.float64)
    uneven = np.floor(n_samples * weights / weights.sum()).astype(int)
    uneven[-1] += n_samples - uneven.sum()
    if size > 1:
        empty = [0] + even_counts(n_samples, size - 1)
    else:
        empty = [n_samples]
    return {"even": even_counts(n_samples, size), "uneven": list(uneven), "empty": empty}


#: The layouts with unequal shards, one of them with an empty rank.
UNEQUAL = ("uneven", "empty")


def tested_layouts(n_samples, size, names=None):
    """The layouts of :func:`layouts` a case runs, ``{name: counts}``: at one rank
    the one layout (all three are the same there), at two ranks all three, from
    three ranks on the two :data:`UNEQUAL` ones: an even split is one more
    unequal split there, at a third more of the cases' time. ``names``: only
    those layouts (each distinct list of counts once)."""
    every = layouts(n_samples, size)
    if names is None:
        names = tuple(every) if size == 2 else UNEQUAL
    chosen = {}
    for name in names:
        if every[name] not in chosen.values():
            chosen[name] = every[name]
    return chosen


def each_layout(*arrays, comms=None, names=None):
    """Yield ``(name, local_arrays)`` for every layout of ``arrays`` (same rows)
    that :func:`tested_layouts` gives; ``names`` as there."""
    comms = comms or get_comms()
    for name, counts in tested_layouts(arrays[0].shape[0], comms.size, names).items():
        yield name, tuple(None if a is None else shard(a, comms, counts=counts) for a in arrays)


def gather_rows(local, comms=None):
    """Global array from every rank's rows (rank order)."""
    comms = comms or get_comms()
    return comms.allgatherv(np.ascontiguousarray(local))


def same_error_everywhere(error, match, call, comms=None):
    """``call()`` raises ``error`` matching ``match`` on this rank, with the same
    type and message as on every other rank; returns the message."""
    import pytest

    comms = comms or get_comms()
    with pytest.raises(error, match=match) as info:
        call()
    messages = comms.allgather_object((type(info.value).__name__, str(info.value)))
    assert len(set(messages)) == 1, messages
    return str(info.value)


@contextmanager
def identical_shards(policy):
    """``MLMPI_IDENTICAL_SHARDS=policy`` on every rank for the block."""
    saved = os.environ.get("MLMPI_IDENTICAL_SHARDS")
    os.environ["MLMPI_IDENTICAL_SHARDS"] = policy
    try:
        yield
    finally:
        if saved is None:
            del os.environ["MLMPI_IDENTICAL_SHARDS"]
        else:
            os.environ["MLMPI_IDENTICAL_SHARDS"] = saved


@contextmanager
def shared_dir(comms=None):
    """A temporary directory made by rank 0, the same path on every rank,
    removed when every rank is done with it."""
    comms = comms or get_comms()
    path = comms.bcast_object(tempfile.mkdtemp(prefix="mlmpi-case-") if comms.rank == 0 else None)
    try:
        yield path
    finally:
        comms.barrier()
        if comms.rank == 0:
            shutil.rmtree(path, ignore_errors=True)
