"""Global statistics of row-sharded data: the one module every family takes them from.

Each statistic is that of the concatenation of every rank's rows, the same
on every rank, and never an average of per-rank statistics:

- **classes and counts**: :func:`global_classes` (sorted classes of labels,
  their weighted counts and the index of each local label),
  :func:`global_table` (the weighted table of distinct label combinations
  the metrics count), :func:`union` and :func:`merge_counts` (merging the
  small per-rank lists a collective gathered), and the host labels and
  weights they are counted from (:func:`host_labels`, :func:`host_weights`);
- **moments**: :class:`Moments` (count, mean, centred sum of squares, merged
  with Chan, Golub and LeVeque's formula), :func:`global_moments` and
  :func:`global_mean`, :func:`weighted_means`; :func:`exact_sums`, correctly
  rounded sums that do not depend on the rank count, and :func:`exact_moments`,
  column extrema, means and variances from sums on fixed-point grids, the same
  at any rank count (:mod:`mlmpi.utils._exact`);
- **quantiles**: :func:`global_quantiles`, :func:`global_percentiles`,
  :func:`global_median`, :func:`global_bin_thresholds`,
  :func:`global_order_statistics`, by a distributed selection over each rank's
  :class:`SortedColumns` (:mod:`mlmpi.utils._quantiles`), and scikit-learn's
  weighted percentiles, :func:`global_weighted_percentiles`
  (:mod:`mlmpi.utils._weighted_quantiles`).

The functions that communicate say "This function is collective."; the
others merge what a collective gathered.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from sklearn.utils import column_or_1d
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.sparsefuncs import mean_variance_axis
from sklearn.utils.validation import check_consistent_length

from .._array import get_namespace, is_sparse, on_host, to_host
from .._sklearn_compat import _unique
from ..kernels import kernels_for
from ._exact import exact_moments, exact_sums, onto_exact_grid
from ._quantiles import (
    SortedColumns,
    global_bin_thresholds,
    global_median,
    global_order_statistics,
    global_percentiles,
    global_quantiles,
    median_and_percentiles,
)
from ._weighted_quantiles import global_weighted_percentiles
from .validation import agree

__all__ = [
    "GlobalClasses",
    "Moments",
    "SortedColumns",
    "distinct",
    "exact_moments",
    "exact_sums",
    "global_bin_thresholds",
    "global_classes",
    "global_mean",
    "global_median",
    "global_moments",
    "global_order_statistics",
    "global_percentiles",
    "global_quantiles",
    "global_weighted_percentiles",
    "global_table",
    "host_labels",
    "host_weights",
    "local_moments",
    "median_and_percentiles",
    "merge_counts",
    "union",
    "weighted_means",
]


# -- classes and counts ----------------------------------------------------------------


def distinct(y):
    """``(values, inverse)``: the sorted distinct entries of ``y`` (rows for 2-d ``y``)."""
    values, inverse = np.unique(y, axis=0 if y.ndim == 2 else None, return_inverse=True)
    return values, inverse.reshape(-1)


def _with_values(parts):
    """The parts that hold values (None and empty parts left out)."""
    return [p for p in parts if p is not None and len(p)]


def union(parts):
    """Sorted distinct values of every rank's ``parts`` (e.g. each rank's
    :func:`distinct` labels, gathered). Ranks without values add nothing;
    when none has any, the first part (empty) is returned as it is."""
    found = _with_values(parts)
    return distinct(np.concatenate(found))[0] if found else parts[0]


def merge_counts(parts):
    """``(values, counts)``: the sorted union of every rank's ``(values, counts)``
    with the counts summed (scikit-learn's order: NaN and None last; integer
    counts stay int64). None and empty parts add nothing; at least one part
    must hold values."""
    parts = [p for p in parts if p is not None and len(p[0])]
    values = np.concatenate([v for v, _ in parts])
    counts = np.concatenate([np.asarray(c) for _, c in parts])
    merged, inverse = _unique(values, return_inverse=True)
    summed = np.bincount(inverse, weights=counts, minlength=len(merged))
    return merged, summed.astype(np.int64) if counts.dtype.kind in "iub" else summed


class GlobalClasses(NamedTuple):
    """What :func:`global_classes` finds."""

    classes: np.ndarray
    """Sorted classes of every rank's labels (replicated)."""
    counts: np.ndarray
    """Their summed weights (float64; the numbers of labels without weights)."""
    inverse: np.ndarray
    """The index in ``classes`` of each of this rank's labels (host, int)."""


