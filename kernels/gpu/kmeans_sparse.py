"""K-means kernels for ``cupyx.scipy.sparse`` CSR rows; same functions and
IN/OUT signatures as ``kernels/cpu/kmeans_sparse.py``. Pure local compute,
nothing here communicates.

Rows go in blocks: one cuSPARSE product per block for the dots with the
centres, ``argmin``, and, for the rows whose label changed, a scatter-add of
their weighted stored entries, on their grids and split into two limbs
(``kernels/shared/limbs.py``), into the new centre's int64 sums and out of
the old one's (the rows are never densified). Integer atomics add
exactly in any order, so the sums are those of the CPU kernel bit for bit.
"""

import cupy as cp
import cupyx

from ..shared.limbs import on_grid, split

BLOCK_ROWS = 1 << 16


def _entry_rows(block):
    """Row (within ``block``) of each stored entry."""
    entries = cp.arange(block.nnz, dtype=block.indptr.dtype)
    return cp.searchsorted(block.indptr, entries, side="right") - 1


def _closest(block, centers, centers_sq):
    """Closest centre of each row of a CSR block (ties to the smaller centre), int32."""
    dist = centers_sq[None, :] - 2 * (block @ centers.T)
    return dist.argmin(axis=1).astype(cp.int32)


def _move_block_sums(block, old, new, w, scales, sums, weights):
    """Move the weighted stored entries of ``block``'s rows (and the rows'
    weights), on their grids, from the limbs of centres ``old`` (none where -1)
    to those of centres ``new``, for the rows whose label changed. CuPy's
    integer atomics are unsigned: int64 limbs are added as their uint64 bits,
    which wrap to the same sums."""
    rows = _entry_rows(block)
    entries = cp.flatnonzero(old[rows] != new[rows])
    moved = cp.flatnonzero(old != new)
    values = block.data[entries].astype(cp.float64) * w[rows[entries]]
    parts = split(on_grid(values, scales[block.indices[entries]]))
    row_parts = split(on_grid(w[moved], scales[-1]))
    for sign, centres in ((1, new), (-1, old)):
        taken = cp.flatnonzero(centres[rows[entries]] >= 0)
        kept = cp.flatnonzero(centres[moved] >= 0)
        for limb in range(2):
            cupyx.scatter_add(
                sums[limb].view(cp.uint64),
                (centres[rows[entries[taken]]], block.indices[entries[taken]]),
                (sign * parts[limb][taken]).view(cp.uint64),
            )
            cupyx.scatter_add(
                weights[limb].view(cp.uint64),
                centres[moved[kept]],
                (sign * row_parts[limb][kept]).view(cp.uint64),
            )


def lloyd_step(
    X, sample_weight, centers, scales, labels, sums, weights, stats, update_centers=True
):
    """Assign every row to its closest centre; move the changed rows' weighted
    sums between centres.

    See ``mlmpi.kernels.cpu.kmeans_sparse.lloyd_step`` (CuPy arrays here,
    ``scales`` included).
    """
    centers_sq = (centers * centers).sum(axis=1)
    stats[0] = 0
    for start in range(0, X.shape[0], BLOCK_ROWS):
        block = X[start : start + BLOCK_ROWS]
        previous = labels[start : start + block.shape[0]]
        best = _closest(block, centers, centers_sq)
        stats[0] += (previous != best).sum()
        if update_centers:
            w = sample_weight[start : start + block.shape[0]].astype(cp.float64)
            _move_block_sums(block, previous, best, w, scales, sums, weights)
        previous[...] = best


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
