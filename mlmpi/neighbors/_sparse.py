"""Brute-force k nearest neighbours of CSR rows on row-sharded data.

Sparse index blocks cannot travel round the dense ring, so the queries do
(the pattern of cuML's multi-node multi-GPU neighbours): every rank's query
rows are gathered in batches of ``batch_size`` global rows, each rank finds the best ``k`` of
its own shard for every query of the batch (distances from sparse dot
products and squared norms, as scikit-learn's ``euclidean_distances``), and
the partial lists go back to the queries' owners (``alltoallv``), which
merge them by (distance, global index). Working memory is one
``batch_size × n_local`` distance block per rank.
"""

import numpy as np
from scipy import sparse

from ..kernels import kernels_for

METRICS = ("euclidean", "cosine")


def _gather_csr(Q, comms):
    """Every rank's CSR rows, stacked in rank order (three allgatherv)."""
    lengths = comms.allgatherv(np.diff(Q.indptr).astype(np.int64))
    indices = comms.allgatherv(Q.indices.astype(np.int64))
    data = comms.allgatherv(Q.data)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return sparse.csr_matrix((data, indices, indptr), shape=(lengths.shape[0], Q.shape[1]))


def _by_query(received, size):
    """Partial lists received from every rank (source-rank order), one row per query."""
    mine, k = received.shape[0] // size, received.shape[1]
    return received.reshape(size, mine, k).transpose(1, 0, 2).reshape(mine, size * k)


def kneighbors(Q, X, *, n_neighbors, metric, comms, counts, batch_size):
    """``(distances, global indices)`` of the ``n_neighbors`` nearest global rows
    of each of this rank's CSR queries, sorted by (distance, index).

    This function is collective.
    """
    kernels = kernels_for("knn", X)
    if metric == "cosine":
        Q, X = kernels.unit_rows(Q), kernels.unit_rows(X)
    queries = comms.allgather_object(Q.shape[0])
    owners = np.repeat(np.arange(comms.size), queries)
    offset = int(sum(counts[: comms.rank]))
    x_norms = kernels.squared_norms(X)
    k = n_neighbors
    all_queries = _gather_csr(Q, comms)
    found_dist, found_index = [], []
    for start in range(0, all_queries.shape[0], batch_size):
        batch = all_queries[start : start + batch_size]
        dist = np.empty((batch.shape[0], k))
        index = np.empty((batch.shape[0], k), dtype=np.int64)
        kernels.local_topk(batch, X, x_norms, metric, offset, dist, index)
        send = np.bincount(owners[start : start + batch.shape[0]], minlength=comms.size)
        found_dist.append(_by_query(comms.alltoallv(dist, send), comms.size))
        found_index.append(_by_query(comms.alltoallv(index, send), comms.size))
    dist = np.empty((Q.shape[0], k))
    index = np.empty((Q.shape[0], k), dtype=np.int64)
    if found_dist:
        kernels.best_k(np.concatenate(found_dist), np.concatenate(found_index), dist, index)
    return dist, index
