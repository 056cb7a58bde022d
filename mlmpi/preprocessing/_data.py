"""Scalers and normalizers fitted on every rank's rows.

Each class extends its scikit-learn namesake: the parameters, fitted
attributes, ``transform`` and ``inverse_transform`` are scikit-learn's; only
``fit``/``partial_fit`` change, to compute the statistics of all ranks'
rows together. Every fitted attribute is replicated (identical on every
rank).
"""

import warnings

import numpy as np
import sklearn.preprocessing as sk
from scipy import stats
from sklearn.utils import check_random_state
from sklearn.utils.sparsefuncs import min_max_axis

from .._array import is_device_array, is_sparse, on_host, to_host
from .._contract import collective_method
from .._sklearn_compat import _fit_context, _handle_zeros_in_scale, _is_constant_feature
from ..comms import Comms
from ..random import draws_for, shared_seed
from ..random._policy import PER_ROW
from ..random._tree import subset_parts
from ..utils.stats import (
    Moments,
    SortedColumns,
    global_median,
    global_moments,
    global_percentiles,
    median_and_percentiles,
)
from ..utils.validation import agree_on_errors
from ._base import (
    FLOAT_DTYPES,
    CollectiveTransformerMixin,
    LocalInverseMixin,
    reject_sparse,
)

_ROWS_STREAM = 0x71756E74  # QuantileTransformer's per-row subsample of the rows ("qunt")
# a sparse column j's per-row subsample of its stored values: stream _COLUMN_STREAMS + j
_COLUMN_STREAMS = _ROWS_STREAM << 32


def _global_extremes(X, comms):
    """Per-column NaN-ignoring minimum and maximum over every rank (NaN for a
    column without values), in ``X``'s dtype. One allreduce."""
    if is_device_array(X):
        X = X.get()
    elif not is_sparse(X):
        X = np.asarray(X)
    d = X.shape[1]
    low = np.full(d, np.inf, dtype=X.dtype)
    high = np.full(d, -np.inf, dtype=X.dtype)
    if X.shape[0]:
        if is_sparse(X):
            mins, maxs = min_max_axis(X, axis=0, ignore_nan=True)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
                mins, maxs = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
        low = np.fmin(low, mins).astype(X.dtype)
        high = np.fmax(high, maxs).astype(X.dtype)
    both = comms.allreduce(np.concatenate([low, -high]), op="min")
    low, high = both[:d], -both[d:]
    low[np.isinf(low) & (low > 0)] = np.nan
    high[np.isinf(high) & (high < 0)] = np.nan
    return low, high


def standard_scale(var, mean, n_samples):
    """:class:`StandardScaler`'s ``scale_`` from the column variances and means of
    ``n_samples`` rows: the standard deviations, 1 for (nearly) constant columns."""
    constant = _is_constant_feature(var, mean, n_samples)
    return _handle_zeros_in_scale(np.sqrt(var), copy=False, constant_mask=constant)


