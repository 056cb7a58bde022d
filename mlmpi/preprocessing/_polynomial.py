"""PolynomialFeatures: stateless apart from the agreed number of features."""

import sklearn.preprocessing as sk

from .._contract import collective_method
from .._sklearn_compat import _fit_context
from ..comms import Comms
from ._base import CollectiveTransformerMixin, zero_row


class PolynomialFeatures(CollectiveTransformerMixin, sk.PolynomialFeatures):
    """Polynomial and interaction features of each row.

    scikit-learn's :class:`sklearn.preprocessing.PolynomialFeatures`: every
    output column depends on one row only, so ``fit`` is collective only to
    agree on the number of features (and the parameters and column names)
    over the ranks; ``transform`` is local. Dense and sparse (CSR/CSC) rows.

    Parameters
    ----------
    degree : int or tuple (min_degree, max_degree), default=2
    interaction_only : bool, default=False
    include_bias : bool, default=True
    order : {'C', 'F'}, default='C'
        As in scikit-learn.
    comms : Comms, default=None
        The ranks that share the data; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    powers_ : ndarray of shape (``n_output_features_``, ``n_features_in_``)
        Exponent of each input in each output. Replicated.
    n_features_in_ : int
        Number of features seen during fit (agreed over the ranks).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit (string column names only).
    n_output_features_ : int
        Number of output features. Replicated.

    Notes
    -----
    ``fit`` and ``fit_transform`` are collective: every rank calls them, with
    its own rows. Fitted attributes are replicated (the same on every rank).
    ``transform`` is local: no communication.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.preprocessing import PolynomialFeatures
    >>> PolynomialFeatures().fit_transform(np.array([[2.0, 3.0]]))
    array([[1., 2., 3., 4., 6., 9.]])
    """

    _parameter_constraints: dict = {
        **sk.PolynomialFeatures._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self, degree=2, *, interaction_only=False, include_bias=True, order="C", comms=None
    ):
        super().__init__(
            degree=degree, interaction_only=interaction_only, include_bias=include_bias, order=order
        )
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
        X, _, _ = self._validate_fit(X, accept_sparse=("csr", "csc"), dtype="numeric")
        names = getattr(self, "feature_names_in_", None)
        # scikit-learn's fit reads only the number of columns: one row of them
        super().fit(zero_row(X, X.shape[1]))
        if names is not None:
            self.feature_names_in_ = names
        return self
