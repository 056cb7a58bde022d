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
    rows = np.arange(layout.offset, layout.offset + layout.n_local, dtype=np.int64)
    keys = RowStream(seed, stream).bits(layout.offset, layout.n_local)[:, 0]
    groups = np.zeros(layout.n_local, dtype=np.int64) if groups is None else groups
    # the slice of key values each key falls in: its top bits times the number of ranks
    owner = ((keys >> np.uint64(32)).astype(np.float64) * size / 2.0**32).astype(np.int64)
    owner = np.minimum(owner, size - 1)
    sent = np.argsort(owner, kind="stable")
    counts = np.bincount(owner, minlength=size)
    fields = np.stack([keys.view(np.int64), rows, groups.astype(np.int64)], axis=1)[sent]
    received, received_counts = comms.alltoallv(fields, counts, return_counts=True)
    received = to_host(received)
    got_keys, got_rows, got_groups = received[:, 0].view(np.uint64), received[:, 1], received[:, 2]
    ordered = np.lexsort((got_rows, got_keys, got_groups))
    # the group's rows in the lower slices come first
    per_slice = to_host(comms.allgather(np.bincount(got_groups, minlength=n_groups)))
    before = per_slice.reshape(size, n_groups)[: comms.rank].sum(axis=0)
    sorted_groups = got_groups[ordered]
    group_starts = np.searchsorted(sorted_groups, np.arange(n_groups))
    within = np.arange(len(ordered)) - group_starts[sorted_groups]
    positions = np.empty(len(ordered), dtype=np.int64)
    positions[ordered] = before[sorted_groups] + within
    back = to_host(comms.alltoallv(positions, received_counts))
    result = np.empty(layout.n_local, dtype=np.int64)
    result[sent] = back
    return result