def global_classes(y, comms, *, sample_weight=None, check=check_classification_targets):
    """The sorted classes of every rank's labels, their weighted counts and the
    class index of each local label, in one collective.

    A rank may hold only some classes, or no labels at all.

    This function is collective.

    Parameters
    ----------
    y : array-like of shape (n_local,)
        This rank's labels.
    comms : Comms
    sample_weight : array-like of shape (n_local,), default=None
        Weights of the counts.
    check : callable, default=sklearn.utils.multiclass.check_classification_targets
        Local check of this rank's labels (a host array with at least one label),
        run inside the agreement so that an error is raised on every rank;
        it may return the labels to use (``column_or_1d``) or None.

    Returns
    -------
    GlobalClasses
    """

    def local():
        labels = np.asarray(to_host(y))
        if labels.shape[0] and check is not None:
            checked = check(labels)
            labels = labels if checked is None else checked
        found, inverse = _unique(labels, return_inverse=True)
        weights = None if sample_weight is None else to_host(sample_weight).astype(np.float64)
        counts = np.bincount(inverse, weights=weights, minlength=found.shape[0])
        return (found, inverse), (found, counts)

    (found, inverse), facts = agree(comms, local)
    if not any(len(f) for f, _ in facts):
        return GlobalClasses(facts[0][0], np.zeros(0), np.zeros(0, dtype=np.intp))
    classes, counts = merge_counts(facts)
    return GlobalClasses(classes, counts, np.searchsorted(classes, found)[inverse])


def local_table(columns, weights):
    """This rank's distinct combinations of ``columns`` with their summed weights:
    ``(values per column, codes (m, n_columns), sums (m,))``."""
    found = [distinct(c) for c in columns]
    shape = tuple(max(len(values), 1) for values, _ in found)
    keys = np.ravel_multi_index([inverse for _, inverse in found], shape)  # one int per row
    size = int(np.prod(shape, dtype=np.float64))
    if size <= max(keys.shape[0], 1 << 16):  # few possible combinations: count them directly
        present = np.flatnonzero(np.bincount(keys, minlength=size))
        sums = _sums_by(keys, weights, size)[present]
    else:
        present, inverse = np.unique(keys, return_inverse=True)
        sums = _sums_by(inverse.reshape(-1), weights, len(present))
    combos = np.stack(np.unravel_index(present, shape), axis=1).reshape(-1, len(columns))
    return [values for values, _ in found], combos, sums


def _sums_by(index, weights, n):
    """The weights (counts when None) summed by ``index`` into ``n`` bins, as
    scikit-learn's confusion matrix sums them: integer weights exactly in int64
    (wrapping round on overflow), any other weights in float64."""
    if weights is None:
        return np.bincount(index, minlength=n).astype(np.int64)
    if weights.dtype.kind in "iub":
        sums = np.zeros(n, dtype=np.int64)
        np.add.at(sums, index, weights.astype(np.int64))
        return sums
    return np.bincount(index, weights=weights.astype(np.float64), minlength=n)


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


