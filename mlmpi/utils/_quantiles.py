"""Exact quantiles of the concatenated shards, by distributed selection.

Every function here returns, per column, what NumPy returns on the
concatenated (global) data: :func:`global_quantiles` is
``np.nanquantile(X_global, q, axis=0)``, :func:`global_percentiles` is
``np.nanpercentile``, :func:`global_median` is ``np.nanmedian`` (NaN ignored,
empty ranks allowed), and :func:`global_bin_thresholds` is the binning of
scikit-learn's histogram gradient boosting. Per-shard quantiles are never
averaged.

How: each rank sorts its columns once. The order statistics a quantile needs
(the k-th smallest non-NaN value of a column, for the two neighbours of the
virtual index) are found by a search over the float values that every rank
runs in step: each round proposes ``_PIVOTS`` pivots evenly spaced (in the
order of the floats' bit patterns) in the interval known to hold the answer,
one allreduce counts the global rows <= each pivot, and a second shrinks the
interval to the smallest and largest data values inside the pivot interval
that holds the k-th value. The interval's ends are always data values, so the
search stops when they meet: at most ~16 rounds of two small allreduces
(a 64-bit interval shrinks at least 16-fold per round), however many rows.
The interpolation between the two order statistics then repeats NumPy's
arithmetic exactly.

Every function is collective: all ranks call it with the same quantiles and
the same number of columns (local rows may differ, including zero).
"""

import numpy as np

from .._array import is_device_array, is_sparse, to_host

_PIVOTS = 15  # pivots per round: the interval shrinks at least (_PIVOTS + 1)-fold
_MAX_ROUNDS = 80  # more than a 64-bit search can need: a guard against a logic error

# For each method: the virtual index of quantile q among n sorted values, and
# the interpolation weight from its fractional part (NumPy's _QuantileMethods).
_METHODS = {
    "linear": (lambda n, q: (n - 1) * q, lambda gamma: gamma),
    "averaged_inverted_cdf": (
        lambda n, q: n * q - 1,
        lambda gamma: np.where(gamma == 0, 0.5, 1.0),
    ),
}


class _SortedColumns:
    """This rank's non-NaN values of each column, sorted (float64), and the
    number of implicit zeros of each column of a sparse matrix."""

    def __init__(self, X):
        self.dtype = _float_dtype(X)
        if is_sparse(X):
            csc = X.tocsc().get() if is_device_array(X) else X.tocsc()
            n_rows = csc.shape[0]
            self.values, self.zeros = [], []
            for j in range(csc.shape[1]):
                data = np.asarray(csc.data[csc.indptr[j] : csc.indptr[j + 1]], dtype=np.float64)
                self.values.append(np.sort(data[~np.isnan(data)]))
                self.zeros.append(n_rows - data.size)
        else:
            dense = np.asarray(to_host(X), dtype=np.float64)
            if dense.ndim == 1:
                dense = dense[:, None]
            ordered = np.sort(dense, axis=0)  # NaN sorts last
            valid = dense.shape[0] - np.isnan(dense).sum(axis=0)
            self.values = [ordered[: valid[j], j] for j in range(dense.shape[1])]
            self.zeros = [0] * dense.shape[1]
        self.n_columns = len(self.values)

    @classmethod
    def from_columns(cls, values, zeros, dtype):
        """Columns given as this rank's values (any order, NaN ignored) and
        counts of extra zeros; ``dtype`` is the data's."""
        columns = cls.__new__(cls)
        columns.dtype = np.dtype(dtype)
        columns.values = [np.sort(v[~np.isnan(v)]).astype(np.float64) for v in values]
        columns.zeros = list(zeros)
        columns.n_columns = len(columns.values)
        return columns

    def subset(self, columns):
        """These columns only (the same sorted arrays, not copied)."""
        subset = _SortedColumns.__new__(_SortedColumns)
        subset.dtype = self.dtype
        subset.values = [self.values[j] for j in columns]
        subset.zeros = [self.zeros[j] for j in columns]
        subset.n_columns = len(subset.values)
        return subset

    def distinct(self, j):
        """This rank's distinct values of column ``j`` (dense columns)."""
        v = self.values[j]
        return v[np.concatenate([[True], v[1:] != v[:-1]])] if v.size else v

    @classmethod
    def of(cls, X):
        return X if isinstance(X, cls) else cls(X)

    def counts(self):
        return np.array([v.size + z for v, z in zip(self.values, self.zeros)], dtype=np.int64)

    def extremes(self):
        """(min, max) per column (inf, -inf for an empty column)."""
        low = np.full(self.n_columns, np.inf)
        high = np.full(self.n_columns, -np.inf)
        for j, (v, z) in enumerate(zip(self.values, self.zeros)):
            if v.size:
                low[j], high[j] = v[0], v[-1]
            if z:
                low[j], high[j] = min(low[j], 0.0), max(high[j], 0.0)
        return low, high

    def count_at_most(self, j, pivots):
        """Local number of values of column ``j`` that are <= each pivot."""
        counts = np.searchsorted(self.values[j], pivots, side="right")
        return counts + self.zeros[j] * (pivots >= 0)

    def inside(self, j, left, right):
        """Smallest and largest local value of column ``j`` in ``(left, right]``
        (inf and -inf where there is none)."""
        v = self.values[j]
        first = np.searchsorted(v, left, side="right")
        last = np.searchsorted(v, right, side="right") - 1
        ok = first <= last
        low = np.where(ok, v[np.minimum(first, v.size - 1)] if v.size else 0.0, np.inf)
        high = np.where(ok, v[np.maximum(last, 0)] if v.size else 0.0, -np.inf)
        if self.zeros[j]:
            has_zero = (left < 0) & (0 <= right)
            low = np.where(has_zero, np.minimum(low, 0.0), low)
            high = np.where(has_zero, np.maximum(high, 0.0), high)
        return low, high


