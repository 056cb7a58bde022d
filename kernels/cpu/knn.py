"""Nearest-neighbour kernels for NumPy arrays (BLAS + numba).

Pure local compute into caller-owned buffers; nothing here communicates.
``kernels/gpu/knn.py`` has the same functions with the same IN/OUT
signatures for CuPy arrays.

- :func:`block_distances`: reduced distances of a block of queries to a
  block of index rows: one BLAS GEMM for sqeuclidean/cosine, a compiled
  loop for manhattan, chebyshev and minkowski.
- :func:`update_topk`: merges a block into every query's running top-k,
  kept sorted by (exact distance, global index). One compiled pass per
  query row over the block is a partial selection: a column is looked at
  again only when its approximate distance is within the rounding bound of
  the current k-th (exact) distance, and it is then recomputed directly
  from the rows, so rounding in the GEMM can neither lose a neighbour nor
  reorder ties; equal distances go to the smaller global index. The
  columns are screened in chunks of ``_CHUNK``: one vectorised test for
  those within the query's bound, and most chunks are passed over whole.
  With ``lower_bound=True`` the block's values are lower bounds (the GEMM
  of a projection's screen coordinates, ``mlmpi.neighbors._projection``)
  instead of approximations: the same screen, every column within it
  recomputed.
"""

import numpy as np
from numba import njit, prange

from ..shared.knn import ROUNDING_ULPS, gemm_distances

_CODES = {"sqeuclidean": 0, "cosine": 1, "manhattan": 2, "chebyshev": 3, "minkowski": 4}


#: Features from which a squared distance's direct sum is vectorised.
VECTOR_FEATURES = 128


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _vector_squared(q, x):
    """``Σ (q - x)²`` in float64 (each term exact for float32 rows), vectorised:
    its partial sums are the compiled loop's, the same at every call on one
    CPU model (as a BLAS kernel's are), whatever the rows' addresses; four
    times faster than ``_reduced``'s one chain of additions for 784 features."""
    total = 0.0
    for f in range(np.uint64(q.shape[0])):  # unsigned: no wraparound checks
        diff = np.float64(q[f]) - np.float64(x[f])
        total += diff * diff
    return total


@njit(cache=True, nogil=True, inline="always")
def _reduced(q, x, code, p):
    # Rows of fewer features keep the order of one chain, scikit-learn's trees'
    # order (their HDBSCAN's labels, for one, follow ties of these sums).
    if code == 0 and q.shape[0] >= VECTOR_FEATURES:
        return _vector_squared(q, x)
    total = 0.0
    for f in range(q.shape[0]):
        if code == 0:
            diff = q[f] - x[f]
            total += diff * diff
        elif code == 1:
            total += q[f] * x[f]
        elif code == 2:
            total += abs(q[f] - x[f])
        elif code == 3:
            total = max(total, abs(q[f] - x[f]))
        else:
            total += abs(q[f] - x[f]) ** p
    if code == 1:
        return 1.0 - total
    return total


@njit(cache=True, nogil=True, parallel=True)
def _direct(Q, X, code, p, out):
    for i in prange(Q.shape[0]):
        for j in range(X.shape[0]):
            out[i, j] = _reduced(Q[i], X[j], code, p)


#: Columns a selection pass screens at once: one vectorised comparison with the
#: query's bound rejects the whole chunk in the common case (a filled top-k).
_CHUNK = 128
#: Elements of a distance block (1 MiB of float32).
_TILE = 1 << 18


@njit(cache=True, nogil=True, inline="always")
def _any_within(row, x_term, start, stop, limit):
    hit = False
    for j in range(np.uint64(start), np.uint64(stop)):  # unsigned: no wraparound check
        hit |= row[j] + x_term[j] <= limit
    return hit


@njit(cache=True, nogil=True, inline="always")
def _insert(e, g, i, best_dist, best_index):
    k = best_dist.shape[1]
    worst, worst_index = best_dist[i, k - 1], best_index[i, k - 1]
    if e > worst or (e == worst and g > worst_index):
        return
    pos = k - 1
    while pos > 0 and (
        best_dist[i, pos - 1] > e or (best_dist[i, pos - 1] == e and best_index[i, pos - 1] > g)
    ):
        best_dist[i, pos] = best_dist[i, pos - 1]
        best_index[i, pos] = best_index[i, pos - 1]
        pos -= 1
    best_dist[i, pos] = e
    best_index[i, pos] = g


@njit(cache=True, nogil=True, inline="always")
def _limit(best, tol, q_term, rel):
    # ``rel·best``: a recomputed distance is rounded before it is compared, so one
    # just above the k-th may be stored equal to it (a tie the index decides).
    return best + best * rel + tol - q_term