def global_table(comms, columns, sample_weight, *, names=None):
    """The global distinct combinations of the label ``columns`` (one entry
    or indicator row per sample) with their summed ``sample_weight`` (counts
    when None), the same on every rank.

    Local checks (equal lengths, scikit-learn's messages) are agreed in one
    collective, which also carries the tables. Memory is the number of
    distinct combinations (at most n_classes² for a confusion matrix).
    With ``names``, each column must be 1-d (scikit-learn's clustering message).

    Float weights are first rounded onto the grid on which every sum of
    them is exact (:func:`~mlmpi.utils._exact.onto_exact_grid`, moving each
    by at most ``n * 2**-53`` of the largest), so that the table, and what
    scikit-learn decides from its cumulative sums (the points a curve keeps,
    a weighted median), are the same at any rank count; a second collective
    then gathers the tables.

    This function is collective.
    """

    def check():
        check_consistent_length(*columns, sample_weight)
        arrays = [host_labels(c) for c in columns]
        weights = host_weights(sample_weight)
        for name, array in zip(names or (), arrays):
            if array.ndim != 1:
                raise ValueError(f"{name} must be 1D: shape is {array.shape}")
        exact = weights is None or weights.dtype.kind in "iub"
        largest = 1.0 if weights is None else float(np.abs(weights).max(initial=0))
        table = local_table(arrays, weights) if exact else None
        return (arrays, weights), (table, len(arrays[0]), largest)

    (arrays, weights), facts = agree(comms, check)
    if all(table is not None for table, _, _ in facts):
        return merge_tables([table for table, _, _ in facts])
    n_rows, largest = sum(f[1] for f in facts), max(f[2] for f in facts)
    weights = np.ones(len(arrays[0])) if weights is None else weights.astype(np.float64)
    table = local_table(arrays, onto_exact_grid(weights, largest, n_rows))
    return merge_tables(comms.allgather_object(table))


# -- moments ---------------------------------------------------------------------------


