"""Blocks of every rank's rows, passed round the ring of ranks.

Each rank cuts its rows into blocks of ``rows``; in round ``j`` every
rank's ``j``-th block (empty when its shard is shorter) goes once round the
ring with :meth:`~mlmpi.comms.Comms.isendrecv`, the next hop posted before
the current block is used. Memory per rank: two blocks.
"""

import math


def ring_blocks(local, comms, counts, rows):
    """Yield ``(block, owner, start)`` for every block of every rank's ``local``
    rows: the rank that owns it and the position of its first row in that
    rank's shard. ``counts`` holds every rank's number of rows.

    This function is collective (every rank iterates to the end).
    """
    rank, size = comms.rank, comms.size
    rounds = max((math.ceil(c / rows) for c in counts), default=0)
    for j in range(rounds):
        block = local[j * rows : (j + 1) * rows]
        for hop in range(size):
            request = None
            if hop < size - 1:
                request = comms.isendrecv(block, dest=(rank + 1) % size, source=(rank - 1) % size)
            yield block, (rank - hop) % size, j * rows
            if request is not None:
                block = request.wait()