@njit(cache=True, nogil=True)
def _update(
    Q,
    X,
    D,
    q_term,
    x_term,
    tol,
    start,
    code,
    p,
    exact_again,
    lower_bound,
    rel,
    best_dist,
    best_index,
):
    k = best_dist.shape[1]
    n = D.shape[1]
    # A distance recomputed in float64 is rounded to the top-k's dtype before it
    # is compared: ties are then ties as stored, and go to the smaller index
    # whatever order the rows arrive in.
    stored = np.empty(1, dtype=best_dist.dtype)
    screened = np.empty(n, dtype=D.dtype)
    for i in range(D.shape[0]):
        row = D[i]
        split = -np.inf  # lower bounds while filling: (-inf, split] first, then the rest
        cap = np.inf
        if best_dist[i, k - 1] == np.inf and n >= k:
            # A top-k still filling would take every column until k are in, each
            # recomputed exactly (six times the GEMM's time on a tile). The block's
            # k-th smallest screened value helps: an approximate distance bounds
            # the k-th exact one from above (within tol), so no column beyond it
            # plus twice the rounding bound can enter; of lower bounds, the k
            # smallest go first, and their exact distances then bound the rest.
            for j in range(n):
                screened[j] = row[j] + x_term[j]
            kth = np.float64(np.partition(screened, k - 1)[k - 1])
            if lower_bound:
                split = kth
            else:
                cap = kth + 2.0 * np.float64(tol[i])
        # Insert the columns whose screened value v has floor < v <= limit, the
        # limit following the k-th (capped by top) as columns enter.
        for floor, top in ((-np.inf, split), (split, cap)):
            if top <= floor:
                continue
            limit = min(top, _limit(best_dist[i, k - 1], tol[i], q_term[i], rel))
            for c0 in range(0, n, _CHUNK):
                c1 = min(c0 + _CHUNK, n)
                if not _any_within(row, x_term, c0, c1, limit):
                    continue
                for j in range(c0, c1):
                    value = row[j] + x_term[j]
                    if value > limit or value <= floor:
                        continue
                    stored[0] = _reduced(Q[i], X[j], code, p) if exact_again else row[j]
                    _insert(stored[0], start + j, i, best_dist, best_index)
                    limit = min(top, _limit(best_dist[i, k - 1], tol[i], q_term[i], rel))


#: Side of the square tiles of :func:`transpose` (two of float32 fit in L1).
_TRANSPOSE_TILE = 32


@njit(cache=True, nogil=True)
def _transpose(D, out):
    n, m = D.shape
    for i0 in range(0, n, _TRANSPOSE_TILE):
        for j0 in range(0, m, _TRANSPOSE_TILE):
            for i in range(i0, min(i0 + _TRANSPOSE_TILE, n)):
                for j in range(j0, min(j0 + _TRANSPOSE_TILE, m)):
                    out[j, i] = D[i, j]


def transpose(D, out):
    """``out[...] = D.T`` in square tiles (half NumPy's time for a distance
    block: 0.15 ms against 0.28 ms for 341 × 768 float32)."""
    _transpose(D, out)
    return out


def query_rows(batch_size):
    """Queries searched against one index block of ``batch_size`` rows at a time:
    few enough that their distance block stays in a core's L2 cache between
    the GEMM that writes it and the selection that reads it."""
    return max(1, min(batch_size, _TILE // batch_size))


def block_distances(Q, X, metric, p, out):
    """Distances of the rows of ``Q`` to the rows of ``X`` into ``out``.

    Parameters
    ----------
    Q : ndarray of shape (n_queries, n_features)
    X : ndarray of shape (n_rows, n_features), same dtype
    metric : {'sqeuclidean', 'cosine', 'manhattan', 'chebyshev', 'minkowski'}
        Rows are normalised by the caller for 'cosine'.
    p : float
        Minkowski power (minkowski only).
    out : ndarray of shape (n_queries, n_rows), Q's dtype
        Overwritten. For the GEMM metrics (sqeuclidean, cosine), the GEMM
        part only: the approximate reduced distance is ``out[i, j] +
        q_term[i] + x_term[j]`` (:func:`row_terms`); for the other metrics,
        the exact reduced distance (``row_terms`` are zero).
    """
    if metric in ("sqeuclidean", "cosine"):
        return gemm_distances(Q, X, metric, out)
    _direct(Q, X, _CODES[metric], float(p), out)
    return out


def update_topk(
    Q, X, D, q_term, x_term, tol, start, metric, p, best_dist, best_index, lower_bound=False
):
    """Merge the block ``X`` (global rows ``start, start + 1, ...``) into the
    running top-k of every query.

    Parameters
    ----------
    Q, X : ndarray
        Query rows and index rows of the block (as for :func:`block_distances`).
    D : ndarray of shape (n_queries, n_rows)
        Output of :func:`block_distances`.
    q_term, x_term : ndarray of shape (n_queries,), (n_rows,)
        :func:`row_terms` of ``Q`` and ``X``.
    tol : ndarray of shape (n_queries,)
        Bound on the rounding error of the approximate distances per query
        (0 for the direct metrics).
    start : int
        Global index of ``X[0]``.
    metric, p
        As for :func:`block_distances`.
    best_dist : ndarray of shape (n_queries, k), Q's dtype
        Running exact reduced distances, sorted (``inf`` where empty). Updated.
    best_index : ndarray of shape (n_queries, k), int64
        Their global indices (ties sorted by index; ``iinfo.max`` where empty). Updated.
    lower_bound : bool, default=False
        Whether ``D`` (with the row terms, less ``tol``) bounds each reduced
        distance from below instead of approximating it (the rows of a
        projection: ``mlmpi.neighbors._projection``); ``Q`` and ``X`` are then
        the rows themselves, which the exact distances come from.
    """
    if D.size == 0:
        return
    # One thread: numba's OpenMP threads here would spin against BLAS's between
    # blocks (measured 30x slower with 2 of each on 2 cores); the GEMM has the threads.
    _update(
        Q,
        X,
        D,
        q_term,
        x_term,
        tol.astype(D.dtype, copy=False),
        int(start),
        _CODES[metric],
        float(p),
        metric in ("sqeuclidean", "cosine"),  # recompute the candidates exactly
        lower_bound,
        ROUNDING_ULPS * float(np.finfo(best_dist.dtype).eps),
        best_dist,
        best_index,
    )
