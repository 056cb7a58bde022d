"""Nearest-neighbour kernels written once for NumPy and CuPy (array namespace
of the inputs): declared for both devices in the registry (family ``knn``,
next to ``kernels/cpu/knn.py`` and ``kernels/gpu/knn.py``), and the helpers
those two share.

Pure local compute; nothing here communicates.

"Reduced" distances rank like the metric and are cheaper: ``||q - x||²``
for euclidean and sqeuclidean, ``1 - qn·xn`` (rows normalised by the
caller) for cosine, ``Σ|q - x|`` (manhattan), ``max|q - x|`` (chebyshev),
``Σ|q - x|^p`` (minkowski).
"""

from ..._array import get_namespace

GEMM_METRICS = ("sqeuclidean", "cosine")
#: Ulps of the k-th distance added to the selections' screens: a distance
#: recomputed just above the k-th may be stored equal to it (a tie that the
#: index decides), so it must not be screened out.
ROUNDING_ULPS = 4
_PAIR_CHUNK = 1 << 20  # elements of a (pairs, n_features) temporary


def query_rows(batch_size):
    """Queries searched against one index block of ``batch_size`` rows at a time
    (the distance block is ``query_rows × batch_size``)."""
    return batch_size


def gemm_distances(Q, X, metric, out):
    """The GEMM part of the approximate reduced distances, into ``out`` (len(Q), len(X)).

    ``out = -2 Q·Xᵀ`` for sqeuclidean and ``-Q·Xᵀ`` for cosine (unit rows): the
    approximate reduced distance is ``out[i, j] + q_term[i] + x_term[j]``
    (:func:`row_terms`), which the selection adds on the fly.
    """
    xp = get_namespace(Q)
    scale = -2 if metric == "sqeuclidean" else -1
    if Q.shape[0] <= X.shape[0]:  # scale the smaller operand
        return xp.matmul(Q * scale, X.T, out=out)
    return xp.matmul(Q, (X * scale).T, out=out)


def merge_candidates(rows, dist, index, best_dist, best_index):
    """Merge candidate neighbours into the running top-k of their queries.

    Parameters
    ----------
    rows : ndarray of shape (n_candidates,)
        The query (row of ``best_dist``) of each candidate.
    dist, index : ndarray of shape (n_candidates,)
        The candidates' exact reduced distances and global indices; none is
        already in its query's top-k.
    best_dist, best_index : ndarray of shape (n_queries, k)
        Running top-k, sorted by (distance, global index). Updated.
    """
    xp = get_namespace(best_dist)
    n_queries, k = best_dist.shape
    all_rows = xp.concatenate([rows, xp.repeat(xp.arange(n_queries), k)])
    all_dist = xp.concatenate([dist.astype(best_dist.dtype), best_dist.ravel()])
    all_index = xp.concatenate([index.astype(best_index.dtype), best_index.ravel()])
    keys = xp.stack(
        [all_index.astype(xp.float64), all_dist.astype(xp.float64), all_rows.astype(xp.float64)]
    )
    order = xp.lexsort(keys)
    sorted_rows = all_rows[order]
    first = xp.searchsorted(sorted_rows, xp.arange(n_queries))
    position = xp.arange(order.shape[0]) - first[sorted_rows]
    keep = position < k
    best_dist[sorted_rows[keep], position[keep]] = all_dist[order[keep]]
    best_index[sorted_rows[keep], position[keep]] = all_index[order[keep]]


def merge_topk(dist, index, best_dist, best_index):
    """Merge another top-k of the same queries (``dist``, ``index``: sorted or
    not, of shape (n_queries, k'), pairs disjoint from the running ones; ``inf``
    and ``iinfo.max`` where empty) into the running top-k. Updated:
    ``best_dist``, ``best_index``."""
    xp = get_namespace(best_dist)
    rows = xp.repeat(xp.arange(dist.shape[0]), dist.shape[1])
    merge_candidates(rows, dist.ravel(), index.ravel(), best_dist, best_index)


