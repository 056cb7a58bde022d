"""Nearest-neighbour kernels for CuPy arrays; same functions and IN/OUT
signatures as ``kernels/cpu/knn.py``. Pure local compute, nothing here
communicates.

Written against the NumPy-compatible API of the inputs' namespace (CuPy
is never imported here), so the CPU test suite runs this code on NumPy
arrays too.

- :func:`block_distances`: one cuBLAS GEMM for sqeuclidean/cosine;
  broadcast differences in chunks of bounded memory for the other metrics.
- :func:`update_topk`: partial selection (``partition``) of the block's
  k-th reduced distance, then every column within the rounding bound of
  min(block k-th, running k-th) is recomputed exactly and merged with the
  running top-k by one lexicographic sort of (query, distance, global
  index) over the few candidates. Lower bounds (``lower_bound=True``):
  the block's k smallest first, then every column within the new k-th.
"""

from ..._array import get_namespace
from ..shared.knn import (
    GEMM_METRICS,
    ROUNDING_ULPS,
    gemm_distances,
    merge_candidates,
    pair_distances,
    reduce_differences,
)

_CHUNK = 1 << 24  # elements of a (queries, rows, n_features) temporary


def block_distances(Q, X, metric, p, out):
    """See ``mlmpi.kernels.cpu.knn.block_distances`` (CuPy arrays here)."""
    if metric in GEMM_METRICS:
        return gemm_distances(Q, X, metric, out)
    rows = max(1, _CHUNK // max(X.shape[0] * Q.shape[1], 1))
    for start in range(0, Q.shape[0], rows):
        block = Q[start : start + rows]
        out[start : start + rows] = reduce_differences(block[:, None, :] - X[None, :, :], metric, p)
    return out


def transpose(D, out):
    """See ``mlmpi.kernels.cpu.knn.transpose`` (CuPy arrays here)."""
    out[...] = D.T
    return out


def update_topk(
    Q, X, D, q_term, x_term, tol, start, metric, p, best_dist, best_index, lower_bound=False
):
    """See ``mlmpi.kernels.cpu.knn.update_topk`` (CuPy arrays here)."""
    xp = get_namespace(D)
    n_rows = D.shape[1]
    if D.size == 0:
        return
    D = D + q_term[:, None] + x_term[None, :]
    k = best_dist.shape[1]
    kk = min(k, n_rows)
    block_kth = xp.partition(D, kk - 1, axis=1)[:, kk - 1]
    merged = (Q, X, D, start, metric, p, best_dist, best_index)
    if lower_bound:
        # The block's k smallest bounds first: their exact distances then
        # bound the rest.
        first = D <= xp.minimum(block_kth, _limit(best_dist) + tol)[:, None]
        _merge_within(first, *merged)
        candidates = (D <= (_limit(best_dist) + tol)[:, None]) & ~first
    else:
        candidates = D <= (xp.minimum(_limit(best_dist), block_kth + tol) + tol)[:, None]
    _merge_within(candidates, *merged)


def _limit(best_dist):
    """Each query's k-th distance plus a few of its ulps: a distance just above
    it may be stored equal to it, a tie the index decides."""
    xp = get_namespace(best_dist)
    kth = best_dist[:, -1]
    return kth + kth * (ROUNDING_ULPS * float(xp.finfo(best_dist.dtype).eps))


def _merge_within(candidates, Q, X, D, start, metric, p, best_dist, best_index):
    """Recompute the ``candidates`` (boolean, D's shape) exactly and merge them."""
    xp = get_namespace(D)
    rows, cols = xp.nonzero(candidates)
    if metric in GEMM_METRICS:
        reduced = pair_distances(Q, X, rows, cols, metric, p)
    else:
        reduced = D[rows, cols]
    merge_candidates(rows, reduced, cols.astype(best_index.dtype) + start, best_dist, best_index)
