"""Blocks of every rank's rows, passed round the ring of ranks.

Each rank cuts its rows into blocks of ``rows``; in round ``j`` every rank's
``j``-th block (empty when its shard is shorter) goes once round the ring
with :meth:`~mlmpi.comms.Comms.isendrecv`, the next hop posted before the
current block is used, so the transfer overlaps the caller's work. Every
rank knows every shard's size, so each hop is point-to-point only (no
agreement collective per hop). Memory per rank: two blocks. The one ring of
the kNN searches, DBSCAN's neighbourhoods and the rank-statistic metrics.
"""

import math


def ring_blocks(local, comms, counts, rows, prepare=None, hops=None):
    """Yield ``(block, owner, start, request)`` for every block of every rank's
    ``local`` rows.

    ``owner`` is the rank the block comes from and ``start`` the position of
    its first row in that rank's shard (``offset of owner + start`` is its
    global index); ``request`` (None on the last hop) brings the next block,
    already in flight: calling its ``test()`` while working lets MPI progress
    it. ``prepare(block)``, if given, is applied by the owner before the block
    leaves. ``counts`` holds every rank's number of rows. ``hops``: the ranks
    each block visits, its owner first (default: all of them); with ``hops=h``
    a rank meets the blocks of the ``h - 1`` ranks before it in the ring.

    This function is collective (every rank iterates to the end).
    """
    rank, size = comms.rank, comms.size
    hops = size if hops is None else hops
    rounds = max((math.ceil(c / rows) for c in counts), default=0)
    for j in range(rounds):
        block = local[j * rows : (j + 1) * rows]
        if prepare is not None:
            block = prepare(block)
        for hop in range(hops):
            request = None
            if hop < hops - 1:
                coming = counts[(rank - hop - 1) % size] - j * rows  # the next owner's rows left
                request = comms.isendrecv(
                    block,
                    dest=(rank + 1) % size,
                    source=(rank - 1) % size,
                    recv_rows=min(max(coming, 0), rows),
                )
            yield block, (rank - hop) % size, j * rows, request
            if request is not None:
                block = request.wait()
