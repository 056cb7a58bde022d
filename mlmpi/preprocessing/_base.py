"""What every distributed transformer shares: the collective ``fit_transform``
and the checks that open a collective ``fit``/``partial_fit``."""

import numpy as np

from .._array import back_like, is_device_array, is_sparse, on_host, sparse_namespace
from .._contract import collective_method
from .._sklearn_compat import _num_samples
from ..base import DistributedEstimatorMixin
from ..utils.validation import agree_on_errors, validate_fit_data

FLOAT_DTYPES = (np.float64, np.float32)


class CollectiveTransformerMixin(DistributedEstimatorMixin):
    """``fit`` is collective (every rank's rows), ``transform`` local.

    The local methods (``transform``, ``inverse_transform``,
    ``get_feature_names_out``) are scikit-learn's own, inherited from the
    scikit-learn class each transformer extends: they only read the
    replicated fitted attributes (host arrays, as scikit-learn's). CuPy rows
    are transformed on the host and the result goes back to the device.
    """

    @collective_method
    def fit_transform(self, X, y=None, **fit_params):
        """Fit on every rank's rows, then transform this rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : None
            Ignored.
        **fit_params : dict
            Passed to ``fit``.

        Returns
        -------
        X_new : ndarray or sparse matrix of shape (n_local, n_features_new)
            This rank's transformed rows (local).
        """
        return self.fit(X, y, **fit_params).transform(X)

    def transform(self, X, *args, **kwargs):
        """Transform this rank's rows.

        Local: no communication; zero rows give a zero-row result.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows.
        *args, **kwargs
            The other arguments of the scikit-learn method (``copy``).

        Returns
        -------
        X_new : ndarray or sparse matrix of shape (n_local, n_features_new)
            This rank's transformed rows.
        """
        return self._local_rows(super().transform, X, self._transform_placeholder, *args, **kwargs)

    def _local_rows(self, method, X, placeholder, *args, **kwargs):
        """scikit-learn's local ``method`` on this rank's rows. scikit-learn
        rejects zero rows, so a rank without rows runs ``method`` on the one
        valid row ``placeholder(X)`` and keeps no row of the result. CuPy rows
        are read on the host and the result goes back to the device."""
        if is_device_array(X):
            out = self._local_rows(method, on_host(X), placeholder, *args, **kwargs)
            return back_like(out, X)
        try:
            empty = _num_samples(X) == 0
        except TypeError:  # not an array (a scalar): scikit-learn's check says so
            empty = False
        if not empty:
            return method(X, *args, **kwargs)
        return method(placeholder(X), *args, **kwargs)[:0]

    def _transform_placeholder(self, X):
        return zero_row(X, self.n_features_in_)

    def _validate_fit(self, X, *, first_call=True, sample_weight=None, **check_params):
        """Agreed validation of a ``fit``/``partial_fit`` batch.

        Returns ``(X, sample_weight, layout)``; on a later ``partial_fit`` call
        the number of features must be the one seen first.
        """
        expected = None if first_call else self.n_features_in_
        X, _, sample_weight, layout = validate_fit_data(
            self, X, comms=self._get_comms(), sample_weight=sample_weight, **check_params
        )
        if expected is not None and X.shape[1] != expected:
            self.n_features_in_ = expected
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{expected} features as input."
            )
        return X, sample_weight, layout


def reject_sparse(X, comms, message):
    """Raise ``TypeError(message)`` on every rank when any rank's ``X`` is sparse.

    This function is collective.
    """

    def check():
        if is_sparse(X):
            raise TypeError(message)

    agree_on_errors(comms, check)


class LocalInverseMixin:
    """``inverse_transform`` on this rank's rows, for the transformers that have one."""

    def inverse_transform(self, X, *args, **kwargs):
        """Undo the transformation of this rank's rows.

        Local: no communication; zero rows give a zero-row result.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features_new)
            Transformed rows of this rank.
        *args, **kwargs
            The other arguments of the scikit-learn method (``copy``).

        Returns
        -------
        X_original : ndarray or sparse matrix of shape (n_local, n_features)
            This rank's rows in the original space.
        """
        return self._local_rows(
            super().inverse_transform, X, self._inverse_placeholder, *args, **kwargs
        )

    def _inverse_placeholder(self, X):
        return zero_row(X, len(self.get_feature_names_out()))


def object_view(X):
    """``X`` with object columns, so that validation agrees on the number of
    columns and their names whatever each rank's dtypes (string widths);
    sparse matrices as they are."""
    if hasattr(X, "iloc"):
        return X.astype(object)
    if is_polars(X) or is_sparse(X) or (isinstance(X, (list, tuple)) and len(X) == 0):
        return X
    return np.asarray(X, dtype=object)


def is_polars(X):
    """Whether ``X`` is a polars DataFrame (without importing polars)."""
    return type(X).__module__.startswith("polars") and hasattr(X, "schema")


def frame_like(X, row):
    """The one row ``row`` as a pandas or polars DataFrame with ``X``'s columns
    and dtypes; a categorical column gets the row's value as its category
    (an empty shard's categorical column may not know it)."""
    if is_polars(X):
        import polars as pl

        frame = pl.DataFrame([row], schema=X.columns, orient="row")
        return frame.cast({n: t for n, t in X.schema.items() if not isinstance(t, pl.Enum)})
    import pandas as pd

    dtypes = {
        name: "category" if isinstance(dtype, pd.CategoricalDtype) else dtype
        for name, dtype in X.dtypes.items()
    }
    return pd.DataFrame([row], columns=X.columns).astype(dtypes)


def zero_row(X, width):
    """One row of zeros like ``X`` (dense or sparse, dtype, DataFrame columns)."""
    if hasattr(X, "shape") and len(X.shape) == 2:
        width = X.shape[1]
    if hasattr(X, "iloc"):
        return X.reindex([0]).fillna(0)
    if is_polars(X):
        return frame_like(X, [0] * width)
    dtype = X.dtype if getattr(X, "dtype", None) is not None else np.float64
    row = np.zeros((1, width), dtype=dtype)
    return sparse_namespace(X).csr_matrix(row) if is_sparse(X) else row
