"""The base every mlmpi estimator and transformer shares: the collective contract.

Every public collective method of an estimator enters through
:func:`mlmpi.comms.collective_method` (:mod:`mlmpi._contract`): the ranks
agree on the method, the call count, the parameters and the input schema
before anything can raise locally. The estimator resolves its comms through
:class:`DistributedEstimatorMixin`.
"""

from .comms import resolve_comms


class DistributedEstimatorMixin:
    """Mixin of every mlmpi estimator (put it first among the bases).

    Estimators take ``comms=None`` (meaning :func:`mlmpi.get_comms`) and
    resolve it here; their public collective methods are decorated with
    :func:`mlmpi.comms.collective_method`, which agrees on the call with the
    other ranks through these comms before the method validates anything.
    """

    def _get_comms(self):
        """The comms this estimator's collective methods run on."""
        return resolve_comms(self.comms)
