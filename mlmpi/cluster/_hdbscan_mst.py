"""HDBSCAN's minimum spanning tree by distributed Prim, step by step as scikit-learn's.

scikit-learn builds the tree of mutual reachabilities with Prim's algorithm
(``sklearn/cluster/_hdbscan/_linkage.pyx``): ``mst_from_data_matrix`` from
the rows and their core distances, ``mst_from_mutual_reachability`` from a
distance matrix. Here each rank keeps the running minimum reachability (and
its source) of its own rows. At each step every rank updates its rows
against the node just added and finds its best candidate (the ``hdbscan``
kernels); one allgather of a small record per rank (value, global index,
source, core distance, features) then gives every rank the same next node:
the smallest value, ties to the smaller global index, as scikit-learn's
scan in index order keeps only a strictly smaller value. Every rank ends
with the n - 1 edges in scikit-learn's order.

The loop makes n - 1 collectives: it is latency-bound, with
``O(n² d / P)`` compute over the whole fit.
"""

import numpy as np

from .._sklearn_compat import MST_edge_dtype
from ..kernels import kernels_for
from ..kernels.cpu.hdbscan import NO_EDGE, RECORD_HEAD
from ..neighbors import _ring
from ..neighbors._base import DEFAULT_BATCH


def core_distances(X, metric, p, min_samples, comms, layout):
    """Distance of each local row to its ``min_samples``-th nearest row (itself
    included), bit-equal to scikit-learn's ``kneighbors(X, min_samples)`` on a tree.

    The exact neighbour ring keeps each row's candidates sorted by their
    exact reduced distance, from the per-pair loop (features in order) that
    the Prim kernel and scikit-learn's trees use; the reduced value becomes
    the distance as the trees' ``rdist_to_dist`` does it (NumPy's ``sqrt``
    or ``**``, over the whole column).

    This function is collective.
    """
    reduced, _ = _ring.kneighbors(
        _ring.prepare_rows(X, metric),
        X,
        n_neighbors=min_samples,
        metric=metric,
        p=p,
        comms=comms,
        counts=layout.counts,
        batch_size=DEFAULT_BATCH[False],
    )
    return _ring.to_distance(np.array(reduced[:, -1]), metric, p)


def precomputed_core_distances(D, min_samples):
    """scikit-learn's core distances of the rows of a distance matrix: each
    row's ``min_samples``-th smallest entry (the diagonal included)."""
    if D.shape[0] == 0:
        return np.empty(0)
    return np.ascontiguousarray(np.partition(D, min_samples - 1, axis=1)[:, min_samples - 1])


def _first_row(head, comms, layout):
    """``head`` (this rank's row 0, None without rows) of the first rank that
    holds rows: global row 0's, on every rank.

    This function is collective.
    """
    owner = next(r for r, c in enumerate(layout.counts) if c)
    return comms.bcast(head if comms.rank == owner else None, root=owner)


def _prim(n_samples, record, step, comms, first):
    """The n - 1 edges of Prim's loop: ``step(cur, x_cur, core_cur)`` fills
    this rank's ``record``; the smallest ``(value, index)`` over the ranks
    is the next node. ``first``: row 0's record tail (core distance and
    features), where scikit-learn starts and where a step without any
    candidate edge (``DBL_MAX``) returns."""
    mst = np.empty(n_samples - 1, dtype=MST_edge_dtype)
    cur, tail = 0, first
    for i in range(n_samples - 1):
        step(cur, tail[1:], tail[0])
        records = comms.allgather(record).reshape(comms.size, -1)
        winner = records[np.lexsort((records[:, 1], records[:, 0]))[0]]
        value, cur = winner[0], int(winner[1])
        mst[i] = (int(winner[2]), cur, value)
        tail = first if value == NO_EDGE else winner[RECORD_HEAD - 1 :]
    return mst


def mst_from_rows(X, core, alpha, metric, p, comms, layout):
    """scikit-learn's ``mst_from_data_matrix`` of every rank's rows ``X``
    (unit rows for cosine) with core distances ``core``: ``MST_edge_dtype``
    edges, the same on every rank.

    This function is collective: n - 1 allgathers of ``4 + n_features``
    float64 per rank.
    """
    kernels = kernels_for("hdbscan", X)
    n_local, offset = X.shape[0], layout.offset
    min_reach = np.full(n_local, np.inf)
    sources = np.ones(n_local, dtype=np.int64)
    in_tree = np.zeros(n_local, dtype=bool)
    record = np.zeros(RECORD_HEAD + X.shape[1])
    prim_step = kernels.prim_step

    def step(cur, x_cur, core_cur):
        if offset <= cur < offset + n_local:
            in_tree[cur - offset] = True
        prim_step(
            X,
            core,
            min_reach,
            sources,
            in_tree,
            x_cur,
            core_cur,
            cur,
            offset,
            alpha,
            metric,
            p,
            record,
        )

    first = _first_row(np.r_[core[:1], X[0]] if n_local else None, comms, layout)
    return _prim(layout.n_samples, record, step, comms, first)


def mst_from_distances(D, core, comms, layout):
    """scikit-learn's ``mst_from_mutual_reachability`` of the distance matrix
    whose rows ``D`` (already divided by ``alpha``) this rank holds, with core
    distances ``core``. Row ``j`` stands for column ``j``: the matrix is
    symmetric. ``MST_edge_dtype`` edges, the same on every rank.

    This function is collective: n - 1 allgathers of 4 float64 per rank.
    """
    prim_step = kernels_for("hdbscan", D).prim_step_precomputed
    n_local, offset, n_samples = D.shape[0], layout.offset, layout.n_samples
    min_reach = np.full(n_local, np.inf)
    in_tree = np.zeros(n_local, dtype=bool)
    record = np.zeros(RECORD_HEAD)

    def step(cur, _, core_cur):
        if offset <= cur < offset + n_local:
            in_tree[cur - offset] = True
        prim_step(D, core, min_reach, in_tree, core_cur, cur, offset, n_samples, record)

    first = _first_row(core[:1], comms, layout)
    return _prim(n_samples, record, step, comms, first)
