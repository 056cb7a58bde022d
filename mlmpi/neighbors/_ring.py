"""The ring solver of the distributed brute-force neighbour searches.

Queries stay on their rank; the index travels. Each rank cuts its shard
into blocks of ``batch_size`` rows; in round ``j`` every rank's ``j``-th
block (empty when its shard is shorter) goes once round the ring with
:meth:`~mlmpi.comms.Comms.isendrecv`. The next exchange is posted before
the current block is searched, so the transfer overlaps the GEMM. Every
query batch of ``batch_size`` rows meets every index block exactly once;
working memory is two index blocks plus one distance block of
``query_rows(batch_size) × batch_size`` (at most ``batch_size²``; on the
CPU small enough to stay in cache), whatever the number of queries (the
results themselves are ``n_queries × k``).

The kernels (the ``knn`` kernel family) keep each query's running
top-k sorted by (exact distance, global index), which makes the result
independent of the number of ranks, of the shards and of the order in
which the blocks arrive.

The search of the fitted rows among themselves (:func:`self_kneighbors`)
computes each pair of blocks once, for the queries of both: half the
distance blocks, half the ring.
"""

import math

from .._array import get_namespace
from ..kernels import kernels_for
from ..utils.ring import ring_blocks
from ._projection import choose_projection

#: Reduced metric used for the search, per effective metric.
REDUCED = {
    "euclidean": "sqeuclidean",
    "sqeuclidean": "sqeuclidean",
    "cosine": "cosine",
    "manhattan": "manhattan",
    "chebyshev": "chebyshev",
    "minkowski": "minkowski",
}


def prepare_rows(X, metric):
    """Rows as the kernels want them: unit rows for cosine (zero rows stay zero)."""
    if REDUCED[metric] != "cosine":
        return X
    xp = get_namespace(X)
    norms = xp.sqrt((X * X).sum(axis=1))
    norms[norms == 0] = 1
    return X / norms[:, None]


def to_distance(reduced, metric, p):
    """Final distances from reduced ones (in place where possible)."""
    xp = get_namespace(reduced)
    if metric == "euclidean":
        return xp.sqrt(reduced, out=reduced)
    if metric == "minkowski":
        return reduced ** (1.0 / p)
    if metric == "cosine":
        return xp.clip(reduced, 0, 2, out=reduced)
    return reduced


def _tolerance_terms(X, x_term, metric):
    """``(slope, offset)`` of the per-query bound ``slope·q_term + offset`` on the
    rounding error of the GEMM distances against the direct ones for the index
    block ``X`` (worst case of both, ~2·d·eps relative to ``||q||² + ||x||²``)."""
    xp = get_namespace(X)
    if metric not in ("sqeuclidean", "cosine"):
        return 0.0, 0.0
    eps = float(xp.finfo(X.dtype).eps) * (2 * X.shape[1] + 8)
    return 2 * eps, 2 * eps * (float(x_term.max()) if x_term.size else 0.0)


def _parts(rows, n_features):
    """``(rows, screen)`` of prepared rows: the features, and the columns whose
    GEMM screens them (the same array, or the screen coordinates that follow
    the features where a projection screens the search)."""
    if rows.shape[1] == n_features:
        return rows, rows
    xp = get_namespace(rows)
    # Contiguous copies: the kernels' direct distances vectorise over contiguous rows.
    return xp.ascontiguousarray(rows[:, :n_features]), xp.ascontiguousarray(rows[:, n_features:])


def _search(Q, X, comms, counts, metric, p, batch_size, visit, projection=None):
    """Run ``visit(batch, Qb, block, D, q_term, x_term, tol, start)`` for every
    query batch and every index block of the ring (``D``: their distances, see
    ``block_distances``; lower bounds of them from the screen coordinates
    where ``projection`` is given)."""
    kernels = kernels_for("knn", X)
    block_distances = kernels.block_distances  # looked up once: called per batch and block
    xp = get_namespace(X)
    reduced = REDUCED[metric]
    n_features = X.shape[1]

    def prepare(rows):
        rows = prepare_rows(rows, metric)
        return rows if projection is None else projection.screened(rows)

    Q, Q_screen = _parts(Q if projection is None else projection.screened(Q), n_features)
    q_terms = kernels.row_terms(Q_screen, reduced)
    n_rows = kernels.query_rows(batch_size)
    batches = [slice(lo, min(lo + n_rows, Q.shape[0])) for lo in range(0, Q.shape[0], n_rows)]
    buffer = xp.empty(n_rows * batch_size, dtype=X.dtype)
    offsets = [sum(counts[:r]) for r in range(len(counts))]
    for block, owner, start, request in ring_blocks(X, comms, counts, batch_size, prepare):
        start += offsets[owner]
        block, screen = _parts(block, n_features)
        x_term = kernels.row_terms(screen, reduced)
        slope, offset = _tolerance_terms(screen, x_term, reduced)
        for batch in batches:
            Qb, q_term = Q[batch], q_terms[batch]
            D = buffer[: Qb.shape[0] * block.shape[0]].reshape(Qb.shape[0], block.shape[0])
            block_distances(Q_screen[batch], screen, reduced, p, D)
            visit(batch, Qb, block, D, q_term, x_term, slope * q_term + offset, start)
            if request is not None:
                request.test()  # lets MPI progress the transfer between batches


