"""K-means kernels for ``cupyx.scipy.sparse`` CSR rows; same functions and
IN/OUT signatures as ``kernels/cpu/kmeans_sparse.py``. Pure local compute,
nothing here communicates.

Rows go in blocks: one cuSPARSE product per block for the dots with the
centres, ``argmin``, and a scatter-add of the weighted stored entries into
the per-centre sums (the rows are never densified).
"""

import cupy as cp
import cupyx

BLOCK_ROWS = 1 << 16


def _entry_rows(block):
    """Row (within ``block``) of each stored entry."""
    entries = cp.arange(block.nnz, dtype=block.indptr.dtype)
    return cp.searchsorted(block.indptr, entries, side="right") - 1


def _closest(block, centers, centers_sq):
    """Closest centre of each row of a CSR block (ties to the smaller centre), int32."""
    dist = centers_sq[None, :] - 2 * (block @ centers.T)
    return dist.argmin(axis=1).astype(cp.int32)


def _add_block_sums(block, best, w, sums, weights):
    """Scatter-add the weighted stored entries of ``block`` into ``sums[best]``."""
    rows = _entry_rows(block)
    cupyx.scatter_add(sums, (best[rows], block.indices), block.data.astype(cp.float64) * w[rows])
    cupyx.scatter_add(weights, best, w)


def lloyd_step(X, sample_weight, centers, labels, sums, weights, stats, update_centers=True):
    """Assign every row to its closest centre; add up the weighted sums per centre.

    See ``mlmpi.kernels.cpu.kmeans_sparse.lloyd_step`` (CuPy arrays here;
    ``sums``, ``weights``, ``stats`` are float64 CuPy arrays).
    """
    centers_sq = (centers * centers).sum(axis=1)
    if update_centers:
        sums.fill(0.0)
        weights.fill(0.0)
    stats[0] = 0.0
    for start in range(0, X.shape[0], BLOCK_ROWS):
        block = X[start : start + BLOCK_ROWS]
        previous = labels[start : start + block.shape[0]]
        best = _closest(block, centers, centers_sq)
        stats[0] += (previous != best).sum()
        previous[...] = best
        if update_centers:
            w = sample_weight[start : start + block.shape[0]].astype(cp.float64)
            _add_block_sums(block, best, w, sums, weights)


def assigned_sq_distances(X, centers, labels, out):
    """``out[i] = ||X[i] - centers[labels[i]]||²`` over the stored entries."""
    centers_sq = (centers * centers).sum(axis=1)
    for start in range(0, X.shape[0], BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, X.shape[0])
        block = X[start:stop]
        rows = _entry_rows(block)
        center = centers[labels[start:stop][rows], block.indices]
        diff = block.data - center
        per_entry = diff * diff - center * center
        total = cp.bincount(rows, weights=per_entry, minlength=stop - start)
        out[start:stop] = cp.maximum(total + centers_sq[labels[start:stop]], 0)
