"""KNeighborsClassifier over a sharded index."""

import warnings

import numpy as np
from sklearn.base import MultiOutputMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from .._array import to_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import _fit_context
from ..base import DistributedClassifierMixin
from ..utils.stats import global_classes
from ._base import DISTRIBUTED_DOC, SUPERVISED_PARAMETERS_DOC, SupervisedNeighborsBase


class KNeighborsClassifier(MultiOutputMixin, DistributedClassifierMixin, SupervisedNeighborsBase):
    """Classifier implementing the k-nearest neighbours vote over rows spread across ranks.

        scikit-learn's :class:`sklearn.neighbors.KNeighborsClassifier` (brute
        force). The classes are discovered over all ranks (a rank may hold no
        example of some class, or no rows at all); the labels of the neighbours
        come from the ranks that own them (two ``alltoallv`` per prediction).
        {shared}
        Parameters
        ----------
    {parameters}
        Attributes
        ----------
        classes_ : ndarray of shape (n_classes,) or list of such arrays
            Class labels (one array per output). Replicated.
        effective_metric_, effective_metric_params_ : str, dict
            The metric used and its parameters. Replicated.
        n_features_in_ : int
            Number of features seen during fit. Replicated.
        n_samples_fit_ : int
            Rows in the global index. Replicated.
        shard_counts_ : tuple of int
            Rows of the index held by each rank. Replicated.
        outputs_2d_ : bool
            Whether ``y`` had several outputs at fit. Replicated.

        Notes
        -----
        :meth:`fit`, :meth:`predict`, :meth:`predict_proba`, :meth:`score` and
        the neighbour searches are collective. A rank may hold zero rows.

        Examples
        --------
        >>> import numpy as np
        >>> from mlmpi import KNeighborsClassifier
        >>> clf = KNeighborsClassifier(n_neighbors=1).fit(np.array([[0.0], [1.0]]), [0, 1])
        >>> clf.predict(np.array([[0.9]]))
        array([1])
    """

    _zero_weights_error = True

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Keep this rank's rows and labels as its shard of the index.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's training rows (may have zero rows).
        y : array-like of shape (n_local,) or (n_local, n_outputs)
            Their labels.

        Returns
        -------
        self : KNeighborsClassifier
            The fitted classifier.
        """
        y, _ = self._fit_index(X, y, multi_output=True)
        y = to_host(y)
        if y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1):
            if y.ndim != 1:
                warnings.warn(
                    "A column-vector y was passed when a 1d array was expected. Please change "
                    "the shape of y to (n_samples,), for example using ravel().",
                    DataConversionWarning,
                    stacklevel=2,
                )
            self.outputs_2d_ = False
            y = y.reshape(-1, 1)
        else:
            self.outputs_2d_ = True
        comms = self._get_comms()
        classes, self._y = [], np.empty(y.shape, dtype=np.int64)
        for j in range(y.shape[1]):
            found, _, self._y[:, j] = global_classes(y[:, j], comms)
            classes.append(found)
        self.classes_ = classes if self.outputs_2d_ else classes[0]
        return self

    def _probabilities(self, X):
        """Per output, the normalised weighted votes (host) and the queries' namespace."""
        check_is_fitted(self, "_fit_X")
        weights, labels, xp = self._neighbour_targets(X)
        n_queries, k = labels.shape[:2]
        if weights is None:
            weights = np.ones((n_queries, k))
        classes = self.classes_ if self.outputs_2d_ else [self.classes_]
        rows = np.arange(n_queries)
        probabilities = []
        for j, classes_j in enumerate(classes):
            proba = np.zeros((n_queries, classes_j.size))
            for i in range(k):
                proba[rows, labels[:, i, j]] += weights[:, i]
            normalizer = proba.sum(axis=1)[:, None]
            normalizer[normalizer == 0.0] = 1.0
            probabilities.append(proba / normalizer)
        return probabilities, xp

    @collective_method
    def predict_proba(self, X):
        """Probability estimates of the classes for this rank's query rows.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local_queries, n_features) or None
            This rank's queries; None: the fitted rows, each excluding itself.

        Returns
        -------
        p : ndarray of shape (n_local_queries, n_classes), or a list of such arrays
            Local; columns follow ``classes_``.
        """
        probabilities, xp = self._probabilities(X)
        probabilities = [to_namespace(proba, xp) for proba in probabilities]
        return probabilities if self.outputs_2d_ else probabilities[0]

    @collective_method
    def predict(self, X):
        """Predict the class labels of this rank's query rows.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local_queries, n_features) or None
            This rank's queries; None: the fitted rows, each excluding itself.

        Returns
        -------
        y : ndarray of shape (n_local_queries,) or (n_local_queries, n_outputs)
            Local; in the queries' namespace for numeric labels.
        """
        probabilities, xp = self._probabilities(X)
        classes = self.classes_ if self.outputs_2d_ else [self.classes_]
        predicted = np.stack(
            [
                classes_j[np.argmax(proba, axis=1)] if proba.shape[0] else classes_j[:0]
                for classes_j, proba in zip(classes, probabilities)
            ],
            axis=1,
        )
        if not self.outputs_2d_:
            predicted = predicted.ravel()
        return predicted if predicted.dtype.kind not in "biuf" else to_namespace(predicted, xp)


KNeighborsClassifier.__doc__ = KNeighborsClassifier.__doc__.format(
    shared=DISTRIBUTED_DOC, parameters=SUPERVISED_PARAMETERS_DOC
)
