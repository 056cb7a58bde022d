"""What PCA and TruncatedSVD share: local transforms, replicated attributes
and the call of the randomized solver."""

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.extmath import svd_flip
from sklearn.utils.validation import check_array, check_is_fitted

from .._array import get_namespace, is_device_array, to_namespace
from .._contract import collective_method
from .._sklearn_compat import _fit_context
from ..base import DistributedEstimatorMixin
from ..random import shared_seed
from ..utils.validation import _check_device_array, check_local
from ._solvers import randomized_svd

FLOAT_DTYPES = (np.float64, np.float32)


def flip_signs(Vt):
    """scikit-learn's sign rule for every solver here (``svd_flip`` with
    ``u_based_decision=False``): the largest entry of each row is positive."""
    return svd_flip(None, Vt, u_based_decision=False)[1]


def replicated(a, xp, dtype):
    """A host result as a fitted attribute: ``xp`` array of ``dtype`` (a copy)."""
    return xp.asarray(np.array(a, dtype=dtype))


class _BaseDecomposition(
    DistributedEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Rows are sharded over the ranks; ``components_`` is replicated.

    Subclasses implement ``_fit(X)`` (collective; sets the attributes and
    returns this rank's validated rows), ``_transform(X)`` and
    ``_inverse_transform(X)`` (local, on validated rows).
    """

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model on every rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's training rows (NumPy, SciPy sparse or their CuPy/cupyx
            twins; may be empty). Sparse rows where the estimator accepts them.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._fit(X)
        return self

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit the model on every rank's rows and reduce this rank's rows.

        This method is collective.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's training rows (NumPy, SciPy sparse or their CuPy/cupyx
            twins; may be empty). Sparse rows where the estimator accepts them.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        X_new : array of shape (n_local, n_components)
            This rank's reduced rows (local), in the namespace of ``X``.
        """
        return self._transform(self._fit(X))

    def transform(self, X):
        """Reduce this rank's rows.

        Local: no communication; zero rows give an empty result.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            Rows to transform (NumPy, SciPy sparse or their CuPy/cupyx twins).

        Returns
        -------
        X_new : array of shape (n_local, n_components)
            Same namespace as ``X``.
        """
        return self._transform(self._check_transform_input(X, accept_sparse=("csr", "csc")))

    def inverse_transform(self, X):
        """Map reduced rows back to the feature space (undoing whitening, if any).

        Local: no communication; zero rows give an empty result.

        Parameters
        ----------
        X : array-like of shape (n_local, n_components)
            Reduced rows (NumPy or CuPy).

        Returns
        -------
        X_original : array of shape (n_local, n_features)
            Same namespace as ``X``.
        """
        check_is_fitted(self)
        if is_device_array(X):
            X = _check_device_array(X, dtype=FLOAT_DTYPES, ensure_2d=True, ensure_all_finite=True)
        else:
            X = check_array(X, dtype=FLOAT_DTYPES, ensure_min_samples=0)
        return self._inverse_transform(X)

    def _randomized_svd(self, X, center, n_components, n_iter, comms):
        """:func:`~._solvers.randomized_svd` with this estimator's
        ``n_oversamples``, ``power_iteration_normalizer`` and ``random_state``.

        This method is collective.
        """
        return randomized_svd(
            X,
            center,
            n_components,
            n_oversamples=self.n_oversamples,
            n_iter=n_iter,
            power_iteration_normalizer=self.power_iteration_normalizer,
            seed=shared_seed(self.random_state, comms),
            comms=comms,
        )

    def _attribute(self, name, X):
        """Fitted attribute ``name`` in the namespace of ``X`` (fit on GPU,
        transform on host...)."""
        return to_namespace(getattr(self, name), get_namespace(X))

    def _check_transform_input(self, X, accept_sparse=False):
        check_is_fitted(self)
        return check_local(self, X, reset=False, dtype=FLOAT_DTYPES, accept_sparse=accept_sparse)

    @property
    def _n_features_out(self):
        """Number of transformed output features."""
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
