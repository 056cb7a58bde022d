"""What every metric shares: the collective marker and the global table of
distinct label combinations (the weighted contingency table of the data)."""

import numpy as np
from sklearn.utils import column_or_1d
from sklearn.utils.validation import check_consistent_length

from .._array import is_sparse, to_host
from ..utils.validation import agree


def host_labels(y):
    """``y`` as a host NumPy array (sparse label indicators made dense)."""
    if is_sparse(y):
        y = y.toarray()
    return np.asarray(to_host(y))


def host_weights(sample_weight):
    """This rank's weights as a 1-d host array (scikit-learn's message otherwise)."""
    if sample_weight is None:
        return None
    return column_or_1d(to_host(sample_weight))


def distinct(y):
    """``(values, inverse)``: the sorted distinct entries of ``y`` (rows for 2-d ``y``)."""
    values, inverse = np.unique(y, axis=0 if y.ndim == 2 else None, return_inverse=True)
    return values, inverse.reshape(-1)


def local_table(columns, weights):
    """This rank's distinct combinations of ``columns`` with their summed weights:
    ``(values per column, codes (m, n_columns), sums (m,))``."""
    found = [distinct(c) for c in columns]
    shape = tuple(max(len(values), 1) for values, _ in found)
    keys = np.ravel_multi_index([inverse for _, inverse in found], shape)  # one int per row
    size = int(np.prod(shape, dtype=np.float64))
    if size <= max(keys.shape[0], 1 << 16):  # few possible combinations: count them directly
        present = np.flatnonzero(np.bincount(keys, minlength=size))
        sums = np.bincount(keys, weights=weights, minlength=size)[present]
    else:
        present, inverse = np.unique(keys, return_inverse=True)
        sums = np.bincount(inverse.reshape(-1), weights=weights, minlength=len(present))
    if weights is None or weights.dtype.kind in "iub":
        sums = sums.astype(np.int64)
    combos = np.stack(np.unravel_index(present, shape), axis=1).reshape(-1, len(columns))
    return [values for values, _ in found], combos, sums


def merge_tables(tables):
    """The global table from every rank's :func:`local_table` (ranks without
    rows add nothing): ``(columns, weights)``, the distinct combinations as arrays of
    the original labels, and their weights summed over all ranks.

    Every rank gets the same result from the same gathered tables."""
    n_columns = len(next(t for t in tables if t is not None)[0])
    tables = [t for t in tables if t is not None and len(t[2])]
    if not tables:
        return [np.empty(0) for _ in range(n_columns)], np.empty(0, dtype=np.int64)
    columns, codes = [], [[] for _ in tables]
    for c in range(n_columns):
        values, inverse = distinct(np.concatenate([t[0][c] for t in tables]))
        columns.append(values)
        start = 0
        for r, t in enumerate(tables):
            local = inverse[start : start + len(t[0][c])]
            start += len(t[0][c])
            codes[r].append(local[t[1][:, c]])
    stacked = np.concatenate([np.stack(code, axis=1) for code in codes])
    combos, inverse = np.unique(stacked, axis=0, return_inverse=True)
    sums = np.concatenate([t[2] for t in tables])
    weights = np.zeros(len(combos), dtype=sums.dtype)
    np.add.at(weights, inverse.reshape(-1), sums)
    return [values[combos[:, c]] for c, values in enumerate(columns)], weights


def global_table(comms, columns, sample_weight, *, names=None):
    """The global distinct combinations of the label ``columns`` (one entry
    or indicator row per sample) with their summed ``sample_weight`` (counts
    when None), the same on every rank.

    Local checks (equal lengths, scikit-learn's messages) are agreed in one
    collective, which also carries the tables. Memory is the number of
    distinct combinations (at most n_classes² for a confusion matrix).
    With ``names``, each column must be 1-d (scikit-learn's clustering message).

    This function is collective.
    """

    def check():
        check_consistent_length(*columns, sample_weight)
        arrays = [host_labels(c) for c in columns]
        for name, array in zip(names or (), arrays):
            if array.ndim != 1:
                raise ValueError(f"{name} must be 1D: shape is {array.shape}")
        weights = host_weights(sample_weight)
        return None, local_table(arrays, weights)

    _, tables = agree(comms, check)
    return merge_tables(tables)