def kneighbors(Q, X, *, n_neighbors, metric, p, comms, counts, batch_size):
    """Global k nearest neighbours of this rank's queries.

    ``Q`` is prepared (:func:`prepare_rows`); ``X`` is this rank's shard, of
    the same dtype and namespace. Returns ``(reduced distances, global indices)`` of shape
    ``(len(Q), n_neighbors)``, sorted by (distance, index).

    This function is collective.
    """
    xp = get_namespace(X)
    update_topk = kernels_for("knn", X).update_topk
    best_dist = xp.full((Q.shape[0], n_neighbors), xp.inf, dtype=X.dtype)
    best_index = xp.full((Q.shape[0], n_neighbors), xp.iinfo(xp.int64).max, dtype=xp.int64)
    reduced = REDUCED[metric]
    projection = choose_projection(
        X, queries=Q.shape[0], n_neighbors=n_neighbors, metric=reduced, comms=comms, counts=counts
    )

    def visit(batch, Qb, block, D, q_term, x_term, tol, start):
        update_topk(
            Qb,
            block,
            D,
            q_term,
            x_term,
            tol,
            start,
            reduced,
            p,
            best_dist[batch],
            best_index[batch],
            lower_bound=projection is not None,
        )

    _search(Q, X, comms, counts, metric, p, batch_size, visit, projection)
    return best_dist, best_index


def _pair_sides(hop, size, local_block, block, rank, owner):
    """Which queries a rank serves when its ``local_block``-th block meets
    ``owner``'s ``block``-th block, ``hop`` places before it in the ring:
    None (neither: another meeting serves the pair), ``"local"`` (this rank's
    rows only: a block meeting itself) or ``"both"``. Every pair of blocks is
    served exactly once: on its owner, by the earlier of its two blocks; across
    ranks, by the rank that meets the other's blocks in the first half of the
    ring; halfway round an even ring both ranks meet, and they take alternate
    pairs."""
    if hop == 0:
        if local_block == block:
            return "local"
        return "both" if local_block < block else None
    if 2 * hop == size and ((local_block + block) % 2 == 0) != (rank < owner):
        return None
    return "both"


