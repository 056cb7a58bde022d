"""K-means kernels for CuPy arrays; same functions and IN/OUT signatures as
``kernels/cpu/kmeans.py``. Pure local compute, nothing here communicates.

Written against the NumPy-compatible API of the arrays' own namespace, so the
CPU tests run these very functions on NumPy arrays and compare them with the
numba kernels and with scikit-learn.

Rows go in chunks of :func:`chunk_rows` rows, so device memory stays bounded
(no ``n × k`` distance matrix for the whole shard). Per chunk:

- distances: one cuBLAS GEMM ``x · (-2 c)ᵀ`` plus ``||c||²`` (the ``||x||²``
  term does not change the argmin), then ``argmin`` (ties to the smaller
  centre, as on the CPU);
- per-centre sums: one more GEMM, ``Wᵀ x`` with ``W`` the weighted one-hot
  matrix of the chunk's labels (``W[i, label_i] = w_i``), in X's dtype, added
  into the float64 ``sums``; weights are the row sums of ``W``. No atomic
  per (row, feature): the scatter-add this replaces serialised the whole
  chunk on the ``k × d`` addresses of ``sums``.
"""

from ..._array import get_namespace

#: Memory for one chunk's temporaries (distances, one-hot matrix, labels), in bytes.
CHUNK_BYTES = 1 << 27
MIN_CHUNK_ROWS = 1024
#: At most this many rows per chunk: a chunk's sums add up in X's dtype inside
#: the GEMM (float32 rounding grows with the rows summed) before they go into
#: the float64 ``sums``.
MAX_CHUNK_ROWS = 1 << 17


def chunk_rows(n_clusters, n_features, itemsize, budget=CHUNK_BYTES):
    """Rows per chunk so that its ``(rows, k)`` distances and one-hot matrix fit ``budget``."""
    per_row = itemsize * (2 * n_clusters + n_features) + 16
    return int(min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, budget // per_row)))


def lloyd_step(X, sample_weight, centers, labels, sums, weights, stats, update_centers=True):
    """Assign every row to its closest centre; add up the weighted sums per centre.

    See ``mlmpi.kernels.cpu.kmeans.lloyd_step`` for the parameters (arrays
    of X's namespace here; ``sums``, ``weights``, ``stats`` are float64).
    """
    xp = get_namespace(X)
    n, d = X.shape
    k = centers.shape[0]
    # -2 folded into the GEMM operand: scaling by a power of two is exact.
    centers_t = centers.T * X.dtype.type(-2)
    centers_sq = (centers * centers).sum(axis=1)
    changed = xp.zeros((), dtype=xp.int64)
    if update_centers:
        sums.fill(0.0)
        weights.fill(0.0)
    step = chunk_rows(k, d, X.itemsize)
    for start in range(0, n, step):
        stop = min(start + step, n)
        block = X[start:stop]
        dist = block @ centers_t
        dist += centers_sq
        best = dist.argmin(axis=1).astype(xp.int32)
        changed += xp.count_nonzero(labels[start:stop] != best)
        labels[start:stop] = best
        if update_centers:
            del dist
            onehot = xp.zeros((k, stop - start), dtype=X.dtype)
            onehot[best, xp.arange(stop - start)] = sample_weight[start:stop]
            sums += onehot @ block
            weights += onehot.sum(axis=1, dtype=xp.float64)
    stats[0] = changed


def assigned_sq_distances(X, centers, labels, out):
    """``out[i] = ||X[i] - centers[labels[i]]||²``, computed directly (not via GEMM).

    See ``mlmpi.kernels.cpu.kmeans.assigned_sq_distances`` for the parameters.
    """
    n, d = X.shape
    step = chunk_rows(0, d, X.itemsize)
    for start in range(0, n, step):
        stop = min(start + step, n)
        diff = X[start:stop] - centers[labels[start:stop]]
        out[start:stop] = (diff * diff).sum(axis=1)


def center_rows(X, mean, out):
    """``out = X - mean``, row by row (``out`` may be ``X``).

    See ``mlmpi.kernels.cpu.kmeans.center_rows`` for the parameters.
    """
    get_namespace(X).subtract(X, mean, out=out)
