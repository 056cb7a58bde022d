"""KNeighborsRegressor over a sharded index."""

import numpy as np
from sklearn.base import MultiOutputMixin
from sklearn.utils.validation import check_is_fitted

from .._array import to_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import _fit_context
from ..base import DistributedRegressorMixin
from ._base import DISTRIBUTED_DOC, SUPERVISED_PARAMETERS_DOC, SupervisedNeighborsBase


class KNeighborsRegressor(MultiOutputMixin, DistributedRegressorMixin, SupervisedNeighborsBase):
    """Regression by the k nearest neighbours over rows spread across ranks.

        scikit-learn's :class:`sklearn.neighbors.KNeighborsRegressor` (brute
        force): the (weighted) mean of the neighbours' targets, fetched from the
        ranks that own them (two ``alltoallv`` per prediction).
        {shared}
        Parameters
        ----------
    {parameters}
        Attributes
        ----------
        effective_metric_, effective_metric_params_ : str, dict
            The metric used and its parameters. Replicated.
        n_features_in_ : int
            Number of features seen during fit. Replicated.
        n_samples_fit_ : int
            Rows in the global index. Replicated.
        shard_counts_ : tuple of int
            Rows of the index held by each rank. Replicated.

        Notes
        -----
        :meth:`fit`, :meth:`predict`, :meth:`score` and the neighbour searches
        are collective. A rank may hold zero rows.

        Examples
        --------
        >>> import numpy as np
        >>> from mlmpi import KNeighborsRegressor
        >>> reg = KNeighborsRegressor(n_neighbors=2).fit(np.array([[0.0], [1.0], [3.0]]), [0, 1, 3])
        >>> reg.predict(np.array([[0.9]]))
        array([0.5])
    """

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Keep this rank's rows and targets as its shard of the index.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's training rows (may have zero rows).
        y : array-like of shape (n_local,) or (n_local, n_outputs)
            Their targets.

        Returns
        -------
        self : KNeighborsRegressor
            The fitted regressor.
        """
        y, _ = self._fit_index(X, y, multi_output=True, y_numeric=True)
        y = to_host(y).astype(np.float64)
        self._y_ndim = y.ndim
        self._y = y.reshape(-1, 1) if y.ndim == 1 else y
        return self

    def _sklearn_state(self):
        state = super()._sklearn_state()
        if self._y_ndim == 1:  # scikit-learn keeps one target as a 1-D array
            state["_y"] = state["_y"].ravel()
        return state

    @collective_method
    def predict(self, X):
        """Predict the targets of this rank's query rows.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local_queries, n_features) or None
            This rank's queries; None: the fitted rows, each excluding itself.

        Returns
        -------
        y : ndarray of shape (n_local_queries,) or (n_local_queries, n_outputs)
            Local, float64, in the queries' namespace.
        """
        check_is_fitted(self, "_fit_X")
        weights, targets, xp = self._neighbour_targets(X)
        if weights is None:
            predicted = targets.mean(axis=1)
        else:
            predicted = (targets * weights[:, :, None]).sum(axis=1) / weights.sum(axis=1)[:, None]
        if self._y_ndim == 1:
            predicted = predicted.ravel()
        return to_namespace(predicted, xp)


KNeighborsRegressor.__doc__ = KNeighborsRegressor.__doc__.format(
    shared=DISTRIBUTED_DOC, parameters=SUPERVISED_PARAMETERS_DOC
)