def _keys(values):
    """Order-preserving map of non-NaN float64 values to uint64 (-0.0 as 0.0)."""
    bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)
    negative = (bits >> np.uint64(63)).astype(bool)
    return np.where(negative, ~bits, bits | np.uint64(1 << 63))


def _from_keys(keys):
    negative = (keys >> np.uint64(63)) == 0
    bits = np.where(negative, ~keys, keys & np.uint64((1 << 63) - 1))
    return bits.view(np.float64)


def _pivots(low, high):
    """``_PIVOTS`` values per row between ``low`` and ``high`` (evenly spaced
    keys), then ``high`` itself."""
    lo, hi = _keys(low), _keys(high)
    span = hi - lo
    steps = np.arange(1, _PIVOTS + 1, dtype=np.uint64)
    stride = span // np.uint64(_PIVOTS + 1)
    offsets = np.where(
        stride[:, None] > 0, stride[:, None] * steps, np.minimum(steps, span[:, None])
    )
    return np.concatenate([_from_keys(lo[:, None] + offsets), high[:, None]], axis=1)


def _order_statistics(columns, column_of, kth, low, high, comms):
    """Exact ``kth``-smallest global value of column ``column_of[t]`` for each
    target ``t``, given global bounds ``low[t] <= answer <= high[t]``."""
    low, high = low.copy(), high.copy()
    for _ in range(_MAX_ROUNDS):
        active = np.flatnonzero(low < high)
        if active.size == 0:
            return low
        pivots = _pivots(low[active], high[active])
        counts = np.empty(pivots.shape, dtype=np.int64)
        for j, rows in _by_column(column_of[active]):
            counts[rows] = columns.count_at_most(j, pivots[rows].ravel()).reshape(-1, _PIVOTS + 1)
        counts = comms.allreduce(counts)
        # the answer lies in (pivots[first - 1], pivots[first]]
        first = np.argmax(counts > kth[active, None], axis=1)
        rows = np.arange(active.size)
        left = np.where(first > 0, pivots[rows, first - 1], np.nextafter(low[active], -np.inf))
        right = pivots[rows, first]
        bounds = np.empty((2, active.size))
        for j, sel in _by_column(column_of[active]):
            inner_low, inner_high = columns.inside(j, left[sel], right[sel])
            bounds[0, sel], bounds[1, sel] = inner_low, -inner_high
        bounds = comms.allreduce(bounds, op="min")
        low[active], high[active] = bounds[0], -bounds[1]
    raise RuntimeError("global quantile search did not converge")  # pragma: no cover


