"""Nearest-neighbour pieces written once for NumPy and CuPy (array namespace
of the inputs), used by ``kernels/cpu/knn.py`` and ``kernels/gpu/knn.py``.

Pure local compute; nothing here communicates.

"Reduced" distances rank like the metric and are cheaper: ``||q - x||²``
for euclidean and sqeuclidean, ``1 - qn·xn`` (rows normalised by the
caller) for cosine, ``Σ|q - x|`` (manhattan), ``max|q - x|`` (chebyshev),
``Σ|q - x|^p`` (minkowski).
"""

GEMM_METRICS = ("sqeuclidean", "cosine")
_PAIR_CHUNK = 1 << 20  # elements of a (pairs, n_features) temporary


def namespace(x):
    module = type(x).__module__.split(".")[0]
    if module in ("cupy", "cupyx"):
        import cupy

        return cupy
    import numpy

    return numpy


def gemm_distances(Q, X, q_sq, x_sq, metric, out):
    """Approximate reduced distances from one GEMM into ``out`` (len(Q), len(X)).

    sqeuclidean: ``||q||² - 2 q·x + ||x||²`` clamped at 0 (``q_sq``/``x_sq`` the
    squared row norms); cosine: ``1 - q·x`` of normalised rows (norms unused).
    """
    xp = namespace(Q)
    xp.matmul(Q, X.T, out=out)
    if metric == "sqeuclidean":
        out *= -2
        out += q_sq[:, None]
        out += x_sq[None, :]
        xp.maximum(out, 0, out=out)
    else:
        out *= -1
        out += 1
    return out


def reduce_differences(diff, metric, p):
    """Reduced distances of the rows of ``diff`` (``q - x``, last axis summed)."""
    xp = namespace(diff)
    if metric == "sqeuclidean":
        return (diff * diff).sum(axis=-1)
    absolute = xp.abs(diff)
    if metric == "manhattan":
        return absolute.sum(axis=-1)
    if metric == "chebyshev":
        return absolute.max(axis=-1)
    return (absolute ** p).sum(axis=-1)


def pair_distances(Q, X, rows, cols, metric, p):
    """Exact reduced distances of the pairs ``(Q[rows[i]], X[cols[i]])``,
    computed directly (never through a GEMM), in chunks of bounded memory."""
    xp = namespace(Q)
    out = xp.empty(rows.shape[0], dtype=Q.dtype)
    step = max(1, _PAIR_CHUNK // max(Q.shape[1], 1))
    for start in range(0, rows.shape[0], step):
        r, c = rows[start:start + step], cols[start:start + step]
        if metric == "cosine":
            out[start:start + step] = 1 - (Q[r] * X[c]).sum(axis=-1)
        else:
            out[start:start + step] = reduce_differences(Q[r] - X[c], metric, p)
    return out


def radius_pairs(Q, X, D, tol, bound, metric, p):
    """Pairs within ``bound`` (reduced units) of the block: ``(rows, cols, reduced)``.

    ``D`` holds the block's reduced distances (approximate for the GEMM
    metrics, with per-row error at most ``tol``); candidates within
    ``bound + tol`` are recomputed exactly, so no pair is lost to rounding.
    The caller keeps those whose final distance is within the radius.
    """
    xp = namespace(D)
    rows, cols = xp.nonzero(D <= bound + tol[:, None])
    if metric in GEMM_METRICS:
        reduced = pair_distances(Q, X, rows, cols, metric, p)
    else:
        reduced = D[rows, cols]
    return rows, cols, reduced
