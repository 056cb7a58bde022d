"""HDBSCAN's cluster centres over row-sharded data: scikit-learn's
``HDBSCAN._weighted_cluster_center`` without gathering the rows.

- centroids: each cluster's probability-weighted mean, from one allreduce
  of the weighted sums and the weights;
- medoids: the member that minimises the sum of its distances to the other
  members times their probabilities. The members travel round a ring of
  ranks; each rank sums, for its own members, the weighted distances on a
  fixed-point grid (integer limbs: exact, so the same in any order), and
  one allgather of each rank's best member per cluster picks the smallest
  sum, ties to the smaller global index. The medoid is the same at any
  number of ranks.
"""

import numpy as np

from ..kernels import kernels_for
from ..utils._exact import carry, limb_exponents, limb_scales
from ..utils.ring import ring_blocks

_BLOCK = 4096  # member rows of each travelling block


def centroids(X, labels, strength, n_clusters, comms):
    """``(n_clusters, n_features)`` probability-weighted means (replicated).

    This function is collective: one allreduce of ``n_clusters * (n_features + 1)`` float64.
    """
    sums = np.zeros((n_clusters, X.shape[1] + 1))
    member = labels >= 0
    np.add.at(sums[:, :-1], labels[member], X[member] * strength[member, None])
    np.add.at(sums[:, -1], labels[member], strength[member])
    sums = comms.allreduce(sums)
    return sums[:, :-1] / sums[:, -1:]


def _distance_bound(rows, metric, comms):
    """A bound, the same on every rank, on any distance between two of every
    rank's ``rows``: ``2 max ||x||_1`` bounds the Minkowski family and (unit
    rows) cosine, its square sqeuclidean."""
    local = np.abs(rows).sum(axis=1).max(initial=0.0)
    largest = 2 * float(comms.allreduce(np.array([local]), op="max")[0])
    return largest**2 if metric == "sqeuclidean" else largest


def medoids(X, rows, labels, strength, n_clusters, metric, p, comms, layout):
    """``(n_clusters, n_features)`` medoids: rows of ``X`` (replicated).

    ``rows`` are the rows distances are computed on (``X``, or unit rows for
    cosine); ``labels`` and ``strength`` those of this rank's rows.

    This function is collective: a ring of every rank's cluster members,
    then one allgather of ``n_clusters * (3 + n_features)`` float64 per rank.
    """
    member = np.flatnonzero(labels >= 0)
    mine = np.ascontiguousarray(rows[member])
    mine_labels = labels[member]
    counts = tuple(int(c) for c in comms.allgather(np.array([member.size])))
    scale = limb_scales(limb_exponents(_distance_bound(mine, metric, comms)))[0]
    limbs = np.zeros((2, member.size), dtype=np.int64)  # high and low limbs of each sum
    packed = np.column_stack([mine, mine_labels, strength[member]])
    kernel = kernels_for("hdbscan", X).member_distance_sums
    for block, _, _, request in ring_blocks(packed, comms, counts, _BLOCK):
        if block.shape[0] and member.size:
            block_labels = np.ascontiguousarray(block[:, -2]).astype(np.int64)
            kernel(
                mine,
                mine_labels,
                np.ascontiguousarray(block[:, :-2]),
                block_labels,
                np.ascontiguousarray(block[:, -1]),
                metric,
                p,
                scale,
                limbs[0],
                limbs[1],
            )
        if request is not None:
            request.test()
    high, low = carry(limbs)  # (high, low): the one representation of each sum
    best = np.full((n_clusters, 3 + X.shape[1]), np.inf)
    if member.size:  # this rank's best member of each cluster
        order = np.lexsort((member, low, high, mine_labels))
        first = order[np.r_[True, mine_labels[order][1:] != mine_labels[order][:-1]]]
        best[mine_labels[first]] = np.column_stack(
            [high[first], low[first], layout.offset + member[first], X[member[first]]]
        )
    candidates = comms.allgather(best).reshape(comms.size, n_clusters, best.shape[1])
    out = np.empty((n_clusters, X.shape[1]))
    for c in range(n_clusters):
        keys = candidates[:, c]
        out[c] = keys[np.lexsort((keys[:, 2], keys[:, 1], keys[:, 0]))[0], 3:]
    return out
