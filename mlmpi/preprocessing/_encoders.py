"""Categorical encoders whose categories are the union over every rank's rows.

Each rank finds its own categories and their counts (scikit-learn's own
``_fit`` on its rows, which also checks user-given categories); one
allgather of these small lists gives every rank the sorted union, in
scikit-learn's order (NaN/None last), with the counts summed over the ranks
for ``min_frequency``/``max_categories``. A category seen on one rank only is
a category of every rank. ``transform`` and ``inverse_transform`` are
scikit-learn's, local.
"""

import numpy as np
import sklearn.preprocessing as sk

from .._array import is_device_array, on_host
from .._contract import collective_method
from .._sklearn_compat import _fit_context, _num_samples, is_scalar_nan
from ..comms import Comms
from ..utils.stats import merge_counts
from ..utils.validation import agree, validate_fit_data
from ._base import (
    CollectiveTransformerMixin,
    LocalInverseMixin,
    frame_like,
    is_polars,
    object_view,
)


class _GlobalCategoriesMixin(CollectiveTransformerMixin, LocalInverseMixin):
    """Replaces scikit-learn's ``_fit`` by its distributed twin."""

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Find the categories of every rank's rows together.

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
            Fitted encoder.
        """
        X = on_host(X) if is_device_array(X) else X  # categories are found on the host
        # Sparse rows pass here: scikit-learn's own check refuses them, with its message.
        validate_fit_data(
            self,
            object_view(X),
            comms=self._get_comms(),
            dtype=None,
            ensure_all_finite=False,
            accept_sparse=True,
        )
        return super().fit(X, y)

    def _fit(
        self,
        X,
        handle_unknown="error",
        ensure_all_finite=True,
        return_counts=False,
        return_and_ignore_missing_for_infrequent=False,
    ):
        self._check_infrequent_enabled()
        comms = self._get_comms()
        n_features = self.n_features_in_
        names = getattr(self, "feature_names_in_", None)

        # The counts only when scikit-learn needs them: its count of bytes
        # categories (dtype "S") fails.
        counted = return_counts or self._infrequent_enabled

        def local():
            if _num_samples(X) == 0:
                return None, None
            output = super(_GlobalCategoriesMixin, self)._fit(
                X,
                handle_unknown=handle_unknown,
                ensure_all_finite=ensure_all_finite,
                return_counts=counted,
            )
            counts = output.get("category_counts") or [np.zeros(len(c)) for c in self.categories_]
            return None, (self.categories_, counts, output["n_samples"])

        _, facts = agree(comms, local)
        self.n_features_in_ = n_features
        if names is not None:
            self.feature_names_in_ = names
        n_samples = sum(f[2] for f in facts if f is not None)
        if self.categories == "auto":
            merged = [
                merge_counts([(f[0][i], f[1][i]) if f else None for f in facts])
                for i in range(n_features)
            ]
            self.categories_ = [cats for cats, _ in merged]
            category_counts = [counts for _, counts in merged]
        else:  # the given categories, identical on every rank with rows
            reference = next(f for f in facts if f is not None)
            self.categories_ = reference[0]
            category_counts = [
                sum(np.asarray(f[1][i], dtype=np.int64) for f in facts if f is not None)
                for i in range(n_features)
            ]
        output = {"n_samples": n_samples}
        if return_counts:
            output["category_counts"] = category_counts
        missing_indices = {}
        if return_and_ignore_missing_for_infrequent:
            missing_indices = {
                i: cats.size - 1
                for i, cats in enumerate(self.categories_)
                if is_scalar_nan(cats[-1])
            }
            output["missing_indices"] = missing_indices
        if self._infrequent_enabled:
            self._fit_infrequent_category_mapping(n_samples, category_counts, missing_indices)
        return output

    def _transform_placeholder(self, X):
        """A row of every feature's first category (known to the encoder)."""
        row = [[cats[0] for cats in self.categories_]]
        if hasattr(X, "iloc") or is_polars(X):
            return frame_like(X, row[0])
        textual = any(cats.dtype.kind in "OUS" for cats in self.categories_)
        return np.array(row, dtype=object if textual else None)

    def _inverse_placeholder(self, X):
        return self.transform(self._transform_placeholder(None))


