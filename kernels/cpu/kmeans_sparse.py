"""K-means kernels for SciPy CSR rows (numba); same functions and IN/OUT
signatures as ``kernels/cpu/kmeans.py``. Pure local compute into
caller-owned buffers; nothing here communicates.

Sparse rows are never densified. The distance to centre ``j`` is
``||c_j||² - 2 x·c_j`` (``||x||²`` does not change the argmin), the dot
products running over the row's stored entries against the transposed
centres, as scikit-learn's ``lloyd_iter_chunked_sparse``; ties go to the
smaller centre. The rows are cut into ``numba.get_num_threads()`` ranges,
each accumulating into its own slice of the partial sums; the slices are
added in a fixed order, so the result does not depend on thread scheduling.
"""

import numba
import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, parallel=True)
def _lloyd_ranges(
    data,
    indices,
    indptr,
    sample_weight,
    centers_t,
    centers_sq,
    labels,
    group_sums,
    group_weights,
    group_changed,
    bounds,
    update,
):
    k = centers_t.shape[1]
    for g in prange(bounds.size - 1):
        dots = np.empty(k, dtype=np.float64)
        changed = 0.0
        for i in range(bounds[g], bounds[g + 1]):
            dots[:] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                value = data[p]
                column = indices[p]
                for j in range(k):
                    dots[j] += value * centers_t[column, j]
            best = 0
            best_dist = centers_sq[0] - 2.0 * dots[0]
            for j in range(1, k):
                dist = centers_sq[j] - 2.0 * dots[j]
                if dist < best_dist:
                    best_dist = dist
                    best = j
            if labels[i] != best:
                changed += 1.0
                labels[i] = best
            if update:
                w = sample_weight[i]
                for p in range(indptr[i], indptr[i + 1]):
                    group_sums[g, best, indices[p]] += w * data[p]
                group_weights[g, best] += w
        group_changed[g] = changed


def lloyd_step(X, sample_weight, centers, labels, sums, weights, stats, update_centers=True):
    """Assign every row to its closest centre; add up the weighted sums per centre.

    Parameters
    ----------
    X : scipy.sparse CSR matrix of shape (n_local, n_features), float32 or float64  (IN)
    sample_weight, centers, labels, sums, weights, stats, update_centers
        As ``mlmpi.kernels.cpu.kmeans.lloyd_step``.
    """
    n = X.shape[0]
    k, d = centers.shape
    groups = max(1, min(numba.get_num_threads(), n))
    bounds = np.asarray([g * n // groups for g in range(groups + 1)], dtype=np.int64)
    group_sums = np.zeros((groups if update_centers else 1, k, d), dtype=np.float64)
    group_weights = np.zeros((groups, k), dtype=np.float64)
    group_changed = np.zeros(groups, dtype=np.float64)
    centers64 = centers.astype(np.float64)
    centers_sq = np.einsum("ij,ij->i", centers64, centers64)
    _lloyd_ranges(
        X.data,
        X.indices,
        X.indptr,
        sample_weight,
        np.ascontiguousarray(centers64.T),
        centers_sq,
        labels,
        group_sums,
        group_weights,
        group_changed,
        bounds,
        update_centers,
    )
    stats[0] = group_changed.sum()
    if update_centers:
        np.sum(group_sums, axis=0, out=sums)
        np.sum(group_weights, axis=0, out=weights)


@njit(cache=True, nogil=True, parallel=True)
def _assigned(data, indices, indptr, centers, centers_sq, labels, out):
    for i in prange(out.size):
        c = labels[i]
        total = centers_sq[c]
        for p in range(indptr[i], indptr[i + 1]):
            center = centers[c, indices[p]]
            diff = data[p] - center
            total += diff * diff - center * center
        out[i] = max(total, 0.0)


def assigned_sq_distances(X, centers, labels, out):
    """``out[i] = ||X[i] - centers[labels[i]]||²`` over the stored entries
    (``||c||²`` plus each stored entry's ``(x - c)² - c²``, as scikit-learn's
    ``_sqeuclidean_sparse_dense``).

    Parameters
    ----------
    X : scipy.sparse CSR matrix of shape (n_local, n_features)  (IN)
    centers, labels, out
        As ``mlmpi.kernels.cpu.kmeans.assigned_sq_distances``.
    """
    if X.shape[0]:
        centers64 = centers.astype(np.float64)
        centers_sq = np.einsum("ij,ij->i", centers64, centers64)
        _assigned(X.data, X.indices, X.indptr, centers64, centers_sq, labels, out)
