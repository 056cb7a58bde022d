"""A uniformly random order of the global rows, by a distributed sort of per-row keys.

Row ``r`` gets the key ``RowStream(seed, stream).bits(r)`` (64 random bits,
ties broken by the row index): the order of the keys is a uniform random
permutation of the global rows, the same at any number of ranks. The ranks
sort the keys together: each key goes to the rank of its range of key
values (the keys are uniform, so the ranges are ``P`` equal slices of the
64-bit integers and the ranks receive about ``n / P`` keys each), is ranked
there, and its position goes back to the row's rank. Two all-to-all
exchanges and one allgather of per-rank counts: O(rows on the rank) time
and memory, and O(P) per group.
"""

import numpy as np

from .._array import to_host
from ._streams import RowStream


def shuffled_positions(seed, stream, layout, comms, groups=None, n_groups=1):
    """The position of each of this rank's rows in a uniformly random order of
    the global rows; with ``groups``, its position among the rows of its group.

    This function is collective.

    Parameters
    ----------
    seed, stream : int
        The order's seed and stream.
    layout : RowLayout
        The global rows.
    comms : Comms
    groups : ndarray of shape (n_local,) of int, default=None
        Each row's group, in ``0 .. n_groups - 1``.
    n_groups : int, default=1
        The number of groups (the same on every rank).

    Returns
    -------
    positions : ndarray of shape (n_local,), int64
        Positions from 0 (in the global order, or in the group's).
    """
    size = comms.size
    keys = RowStream(seed, stream).bits(layout.offset, layout.n_local)[:, 0]
    # sorted by key, the rows are grouped by the slice of key values (the
    # rank) they go to: the keys are uniform, so the slices are equal ones
    sent = np.argsort(keys, kind="stable")
    keys = keys[sent]
    owner = (keys.astype(np.float64) * (size / 2.0**64)).astype(np.int64)
    counts = np.bincount(np.minimum(owner, size - 1), minlength=size)
    del owner
    fields = np.empty((layout.n_local, 2 if groups is None else 3), dtype=np.int64)
    fields[:, 0] = keys.view(np.int64)
    del keys
    fields[:, 1] = sent + layout.offset
    if groups is not None:
        fields[:, 2] = groups[sent]
    received, received_counts = comms.alltoallv(fields, counts, return_counts=True)
    del fields
    received = to_host(received)
    by = (received[:, 1], received[:, 0].view(np.uint64))  # key, then global row
    if groups is None:
        ordered = np.lexsort(by)
        del received, by
        positions = np.empty(len(ordered), dtype=np.int64)
        positions[ordered] = np.arange(len(ordered))
        del ordered
        positions += _below(comms, np.array([len(positions)]))[0]
    else:
        got_groups = received[:, 2]
        ordered = np.lexsort(by + (got_groups,))
        del by
        sorted_groups = got_groups[ordered]
        # a row's position in its group: its group's rows in the lower slices, then its rank here
        first = np.searchsorted(sorted_groups, np.arange(n_groups))
        before = _below(comms, np.bincount(got_groups, minlength=n_groups))
        positions = np.empty(len(ordered), dtype=np.int64)
        positions[ordered] = np.arange(len(ordered)) + (before - first)[sorted_groups]
        del received, ordered, sorted_groups, got_groups
    back = to_host(comms.alltoallv(positions, received_counts))
    result = np.empty(layout.n_local, dtype=np.int64)
    result[sent] = back
    return result


def _below(comms, counts):
    """The sum of ``counts`` (int64, the same length on every rank) over the
    ranks below this one. This function is collective."""
    every = to_host(comms.allgather(counts.astype(np.int64)))
    return every.reshape(comms.size, -1)[: comms.rank].sum(axis=0)
