"""K-means kernels for CuPy arrays; same functions and IN/OUT signatures as
``kernels/cpu/kmeans.py``. Pure local compute, nothing here communicates.

Rows go in blocks: one cuBLAS GEMM per block for the distances, ``argmin``,
and a scatter-add of the weighted rows into the per-centre sums.
"""

import cupy as cp
import cupyx

BLOCK_ROWS = 1 << 16


def lloyd_step(X, sample_weight, centers, labels, sums, weights, stats, update_centers=True):
    """Assign every row to its closest centre; add up the weighted sums per centre.

    See ``mlmpi.kernels.cpu.kmeans.lloyd_step`` for the parameters (CuPy
    arrays here; ``sums``, ``weights``, ``stats`` are float64 CuPy arrays).
    """
    n = X.shape[0]
    centers_sq = (centers * centers).sum(axis=1)
    changed = cp.zeros((), dtype=cp.float64)
    if update_centers:
        sums.fill(0.0)
        weights.fill(0.0)
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block = X[start:stop]
        dist = centers_sq[None, :] - 2 * (block @ centers.T)
        best = dist.argmin(axis=1).astype(cp.int32)
        changed += (labels[start:stop] != best).sum()
        labels[start:stop] = best
        if update_centers:
            w = sample_weight[start:stop].astype(cp.float64)
            cupyx.scatter_add(sums, best, block.astype(cp.float64) * w[:, None])
            cupyx.scatter_add(weights, best, w)
    stats[0] = changed


def assigned_sq_distances(X, centers, labels, out):
    """``out[i] = ||X[i] - centers[labels[i]]||²``, computed directly (not via GEMM)."""
    for start in range(0, X.shape[0], BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, X.shape[0])
        diff = X[start:stop] - centers[labels[start:stop]]
        out[start:stop] = (diff * diff).sum(axis=1)
