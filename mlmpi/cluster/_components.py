"""Connected components of a graph whose nodes are global rows, spread over ranks.

Each rank owns the nodes of its rows and knows some edges. Nothing is
gathered: the components come from FastSV (Zhang, Azad and Hu, "FastSV: a
distributed-memory connected component algorithm with fast convergence",
SIAM PP 2020), a Shiloach-Vishkin variant in which every node keeps a
parent ``f``, and each round

1. hooks the parent of every node ``u`` to the smallest grandparent among
   ``u``'s neighbours (``f[f[u]] = min(f[f[u]], min gf[v])``),
2. hooks ``u`` itself there (``f[u] = min(f[u], min gf[v])``),
3. shortcuts (``f[u] = min(f[u], gf[u])``),

until no grandparent ``gf = f[f]`` changes. Parents only decrease, so every
node ends pointing at the smallest node of its component. Reading a parent
or a grandparent that another rank owns is a request to that rank, and
hooking another rank's node a message to it (``alltoallv``): the traffic of
a round follows the number of edges and nodes of the rank, never the global
number of rows. Rounds: a few more than the logarithm of the components'
diameter.
"""

import numpy as np

from ..utils._global_rows import fetch_rows, owners, scatter_min

_MAX_ROUNDS = 200  # far more than FastSV needs (logarithmic): a guard against a logic error


def component_minima(parent, left, right, comms, counts):
    """The smallest node of the component of every node of this rank.

    Parameters
    ----------
    parent : ndarray of int64, shape (counts[rank],)
        Each local node's initial parent: a node of its component no larger
        than itself (``offset + arange`` for none known); nodes whose parent
        is another node must not be ends of edges.
    left, right : ndarray of int64
        Edges ``left[i] -- right[i]`` known to this rank (global nodes; each
        undirected edge may be known to any rank, and more than once). A
        rank sends each edge to the owners of both ends first.
    comms : Comms
    counts : sequence of int
        Nodes owned by each rank.

    Returns
    -------
    minima : ndarray of int64, shape (counts[rank],)

    Notes
    -----
    This function is collective.
    """
    offset = int(sum(counts[: comms.rank]))
    u, v = _incident_edges(left, right, comms, counts)
    f = np.array(parent, dtype=np.int64)
    roots = f == offset + np.arange(f.shape[0])
    active = np.flatnonzero(roots & np.isin(offset + np.arange(f.shape[0]), u))
    ends = np.unique(v)
    local_u = u - offset
    gf = None
    for _ in range(_MAX_ROUNDS):
        new_gf = _grandparents(f, active, comms, counts)
        changed = gf is None or np.any(new_gf != gf)
        if not comms.allreduce(np.array(changed, dtype=np.int64), op="max"):
            break
        gf = new_gf
        # the smallest grandparent among each active node's neighbours
        gf_full = np.full(f.shape[0], np.iinfo(np.int64).max)
        gf_full[active] = gf
        neighbour_gf = fetch_rows(gf_full, ends, comms, counts)[np.searchsorted(ends, v)]
        smallest = np.full(f.shape[0], np.iinfo(np.int64).max)
        np.minimum.at(smallest, local_u, neighbour_gf)
        smallest = smallest[active]
        hooked = smallest < np.iinfo(np.int64).max
        scatter_min(f, f[active][hooked], smallest[hooked], comms, counts)  # step 1
        f[active] = np.minimum(f[active], smallest)  # step 2
        f[active] = np.minimum(f[active], gf)  # step 3
    else:  # pragma: no cover
        raise RuntimeError("the distributed connected components did not converge")
    # nodes that were not roots follow their root's final parent
    return f[np.where(roots, np.arange(f.shape[0]), parent - offset)]


def _incident_edges(left, right, comms, counts):
    """``(u, v)``: every edge with an end ``u`` on this rank and ``v`` on any,
    without duplicates; each edge known anywhere is sent to the owners of
    both its ends (one alltoallv)."""
    both = np.concatenate([np.stack([left, right], 1), np.stack([right, left], 1)])
    both = _unique_pairs(both[both[:, 0] != both[:, 1]])  # sorted by u: grouped by owner
    send = np.bincount(owners(both[:, 0], counts), minlength=comms.size)
    mine = _unique_pairs(comms.alltoallv(both, send).reshape(-1, 2))
    return mine[:, 0], mine[:, 1]


def _unique_pairs(pairs):
    """The distinct rows of an ``(m, 2)`` integer array, sorted by the first
    column then the second (``np.unique(pairs, axis=0)``, without its
    row-by-row comparison of bytes)."""
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    pairs = pairs[order]
    new = np.ones(pairs.shape[0], dtype=bool)
    new[1:] = np.any(pairs[1:] != pairs[:-1], axis=1)
    return np.ascontiguousarray(pairs[new])


def _grandparents(f, active, comms, counts):
    """``f[f[u]]`` for every active local node ``u`` (parents anywhere)."""
    parents = f[active]
    distinct, where = np.unique(parents, return_inverse=True)
    return fetch_rows(f, distinct, comms, counts)[where.reshape(-1)]
