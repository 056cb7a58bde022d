"""SimpleImputer with the statistics of every rank's rows."""

from collections import Counter

import numpy as np
import sklearn.impute as sk

from .._array import is_device_array, is_sparse, on_host
from .._contract import collective_method
from .._sklearn_compat import _fit_context, _get_mask, _num_samples, _safe_min
from ..comms import Comms
from ..preprocessing._base import (
    CollectiveTransformerMixin,
    LocalInverseMixin,
    object_view,
)
from ..utils.stats import global_median
from ..utils.validation import agree, validate_fit_data


class SimpleImputer(CollectiveTransformerMixin, LocalInverseMixin, sk.SimpleImputer):
    """Impute missing values with statistics of every rank's rows.

    scikit-learn's :class:`sklearn.impute.SimpleImputer` for row-sharded
    data. The statistics are those of the concatenated columns (missing
    values left out, the implicit zeros of sparse columns counted):

    - ``"mean"``: one allreduce of per-column sums and counts;
    - ``"median"``: the exact global median by distributed selection
      (:func:`mlmpi.utils.global_median`);
    - ``"most_frequent"``: one allgather of each rank's value counts, summed;
      ties go to the smallest value, as in scikit-learn;
    - ``"constant"``: ``fill_value``; a column missing on every row of every
      rank is dropped (unless ``keep_empty_features``);
    - a callable: applied to each column's non-missing values of every rank,
      in global row order (sparse columns without their zeros, as in
      scikit-learn). Any function may be given, so the values cannot be
      reduced: each column in turn is gathered on every rank (one
      allgatherv per column; memory of one global column while it runs).

    The missing indicator (``add_indicator``) marks the columns with a
    missing value on any rank. ``fit`` is collective; ``transform`` and
    ``inverse_transform`` are local.

    Parameters
    ----------
    missing_values : int, float, str, np.nan, None or pandas.NA, default=np.nan
    strategy : {"mean", "median", "most_frequent", "constant"} or callable, default="mean"
    fill_value : str or numerical value, default=None
    copy : bool, default=True
    add_indicator : bool, default=False
    keep_empty_features : bool, default=False
        As in scikit-learn.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    statistics_ : ndarray of shape (n_features,)
        The imputation fill value of each feature. Replicated.
    indicator_ : MissingIndicator or None
        Indicator of the features missing on some rank. Replicated.
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
    >>> from mlmpi.impute import SimpleImputer
    >>> SimpleImputer(strategy="median").fit(np.array([[1.0], [np.nan], [5.0], [2.0]])).statistics_
    array([2.])
    """

    _parameter_constraints: dict = {
        **sk.SimpleImputer._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        *,
        missing_values=np.nan,
        strategy="mean",
        fill_value=None,
        copy=True,
        add_indicator=False,
        keep_empty_features=False,
        comms=None,
    ):
        super().__init__(
            missing_values=missing_values,
            strategy=strategy,
            fill_value=fill_value,
            copy=copy,
            add_indicator=add_indicator,
            keep_empty_features=keep_empty_features,
        )
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the imputation statistics of every rank's rows.

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
            Fitted imputer.
        """
        comms = self._get_comms()
        X = on_host(X) if is_device_array(X) else X  # the statistics are found on the host
        view = object_view(X)
        validate_fit_data(
            self, view, comms=comms, dtype=None, ensure_all_finite=False, accept_sparse="csc"
        )
        n_features, names = self.n_features_in_, getattr(self, "feature_names_in_", None)

        def local():
            if _num_samples(X) == 0:
                return None, None
            Xv = self._validate_input(X, in_fit=True)
            return Xv, (Xv.dtype.str, is_sparse(Xv))

        Xv, facts = agree(comms, local)
        dtype, sparse = next(f for f in facts if f is not None)
        if Xv is None:  # this rank's rows as the others' kind, without rows
            Xv = np.empty((0, n_features), dtype=np.dtype(dtype))
            if sparse:
                import scipy.sparse as sp

                Xv = sp.csc_matrix(Xv)
            self._fit_dtype = Xv.dtype
        self.n_features_in_ = n_features
        if names is not None:
            self.feature_names_in_ = names
        if self.fill_value is None:
            fill_value = 0 if Xv.dtype.kind in "iuf" else "missing_value"
        else:
            fill_value = self.fill_value
        self._fill_dtype = Xv.dtype
        self.statistics_ = self._global_statistics(Xv, fill_value, comms)
        return self

    def _global_statistics(self, X, fill_value, comms):
        sparse = is_sparse(X)
        missing = _get_mask(X, self.missing_values)
        n_missing = np.asarray(missing.sum(axis=0)).ravel()
        # stored non-missing entries (all rows of a dense column), non-missing rows, missing rows
        stored = np.diff(X.indptr) if sparse else np.full(X.shape[1], X.shape[0])
        present, counts, n_missing = comms.allreduce(
            np.stack([stored - n_missing, X.shape[0] - n_missing, n_missing]).astype(np.int64)
        )
        self._fit_indicator((n_missing > 0).reshape(1, -1))
        empty = counts == 0
        fill_empty = 0 if self.keep_empty_features else np.nan
        if self.strategy == "constant":
            statistics = np.full(X.shape[1], fill_value, dtype=np.float64 if sparse else object)
            if not self.keep_empty_features:
                statistics[(present if sparse else counts) == 0] = np.nan
            return statistics
        if self.strategy == "mean":
            values = X.data if sparse else X
            kept = np.where(missing.data if sparse else missing, 0, values)
            if sparse:
                sums = np.asarray(
                    X.__class__((kept, X.indices, X.indptr), shape=X.shape).sum(axis=0),
                    dtype=np.float64,
                ).ravel()
            else:
                sums = kept.sum(axis=0, dtype=np.float64)
            sums = comms.allreduce(sums)
            with np.errstate(invalid="ignore", divide="ignore"):
                statistics = sums / counts
        elif callable(self.strategy):
            statistics = self._custom(X, missing, comms)
        elif self.strategy == "median":
            statistics = global_median(_missing_as_nan(X, missing), comms=comms)
            if sparse:
                statistics = statistics.astype(np.float64)
        else:
            statistics = self._most_frequent(X, missing, comms)
        statistics[empty] = fill_empty
        return statistics

    def _most_frequent(self, X, missing, comms):
        """Per column, the most frequent non-missing value over every rank
        (ties to the smallest); implicit zeros of sparse columns count."""
        counters = []
        for j in range(X.shape[1]):
            if is_sparse(X):
                column = X.data[X.indptr[j] : X.indptr[j + 1]]
                keep = ~missing.data[X.indptr[j] : X.indptr[j + 1]]
                counter = Counter(column[keep].tolist())
                implicit = X.shape[0] - column.size
                if implicit:
                    counter[0] += implicit
            else:
                counter = Counter(X[~missing[:, j], j].tolist())
            counters.append(counter)
        merged = _merge_counters(counters, comms)
        statistics = np.empty(X.shape[1], dtype=object if X.dtype.kind == "O" else np.float64)
        for j, counter in enumerate(merged):
            if counter:
                top = max(counter.values())
                statistics[j] = _safe_min([v for v, c in counter.items() if c == top])
            else:
                statistics[j] = np.nan
        return statistics

    def _custom(self, X, missing, comms):
        """The callable ``strategy`` of each global column's non-missing values
        (sparse: without the zeros, as scikit-learn), gathered column by column.

        This method is collective."""
        statistics = np.empty(X.shape[1])
        for j in range(X.shape[1]):
            if is_sparse(X):
                stored = slice(X.indptr[j], X.indptr[j + 1])
                column = X.data[stored][~missing.data[stored]]
                column = column[~_get_mask(column, 0)]
            else:
                column = X[~missing[:, j], j]
            statistics[j] = self.strategy(comms.allgatherv(column.astype(np.float64)))
        return statistics

    def _transform_placeholder(self, X):
        dtype = getattr(X, "dtype", None)
        row = np.zeros((1, self.n_features_in_), dtype=dtype if dtype is not None else float)
        return row if self._fit_dtype.kind != "O" else row.astype(object)


def _merge_counters(counters, comms):
    """Every rank's per-column counters, summed column by column."""
    merged = [Counter() for _ in counters]
    for rank_counters in comms.allgather_object(counters):
        for total, counter in zip(merged, rank_counters):
            total.update(counter)
    return merged


def _missing_as_nan(X, missing):
    """A float copy of ``X`` with its missing entries as NaN."""
    if is_sparse(X):
        X = X.astype(np.float64, copy=True)
        X.data[missing.data] = np.nan
        return X
    X = np.array(X, dtype=X.dtype if X.dtype.kind == "f" else np.float64)
    X[missing] = np.nan
    return X
