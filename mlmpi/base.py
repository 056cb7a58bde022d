"""The base every mlmpi estimator and transformer shares: the collective contract.

Every public collective method of an estimator enters through
:func:`mlmpi.comms.collective_method`; the estimator resolves its comms
through :class:`DistributedEstimatorMixin`.
"""

from .comms import resolve_comms


class DistributedEstimatorMixin:
    """Mixin of every mlmpi estimator (put it first among the bases).

    Estimators take ``comms=None`` (meaning :func:`mlmpi.get_comms`) and
    resolve it here, once per collective call.
    """

    def _get_comms(self):
        """The comms this estimator's collective methods run on."""
        return resolve_comms(self.comms)