def global_order_statistics(columns, column_of, kth, comms):
    """The ``kth[t]``-smallest (from 0) value of column ``column_of[t]`` over
    every rank's values, for each query ``t``.

    Parameters
    ----------
    columns : list of ndarray
        This rank's values of each column (any order, any lengths, no NaN).
    column_of : ndarray of shape (n_queries,), int
    kth : ndarray of shape (n_queries,), int
        Ranks below each column's global count.
    comms : Comms

    Returns
    -------
    values : ndarray of shape (n_queries,), float64
        Identical on every rank.

    Notes
    -----
    This function is collective: every rank passes the same queries.
    """
    sorted_columns = _SortedColumns.from_columns(columns, [0] * len(columns), np.float64)
    low, high = sorted_columns.extremes()
    d = sorted_columns.n_columns
    bounds = comms.allreduce(np.concatenate([low, -high]), op="min")
    column_of = np.asarray(column_of, dtype=np.int64)
    return _order_statistics(
        sorted_columns,
        column_of,
        np.asarray(kth, dtype=np.int64),
        bounds[:d][column_of],
        -bounds[d:][column_of],
        comms,
    )


def _by_column(column_of):
    """``(column, positions)`` for each distinct column in ``column_of``."""
    order = np.argsort(column_of, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(column_of[order]) != 0])
    for start, stop in zip(starts, np.r_[starts[1:], order.size]):
        yield int(column_of[order[start]]), order[start:stop]


def _float_dtype(X):
    """The dtype NumPy's quantiles interpolate in: ``X``'s float dtype, else float64."""
    dtype = np.dtype(getattr(X, "dtype", np.float64))
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _neighbour_statistics(columns, q, method, comms):
    """For each (quantile, column): the two order statistics NumPy interpolates
    between, the weight, and the global count of non-NaN values."""
    d = columns.n_columns
    low, high = columns.extremes()
    n = comms.allreduce(columns.counts())
    bounds = comms.allreduce(np.concatenate([low, -high]), op="min")
    low, high = bounds[:d], -bounds[d:]
    virtual_index, fix_gamma = _METHODS[method]
    qs = np.asarray(q, dtype=np.float64).reshape(-1)
    # NumPy's arithmetic for one column of n values, here for every column at once
    virtual = virtual_index(n[None, :], qs[:, None])
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n[None, :] - 1
    below = virtual < 0
    previous[above], following[above] = -1, -1
    previous[below], following[below] = 0, 0
    gamma = np.asarray(fix_gamma(virtual - previous), dtype=np.float64)
    # order statistic positions (NumPy's -1 is the last value)
    positions = np.stack([previous, following]).astype(np.int64)
    positions = np.where(positions < 0, n[None, None, :] - 1, positions)
    column_of = np.broadcast_to(np.arange(d), positions.shape)
    valid = np.broadcast_to(n > 0, positions.shape)
    targets, inverse = np.unique(
        np.stack([column_of[valid], positions[valid]], axis=1), axis=0, return_inverse=True
    )
    targets = targets.reshape(-1, 2)
    found = _order_statistics(
        columns, targets[:, 0], targets[:, 1], low[targets[:, 0]], high[targets[:, 0]], comms
    )
    values = np.full(positions.shape, np.nan)
    values[valid] = found[inverse.reshape(-1)]
    return values[0], values[1], gamma, n


def _lerp(a, b, t, *, weak):
    """NumPy's quantile interpolation (``numpy.lib._function_base_impl._lerp``).

    ``weak``: ``t`` stands for a Python float (NumPy's weak promotion: the
    weights are rounded to ``a``'s dtype, which the result keeps).
    """
    t_up, t_down = t, 1 - t
    if weak:
        t_up, t_down = t_up.astype(a.dtype), t_down.astype(a.dtype)
    diff = b - a
    result = np.add(a, diff * t_up)
    np.subtract(b, diff * t_down, out=result, where=t >= 0.5, casting="unsafe", dtype=result.dtype)
    return result


