"""K-means kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
``kernels/gpu/kmeans.py`` has the same functions with the same IN/OUT
signatures for CuPy arrays.

Distances come from one BLAS GEMM per block of rows
(``||x||² - 2 x·c + ||c||²``; the ``||x||²`` term does not change the
argmin), followed by the argmin and the weighted partial sums while the
block is still in cache, so no ``n × k × d`` temporary is ever made. Two
layouts of the block's distances, chosen by the number of centres:

- rows (``k < COLUMN_MIN_CLUSTERS``): ``X_b · (-2 C)ᵀ`` is (rows, k), the
  tall GEMM OpenBLAS runs fastest with few centres (in ``GEMM_ROWS``
  pieces); one compiled loop per
  row finds the argmin along its k distances and adds the row to its sums;
- columns (many centres): ``(-2 C) · X_bᵀ`` is (k, rows); the argmin runs
  down the centres with every row of the block in one SIMD lane (the
  row-wise argmin is a chain of dependent compares, ~k cycles per row),
  then the sums.

Both take the first (smallest) centre among equal distances, and add the
sums of a block in X's dtype in row order, so their labels and sums agree
(up to the rounding of the GEMM). The crossover was measured with
``benchmarks/bench_lloyd_kernel.py``. The GEMM is NumPy's (``np.dot``
inside numba ignored threadpoolctl's limit on this machine's OpenBLAS and
oversubscribed the cores).

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

from ._centre_lanes import LANES, row_argmin, tile_argmin, tile_rows

BLOCK_ROWS = 2048
#: Rows per GEMM of the row layout (OpenBLAS runs the tall product faster in halves).
GEMM_ROWS = 1024
#: From this many centres on, the distances of a block are laid out by columns.
COLUMN_MIN_CLUSTERS = 48

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
def _argmin_rows(dots, centers_sq, best):
    """``best[i]`` = argmin over ``j`` of ``centers_sq[j] + dots[i, j]`` (first on ties).

    Selects, not branches (the winner is unpredictable).
    """
    rows, k = dots.shape
    for i in range(rows):
        b = 0
        best_dist = centers_sq[0] + dots[i, 0]
        for j in range(1, k):
            dist = centers_sq[j] + dots[i, j]
            closer = dist < best_dist
            best_dist = dist if closer else best_dist
            b = j if closer else b
        best[i] = b


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


@njit(cache=True, nogil=True)
def _add_block(X, sample_weight, start, best, labels, sums, weights, stats, update):
    """Store the block's labels (counting changes) and, with ``update``, add its
    weighted rows to their centres' sums, in X's dtype, then into the float64 ``sums``."""
    k, d = sums.shape
    changed = 0.0
    block_sums = np.zeros((k, d), dtype=X.dtype)
    for i in range(best.shape[0]):
        row = start + i
        b = best[i]
        if labels[row] != b:
            changed += 1.0
            labels[row] = b
        if update:
            w = sample_weight[row]
            for f in range(d):
                block_sums[b, f] += w * X[row, f]
            weights[b] += w
    if update:
        for j in range(k):
            for f in range(d):
                sums[j, f] += block_sums[j, f]
    stats[0] += changed


@njit(cache=True, nogil=True)
def _assign_lanes(
    X, sample_weight, centers_t, centers_sq, labels, sums, weights, stats, update, first, last
):
    """Blocks ``first .. last`` by tiles of rows against chunks of ``LANES`` centres."""
    n = X.shape[0]
    rows = tile_rows(X)
    best_dist = np.empty(rows, dtype=X.dtype)
    best = np.empty(BLOCK_ROWS, dtype=np.int32)
    for start in range(first * BLOCK_ROWS, min(last * BLOCK_ROWS, n), BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        i = start
        while i < stop:
            tile = best[i - start :]
            best_dist[:] = np.inf
            if i + rows <= stop:
                for chunk in range(centers_t.shape[0]):
                    tile_argmin(X, i, centers_t, centers_sq, chunk, best_dist, tile)
                i += rows
            else:
                for chunk in range(centers_t.shape[0]):
                    row_argmin(X, i, centers_t, centers_sq, chunk, best_dist, tile)
                i += 1
        _add_block(X, sample_weight, start, best[: stop - start], labels, sums, weights, stats, update)


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


def _run_group(
    X, sample_weight, centers_t, centers_sq, labels, sums, weights, stats, update, first, last
):
    n = X.shape[0]
    k = centers_t.shape[1]
    columns = k >= COLUMN_MIN_CLUSTERS
    centers_2 = np.ascontiguousarray(centers_t.T) if columns else None
    dots = np.empty((k, BLOCK_ROWS) if columns else (BLOCK_ROWS, k), dtype=X.dtype)
    best = np.empty(BLOCK_ROWS, dtype=np.int32)
    best_dist = np.empty(BLOCK_ROWS, dtype=X.dtype)
    for start in range(first * BLOCK_ROWS, min(last * BLOCK_ROWS, n), BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        rows = stop - start
        if columns:
            block = dots if rows == BLOCK_ROWS else np.empty((k, rows), dtype=X.dtype)
            np.dot(centers_2, X[start:stop].T, out=block)
            _argmin_columns(block, centers_sq, best[:rows], best_dist[:rows])
        else:
            block = dots[:rows]
            for lo in range(0, rows, GEMM_ROWS):
                hi = min(lo + GEMM_ROWS, rows)
                np.dot(X[start + lo : start + hi], centers_t, out=block[lo:hi])
            _argmin_rows(block, centers_sq, best[:rows])
        _add_block(X, sample_weight, start, best[:rows], labels, sums, weights, stats, update)


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
    # -2 folded into the GEMM operand: scaling by a power of two is exact.
    centers_t = np.ascontiguousarray(centers.T) * -2
    centers_sq = np.einsum("ij,ij->i", centers, centers)
    bounds = [g * n_blocks // groups for g in range(groups + 1)]
    args = [
        (
            X,
            sample_weight,
            centers_t,
            centers_sq,
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
        _run_group(*args[0])
    else:
        with _blas_controller().limit(limits=1, user_api="blas"):
            for future in [_thread_pool(groups).submit(_run_group, *a) for a in args]:
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
