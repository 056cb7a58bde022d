"""Histogram gradient boosting kernels for NumPy arrays (numba).

Pure local compute into caller-owned buffers; nothing here communicates.
``kernels/gpu/hgb.py`` has the same functions with the same IN/OUT
signatures for CuPy arrays.

- :func:`bin_columns`: raw values to bins on given thresholds.
- :func:`quantize`: gradients or hessians to int64 on a fixed-point grid.
- :func:`build_histogram`: per (feature, bin) sums of the quantized values
  and the count of one node's rows, in int64 (exact, so the sum over the
  ranks does not depend on how the rows are split).
- :func:`partition_rows`: splits one node's rows into its children.
- :func:`update_raw_predictions`: adds each leaf's value to its rows.
- :func:`predict_binned` and :func:`predict_raw`: add the values of many
  trees (flattened node arrays) for binned or raw rows.

Binned features are uint8 with the missing-value bin last, as in
scikit-learn; a histogram has shape ``(n_features, n_bins, 3)`` (gradient
sum, hessian sum, count).
"""

from contextlib import contextmanager

import numba
import numpy as np
from numba import njit, prange

from .cells import cell_tables, count_below

# Below this many elements of work a kernel runs on one thread: waking the
# others costs more than it saves (and on a loaded machine a parallel region
# waits for every one of its threads to be scheduled: milliseconds).
PARALLEL_WORK = 1 << 17


@contextmanager
def _threads_for(work):
    """One numba thread for small ``work``, the configured number otherwise."""
    if work >= PARALLEL_WORK:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


@njit(parallel=True, cache=True, nogil=True)
def _bin_columns(X, thresholds, starts, is_categorical, missing_bin, out):
    origin, scale, first = cell_tables(thresholds, starts)
    for f in range(X.shape[1]):
        categorical = is_categorical[f] != 0
        for i in prange(X.shape[0]):
            x = X[i, f]
            if np.isnan(x) or (categorical and x < 0):
                out[i, f] = missing_bin
            else:
                out[i, f] = count_below(thresholds, starts, origin, scale, first, f, x)


def bin_columns(X, thresholds, starts, is_categorical, missing_bin, out):
    """scikit-learn's ``_BinMapper.transform``: ``out[i, f]`` is the number of
    thresholds of feature ``f`` below ``X[i, f]`` (``x`` falls in bin ``b``
    when ``thresholds_f[b - 1] < x <= thresholds_f[b]``), and ``missing_bin``
    for NaN and for negative values of a categorical feature.

    Parameters
    ----------
    X : ndarray of shape (n, n_features), float64
    thresholds : ndarray, float64
        Every feature's increasing thresholds, concatenated; feature ``f``'s
        are ``thresholds[starts[f]:starts[f + 1]]`` (the category codes of a
        categorical feature).
    starts : ndarray of shape (n_features + 1,), int64
    is_categorical : ndarray of shape (n_features,), uint8
    missing_bin : int
    out : ndarray of shape (n, n_features), uint8
        Written.
    """
    with _threads_for(X.size):
        _bin_columns(X, thresholds, starts, is_categorical, missing_bin, out)
    return out


def quantize(values, exponent, out):
    """``out[i] = rint(values[i] * 2**exponent)`` as int64 (round half to even).

    Parameters
    ----------
    values : ndarray of shape (n,), float32 or float64
    exponent : int
        Power of two of the grid (``out`` counts units of ``2**-exponent``).
    out : ndarray of shape (n,), int64
        Written.
    """
    with _threads_for(values.shape[0]):
        _quantize(values, exponent, out)
    return out


@njit(parallel=True, cache=True, nogil=True)
def _quantize(values, exponent, out):
    scale = np.ldexp(1.0, exponent)
    for i in prange(values.shape[0]):
        out[i] = np.int64(np.rint(np.float64(values[i]) * scale))


@njit(parallel=True, cache=True, nogil=True)
def _gather(gradients, hessians, rows, out):
    for i in prange(rows.shape[0]):
        r = rows[i]
        out[0, i] = gradients[r]
        if hessians is not None:
            out[1, i] = hessians[r]


