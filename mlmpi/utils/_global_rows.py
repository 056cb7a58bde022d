"""Values of rows addressed by their global index, wherever their owners are.

Rows are numbered globally in rank order (rank 0's first); rank ``r`` owns
the ``counts[r]`` indices after the rows of the ranks before it. Both helpers
send only the indices asked for, grouped by owner (``alltoallv``): the
traffic per rank follows the number of indices it asks about or owns, never
the global number of rows.
"""

import numpy as np

from .._array import to_host


def owners(indices, counts):
    """The rank that owns each global index of the host int array ``indices``."""
    return np.searchsorted(np.cumsum(counts), indices, side="right")


def by_owner(flat, counts):
    """``(order, send)``: ``flat[order]`` groups the indices by owner, ``send[r]``
    of them going to rank ``r``."""
    owner = owners(flat, counts)
    order = np.argsort(owner, kind="stable")
    return order, np.bincount(owner, minlength=len(counts))


def fetch_rows(values, indices, comms, counts):
    """Rows ``values[g - offset]`` of their owners for every global index ``g``
    of ``indices`` (any shape); the result has shape ``indices.shape +
    values.shape[1:]``. Two alltoallv: the indices to their owners, the rows back.

    This function is collective.
    """
    flat = to_host(indices).ravel().astype(np.int64)
    order, send = by_owner(flat, counts)
    requested, received = comms.alltoallv(flat[order], send, return_counts=True)
    offset = int(sum(counts[: comms.rank]))
    replies = comms.alltoallv(np.ascontiguousarray(values[requested - offset]), received)
    out = np.empty_like(replies)
    out[order] = replies
    return out.reshape(indices.shape + values.shape[1:])


def scatter_min(target, indices, values, comms, counts):
    """``target[g - offset] = min(target[g - offset], v)`` on the owner of every
    global index ``g`` of ``indices``, for its value ``v`` of ``values``
    (``target``: the owner's local int64 array; several values for one index
    keep the smallest). One alltoallv of (index, value) pairs.

    This function is collective.
    """
    flat = np.asarray(indices, dtype=np.int64)
    order, send = by_owner(flat, counts)
    pairs = np.stack([flat[order], np.asarray(values, dtype=np.int64)[order]], axis=1)
    got = comms.alltoallv(pairs, send)
    offset = int(sum(counts[: comms.rank]))
    np.minimum.at(target, got[:, 0] - offset, got[:, 1])


class Halo:
    """The rows that a list of global indices touches: this rank's own and the
    others' (the halo), each remote row fetched once.

    ``values_of(local)`` gives, for every index of the list, ``local``'s value
    at that row, wherever it lives: the halo's values come from their owners
    (:func:`fetch_rows` of the distinct remote indices only).
    """

    def __init__(self, indices, counts, rank):
        self.counts = counts
        start = int(sum(counts[:rank]))
        n_local = int(counts[rank])
        local = (indices >= start) & (indices < start + n_local)
        self.remote = np.unique(indices[~local])
        self._position = np.where(
            local, indices - start, n_local + np.searchsorted(self.remote, indices)
        )

    def values_of(self, local, comms):
        """``local``'s value at every index of the list (``local``: one value per
        local row). This method is collective."""
        halo = fetch_rows(local, self.remote, comms, self.counts)
        return np.concatenate([local, halo])[self._position]
