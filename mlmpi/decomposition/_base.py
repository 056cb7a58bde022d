"""What PCA and TruncatedSVD share: local transforms and replicated attributes."""

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.extmath import svd_flip
from sklearn.utils.validation import check_array, check_is_fitted

from .._array import get_namespace, is_device_array, to_namespace
from ..comms import Comms
from ..utils.validation import _check_device_array, check_local

FLOAT_DTYPES = (np.float64, np.float32)


def flip_signs(Vt):
    """scikit-learn's sign rule for every solver here (``svd_flip`` with
    ``u_based_decision=False``): the largest entry of each row is positive."""
    return svd_flip(None, Vt, u_based_decision=False)[1]


def replicated(a, xp, dtype):
    """A host result as a fitted attribute: ``xp`` array of ``dtype`` (a copy)."""
    return xp.asarray(np.array(a, dtype=dtype))


def check_reduced(estimator, X):
    """Validate the reduced rows given to ``inverse_transform`` (no communication;
    zero rows allowed)."""
    check_is_fitted(estimator)
    if is_device_array(X):
        return _check_device_array(X, dtype=FLOAT_DTYPES, ensure_2d=True, ensure_all_finite=True)
    return check_array(X, dtype=FLOAT_DTYPES, ensure_min_samples=0)


class _BaseDecomposition(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Rows are sharded over the ranks; ``components_`` is replicated."""

    _comms_constraint = {"comms": [None, Comms]}

    def _attribute(self, name, X):
        """Fitted attribute ``name`` in the namespace of ``X`` (fit on GPU, transform on host...)."""
        return to_namespace(getattr(self, name), get_namespace(X))

    def _check_transform_input(self, X):
        check_is_fitted(self)
        return check_local(self, X, reset=False, dtype=FLOAT_DTYPES)

    @property
    def _n_features_out(self):
        """Number of transformed output features."""
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