@njit(parallel=True, cache=True, nogil=True)
def _histogram_pairs(binned, rows, gradients, hessians, hist):
    # Two features per pass: each row's values are loaded once for both, and
    # the adds (3 read-modify-writes per feature and row) bound the loop.
    # ``rows=None``: every row in order; ``hessians=None``: constant hessian
    # (numba compiles each case without the branch).
    n_features = binned.shape[1]
    n_rows = binned.shape[0] if rows is None else rows.shape[0]
    for p in prange((n_features + 1) // 2):
        f0 = 2 * p
        h0 = hist[f0]
        c0 = binned[:, f0]
        if f0 + 1 < n_features:
            h1 = hist[f0 + 1]
            c1 = binned[:, f0 + 1]
        else:  # an odd count: the last feature's partner adds into scratch
            h1 = np.empty_like(h0)
            c1 = c0
        h0[:] = 0
        h1[:] = 0
        for i in range(n_rows):
            r = i if rows is None else rows[i]
            g = gradients[i]
            b0 = c0[r]
            b1 = c1[r]
            h0[b0, 0] += g
            h1[b1, 0] += g
            if hessians is not None:
                h = hessians[i]
                h0[b0, 1] += h
                h1[b1, 1] += h
            h0[b0, 2] += 1
            h1[b1, 2] += 1


def build_histogram(binned, rows, gradients, hessians, constant_hessian, ordered, hist):
    """Histograms of the rows ``rows`` of one node, every feature.

    Parameters
    ----------
    binned : ndarray of shape (n_local, n_features), uint8
        Binned rows (Fortran order is fastest).
    rows : ndarray of shape (n_node,), int
        The node's rows (indices into ``binned``), increasing (so that all
        ``n_local`` of them are ``0, 1, ...``).
    gradients, hessians : ndarray of shape (n_local,), int64
        Quantized values of every row (``hessians`` unused when
        ``constant_hessian``: the hessian sums stay 0).
    constant_hessian : bool
    ordered : ndarray of shape (2, n_local), int64
        Scratch: the node's values in row order.
    hist : ndarray of shape (n_features, n_bins, 3), int64
        Written: gradient sum, hessian sum and count per (feature, bin).
    """
    hessians = None if constant_hessian else hessians
    with _threads_for(rows.shape[0] * binned.shape[1]):
        if rows.shape[0] == binned.shape[0]:  # every row, in order (the root)
            _histogram_pairs(binned, None, gradients, hessians, hist)
            return hist
        m = rows.shape[0]
        _gather(gradients, hessians, rows, ordered)
        _histogram_pairs(
            binned, rows, ordered[0, :m], None if hessians is None else ordered[1, :m], hist
        )
    return hist


@njit(cache=True, nogil=True)
def _goes_left(b, threshold_bin, missing_go_to_left, missing_bin, is_categorical, bitset):
    if is_categorical:
        return (bitset[b >> 5] >> (b & 31)) & 1 == 1
    return (missing_go_to_left and b == missing_bin) or b <= threshold_bin


@njit(cache=True, nogil=True)
def partition_rows(
    binned,
    partition,
    start,
    stop,
    feature,
    threshold_bin,
    missing_go_to_left,
    missing_bin,
    is_categorical,
    bitset,
    buffer,
):
    """Reorder ``partition[start:stop]`` (one node's rows) into its left
    child's rows then its right child's, each in their previous order;
    return the number of left rows.

    A row goes left as in scikit-learn's ``sample_goes_left``: its bin is in
    ``bitset`` for a categorical split; otherwise its bin is at most
    ``threshold_bin``, or it is ``missing_bin`` and ``missing_go_to_left``.
    ``buffer`` (at least ``stop - start`` entries) is scratch.
    """
    column = binned[:, feature]
    n_left = 0
    n_right = 0
    for p in range(start, stop):
        row = partition[p]
        left = _goes_left(
            column[row], threshold_bin, missing_go_to_left, missing_bin, is_categorical, bitset
        )
        # written to both sides, kept on one: no branch to mispredict (the
        # write to ``partition`` lands at or before ``p``, already read)
        partition[start + n_left] = row
        buffer[n_right] = row
        n_left += left
        n_right += 1 - left
    partition[start + n_left : stop] = buffer[:n_right]
    return n_left


@njit(cache=True, nogil=True)
def update_raw_predictions(raw, partition, starts, stops, values):
    """``raw[partition[p]] += values[l]`` for ``starts[l] <= p < stops[l]``,
    every leaf ``l`` (``raw`` is one column of raw predictions)."""
    for leaf in range(starts.shape[0]):
        value = values[leaf]
        for p in range(starts[leaf], stops[leaf]):
            raw[partition[p]] += value
    return raw


def predict_binned(binned, nodes, roots, columns, bitsets, missing_bin, out):
    """``out[i, columns[t]] += value of the leaf of row i`` in tree ``t``, for
    every tree in order (scikit-learn's ``predict_binned``, summed).

    Parameters
    ----------
    binned : ndarray of shape (n, n_features), uint8
    nodes : tuple of arrays
        The trees' nodes, flattened (:func:`mlmpi.ensemble._hgb_trees.flatten`):
        ``(feature, num_threshold, bin_threshold, missing_go_to_left, left,
        right, is_leaf, value, is_categorical, bitset_idx)``; children are
        indices into these arrays.
    roots : ndarray of shape (n_trees,), int64
        Index of each tree's root.
    columns : ndarray of shape (n_trees,), int64
        The column of ``out`` each tree adds to.
    bitsets : ndarray of shape (n_bitsets, 8), uint32
        Binned categories going left, indexed by ``bitset_idx``.
    missing_bin : int
    out : ndarray of shape (n, n_columns), float64
        Added to.
    """
    with _threads_for(binned.shape[0] * roots.shape[0]):
        _predict_binned(binned, nodes, roots, columns, bitsets, missing_bin, out)
    return out


@njit(parallel=True, cache=True, nogil=True)
def _predict_binned(binned, nodes, roots, columns, bitsets, missing_bin, out):
    feature, _, bin_threshold, missing_left, left, right, is_leaf, value, is_cat, bitset_idx = nodes
    for i in prange(binned.shape[0]):
        for t in range(roots.shape[0]):
            node = roots[t]
            while not is_leaf[node]:
                b = binned[i, feature[node]]
                if b == missing_bin:
                    go_left = missing_left[node] != 0
                elif is_cat[node]:
                    go_left = (bitsets[bitset_idx[node], b >> 5] >> (b & 31)) & 1 == 1
                else:
                    go_left = b <= bin_threshold[node]
                node = left[node] if go_left else right[node]
            out[i, columns[t]] += value[node]
    return out


def predict_raw(X, nodes, roots, columns, raw_bitsets, known_bitsets, feature_map, out):
    """As :func:`predict_binned` for raw rows (scikit-learn's ``predict``):
    NaN follows ``missing_go_to_left``; a categorical value goes left when in
    ``raw_bitsets[bitset_idx]``, right when a known category
    (``known_bitsets[feature_map[feature]]``), else (negative or unknown) as a
    missing value."""
    with _threads_for(X.shape[0] * roots.shape[0]):
        _predict_raw(X, nodes, roots, columns, raw_bitsets, known_bitsets, feature_map, out)
    return out


@njit(parallel=True, cache=True, nogil=True)
def _predict_raw(X, nodes, roots, columns, raw_bitsets, known_bitsets, feature_map, out):
    feature, num_threshold, _, missing_left, left, right, is_leaf, value, is_cat, bitset_idx = nodes
    for i in prange(X.shape[0]):
        for t in range(roots.shape[0]):
            node = roots[t]
            while not is_leaf[node]:
                x = X[i, feature[node]]
                if np.isnan(x):
                    go_left = missing_left[node] != 0
                elif is_cat[node]:
                    if x < 0:
                        go_left = missing_left[node] != 0
                    else:
                        c = np.int64(x) & 255
                        if (raw_bitsets[bitset_idx[node], c >> 5] >> (c & 31)) & 1 == 1:
                            go_left = True
                        elif (known_bitsets[feature_map[feature[node]], c >> 5] >> (c & 31)) & 1:
                            go_left = False
                        else:
                            go_left = missing_left[node] != 0
                else:
                    go_left = x <= num_threshold[node]
                node = left[node] if go_left else right[node]
            out[i, columns[t]] += value[node]
    return out