def row_terms(X, metric):
    """Per-row terms of the approximate reduced distances (see :func:`gemm_distances`):
    ``||x||²`` for sqeuclidean, ``1/2`` for cosine (each side), 0 otherwise."""
    xp = get_namespace(X)
    if metric == "sqeuclidean":
        return (X * X).sum(axis=1)
    return xp.full(X.shape[0], 0.5 if metric == "cosine" else 0.0, dtype=X.dtype)


def screened_rows(X, mean, basis, out):
    """The rows followed by their screen coordinates (``mlmpi.neighbors._projection``).

    ``out[:, :d] = X``; ``out[:, d:d + p] = (X - mean) @ basis``; ``out[:, d + p]``
    the norm of what the basis leaves of ``X - mean``. Computed in float64 in
    chunks of bounded memory, stored in ``out``'s dtype. The squared distance
    of two rows' ``p + 1`` screen coordinates bounds theirs from below.

    Parameters
    ----------
    X : ndarray of shape (n, d)  (IN)
    mean : ndarray of shape (d,), float64  (IN)
    basis : ndarray of shape (d, p), float64, orthonormal columns  (IN)
    out : ndarray of shape (n, d + p + 1), X's dtype  (OUT)
    """
    xp = get_namespace(X)
    d, p = basis.shape
    out[:, :d] = X
    step = max(1, _PAIR_CHUNK // max(d, 1))
    for start in range(0, X.shape[0], step):
        rows = slice(start, start + step)
        centred = X[rows].astype(xp.float64) - mean
        coordinates = centred @ basis
        rest = (centred * centred).sum(axis=1) - (coordinates * coordinates).sum(axis=1)
        out[rows, d : d + p] = coordinates
        out[rows, d + p] = xp.sqrt(xp.maximum(rest, 0.0))
    return out


def reduce_differences(diff, metric, p):
    """Reduced distances of the rows of ``diff`` (``q - x``, last axis summed)."""
    xp = get_namespace(diff)
    if metric == "sqeuclidean":
        return (diff * diff).sum(axis=-1)
    absolute = xp.abs(diff)
    if metric == "manhattan":
        return absolute.sum(axis=-1)
    if metric == "chebyshev":
        return absolute.max(axis=-1)
    return (absolute**p).sum(axis=-1)


def pair_distances(Q, X, rows, cols, metric, p):
    """Exact reduced distances of the pairs ``(Q[rows[i]], X[cols[i]])``,
    computed directly (never through a GEMM), in chunks of bounded memory."""
    xp = get_namespace(Q)
    out = xp.empty(rows.shape[0], dtype=Q.dtype)
    step = max(1, _PAIR_CHUNK // max(Q.shape[1], 1))
    for start in range(0, rows.shape[0], step):
        r, c = rows[start : start + step], cols[start : start + step]
        if metric == "cosine":
            out[start : start + step] = 1 - (Q[r] * X[c]).sum(axis=-1)
        else:
            out[start : start + step] = reduce_differences(Q[r] - X[c], metric, p)
    return out


def radius_pairs(Q, X, D, q_term, x_term, tol, bound, metric, p):
    """Pairs within ``bound`` (reduced units) of the block: ``(rows, cols, reduced)``.

    ``D + q_term + x_term`` are the block's reduced distances (approximate
    for the GEMM metrics, with per-row error at most ``tol``); candidates
    within ``bound + tol`` are recomputed exactly, so no pair is lost to
    rounding. The caller keeps those whose final distance is within the radius.
    """
    xp = get_namespace(D)
    rows, cols = xp.nonzero(D + x_term[None, :] <= (bound + tol - q_term)[:, None])
    if metric in GEMM_METRICS:
        reduced = pair_distances(Q, X, rows, cols, metric, p)
    else:
        reduced = D[rows, cols]
    return rows, cols, reduced
