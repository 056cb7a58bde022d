"""Brute-force k nearest neighbours of CSR rows on row-sharded data.

The index stays on its rank; the queries travel round the ring of ranks
with their running top-k. In round ``j`` every rank's ``j``-th batch of
``batch_size`` query rows (empty when it has fewer) visits every rank once:
each rank finds the best ``k`` of its own shard for the visiting queries
(distances from sparse dot products and squared norms, as scikit-learn's
``euclidean_distances``) and merges them into the lists that travel with
the batch, by (distance, global index); after the last hop the lists go
back to the queries' owner. Working memory per rank: two query batches with
their lists and one ``batch_size × n_local`` distance block, whatever the
global number of queries. Traffic per rank: every query row and its list
once per round trip, the least an exact search over row shards needs when
the queries are fewer than the index rows.
"""

import numpy as np
from scipy import sparse

from ..kernels import kernels_for
from ..utils._offsets import group_starts

METRICS = ("euclidean", "cosine")


def _batch_rows(n_queries, j, batch_size):
    """Rows of a rank's ``j``-th batch when it holds ``n_queries`` queries."""
    return min(max(n_queries - j * batch_size, 0), batch_size)


def _pass_right(block, best, comms, rows_in):
    """Send the CSR ``block`` and its lists ``best = (dist, index)`` to the
    next rank; return the previous rank's, of ``rows_in`` rows (three
    point-to-point exchanges: the number of stored values, then the
    integers, then the floats)."""
    right, left = (comms.rank + 1) % comms.size, (comms.rank - 1) % comms.size
    dist, index = best
    nnz = np.array([block.nnz], dtype=np.int64)
    nnz_in = int(comms.isendrecv(nnz, dest=right, source=left, recv_rows=1).wait()[0])
    ints = np.concatenate([np.diff(block.indptr), block.indices, index.ravel()]).astype(np.int64)
    floats = np.concatenate([block.data.astype(np.float64), dist.ravel()])
    k = dist.shape[1]
    ints = comms.isendrecv(ints, right, left, recv_rows=rows_in * (1 + k) + nnz_in)
    floats = comms.isendrecv(floats, right, left, recv_rows=nnz_in + rows_in * k)
    ints, floats = ints.wait(), floats.wait()
    indptr = group_starts(ints[:rows_in])
    data = floats[:nnz_in].astype(block.dtype)
    received = sparse.csr_matrix(
        (data, ints[rows_in : rows_in + nnz_in], indptr), shape=(rows_in, block.shape[1])
    )
    lists = floats[nnz_in:].reshape(rows_in, k), ints[rows_in + nnz_in :].reshape(rows_in, k)
    return received, lists


def kneighbors(Q, X, *, n_neighbors, metric, comms, counts, batch_size):
    """``(distances, global indices)`` of the ``n_neighbors`` nearest global rows
    of each of this rank's CSR queries, sorted by (distance, index).

    This function is collective.
    """
    kernels = kernels_for("knn", X)
    if metric == "cosine":
        Q, X = kernels.unit_rows(Q), kernels.unit_rows(X)
    rank, size = comms.rank, comms.size
    queries = comms.allgather(np.asarray(Q.shape[0], dtype=np.int64)).tolist()
    offset = int(sum(counts[:rank]))
    x_norms = kernels.squared_norms(X)
    k = n_neighbors
    dist = np.empty((Q.shape[0], k))
    index = np.empty((Q.shape[0], k), dtype=np.int64)
    rounds = max(-(-q // batch_size) for q in queries)
    for j in range(rounds):
        block = sparse.csr_matrix(Q[j * batch_size : (j + 1) * batch_size])
        best = (
            np.full((block.shape[0], k), np.inf),
            np.full((block.shape[0], k), np.iinfo(np.int64).max),
        )
        for hop in range(size):
            if block.shape[0] and X.shape[0]:
                found = np.empty((block.shape[0], k)), np.empty((block.shape[0], k), np.int64)
                kernels.local_topk(block, X, x_norms, metric, offset, *found)
                merged = np.empty_like(best[0]), np.empty_like(best[1])
                kernels.best_k(
                    np.concatenate([best[0], found[0]], axis=1),
                    np.concatenate([best[1], found[1]], axis=1),
                    *merged,
                )
                best = merged
            if hop < size - 1:
                owner = (rank - hop - 1) % size  # whose batch comes next
                block, best = _pass_right(
                    block, best, comms, _batch_rows(queries[owner], j, batch_size)
                )
        if size > 1:  # the lists held now belong to the next rank: send them home
            mine = _batch_rows(queries[rank], j, batch_size)
            right, left = (rank + 1) % size, (rank - 1) % size
            best = tuple(comms.isendrecv(part, right, left, recv_rows=mine).wait() for part in best)
        dist[j * batch_size : j * batch_size + best[0].shape[0]] = best[0]
        index[j * batch_size : j * batch_size + best[1].shape[0]] = best[1]
    return dist, index
