"""Where values fall among sorted thresholds, through equal cells (numba).

The binning kernels (``forest`` and ``hgb``) count, for every value, the
thresholds of its feature below it (``searchsorted(side="left")``). A plain
binary search over 255 thresholds is eight dependent loads per value (about
45 ns); instead a feature's threshold range is cut into ``CELLS`` equal
cells, and a value is searched only among the thresholds of its cell (often
none or one). Rounding in the cell's computation can put a value one cell
off; the search's last steps correct it, so the count is exact whatever the
thresholds (all in one cell, infinite ones: a binary search over them).
"""

import numpy as np
from numba import njit

CELLS = 1024


@njit(cache=True, nogil=True)
def cell_tables(edges, edge_starts):
    """The cells of every feature: ``(origin, scale, first)``.

    Feature ``f``'s thresholds are ``edges[edge_starts[f]:edge_starts[f + 1]]``
    (sorted). The cell of ``x`` is ``(x - origin[f]) * scale[f]``, and
    ``first[f, c]`` counts the feature's thresholds below cell ``c``'s left
    end (``first[f, CELLS + 1]``: all of them).
    """
    n_features = edge_starts.shape[0] - 1
    origin = np.zeros(n_features)
    scale = np.zeros(n_features)
    first = np.empty((n_features, CELLS + 2), dtype=np.int64)
    for f in range(n_features):
        start, m = edge_starts[f], edge_starts[f + 1] - edge_starts[f]
        low = edges[start] if m else 0.0
        span = edges[start + m - 1] - low if m else 0.0
        origin[f] = low
        scale[f] = CELLS / span if span > 0 else 0.0  # 0 (one cell) for an infinite span
        j = 0
        for c in range(CELLS + 1):
            left = low + c / scale[f] if scale[f] > 0 else low
            while j < m and edges[start + j] < left:
                j += 1
            first[f, c] = j
        first[f, CELLS + 1] = m
    return origin, scale, first


@njit(cache=True, nogil=True, inline="always")
def count_below(edges, edge_starts, origin, scale, first, f, x):
    """The number of feature ``f``'s thresholds below ``x`` (not NaN), with the
    tables of :func:`cell_tables`. Indices only: numba counts every slice as
    a view, which costs more than the search."""
    start, m = edge_starts[f], edge_starts[f + 1] - edge_starts[f]
    position = (x - origin[f]) * scale[f]
    cell = np.int64(min(position, CELLS)) if position >= 0 else 0
    low, n = first[f, cell], first[f, cell + 1] - first[f, cell]
    while n > 0:  # binary search among the cell's thresholds
        half = n >> 1
        if edges[start + low + half] < x:
            low += half + 1
            n -= half + 1
        else:
            n = half
    while low < m and edges[start + low] < x:  # a value one cell off after rounding
        low += 1
    while low > 0 and edges[start + low - 1] >= x:
        low -= 1
    return low