def _quantiles(X, q, method, comms, *, weak_q):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {sorted(_METHODS)}, got {method!r}.")
    columns = _SortedColumns.of(X)
    dtype = columns.dtype
    shape = np.shape(q)
    previous, following, gamma, n = _neighbour_statistics(columns, q, method, comms)
    previous, following = previous.astype(dtype), following.astype(dtype)
    result = _lerp(previous, following, gamma, weak=weak_q)
    result[:, n == 0] = np.nan
    return result.reshape(shape + (n.size,))


def _check_quantiles(q):
    q = np.asanyarray(q, dtype=np.float64)
    if q.ndim > 1 or not np.all((q >= 0) & (q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1] (a scalar or 1-d).")
    return q


def global_quantiles(X, q, *, comms, method="linear"):
    """``np.nanquantile(X_global, q, axis=0, method=method)`` of the shards.

    Parameters
    ----------
    X : array of shape (n_local, n_features) or sparse matrix
        This rank's rows (NumPy, CuPy or SciPy/CuPy sparse: implicit zeros
        count as values). NaN is ignored. A rank may hold zero rows.
    q : float or array of shape (n_quantiles,)
        Quantiles in [0, 1].
    comms : Comms
        The ranks that hold the shards.
    method : {"linear", "averaged_inverted_cdf"}, default="linear"
        NumPy's interpolation method.

    Returns
    -------
    quantiles : ndarray of shape (n_features,) or (n_quantiles, n_features)
        On the host, identical on every rank; NaN for a column without a
        non-NaN value on any rank. The dtype is NumPy's (float64 for array
        ``q``; a Python scalar ``q`` keeps a float32 ``X`` float32).

    Notes
    -----
    This function is collective. The k-th smallest values are found exactly
    (see the module docstring); the result equals NumPy's bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.utils import global_quantiles
    >>> X = np.array([[1.0, 10.0], [np.nan, 30.0], [3.0, 20.0], [2.0, 40.0]])
    >>> global_quantiles(X, [0.0, 0.5, 1.0], comms=get_comms())
    array([[ 1., 10.],
           [ 2., 25.],
           [ 3., 40.]])
    """
    weak_q = type(q) in (int, float)
    return _quantiles(X, _check_quantiles(q), method, comms, weak_q=weak_q)


def global_percentiles(X, percentiles, *, comms, method="linear"):
    """``np.nanpercentile(X_global, percentiles, axis=0, method=method)`` of the shards.

    Same as :func:`global_quantiles` with ``q = percentiles / 100`` divided as
    NumPy divides (so the result equals ``np.nanpercentile`` exactly).

    Parameters
    ----------
    X : array of shape (n_local, n_features) or sparse matrix
        This rank's rows, as in :func:`global_quantiles`.
    percentiles : float or array of shape (n_percentiles,)
        Percentiles in [0, 100].
    comms : Comms
        The ranks that hold the shards.
    method : {"linear", "averaged_inverted_cdf"}, default="linear"
        NumPy's interpolation method.

    Returns
    -------
    percentiles : ndarray of shape (n_features,) or (n_percentiles, n_features)
        On the host, identical on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.utils import global_percentiles
    >>> global_percentiles(np.array([[1.0], [2.0], [4.0]]), [25, 75], comms=get_comms())
    array([[1.5],
           [3. ]])
    """
    weak_q = type(percentiles) in (int, float)
    q = np.true_divide(np.asanyarray(percentiles), 100)
    if q.ndim > 1 or not np.all((q >= 0) & (q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantiles(X, q, method, comms, weak_q=weak_q)


def global_median(X, *, comms):
    """``np.nanmedian(X_global, axis=0)`` of the shards.

    The mean of the two middle values for an even count, in ``X``'s dtype,
    as NumPy computes it.

    Parameters
    ----------
    X : array of shape (n_local, n_features) or sparse matrix
        This rank's rows, as in :func:`global_quantiles`; NaN is ignored.
    comms : Comms
        The ranks that hold the shards.

    Returns
    -------
    median : ndarray of shape (n_features,)
        On the host, identical on every rank; NaN for a column without a
        non-NaN value.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.utils import global_median
    >>> global_median(np.array([[1.0], [2.0], [4.0], [np.nan], [10.0]]), comms=get_comms())
    array([3.])
    """
    columns = _SortedColumns.of(X)
    dtype = columns.dtype
    lower, upper, _, n = _neighbour_statistics(columns, [0.5], "linear", comms)
    lower, upper = lower[0].astype(dtype), upper[0].astype(dtype)
    # NumPy's median: the middle value, or the sum of the middle two halved
    middle = np.where(n % 2 == 1, lower, (lower + upper) / dtype.type(2)).astype(dtype)
    middle[n == 0] = np.nan
    return middle


_ALMOST_INF = 1e300  # scikit-learn's cap on thresholds (hist gradient boosting's ALMOST_INF)


def global_bin_thresholds(X, max_bins, *, comms, sample_weight=None):
    """Per column, the thresholds scikit-learn's histogram gradient boosting bins on.

    Equal to ``_BinMapper(n_bins=max_bins + 1, subsample=None).fit(X_global)
    .bin_thresholds_``: a column with at most ``max_bins`` distinct non-NaN
    values gets the midpoints between consecutive distinct values (the
    distinct values are the union of every rank's); otherwise the
    ``averaged_inverted_cdf`` percentiles ``linspace(0, 100, max_bins + 1)[1:-1]``
    of the global column (exact, :func:`global_percentiles`), duplicates
    removed, capped at 1e300. A value ``x`` falls in bin ``i`` when
    ``thresholds[i - 1] < x <= thresholds[i]``.

    Parameters
    ----------
    X : array of shape (n_local, n_features)
        This rank's rows; NaN is ignored.
    max_bins : int
        Bins for the non-NaN values, at least 2.
    comms : Comms
    sample_weight : array of shape (n_local,), default=None
        Positive weights of the rows: the percentiles are then scikit-learn's
        weighted ones (``_weighted_percentile(..., average=True)``,
        :func:`mlmpi.utils._weighted_quantiles.global_weighted_percentiles`).

    Returns
    -------
    thresholds : list of ndarray (float64)
        One increasing array of at most ``max_bins - 1`` thresholds per column,
        identical on every rank.

    Notes
    -----
    This function is collective: one allgather of each rank's distinct
    values (at most ``max_bins`` per column, or a flag) and, for the columns
    with more, one :func:`global_percentiles`.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> from mlmpi.utils import global_bin_thresholds
    >>> global_bin_thresholds(np.array([[0.0], [1.0], [1.0], [3.0]]), 4, comms=get_comms())
    [array([0.5, 2. ])]
    """
    X = np.asarray(to_host(X), dtype=np.float64)
    columns = _SortedColumns(X)  # each column sorted once, for the distinct values and the search
    local = []
    for j in range(X.shape[1]):
        distinct = columns.distinct(j)
        local.append(distinct if distinct.size <= max_bins else None)
    gathered = comms.allgather_object(local)
    distinct = []
    for j in range(X.shape[1]):
        parts = [rank_values[j] for rank_values in gathered]
        union = None if any(p is None for p in parts) else np.unique(np.concatenate(parts))
        distinct.append(union if union is not None and union.size <= max_bins else None)
    percentiles = np.linspace(0, 100, num=max_bins + 1)[1:-1]
    many = [j for j, values in enumerate(distinct) if values is None]
    quantiles = None
    if many and sample_weight is None:
        quantiles = global_percentiles(
            columns.subset(many), percentiles, comms=comms, method="averaged_inverted_cdf"
        )
    elif many:
        from ._weighted_quantiles import global_weighted_percentiles

        weights = np.asarray(sample_weight, dtype=np.float64)
        quantiles = global_weighted_percentiles(
            [X[:, j] for j in many], [weights] * len(many), percentiles, average=True, comms=comms
        )
    thresholds = []
    for j, values in enumerate(distinct):
        if values is not None:
            edges = (values[:-1] + values[1:]) / 2 if values.size > 1 else np.array([])
        else:
            edges = quantiles[:, many.index(j)]
            edges = np.unique(edges) if np.unique(edges).size != edges.size else edges
        thresholds.append(np.minimum(edges, _ALMOST_INF))
    return thresholds
