"""K-means kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
``kernels/gpu/kmeans.py`` has the same functions with the same IN/OUT
signatures for CuPy arrays.

The distance to centre ``j`` is ``||c_j||² - 2 x·c_j`` (``||x||²`` does not
change the argmin). Rows go in blocks of ``BLOCK_ROWS``; a block's argmin
and weighted partial sums are done while it is still in cache, so no
``n × k × d`` temporary is ever made. Two ways to get a block's distances,
chosen by a crossover measured with ``benchmarks/bench_lloyd_kernel.py``:

- lanes (the default): a register-blocked micro-kernel
  (``kernels/cpu/_kmeans_lanes.py``), one centre per SIMD lane, tiles of
  rows against chunks of 16 centres with the argmin fused in; it beat the
  GEMM at every ``k`` measured up to 1024 with ``d = 32``;
- columns (``k · d ≥ GEMM_MIN_CENTRE_VALUES``: many centres with many
  features, where a tile of rows no longer stays in L1 across the chunks):
  ``(-2 C) · X_bᵀ`` by BLAS is (k, rows), and the argmin runs down the
  centres with every row of the block in one SIMD lane.

Both compute each dot product as one fused multiply-add per feature in
feature order, as BLAS's GEMM micro-kernels do, take the first (smallest)
centre among equal distances, and add the sums of a block in X's dtype in
row order, so their labels and sums agree bit for bit. The GEMM is NumPy's
(``np.dot`` inside numba ignored threadpoolctl's limit on this machine's
OpenBLAS and oversubscribed the cores).

A rank uses ``numba.get_num_threads()`` threads (set per rank by
``mlmpi._threads``): each takes one contiguous range of blocks and
accumulates into its own slice of the partial sums (BLAS limited to one
thread meanwhile); the slices are added in a fixed order, so the result
does not depend on thread scheduling.
"""

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit, prange

from ._kmeans_lanes import BLOCK_ROWS, LANES, add_block, assign_lanes

#: From this ``n_clusters · n_features`` on, a block's distances come from a BLAS GEMM.
GEMM_MIN_CENTRE_VALUES = 200_000

_controller = None
_pool = None


def _blas_controller():
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


def _thread_pool(n_threads):
    global _pool
    if _pool is None or _pool._max_workers < n_threads:
        _pool = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="mlmpi-kmeans")
    return _pool


@njit(cache=True, nogil=True)
def _argmin_columns(dots_t, centers_sq, best, best_dist):
    """``best[i]`` = argmin over ``j`` of ``centers_sq[j] + dots_t[j, i]`` (first on ties).

    The inner loop runs along the rows (one SIMD lane each), branch-free.
    """
    k, rows = dots_t.shape
    for i in range(rows):
        best_dist[i] = centers_sq[0] + dots_t[0, i]
        best[i] = 0
    for j in range(1, k):
        c = centers_sq[j]
        for i in range(rows):
            dist = c + dots_t[j, i]
            closer = dist < best_dist[i]
            best_dist[i] = dist if closer else best_dist[i]
            best[i] = j if closer else best[i]