def self_kneighbors(X, *, n_neighbors, metric, p, comms, counts, batch_size):
    """:func:`kneighbors` of this rank's fitted rows ``X`` (each row its own
    nearest neighbour too) among every rank's.

    The same result as ``kneighbors(prepare_rows(X), X, ...)``, with half of
    its distance blocks: the blocks go half way round the ring (:func:`_pair_sides`
    says who serves which pair), and each distance block updates the top-k
    of its queries and, transposed, that of the visiting block's rows; those
    go back to the block's owner after each hop, which merges them. Distances
    are symmetric to the bit in the kernels, and every pair is served once,
    so the top-k are the same as the one-way search's.

    This function is collective.
    """
    xp = get_namespace(X)
    kernels = kernels_for("knn", X)
    reduced = REDUCED[metric]
    rank, size = comms.rank, comms.size
    n_features = X.shape[1]
    Q = prepare_rows(X, metric)
    projection = choose_projection(
        Q, queries=None, n_neighbors=n_neighbors, metric=reduced, comms=comms, counts=counts
    )
    if projection is not None:  # the ring carries the rows and their screen coordinates
        Q = projection.screened(Q)
    Q_rows, Q_screen = _parts(Q, n_features)
    q_terms = kernels.row_terms(Q_screen, reduced)
    n_local = Q.shape[0]
    best_dist = xp.full((n_local, n_neighbors), xp.inf, dtype=X.dtype)
    best_index = xp.full((n_local, n_neighbors), xp.iinfo(xp.int64).max, dtype=xp.int64)
    n_rows = kernels.query_rows(batch_size)
    buffer = xp.empty(n_rows * batch_size, dtype=X.dtype)
    turned = xp.empty(n_rows * batch_size, dtype=X.dtype)
    offsets = [sum(counts[:r]) for r in range(size)]
    local_blocks = range(math.ceil(n_local / batch_size))
    # The blocks are slices of the prepared rows: normalised once, row by row, as
    # the one-way search's blocks are.
    for block, owner, start, request in ring_blocks(
        Q, comms, counts, batch_size, hops=size // 2 + 1
    ):
        hop = (rank - owner) % size
        visiting = slice(start, start + block.shape[0])
        if hop == 0:  # this rank's own block: its rows' top-k are this rank's
            block_dist, block_index = best_dist[visiting], best_index[visiting]
        else:
            block_dist = xp.full((block.shape[0], n_neighbors), xp.inf, dtype=X.dtype)
            block_index = xp.full(block_dist.shape, xp.iinfo(xp.int64).max, dtype=xp.int64)
        block, screen = _parts(block, n_features)
        x_term = kernels.row_terms(screen, reduced)
        slope, offset = _tolerance_terms(screen, x_term, reduced)
        for local_block in local_blocks if block.shape[0] else ():
            sides = _pair_sides(hop, size, local_block, start // batch_size, rank, owner)
            if sides is None:
                continue
            end = min((local_block + 1) * batch_size, n_local)
            for lo in range(local_block * batch_size, end, n_rows):
                batch = slice(lo, min(lo + n_rows, end))
                Qb, Qs, q_term = Q_rows[batch], Q_screen[batch], q_terms[batch]
                D = buffer[: Qb.shape[0] * block.shape[0]].reshape(Qb.shape[0], block.shape[0])
                kernels.block_distances(Qs, screen, reduced, p, D)
                tol = slope * q_term + offset
                kernels.update_topk(
                    Qb,
                    block,
                    D,
                    q_term,
                    x_term,
                    tol,
                    offsets[owner] + start,
                    reduced,
                    p,
                    best_dist[batch],
                    best_index[batch],
                    lower_bound=projection is not None,
                )
                if sides == "both":
                    DT = kernels.transpose(D, turned[: D.size].reshape(D.shape[1], D.shape[0]))
                    slope_t, offset_t = _tolerance_terms(Qs, q_term, reduced)
                    kernels.update_topk(
                        block,
                        Qb,
                        DT,
                        x_term,
                        q_term,
                        slope_t * x_term + offset_t,
                        offsets[rank] + lo,
                        reduced,
                        p,
                        block_dist,
                        block_index,
                        lower_bound=projection is not None,
                    )
                if request is not None:
                    request.test()  # lets MPI progress the transfer between batches
        if hop > 0:  # the visiting rows' top-k go home; this rank's come back
            source = (rank + hop) % size
            own = max(0, min(batch_size, n_local - start))
            found = [
                comms.isendrecv(part, dest=owner, source=source, recv_rows=own)
                for part in (block_dist, block_index)
            ]
            dist, index = (request.wait() for request in found)
            mine = slice(start, start + own)
            kernels.merge_topk(dist, index, best_dist[mine], best_index[mine])
    return best_dist, best_index


def radius_neighbors(Q, X, *, radius, metric, p, comms, counts, batch_size):
    """Every global neighbour within ``radius`` of this rank's queries.

    Returns ``(rows, indices, distances)``: flat arrays of the pairs (query
    row, global index, final distance), in no particular order.

    This function is collective.
    """
    xp = get_namespace(X)
    kernels = kernels_for("knn", X)
    reduced = REDUCED[metric]
    bound = {"euclidean": radius**2, "minkowski": radius**p}.get(metric, radius)
    bound *= 1 + 8 * float(xp.finfo(X.dtype).eps)  # the final distance decides at the edge
    found = []

    def visit(batch, Qb, block, D, q_term, x_term, tol, start):
        rows, cols, values = kernels.radius_pairs(
            Qb, block, D, q_term, x_term, tol, bound, reduced, p
        )
        distances = to_distance(values, metric, p)
        keep = distances <= radius
        found.append((rows[keep] + batch.start, cols[keep] + start, distances[keep]))

    _search(Q, X, comms, counts, metric, p, batch_size, visit)
    if not found:
        empty = xp.empty(0, dtype=xp.int64)
        return empty, empty, xp.empty(0, dtype=X.dtype)
    rows, indices, distances = (xp.concatenate(parts) for parts in zip(*found))
    return rows, indices.astype(xp.int64), distances
