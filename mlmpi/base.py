"""The base every mlmpi estimator and transformer shares: the collective contract.

Every public collective method of an estimator enters through
``collective_method`` (:mod:`mlmpi._contract`): the ranks
agree on the method, the call count, the parameters and the input schema
before anything can raise locally. The estimator resolves its comms through
:class:`DistributedEstimatorMixin`.
"""

from sklearn.base import ClassifierMixin, RegressorMixin

from ._contract import collective_method
from ._export import SklearnExport
from .comms import resolve_comms
from .utils.validation import agree

__all__ = ["DistributedClassifierMixin", "DistributedEstimatorMixin", "DistributedRegressorMixin"]


class DistributedEstimatorMixin(SklearnExport):
    """Mixin of every mlmpi estimator (put it first among the bases).

    Estimators take ``comms=None`` (meaning :func:`mlmpi.get_comms`) and
    resolve it here; their public collective methods are decorated with
    ``mlmpi._contract.collective_method``, which agrees on the call with the
    other ranks through these comms before the method validates anything.
    ``as_sklearn()`` gives the fitted scikit-learn estimator
    (:mod:`mlmpi._export`).

    Examples
    --------
    >>> from mlmpi import KMeans
    >>> from mlmpi.base import DistributedEstimatorMixin
    >>> isinstance(KMeans(), DistributedEstimatorMixin)
    True
    >>> KMeans()._get_comms().backend  # comms=None: the default comms
    'self'
    """

    def _get_comms(self):
        """The comms this estimator's collective methods run on."""
        return resolve_comms(self.comms)


_SCORE_DOC = """{what} of :meth:`predict` over the rows of every rank.

        The value scikit-learn's ``{metric}`` gives on the union of the shards
        (:func:`mlmpi.metrics.{metric}`), the same on every rank.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's rows (may be empty).
        y : array-like of shape (n_local,) or (n_local, n_outputs)
            Their true values.
        sample_weight : array-like of shape (n_local,), default=None
            Their weights.

        Returns
        -------
        score : float
            Replicated.
        """


def _global_score(estimator, metric, X, y, sample_weight):
    comms = estimator._get_comms()
    predicted, _ = agree(comms, lambda: (estimator.predict(X), None))
    return metric(y, predicted, sample_weight=sample_weight, comms=comms)


class DistributedClassifierMixin(ClassifierMixin):
    """scikit-learn's ``ClassifierMixin`` whose ``score`` is the global accuracy.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import GaussianNB
    >>> X, y = np.array([[0.0], [0.2], [1.0], [1.2]]), np.array([0, 0, 1, 1])
    >>> GaussianNB().fit(X, y).score(X, y)  # accuracy over every rank's rows
    1.0
    """

    @collective_method
    def score(self, X, y, sample_weight=None):
        from .metrics import accuracy_score

        return _global_score(self, accuracy_score, X, y, sample_weight)

    score.__doc__ = _SCORE_DOC.format(what="Mean accuracy", metric="accuracy_score")


class DistributedRegressorMixin(RegressorMixin):
    """scikit-learn's ``RegressorMixin`` whose ``score`` is the global R².

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import LinearRegression
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> round(LinearRegression().fit(X, 2 * X[:, 0] + 1).score(X, 2 * X[:, 0] + 1), 6)
    1.0
    """

    @collective_method
    def score(self, X, y, sample_weight=None):
        from .metrics import r2_score

        return _global_score(self, r2_score, X, y, sample_weight)

    score.__doc__ = _SCORE_DOC.format(what="R²", metric="r2_score")