@dataclass
class Moments:
    """Weighted count, mean and centred sum of squares of each column (float64).

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.utils.stats import Moments
    >>> a = Moments(np.array([2.0]), np.array([1.0]), np.array([2.0]))   # rows 0 and 2
    >>> b = Moments(np.array([1.0]), np.array([4.0]), np.array([0.0]))   # row 4
    >>> a.merge(b).var
    array([2.66666667])
    """

    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @property
    def var(self):
        """Population variance (NaN for a column without values)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.m2 / self.count

    def merge(self, other):
        """Moments of the union of the two sets of rows (Chan et al., eq. 1.5).

        Merged into moments without rows (count 0), ``other``'s are kept exactly.
        """
        count = self.count + other.count
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(count > 0, other.count / count, 0.0)
        delta = other.mean - self.mean
        mean = self.mean + delta * share
        m2 = self.m2 + other.m2 + delta**2 * self.count * share
        return Moments(count, mean, m2)


def local_moments(X, sample_weight=None):
    """Moments of this rank's rows (dense or sparse; NaN ignored).

    No communication. A column without values has count 0 and mean 0; a
    column whose values are all equal has exactly that mean and ``m2 = 0``
    (a sum of rows divided by their count may miss the value by a rounding).
    """
    if is_sparse(X):
        X = on_host(X)
        if X.shape[0] == 0:
            zeros = np.zeros(X.shape[1])
            return Moments(zeros, zeros.copy(), zeros.copy())
        weights = None if sample_weight is None else to_host(sample_weight)
        mean, var, count = mean_variance_axis(X, axis=0, weights=weights, return_sum_weights=True)
        count = np.asarray(count, dtype=np.float64)
        mean = np.where(count > 0, mean, 0.0)
        moments = Moments(count, mean, np.where(count > 0, var * count, 0.0))
        return _exact_constants(moments, *_sparse_extremes(X))
    X = np.asarray(to_host(X), dtype=np.float64)
    valid = ~np.isnan(X)
    w = np.ones(X.shape[0]) if sample_weight is None else to_host(sample_weight).astype(np.float64)
    weights = valid * w[:, None]
    count = weights.sum(axis=0)
    values = np.where(valid, X, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, (weights * values).sum(axis=0) / count, 0.0)
    m2 = (weights * (values - mean) ** 2).sum(axis=0)
    low = np.where(valid, X, np.inf).min(axis=0, initial=np.inf)
    high = np.where(valid, X, -np.inf).max(axis=0, initial=-np.inf)
    return _exact_constants(Moments(count, mean, m2), low, high)


def _sparse_extremes(X):
    """Per column, the smallest and largest non-NaN value of a sparse matrix,
    its implicit zeros included (``inf``, ``-inf`` for a column without values)."""
    csc = X.tocsc()
    low, high = np.full(X.shape[1], np.inf), np.full(X.shape[1], -np.inf)
    for j in range(X.shape[1]):
        data = csc.data[csc.indptr[j] : csc.indptr[j + 1]]
        if data.size < X.shape[0]:  # the column has implicit zeros
            data = np.append(data, 0.0)
        data = data[~np.isnan(data)]
        if data.size:
            low[j], high[j] = data.min(), data.max()
    return low, high


def _exact_constants(moments, low, high):
    """``moments`` with the columns whose values are all equal (``low == high``)
    given exactly that mean and no spread."""
    constant = (moments.count > 0) & (low == high)
    mean = np.where(constant, low, moments.mean)
    return Moments(moments.count, mean, np.where(constant, 0.0, moments.m2))


def global_moments(X, sample_weight=None, *, comms):
    """Moments of every rank's rows together: each rank summarises its rows
    (:func:`local_moments`), one allgather collects the summaries and every
    rank merges them in rank order. Exact up to rounding.

    This function is collective: one allgather of ``3 * n_features`` float64
    per rank, merged in rank order (identically on every rank).
    """
    mine = local_moments(X, sample_weight)
    gathered = comms.allgather(np.stack([mine.count, mine.mean, mine.m2])[None])
    total = Moments(*gathered[0])
    for part in gathered[1:]:
        total = total.merge(Moments(*part))
    return total


def global_mean(X, n_samples, comms, *, local_sums=None):
    """Column means of the global rows (float64, host): one allreduce of the
    column sums (``local_sums``, this rank's float64 sums when already known).

    This function is collective.
    """
    if local_sums is None:
        xp = get_namespace(X)
        local_sums = kernels_for("decomposition", X).column_sums(
            X, xp.zeros(X.shape[1], dtype=xp.float64)
        )
    return np.asarray(to_host(comms.allreduce(local_sums)), dtype=np.float64) / n_samples


def weighted_means(X, Y, sample_weight, comms):
    """``(Σw, x̄, ȳ)`` of the global data in one allreduce (host, float64).

    This function is collective.
    """
    xp = get_namespace(X)
    d, t = X.shape[1], Y.shape[1]
    packed = xp.empty(1 + d + t, dtype=xp.float64)
    if is_sparse(X):
        w = xp.ones(X.shape[0]) if sample_weight is None else sample_weight.astype(xp.float64)
        packed[0] = w.sum()
        packed[1 : 1 + d] = 0.0
        kernels_for("linear", X).add_transpose_product(X, w, packed[1 : 1 + d])
        packed[1 + d :] = w @ Y.astype(xp.float64, copy=False)
    elif sample_weight is None:
        packed[0] = X.shape[0]
        packed[1 : 1 + d] = X.sum(axis=0, dtype=xp.float64)
        packed[1 + d :] = Y.sum(axis=0, dtype=xp.float64)
    else:
        w = sample_weight.astype(xp.float64, copy=False)
        packed[0] = w.sum()
        packed[1:] = 0
        # float64 products in row blocks: no float64 copy of the whole of X.
        for start in range(0, X.shape[0], 1 << 17):
            rows = slice(start, start + (1 << 17))
            packed[1 : 1 + d] += w[rows] @ X[rows].astype(xp.float64, copy=False)
            packed[1 + d :] += w[rows] @ Y[rows].astype(xp.float64, copy=False)
    total = to_host(comms.allreduce(packed))
    weight_sum = float(total[0])
    scale = 1.0 / weight_sum if weight_sum > 0 else 0.0
    return weight_sum, total[1 : 1 + d] * scale, total[1 + d :] * scale
