"""K-means kernels for SciPy CSR rows (numba); same functions and IN/OUT
signatures as ``kernels/cpu/kmeans.py``. Pure local compute into
caller-owned buffers; nothing here communicates.

Sparse rows are never densified. The distance to centre ``j`` is
``||c_j||² - 2 x·c_j`` (``||x||²`` does not change the argmin), the dot
products running over the row's stored entries against the transposed
centres, as scikit-learn's ``lloyd_iter_chunked_sparse``; ties go to the
smaller centre. The rows are cut into ``numba.get_num_threads()`` ranges,
each accumulating into its own slice of the partial sums; the sums are
two-limb integers (``kernels/shared/limbs.py``), so neither the threads nor
the ranks change them.
"""

import numba
import numpy as np
from numba import njit, prange

from ..shared.limbs import LIMB_BITS, LIMB_MASK


@njit(cache=True, nogil=True, parallel=True)
def _lloyd_ranges(
    data,
    indices,
    indptr,
    sample_weight,
    centers_t,
    centers_sq,
    scales,
    labels,
    group_sums,
    group_weights,
    group_changed,
    bounds,
    update,
):
    k = centers_t.shape[1]
    d = centers_t.shape[0]
    for g in prange(bounds.size - 1):
        dots = np.empty(k, dtype=np.float64)
        changed = 0
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
            old = labels[i]
            if old == best:
                continue
            changed += 1
            labels[i] = best
            if not update:
                continue
            w = np.float64(sample_weight[i])
            for p in range(indptr[i], indptr[i + 1]):
                column = indices[p]
                q = np.int64(w * np.float64(data[p]) * scales[column])
                _add(group_sums[g, :, :, column], best, q)
                if old >= 0:
                    _add(group_sums[g, :, :, column], old, -q)
            q = np.int64(w * scales[d])
            _add(group_weights[g], best, q)
            if old >= 0:
                _add(group_weights[g], old, -q)
        group_changed[g] = changed


@njit(cache=True, nogil=True)
def _add(limbs, centre, q):
    """``q`` into the high (``limbs[0, centre]``) and low (``limbs[1, centre]``) limbs."""
    limbs[0, centre] += q >> LIMB_BITS
    limbs[1, centre] += q & LIMB_MASK


def lloyd_step(
    X, sample_weight, centers, scales, labels, sums, weights, stats, update_centers=True
):
    """Assign every row to its closest centre; add up the weighted sums per centre.

    Parameters
    ----------
    X : scipy.sparse CSR matrix of shape (n_local, n_features), float32 or float64  (IN)
    sample_weight, centers, scales, labels, sums, weights, stats, update_centers
        As ``mlmpi.kernels.cpu.kmeans.lloyd_step`` (a stored entry ``x`` moves
        ``trunc(w·x·scales[f])`` between its column's limbs of the old and the
        new centre when its row's label changes).
    """
    n = X.shape[0]
    k, d = centers.shape
    groups = max(1, min(numba.get_num_threads(), n))
    bounds = np.asarray([g * n // groups for g in range(groups + 1)], dtype=np.int64)
    group_sums = np.zeros((groups if update_centers else 1, 2, k, d), dtype=np.int64)
    group_weights = np.zeros((groups, 2, k), dtype=np.int64)
    group_changed = np.zeros(groups, dtype=np.int64)
    centers64 = centers.astype(np.float64)
    centers_sq = np.einsum("ij,ij->i", centers64, centers64)
    _lloyd_ranges(
        X.data,
        X.indices,
        X.indptr,
        sample_weight,
        np.ascontiguousarray(centers64.T),
        centers_sq,
        scales,
        labels,
        group_sums,
        group_weights,
        group_changed,
        bounds,
        update_centers,
    )
    stats[0] = group_changed.sum()
    if update_centers:
        sums += group_sums.sum(axis=0)
        weights += group_weights.sum(axis=0)


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
