"""Brute-force k nearest neighbours of CSR rows on row-sharded data.

Sparse index blocks cannot travel round the dense ring, so the queries do
(the cuML MNMG pattern of DESIGN §7): every rank's query rows are gathered
in batches of ``batch_size`` global rows, each rank finds the best ``k`` of
its own shard for every query of the batch (distances from sparse dot
products and squared norms, as scikit-learn's ``euclidean_distances``), and
the partial lists go back to the queries' owners (``alltoallv``), which
merge them by (distance, global index). Working memory is one
``batch_size × n_local`` distance block per rank.
"""

import numpy as np
from scipy import sparse

METRICS = ("euclidean", "cosine")


def _unit_rows(X):
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1
    return sparse.diags(1.0 / norms) @ X


def _squared_norms(X):
    return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()


def _gather_csr(Q, comms):
    """Every rank's CSR rows, stacked in rank order (three allgatherv)."""
    lengths = comms.allgatherv(np.diff(Q.indptr).astype(np.int64))
    indices = comms.allgatherv(Q.indices.astype(np.int64))
    data = comms.allgatherv(Q.data)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return sparse.csr_matrix((data, indices, indptr), shape=(lengths.shape[0], Q.shape[1]))


def _distances(Q, X, x_norms, metric):
    """Dense ``(len(Q), len(X))`` distances; X is unit rows for cosine."""
    products = np.asarray((Q @ X.T).toarray(), dtype=np.float64)
    if metric == "cosine":
        return np.clip(1.0 - products, 0, 2)
    return np.sqrt(np.maximum(_squared_norms(Q)[:, None] - 2 * products + x_norms[None, :], 0))


def _best(dist, index, k):
    """The ``k`` smallest of each row by (distance, index), as ``(dist, index)``."""
    order = np.lexsort((index, dist), axis=1)[:, :k]
    return np.take_along_axis(dist, order, axis=1), np.take_along_axis(index, order, axis=1)


def _by_query(received, size):
    """Partial lists received from every rank (source-rank order), one row per query."""
    mine, k = received.shape[0] // size, received.shape[1]
    return received.reshape(size, mine, k).transpose(1, 0, 2).reshape(mine, size * k)


def kneighbors(Q, X, *, n_neighbors, metric, comms, counts, batch_size):
    """``(distances, global indices)`` of the ``n_neighbors`` nearest global rows
    of each of this rank's CSR queries, sorted by (distance, index).

    This function is collective.
    """
    if metric == "cosine":
        Q, X = _unit_rows(Q), _unit_rows(X)
    queries = comms.allgather_object(Q.shape[0])
    owners = np.repeat(np.arange(comms.size), queries)
    offset = int(sum(counts[: comms.rank]))
    x_norms = _squared_norms(X)
    k = n_neighbors
    all_queries = _gather_csr(Q, comms)
    found_dist, found_index = [], []
    for start in range(0, all_queries.shape[0], batch_size):
        batch = all_queries[start : start + batch_size]
        dist = _distances(batch, X, x_norms, metric)
        index = np.broadcast_to(np.arange(offset, offset + X.shape[0]), dist.shape)
        dist, index = _best(dist, index, k)
        pad = k - dist.shape[1]  # a shard with fewer than k rows
        dist = np.pad(dist, ((0, 0), (0, pad)), constant_values=np.inf)
        index = np.pad(index, ((0, 0), (0, pad)), constant_values=np.iinfo(np.int64).max)
        send = np.bincount(owners[start : start + batch.shape[0]], minlength=comms.size)
        got_dist = comms.alltoallv(np.ascontiguousarray(dist), send)
        got_index = comms.alltoallv(np.ascontiguousarray(index, dtype=np.int64), send)
        found_dist.append(_by_query(got_dist, comms.size))
        found_index.append(_by_query(got_index, comms.size))
    if not found_dist:
        return np.empty((0, k)), np.empty((0, k), dtype=np.int64)
    return _best(np.concatenate(found_dist), np.concatenate(found_index), k)
