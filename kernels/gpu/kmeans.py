"""K-means kernels for CuPy arrays; same functions and IN/OUT signatures as
``kernels/cpu/kmeans.py``. Pure local compute, nothing here communicates.

Written against the NumPy-compatible API of the arrays' own namespace, so the
CPU tests run these very functions on NumPy arrays and compare them with the
numba kernels and with scikit-learn.

Rows go in chunks of :func:`chunk_rows` rows, so device memory stays bounded
(no ``n × k`` distance matrix for the whole shard), yet large: each chunk
costs some 40 kernel launches and two synchronisations, so on a GPU the
chunks take up to a quarter of the free device memory (at most
``DEVICE_CHUNK_BYTES``). Per chunk:

- distances: one cuBLAS GEMM ``x · (-2 c)ᵀ`` plus ``||c||²`` (the ``||x||²``
  term does not change the argmin), then ``argmin`` (ties to the smaller
  centre, as on the CPU);
- per-centre sums, updated by the rows whose label changed only: their
  weighted values on their grids (``trunc(w·x·scale)``,
  ``kernels/shared/limbs.py``) split into their two limbs, then one float64
  GEMM, ``M [high | low]`` with ``M`` the matrix of the moves (+1 at the new
  centre, -1 at the old): every partial sum is an integer below ``2**53``, so
  the GEMM adds exactly in whatever order cuBLAS takes, and the int64 limbs
  match the CPU kernel's bit for bit. No atomic per (row, feature): a
  scatter-add serialises a chunk on the ``k × d`` addresses of ``sums``.
"""

from ..._array import get_namespace, scratch_bytes
from ..shared.limbs import on_grid, split

#: Memory for one chunk's temporaries (distances, one-hot matrix, labels), in
#: bytes, on NumPy arrays (the CPU tests of this code) ...
CHUNK_BYTES = 1 << 27
#: ... and at most on a GPU (H200, 10M×64, k=256: 0.66 s per Lloyd
#: iteration with 26k-row chunks, launch-bound).
DEVICE_CHUNK_BYTES = 1 << 32
MIN_CHUNK_ROWS = 1024
#: At most this many rows per chunk: the GEMM's sums of low limbs (below
#: ``2**31`` each) stay exact float64 integers up to ``2**22`` rows.
MAX_CHUNK_ROWS = 1 << 20


def chunk_rows(n_clusters, n_features, itemsize, budget=CHUNK_BYTES):
    """Rows per chunk so that its ``(rows, k)`` distances, one-hot matrix and
    ``(rows, 2·d + 2)`` limbs fit ``budget``."""
    per_row = itemsize * n_clusters + 8 * (n_clusters + 4 * n_features + 4) + 16
    return int(min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, budget // per_row)))


def _budget(xp):
    return scratch_bytes(xp, CHUNK_BYTES, DEVICE_CHUNK_BYTES)


def lloyd_step(
    X, sample_weight, centers, scales, labels, sums, weights, stats, update_centers=True
):
    """Assign every row to its closest centre; add up the weighted sums per centre.

    See ``mlmpi.kernels.cpu.kmeans.lloyd_step`` for the parameters (arrays
    of X's namespace here, ``scales`` included).
    """
    xp = get_namespace(X)
    n, d = X.shape
    k = centers.shape[0]
    # -2 folded into the GEMM operand: scaling by a power of two is exact.
    centers_t = centers.T * X.dtype.type(-2)
    centers_sq = (centers * centers).sum(axis=1)
    changed = xp.zeros((), dtype=xp.int64)
    step = chunk_rows(k, d, X.itemsize, _budget(xp))
    for start in range(0, n, step):
        stop = min(start + step, n)
        block = X[start:stop]
        dist = block @ centers_t
        dist += centers_sq
        best = dist.argmin(axis=1).astype(xp.int32)
        del dist
        moved = xp.flatnonzero(labels[start:stop] != best)
        changed += moved.size
        if update_centers and moved.size:
            old = labels[start:stop][moved]
            _move_rows(
                block[moved],
                sample_weight[start:stop][moved],
                old,
                best[moved],
                scales,
                sums,
                weights,
            )
        labels[start:stop] = best
    stats[0] = changed


def _move_rows(rows, sample_weight, old, new, scales, sums, weights):
    """Move the weighted ``rows`` (and their weights) from centres ``old`` (none
    where -1) to centres ``new`` in the two-limb sums: one float64 GEMM of the
    ±1 matrix of the moves with the values' limbs, exact in any order."""
    xp = get_namespace(rows)
    k, d = sums.shape[1], sums.shape[2]
    m = rows.shape[0]
    w = sample_weight.astype(xp.float64)
    values = xp.empty((m, d + 1), dtype=xp.float64)
    values[:, :d] = rows
    values[:, :d] *= w[:, None]
    values[:, d] = w
    high, low = split(on_grid(values, scales))
    moves = xp.zeros((k, m), dtype=xp.float64)
    index = xp.arange(m)
    moves[new, index] = 1.0
    had = xp.flatnonzero(old >= 0)
    moves[old[had], index[had]] = -1.0
    limbs = (moves @ xp.concatenate([high, low], axis=1).astype(xp.float64)).astype(xp.int64)
    sums += xp.stack([limbs[:, :d], limbs[:, d + 1 : 2 * d + 1]])
    weights += xp.stack([limbs[:, d], limbs[:, 2 * d + 1]])


def assigned_sq_distances(X, centers, labels, out):
    """``out[i] = ||X[i] - centers[labels[i]]||²``, computed directly (not via GEMM).

    See ``mlmpi.kernels.cpu.kmeans.assigned_sq_distances`` for the parameters.
    """
    n, d = X.shape
    step = chunk_rows(0, d, X.itemsize, _budget(get_namespace(X)))
    for start in range(0, n, step):
        stop = min(start + step, n)
        diff = X[start:stop] - centers[labels[start:stop]]
        out[start:stop] = (diff * diff).sum(axis=1)


def center_rows(X, mean, out):
    """``out = X - mean``, row by row (``out`` may be ``X``).

    See ``mlmpi.kernels.cpu.kmeans.center_rows`` for the parameters.
    """
    get_namespace(X).subtract(X, mean, out=out)