class OneHotEncoder(_GlobalCategoriesMixin, sk.OneHotEncoder):
    """Encode categorical features as a one-hot array, with the categories of every rank.

    scikit-learn's :class:`sklearn.preprocessing.OneHotEncoder` for
    row-sharded data: ``categories_`` is the sorted union of the categories
    of every rank's rows (scikit-learn's order), and the category counts
    behind ``min_frequency``/``max_categories`` are summed over the ranks. A
    category present on one rank only is a category everywhere; an unseen
    category at ``transform`` follows ``handle_unknown``. ``fit`` is
    collective; ``transform`` and ``inverse_transform`` are local.

    Parameters
    ----------
    categories : 'auto' or list of array-like, default='auto'
    drop : {'first', 'if_binary'} or array-like, default=None
    sparse_output : bool, default=True
    dtype : number type, default=np.float64
    handle_unknown : {'error', 'ignore', 'infrequent_if_exist', 'warn'}, default='error'
    min_frequency : int or float, default=None
    max_categories : int, default=None
    feature_name_combiner : "concat" or callable, default="concat"
        As in scikit-learn.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    categories_ : list of ndarray
        Categories of each feature, over all ranks. Replicated.
    drop_idx_ : ndarray or None
        As in scikit-learn. Replicated.
    infrequent_categories_ : list of ndarray
        Infrequent categories of each feature (global counts). Replicated.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (string column names only).
    feature_name_combiner : callable or None
        As in scikit-learn.

    Notes
    -----
    ``fit`` and ``fit_transform`` are collective: every rank calls them, with
    its own rows. Fitted attributes are replicated (the same on every rank).
    ``transform`` and ``inverse_transform`` are local: no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.preprocessing import OneHotEncoder
    >>> enc = OneHotEncoder(sparse_output=False).fit(np.array([["b"], ["a"], ["b"]]))
    >>> enc.categories_
    [array(['a', 'b'], dtype='<U1')]
    """

    _parameter_constraints: dict = {
        **sk.OneHotEncoder._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        *,
        categories="auto",
        drop=None,
        sparse_output=True,
        dtype=np.float64,
        handle_unknown="error",
        min_frequency=None,
        max_categories=None,
        feature_name_combiner="concat",
        comms=None,
    ):
        super().__init__(
            categories=categories,
            drop=drop,
            sparse_output=sparse_output,
            dtype=dtype,
            handle_unknown=handle_unknown,
            min_frequency=min_frequency,
            max_categories=max_categories,
            feature_name_combiner=feature_name_combiner,
        )
        self.comms = comms


class OrdinalEncoder(_GlobalCategoriesMixin, sk.OrdinalEncoder):
    """Encode categorical features as integers, with the categories of every rank.

    scikit-learn's :class:`sklearn.preprocessing.OrdinalEncoder` for
    row-sharded data: ``categories_`` is the sorted union over the ranks and
    infrequent categories use global counts, so every rank maps a category to
    the same code. ``fit`` is collective; ``transform`` and
    ``inverse_transform`` are local.

    Parameters
    ----------
    categories : 'auto' or list of array-like, default='auto'
    dtype : number type, default=np.float64
    handle_unknown : {'error', 'use_encoded_value'}, default='error'
    unknown_value : int or np.nan, default=None
    encoded_missing_value : int or np.nan, default=np.nan
    min_frequency : int or float, default=None
    max_categories : int, default=None
        As in scikit-learn.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    categories_ : list of ndarray
        Categories of each feature, over all ranks. Replicated.
    infrequent_categories_ : list of ndarray
        Infrequent categories of each feature (global counts). Replicated.
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
    >>> from mlmpi.preprocessing import OrdinalEncoder
    >>> OrdinalEncoder().fit_transform(np.array([["b"], ["a"], ["c"]])).ravel()
    array([1., 0., 2.])
    """

    _parameter_constraints: dict = {
        **sk.OrdinalEncoder._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        *,
        categories="auto",
        dtype=np.float64,
        handle_unknown="error",
        unknown_value=None,
        encoded_missing_value=np.nan,
        min_frequency=None,
        max_categories=None,
        comms=None,
    ):
        super().__init__(
            categories=categories,
            dtype=dtype,
            handle_unknown=handle_unknown,
            unknown_value=unknown_value,
            encoded_missing_value=encoded_missing_value,
            min_frequency=min_frequency,
            max_categories=max_categories,
        )
        self.comms = comms

    def _inverse_placeholder(self, X):
        return np.zeros((1, self.n_features_in_))
