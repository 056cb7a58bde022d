"""SelfComms: the group of one process. Never imports mpi4py."""

from .. import _threads
from .._array import get_namespace
from ._base import Comms


class SelfComms(Comms):
    """Comms of a single process: every collective returns a copy of its input.

    Used for plain ``python script.py`` runs and when ``MLMPI_COMMS=self``.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.comms import SelfComms
    >>> comms = SelfComms()
    >>> comms.allgatherv(np.array([[1, 2], [3, 4]]))
    array([[1, 2],
           [3, 4]])
    >>> comms.exclusive_scan_rows(5)
    (0, 5)
    """

    backend = "self"
    rank = 0
    size = 1

    def __init__(self):
        _threads.configure(1)
        self._start_observers(timeout=None)

    @staticmethod
    def _copy(x):
        return get_namespace(x).array(x, copy=True)

    def _allreduce(self, x, op):
        return self._copy(x)

    def _reduce(self, x, op, root):
        return self._copy(x)

    def _reduce_scatter(self, x, counts, op):
        return self._copy(x)

    def _bcast_into(self, buf, root):
        pass

    def _allgather(self, x):
        return self._copy(x.reshape(1) if x.ndim == 0 else x)

    def _allgatherv(self, x, rows):
        return self._copy(x)

    def _iallreduce(self, x, op):
        result = self._copy(x)
        return (lambda: result), (lambda: True)

    def _allreduce_into(self, x, out, op):
        if x is not out:
            out[...] = x

    def _iallreduce_into(self, x, out, op):
        self._allreduce_into(x, out, op)
        return (lambda: out), (lambda: True)

    def _isendrecv(self, x, dest, source, rows):
        result = self._copy(x)
        return (lambda: result), (lambda: True)

    def _alltoallv(self, x, send_rows, recv_rows):
        return self._copy(x)

    def _bcast_object(self, obj, root):
        return obj

    def _allgather_object(self, obj):
        return [obj]

    def _barrier(self):
        pass

    def _split(self, color, key):
        return None if color is None else SelfComms()