class StandardScaler(CollectiveTransformerMixin, LocalInverseMixin, sk.StandardScaler):
    """Standardize features by the mean and variance of every rank's rows.

    scikit-learn's :class:`sklearn.preprocessing.StandardScaler` for
    row-sharded data: ``fit`` and ``partial_fit`` are collective, ``transform``
    and ``inverse_transform`` local. The mean and variance are those of the
    concatenated rows: each rank summarises its rows as (count, mean, centred
    sum of squares) per column in float64, one allgather collects the
    summaries and every rank merges them with Chan's formula (the same merge
    folds each ``partial_fit`` batch into the state). NaN is ignored in fit
    and kept in transform; ``sample_weight`` weighs the rows.

    Parameters
    ----------
    copy : bool, default=True
        If False, try to scale in place at transform.
    with_mean : bool, default=True
        Centre the data (not for sparse input).
    with_std : bool, default=True
        Scale to unit variance.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    scale_ : ndarray of shape (n_features,) or None
        Per-feature scale. Replicated.
    mean_ : ndarray of shape (n_features,) or None
        Global mean. Replicated.
    var_ : ndarray of shape (n_features,) or None
        Global variance. Replicated.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (string column names only).
    n_samples_seen_ : int or ndarray of shape (n_features,)
        Rows (or weight) seen over all ranks, per feature when NaN makes the
        counts differ. Replicated.

    Notes
    -----
    ``fit``, ``partial_fit`` and ``fit_transform`` are collective: every rank
    calls them, with its own rows. Fitted attributes are replicated (the same on
    every rank). ``transform`` and ``inverse_transform`` are local: no
    communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.preprocessing import StandardScaler
    >>> X = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 1.0]])   # this rank's rows
    >>> StandardScaler().fit(X).mean_
    array([2., 1.])
    """

    _parameter_constraints: dict = {
        **sk.StandardScaler._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(self, *, copy=True, with_mean=True, with_std=True, comms=None):
        super().__init__(copy=copy, with_mean=with_mean, with_std=with_std)
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Compute the global mean and std of every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : None
            Ignored.
        sample_weight : array-like of shape (n_local,), default=None
            Weights of this rank's rows.

        Returns
        -------
        self : object
            Fitted scaler.
        """
        self._reset()
        return self.partial_fit(X, y, sample_weight)

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None):
        """Fold every rank's batch of rows into the global mean and std.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows of the batch (may be empty).
        y : None
            Ignored.
        sample_weight : array-like of shape (n_local,), default=None
            Weights of this rank's rows.

        Returns
        -------
        self : object
            Fitted scaler.
        """
        first_call = not hasattr(self, "n_samples_seen_")
        X, sample_weight, _ = self._validate_fit(
            X,
            first_call=first_call,
            sample_weight=sample_weight,
            accept_sparse=("csr", "csc"),
            dtype=FLOAT_DTYPES,
            ensure_all_finite="allow-nan",
        )
        # scikit-learn's (experimental) callbacks: one fit task per call, on every rank
        callbacks = self._init_callback_context()
        metadata = {"sample_weight": sample_weight}
        callbacks.call_on_fit_task_begin(estimator=self, X=X, y=y, metadata=metadata)
        if is_sparse(X) and self.with_mean:
            raise ValueError(
                "Cannot center sparse matrices: pass `with_mean=False` "
                "instead. See docstring for motivation and alternatives."
            )
        keep_moments = self.with_std or (self.with_mean and not is_sparse(X))
        # scikit-learn's quirks: float64 counts where it computes moments; without
        # them int64 (X's dtype with weights), and dense rows are then not weighed
        count_dtype = np.int64 if sample_weight is None else X.dtype
        if not keep_moments and not is_sparse(X):
            sample_weight = None
        batch = global_moments(X, sample_weight, comms=self._get_comms())
        if first_call or getattr(self, "mean_", None) is None:
            total = (
                batch
                if first_call
                else Moments(
                    np.asarray(self.n_samples_seen_, dtype=np.float64) + batch.count,
                    batch.mean,
                    batch.m2,
                )
            )
        else:
            seen = np.broadcast_to(
                np.asarray(self.n_samples_seen_, dtype=np.float64), batch.count.shape
            )
            last_var = self.var_ if self.var_ is not None else np.zeros_like(batch.m2)
            total = Moments(seen, np.nan_to_num(self.mean_), np.nan_to_num(last_var) * seen).merge(
                batch
            )
        counts = total.count.astype(np.float64 if keep_moments else count_dtype)
        if keep_moments:
            with np.errstate(invalid="ignore"):
                self.mean_ = np.where(total.count > 0, total.mean, np.nan)
                self.var_ = total.var if self.with_std else None
        else:
            self.mean_, self.var_ = None, None
        self.n_samples_seen_ = counts[0] if counts.max() == counts.min() else counts
        self.scale_ = (
            standard_scale(self.var_, self.mean_, self.n_samples_seen_) if self.with_std else None
        )
        callbacks.call_on_fit_task_end(
            estimator=self, X=X, y=y, metadata=metadata, reconstruction_attributes={}
        )
        return self


class MinMaxScaler(CollectiveTransformerMixin, LocalInverseMixin, sk.MinMaxScaler):
    """Scale each feature to a range with the minimum and maximum of every rank's rows.

    scikit-learn's :class:`sklearn.preprocessing.MinMaxScaler` for row-sharded
    data: the per-feature minimum and maximum (NaN ignored) are reduced over
    the ranks with one allreduce. ``fit`` and ``partial_fit`` are collective;
    ``transform`` and ``inverse_transform`` local.

    Parameters
    ----------
    feature_range : tuple (min, max), default=(0, 1)
        Desired range of transformed data.
    copy : bool, default=True
        If False, try to scale in place at transform.
    clip : bool, default=False
        Clip transformed values to ``feature_range``.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    min_, scale_, data_min_, data_max_, data_range_ : ndarray of shape (n_features,)
        As in scikit-learn, from every rank's rows. Replicated.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (string column names only).
    n_samples_seen_ : int
        Rows seen over all ranks. Replicated.

    Notes
    -----
    ``fit``, ``partial_fit`` and ``fit_transform`` are collective: every rank
    calls them, with its own rows. Fitted attributes are replicated (the same on
    every rank). ``transform`` and ``inverse_transform`` are local: no
    communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.preprocessing import MinMaxScaler
    >>> MinMaxScaler().fit_transform(np.array([[1.0], [3.0], [5.0]]))
    array([[0. ],
           [0.5],
           [1. ]])
    """

    _parameter_constraints: dict = {
        **sk.MinMaxScaler._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(self, feature_range=(0, 1), *, copy=True, clip=False, comms=None):
        super().__init__(feature_range=feature_range, copy=copy, clip=clip)
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the global minimum and maximum of every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted scaler.
        """
        self._reset()
        return self.partial_fit(X, y)

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Fold every rank's batch into the global minimum and maximum.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's rows of the batch (may be empty).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted scaler.
        """
        comms = self._get_comms()
        reject_sparse(
            X,
            comms,
            "MinMaxScaler does not support sparse input. Consider using MaxAbsScaler instead.",
        )
        first_call = not hasattr(self, "n_samples_seen_")
        X, _, layout = self._validate_fit(
            X, first_call=first_call, dtype=FLOAT_DTYPES, ensure_all_finite="allow-nan"
        )
        low, high = self.feature_range
        if low >= high:
            raise ValueError(
                "Minimum of desired feature range must be smaller than maximum. "
                f"Got {self.feature_range}."
            )
        data_min, data_max = _global_extremes(X, comms)
        if first_call:
            self.n_samples_seen_ = layout.n_samples
        else:
            data_min = np.minimum(self.data_min_, data_min)
            data_max = np.maximum(self.data_max_, data_max)
            self.n_samples_seen_ += layout.n_samples
        low, high = np.asarray(low, dtype=X.dtype), np.asarray(high, dtype=X.dtype)
        data_range = data_max - data_min
        self.scale_ = (high - low) / _handle_zeros_in_scale(data_range, copy=True)
        self.min_ = low - data_min * self.scale_
        self.data_min_ = data_min
        self.data_max_ = data_max
        self.data_range_ = data_range
        return self


class MaxAbsScaler(CollectiveTransformerMixin, LocalInverseMixin, sk.MaxAbsScaler):
    """Scale each feature by the maximum absolute value of every rank's rows.

    scikit-learn's :class:`sklearn.preprocessing.MaxAbsScaler` for
    row-sharded data (dense or sparse): the per-feature maximum of ``|x|``
    (NaN ignored) is reduced over the ranks with one allreduce. ``fit`` and
    ``partial_fit`` are collective; ``transform`` and ``inverse_transform``
    local.

    Parameters
    ----------
    copy : bool, default=True
        If False, try to scale in place at transform.
    clip : bool, default=False
        Clip transformed values of held-out data to [-1, 1] (at ``transform``,
        local).
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    scale_, max_abs_ : ndarray of shape (n_features,)
        As in scikit-learn, from every rank's rows. Replicated.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (string column names only).
    n_samples_seen_ : int
        Rows seen over all ranks. Replicated.

    Notes
    -----
    ``fit``, ``partial_fit`` and ``fit_transform`` are collective: every rank
    calls them, with its own rows. Fitted attributes are replicated (the same on
    every rank). ``transform`` and ``inverse_transform`` are local: no
    communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.preprocessing import MaxAbsScaler
    >>> MaxAbsScaler().fit(np.array([[1.0], [-4.0], [2.0]])).max_abs_
    array([4.])
    """

    _parameter_constraints: dict = {
        **sk.MaxAbsScaler._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(self, *, copy=True, clip=False, comms=None):
        super().__init__(copy=copy, clip=clip)
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the global maximum absolute value of every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted scaler.
        """
        self._reset()
        return self.partial_fit(X, y)

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Fold every rank's batch into the global maximum absolute value.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows of the batch (may be empty).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted scaler.
        """
        first_call = not hasattr(self, "n_samples_seen_")
        X, _, layout = self._validate_fit(
            X,
            first_call=first_call,
            accept_sparse=("csr", "csc"),
            dtype=FLOAT_DTYPES,
            ensure_all_finite="allow-nan",
        )
        low, high = _global_extremes(X, self._get_comms())
        max_abs = np.maximum(np.abs(low), np.abs(high))
        if first_call:
            self.n_samples_seen_ = layout.n_samples
        else:
            max_abs = np.maximum(self.max_abs_, max_abs)
            self.n_samples_seen_ += layout.n_samples
        self.max_abs_ = max_abs
        self.scale_ = _handle_zeros_in_scale(max_abs, copy=True)
        return self


class RobustScaler(CollectiveTransformerMixin, LocalInverseMixin, sk.RobustScaler):
    """Scale with the median and a quantile range of every rank's rows.

    scikit-learn's :class:`sklearn.preprocessing.RobustScaler` for
    row-sharded data. The median (``np.nanmedian``) and the percentiles of
    ``quantile_range`` (``np.nanpercentile``, linear interpolation) are those
    of the concatenated columns, found exactly by a distributed selection
    (a radix selection of the needed order statistics, both from one
    selection: :mod:`mlmpi.utils`), never averaged from per-rank quantiles.
    Sparse columns count their implicit zeros.
    ``fit`` is collective; ``transform`` and ``inverse_transform`` local.

    Parameters
    ----------
    with_centering : bool, default=True
        Subtract the median (not for sparse input).
    with_scaling : bool, default=True
        Divide by the quantile range.
    quantile_range : tuple (q_min, q_max), default=(25.0, 75.0)
        Percentiles of the range, ``0 <= q_min <= q_max <= 100``.
    copy : bool, default=True
        If False, try to scale in place at transform.
    unit_variance : bool, default=False
        Scale so that normally distributed features get a variance of 1.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    center_ : ndarray of shape (n_features,) or None
        Global median. Replicated.
    scale_ : ndarray of shape (n_features,) or None
        Global quantile range. Replicated.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (string column names only).

    Notes
    -----
    ``fit`` and ``fit_transform`` are collective: every rank calls them, with
    its own rows. Fitted attributes are replicated (the same on every rank).
    ``transform`` and ``inverse_transform`` are local: no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.preprocessing import RobustScaler
    >>> RobustScaler().fit(np.array([[1.0], [2.0], [3.0], [10.0]])).center_
    array([2.5])
    """

    _parameter_constraints: dict = {
        **sk.RobustScaler._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        *,
        with_centering=True,
        with_scaling=True,
        quantile_range=(25.0, 75.0),
        copy=True,
        unit_variance=False,
        comms=None,
    ):
        super().__init__(
            with_centering=with_centering,
            with_scaling=with_scaling,
            quantile_range=quantile_range,
            copy=copy,
            unit_variance=unit_variance,
        )
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the global median and quantile range of every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted scaler.
        """
        X, _, _ = self._validate_fit(
            X, accept_sparse="csc", dtype=FLOAT_DTYPES, ensure_all_finite="allow-nan"
        )
        comms = self._get_comms()
        q_min, q_max = self.quantile_range
        if not 0 <= q_min <= q_max <= 100:
            raise ValueError(f"Invalid quantile range: {self.quantile_range}")
        if self.with_centering and is_sparse(X):
            raise ValueError(
                "Cannot center sparse matrices: use `with_centering=False`"
                " instead. See docstring for motivation and alternatives."
            )
        self.center_ = self.scale_ = None
        if self.with_centering and self.with_scaling:  # one selection for both
            self.center_, (low, high) = median_and_percentiles(X, self.quantile_range, comms=comms)
        elif self.with_centering:
            self.center_ = global_median(X, comms=comms)
        elif self.with_scaling:
            low, high = global_percentiles(X, self.quantile_range, comms=comms)
        if self.with_scaling:
            self.scale_ = _handle_zeros_in_scale(high - low, copy=False)
            if self.unit_variance:
                adjust = stats.norm.ppf(q_max / 100.0) - stats.norm.ppf(q_min / 100.0)
                self.scale_ = self.scale_ / adjust
        return self


class _SubsampleDraws:
    """The subsamples of one :class:`QuantileTransformer` fit, drawn without
    replacement: scikit-learn's (one ``RandomState`` consumed draw after draw,
    as scikit-learn consumes it) or per-row draws.

    Parameters
    ----------
    policy : {'scikit-learn', 'per-row'}
    seed : int
        The same on every rank.
    """

    def __init__(self, policy, seed):
        self.policy, self.seed = policy, seed
        self.rng = check_random_state(seed)

    def among(self, stream, n_items, n_drawn, start, stop):
        """This rank's items (local indices, increasing) among ``n_drawn`` of
        ``n_items`` global items; this rank holds items ``start:stop``.

        scikit-learn's draw is ``permutation(n_items)[:n_drawn]`` (its
        ``resample`` and ``choice`` without replacement), made in full on
        every rank; the per-row draw is :func:`~mlmpi.random._tree.subset_parts`
        with ``stream``, in O(stop - start). No communication."""
        if self.policy == PER_ROW:
            parts = subset_parts(self.seed, stream, int(n_items), (n_drawn,), int(start), int(stop))
            return np.flatnonzero(parts == 0)
        drawn = self.rng.choice(int(n_items), size=n_drawn, replace=False)
        return np.sort(drawn[(drawn >= start) & (drawn < stop)]) - start


class QuantileTransformer(CollectiveTransformerMixin, LocalInverseMixin, sk.QuantileTransformer):
    """Map features to a uniform or normal distribution with global quantiles.

    scikit-learn's :class:`sklearn.preprocessing.QuantileTransformer` for
    row-sharded data. ``quantiles_`` are the exact ``np.nanpercentile`` of
    the concatenated columns at ``references_ * 100`` (a distributed
    selection, :func:`mlmpi.utils.global_percentiles`; never per-rank
    quantiles averaged). With ``subsample`` smaller than the global number of
    rows, the quantiles are those of a uniformly random subsample of
    ``subsample`` global rows (for sparse columns with more stored values
    than ``subsample``: of the column's stored values, as scikit-learn
    draws them), drawn by the random-draw policy (:mod:`mlmpi.random`; see
    Notes). ``fit`` is collective; ``transform`` and ``inverse_transform``
    local.

    Parameters
    ----------
    n_quantiles : int, default=1000
        Number of quantiles (at most the global number of rows is used).
    output_distribution : {'uniform', 'normal'}, default='uniform'
        Marginal distribution of the transformed data.
    ignore_implicit_zeros : bool, default=False
        Sparse input only: leave the implicit zeros out of the quantiles.
    subsample : int or None, default=10_000
        Global number of rows used to estimate the quantiles.
    random_state : int, RandomState instance or None, default=None
        Seeds the subsample. An int is used on every rank alike (with
        scikit-learn's draws, it gives scikit-learn's subsample); otherwise
        rank 0 draws a seed for every rank.
    copy : bool, default=True
        If False, try to transform in place.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    n_quantiles_ : int
        Number of quantiles used. Replicated.
    quantiles_ : ndarray of shape (``n_quantiles_``, n_features)
        Global quantiles. Replicated.
    references_ : ndarray of shape (``n_quantiles_``,)
        Quantiles of references. Replicated.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (string column names only).
    random_draws_ : {'scikit-learn', 'per-row'}
        The subsample's draws (:func:`mlmpi.random.draws_for` of the global
        row count): scikit-learn's up to a million global rows by default,
        else per-row draws. Replicated.

    Notes
    -----
    ``fit`` and ``fit_transform`` are collective: every rank calls them, with
    its own rows. Fitted attributes are replicated (the same on every rank).
    ``transform`` and ``inverse_transform`` are local: no communication.

    The subsample (only when ``subsample`` is smaller than the global number
    of rows, or than a sparse column's global number of stored values):

    - with scikit-learn's draws (``random_draws_ == 'scikit-learn'``), every
      rank draws scikit-learn's subsample of global row indices (the same
      permutation of ``range(n_samples)`` from ``random_state``; for a
      sparse column, of its global stored-value indices, rank by rank, row
      by row) and keeps the drawn rows it holds, so the result equals
      scikit-learn's on the concatenated data for an int ``random_state``;
      the permutation costs 8 bytes per global row (or stored value) and
      time over all of them, on every rank;
    - with per-row draws, the subsample is an exactly uniform subset of
      ``subsample`` global rows (or stored values) addressed by global index
      (hypergeometric splits down a fixed tree of index ranges): the same
      subsample, and the same ``quantiles_``, at any number of ranks, drawn
      in time and memory over the rank's own rows, with no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.preprocessing import QuantileTransformer
    >>> qt = QuantileTransformer(n_quantiles=3).fit(np.array([[0.0], [1.0], [5.0]]))
    >>> qt.quantiles_.ravel()
    array([0., 1., 5.])
    """

    _parameter_constraints: dict = {
        **sk.QuantileTransformer._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        *,
        n_quantiles=1000,
        output_distribution="uniform",
        ignore_implicit_zeros=False,
        subsample=10_000,
        random_state=None,
        copy=True,
        comms=None,
    ):
        super().__init__(
            n_quantiles=n_quantiles,
            output_distribution=output_distribution,
            ignore_implicit_zeros=ignore_implicit_zeros,
            subsample=subsample,
            random_state=random_state,
            copy=copy,
        )
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the global quantiles of every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (may be empty); sparse input must be non-negative
            unless ``ignore_implicit_zeros``.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        X, _, layout = self._validate_fit(
            X, accept_sparse="csc", dtype=FLOAT_DTYPES, ensure_all_finite="allow-nan"
        )
        comms = self._get_comms()
        X = X.tocsc() if is_sparse(X) else X
        if self.subsample is not None and self.n_quantiles > self.subsample:
            raise ValueError(
                "The number of quantiles cannot be greater than"
                f" the number of samples used. Got {self.n_quantiles} quantiles"
                f" and {self.subsample} samples."
            )
        self._agree_non_negative(X, comms)
        n_samples = layout.n_samples
        if self.n_quantiles > n_samples:
            warnings.warn(
                f"n_quantiles ({self.n_quantiles}) is greater than the total number "
                f"of samples ({n_samples}). n_quantiles is set to n_samples.",
                stacklevel=2,
            )
        self.n_quantiles_ = max(1, min(self.n_quantiles, n_samples))
        self.random_draws_ = draws_for(n_samples)
        draws = _SubsampleDraws(self.random_draws_, shared_seed(self.random_state, comms))
        self.references_ = np.linspace(0, 1, self.n_quantiles_, endpoint=True)
        if is_sparse(X):
            self.quantiles_ = self._global_sparse_quantiles(X, layout, draws, comms)
        else:
            self.quantiles_ = self._global_dense_quantiles(X, layout, draws, comms)
        return self

    def _agree_non_negative(self, X, comms):
        def check():
            if is_sparse(X) and not self.ignore_implicit_zeros and X.nnz:
                with np.errstate(invalid="ignore"):
                    if np.any(X.data < 0):
                        raise ValueError(
                            "QuantileTransformer only accepts non-negative sparse matrices."
                        )

        agree_on_errors(comms, check)

    def _global_dense_quantiles(self, X, layout, draws, comms):
        if self.ignore_implicit_zeros:
            warnings.warn(
                "'ignore_implicit_zeros' takes effect only with"
                " sparse matrix. This parameter has no effect.",
                stacklevel=2,
            )
        X = to_host(X)
        if self.subsample is not None and self.subsample < layout.n_samples:
            start, stop = layout.offset, layout.offset + layout.n_local
            X = X[draws.among(_ROWS_STREAM, layout.n_samples, self.subsample, start, stop)]
        return global_percentiles(X, self.references_ * 100, comms=comms)

    def _global_sparse_quantiles(self, X, layout, draws, comms):
        """The quantiles of the columns' stored values and implicit zeros, with
        scikit-learn's per-column draw among the stored values (or per-row
        draws), by global stored-value index (stored values are in global row
        order: rank by rank, row by row)."""
        X = on_host(X)
        n_samples = layout.n_samples
        stored = np.diff(X.indptr).astype(np.int64)
        per_rank = comms.allgather(stored[None])
        before = per_rank[: comms.rank].sum(axis=0)
        total = per_rank.sum(axis=0)
        values, zeros, empty = [], [], []
        for j in range(X.shape[1]):
            data = X.data[X.indptr[j] : X.indptr[j + 1]].astype(np.float64)
            if self.subsample is not None and total[j] > self.subsample:
                drawn_count = (
                    self.subsample
                    if self.ignore_implicit_zeros
                    else self.subsample * int(total[j]) // n_samples
                )
                stop = before[j] + data.size
                data = data[
                    draws.among(_COLUMN_STREAMS + j, total[j], drawn_count, before[j], stop)
                ]
                extra_zeros = self.subsample - drawn_count
            else:
                extra_zeros = 0 if self.ignore_implicit_zeros else n_samples - int(total[j])
            values.append(data)
            zeros.append(extra_zeros if comms.rank == 0 else 0)
            empty.append(extra_zeros == 0 and total[j] == 0)
        columns = SortedColumns.from_columns(values, zeros, X.dtype)
        quantiles = global_percentiles(columns, self.references_ * 100, comms=comms)
        quantiles[:, np.asarray(empty, dtype=bool)] = 0.0
        return quantiles


class Normalizer(CollectiveTransformerMixin, sk.Normalizer):
    """Scale each row to unit norm.

    scikit-learn's :class:`sklearn.preprocessing.Normalizer`: stateless, each
    row is scaled on its own. ``fit`` is collective only to agree on the
    number of features (and the parameters) over the ranks; ``transform`` is
    local.

    Parameters
    ----------
    norm : {'l1', 'l2', 'max'}, default='l2'
        The norm each non-zero row is scaled to.
    copy : bool, default=True
        If False, try to normalize in place.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during fit (agreed over the ranks).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (string column names only).

    Notes
    -----
    ``fit`` and ``fit_transform`` are collective: every rank calls them, with
    its own rows. Fitted attributes are replicated (the same on every rank).
    ``transform`` is local: no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.preprocessing import Normalizer
    >>> Normalizer().fit_transform(np.array([[3.0, 4.0]]))
    array([[0.6, 0.8]])
    """

    _parameter_constraints: dict = {**sk.Normalizer._parameter_constraints, "comms": [None, Comms]}

    def __init__(self, norm="l2", *, copy=True, comms=None):
        super().__init__(norm=norm, copy=copy)
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Agree on the number of features of every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        self._validate_fit(X, accept_sparse="csr", dtype="numeric")
        return self