def _lanes_operands(centers):
    """``-2 Cᵀ`` as (chunks, n_features, LANES), zero-padded, and ``||c||²`` padded with inf."""
    k, d = centers.shape
    chunks = -(-k // LANES)
    centers_t = np.zeros((chunks * LANES, d), dtype=centers.dtype)
    centers_t[:k] = centers * -2
    centers_t = np.ascontiguousarray(centers_t.reshape(chunks, LANES, d).transpose(0, 2, 1))
    centers_sq = np.full(chunks * LANES, np.inf, dtype=centers.dtype)
    centers_sq[:k] = np.einsum("ij,ij->i", centers, centers)
    return centers_t, centers_sq


def _gemm_columns(
    X, sample_weight, centers, centers_sq, labels, sums, weights, stats, update, first, last
):
    """Blocks ``first .. last`` with their distances from one GEMM each."""
    n = X.shape[0]
    centers_2 = centers * X.dtype.type(-2)  # exact: a power of two
    dots = np.empty((centers.shape[0], BLOCK_ROWS), dtype=X.dtype)
    best = np.empty(BLOCK_ROWS, dtype=np.int32)
    best_dist = np.empty(BLOCK_ROWS, dtype=X.dtype)
    for start in range(first * BLOCK_ROWS, min(last * BLOCK_ROWS, n), BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        rows = stop - start
        block = dots if rows == BLOCK_ROWS else np.empty((len(centers), rows), dtype=X.dtype)
        np.dot(centers_2, X[start:stop].T, out=block)
        _argmin_columns(block, centers_sq, best[:rows], best_dist[:rows])
        add_block(X, sample_weight, start, best[:rows], labels, sums, weights, stats, update)


def lloyd_step(X, sample_weight, centers, labels, sums, weights, stats, update_centers=True):
    """Assign every row to its closest centre; add up the weighted sums per centre.

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features), float32 or float64, C order  (IN)
    sample_weight : ndarray of shape (n_local,), X's dtype  (IN)
    centers : ndarray of shape (n_clusters, n_features), X's dtype  (IN)
    labels : ndarray of shape (n_local,), int32  (INOUT)
        Previous labels in, new labels out (ties go to the smaller centre).
    sums : ndarray of shape (n_clusters, n_features), float64  (OUT)
        Σ w·x of the rows assigned to each centre (untouched when not
        ``update_centers``).
    weights : ndarray of shape (n_clusters,), float64  (OUT)
        Σ w of the rows assigned to each centre (untouched when not
        ``update_centers``).
    stats : ndarray of shape (1,), float64  (OUT)
        Number of labels that changed. (The inertia comes from
        :func:`assigned_sq_distances`, exactly rather than from the GEMM.)
    update_centers : bool, default=True
        False: only the labels.
    """
    n, d = X.shape
    k = centers.shape[0]
    n_blocks = -(-n // BLOCK_ROWS)
    groups = max(1, min(numba.get_num_threads(), n_blocks))
    group_sums = np.zeros((groups, k, d), dtype=np.float64)
    group_weights = np.zeros((groups, k), dtype=np.float64)
    group_stats = np.zeros((groups, 1), dtype=np.float64)
    if k * d >= GEMM_MIN_CENTRE_VALUES:
        run, operands = _gemm_columns, (centers, np.einsum("ij,ij->i", centers, centers))
    else:
        run, operands = assign_lanes, _lanes_operands(centers)
    bounds = [g * n_blocks // groups for g in range(groups + 1)]
    args = [
        (
            X,
            sample_weight,
            *operands,
            labels,
            group_sums[g],
            group_weights[g],
            group_stats[g],
            update_centers,
            bounds[g],
            bounds[g + 1],
        )
        for g in range(groups)
    ]
    if groups == 1:
        run(*args[0])
    else:
        with _blas_controller().limit(limits=1, user_api="blas"):
            for future in [_thread_pool(groups).submit(run, *a) for a in args]:
                future.result()
    np.sum(group_stats, axis=0, out=stats)
    if update_centers:
        np.sum(group_sums, axis=0, out=sums)
        np.sum(group_weights, axis=0, out=weights)


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc"})
def _assigned(X, centers, labels, out):
    n, d = X.shape
    for i in prange(n):
        c = labels[i]
        total = 0.0
        for f in range(d):
            diff = X[i, f] - centers[c, f]
            total += diff * diff
        out[i] = total


def assigned_sq_distances(X, centers, labels, out):
    """``out[i] = ||X[i] - centers[labels[i]]||²``, computed directly (not via GEMM).

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features)  (IN)
    centers : ndarray of shape (n_clusters, n_features), X's dtype  (IN)
    labels : ndarray of shape (n_local,), int32  (IN)
    out : ndarray of shape (n_local,), X's dtype  (OUT)
    """
    if X.shape[0]:
        _assigned(X, centers, labels, out)
