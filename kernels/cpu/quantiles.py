"""Kernels of the exact distributed quantiles (NumPy arrays, numba).

Pure local compute into caller-owned buffers; nothing here communicates.

Values are handled as order-preserving unsigned keys (a float64 ``x`` maps to
a uint64 that sorts as ``x`` does, NaN excluded, -0.0 as 0.0), kept in
*groups*: the keys ``keys[begin[g]:end[g]]`` of group ``g``. A radix step
puts each key of group ``g`` in bin ``(key - low[g]) >> shift[g]``: a
subtraction and a shift, no search.

- :func:`columns_as_keys` (:func:`column_keys`): the keys of every column's
  non-NaN values, one group per column (one pass over ``X``);
- :func:`key_histogram`: every key's bin, counted per group;
- :func:`take_bins`: the keys of the bins that form the next groups;
- :func:`sort_groups`: sorts each group of a grouped array in place;
- :func:`sort_key_groups`: the same for groups of keys, by radix, and
  :func:`keys_to_values`: the keys back to floats;
- :func:`group_order`: a counting sort of small integers (who goes where).
"""

import numpy as np
from numba import njit

_SIGN = np.uint64(1 << 63)


def columns_as_keys(X):
    """``(keys, begin, end)``: the keys of the non-NaN values of every column
    of the 2-D ``X``, column ``j`` as group ``keys[begin[j]:end[j]]``."""
    n, d = X.shape
    keys, counts = np.empty(n * d, dtype=np.uint64), np.empty(d, dtype=np.int64)
    column_keys(X, keys, counts)
    begin = np.arange(d, dtype=np.int64) * n
    return keys, begin, begin + counts


@njit(cache=True, nogil=True)
def column_keys(X, keys, counts):
    """Keys of the non-NaN values of column ``j`` of ``X`` into
    ``keys[j * n : j * n + counts[j]]`` (row order); ``counts`` overwritten.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64
    keys : ndarray of shape (n * d,), uint64
    counts : ndarray of shape (d,), int64
    """
    n, d = X.shape
    counts[:] = 0
    bits = np.empty(1, dtype=np.float64)
    view = bits.view(np.uint64)
    for i in range(n):
        for j in range(d):
            x = X[i, j]
            if x == x:
                bits[0] = x + 0.0
                b = view[0]
                keys[j * n + counts[j]] = ~b if b & _SIGN else b | _SIGN
                counts[j] += 1


@njit(cache=True, nogil=True)
def key_histogram(keys, begin, end, low, shift, offsets, hist, bins):
    """Count the keys of every group in its bins.

    Key ``i`` of group ``g`` falls in bin ``(keys[i] - low[g]) >> shift[g]``,
    written to ``bins[i]`` and counted in ``hist[offsets[g] + bin]`` (added
    to: zero ``hist`` first).
    """
    for g in range(begin.shape[0]):
        start = offsets[g]
        for i in range(begin[g], end[g]):
            b = np.int64((keys[i] - low[g]) >> shift[g])
            bins[i] = b
            hist[start + b] += 1


@njit(cache=True, nogil=True)
def take_bins(keys, bins, begin, end, offsets, next_group, starts, out):
    """Copy the keys of the bins that become groups: bin ``b`` of group ``g``
    becomes group ``next_group[offsets[g] + b]`` (-1: dropped), whose keys go
    to ``out`` from ``starts[group]`` on (advanced past them)."""
    for g in range(begin.shape[0]):
        start = offsets[g]
        for i in range(begin[g], end[g]):
            target = next_group[start + bins[i]]
            if target >= 0:
                out[starts[target]] = keys[i]
                starts[target] += 1


@njit(cache=True, nogil=True)
def sort_groups(values, starts):
    """Sort each group ``values[starts[g]:starts[g + 1]]`` in place."""
    for g in range(starts.shape[0] - 1):
        values[starts[g] : starts[g + 1]] = np.sort(values[starts[g] : starts[g + 1]])


@njit(cache=True, nogil=True)
def sort_key_groups(keys, begin, end):
    """Sort the keys of each group ``keys[begin[g]:end[g]]`` in place: a least
    significant digit radix sort, 11-bit digits, skipping a digit that all of
    a group's keys share (about twice as fast as a comparison sort here)."""
    longest = 0
    for g in range(begin.shape[0]):
        longest = max(longest, end[g] - begin[g])
    scratch = np.empty(longest, dtype=np.uint64)
    counts = np.empty((6, 2048), dtype=np.int64)
    for g in range(begin.shape[0]):
        part = keys[begin[g] : end[g]]
        n = part.shape[0]
        counts[:] = 0
        for i in range(n):
            k = part[i]
            for p in range(6):
                counts[p, (k >> np.uint64(11 * p)) & np.uint64(2047)] += 1
        src, dst = part, scratch[:n]
        for p in range(6):
            if n == 0 or counts[p, (src[0] >> np.uint64(11 * p)) & np.uint64(2047)] == n:
                continue  # every key has this digit
            total = 0
            for b in range(2048):
                c = counts[p, b]
                counts[p, b] = total
                total += c
            shift = np.uint64(11 * p)
            for i in range(n):
                k = src[i]
                d = (k >> shift) & np.uint64(2047)
                dst[counts[p, d]] = k
                counts[p, d] += 1
            src, dst = dst, src
        if src is not part:
            part[:] = src


@njit(cache=True, nogil=True)
def keys_to_values(keys):
    """Turn every key back into its float64 bits, in place (view the result
    as float64; -0.0 comes back as 0.0)."""
    for i in range(keys.shape[0]):
        k = keys[i]
        keys[i] = k & ~_SIGN if k & _SIGN else ~k


@njit(cache=True, nogil=True)
def group_order(keys, n_keys, order, starts):
    """Counting sort of the small non-negative integers ``keys``: ``order``
    lists the positions key by key (stably), ``starts[g]`` where key ``g``
    begins in it (``starts`` has ``n_keys + 1`` entries)."""
    starts[:] = 0
    for i in range(keys.shape[0]):
        starts[keys[i] + 1] += 1
    for g in range(n_keys):
        starts[g + 1] += starts[g]
    fill = starts[:-1].copy()
    for i in range(keys.shape[0]):
        order[fill[keys[i]]] = i
        fill[keys[i]] += 1
