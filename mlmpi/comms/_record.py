"""The record of one collective: it numbers it, arms the watchdog and feeds
the profile and the timeline."""

import pickle
import time

from . import profile as _profile
from ._method import current_method
from ._watchdog import label


def _nbytes(x):
    return int(getattr(x, "nbytes", 0) or 0)


class Pickled:
    """An object collective's payload; its size (pickled, as mpi4py sends it)
    is computed only when a profile records it."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    @property
    def nbytes(self):
        return len(pickle.dumps(self.obj, protocol=pickle.HIGHEST_PROTOCOL))


def _received_bytes(result):
    """Bytes of a collective's result (an array, or a tuple holding arrays)."""
    if isinstance(result, tuple):
        return sum(_nbytes(part) for part in result)
    return _nbytes(result)


class Collective:
    """Context of one collective of ``comms``.

    ``sequence`` numbers the collectives of the comms (the same on every
    rank); ``count`` is the number of the raw call (made outside any
    collective call of the contract) that this collective serves, counted
    when the ranks agreed on it. The comms keeps the one in progress
    (``_current``) and the last one (``_last``) for the end of the program
    (:mod:`mlmpi.comms._agreement`). ``method`` names the public call served
    (default: the collective call this rank is in).
    """

    __slots__ = ("comms", "op", "payload", "result", "start", "method", "sequence", "count")

    def __init__(self, comms, op, payload=None, method=None):
        self.comms = comms
        self.op = op
        self.payload = payload
        self.method = method
        self.result = None  # what this rank received: set by the collective, for the profile

    def done(self, result):
        """Note ``result`` as what this rank received; return it."""
        self.result = result
        return result

    def __enter__(self):
        comms = self.comms
        watch = comms._watch
        self.start = time.perf_counter()
        if self.method is None:
            self.method = current_method()
        comms._started += 1
        self.sequence = comms._started
        self.count = comms._raw_calls.get(self.op, 0) if self.method is None else 0
        comms._current = comms._last = self
        if watch is not None:
            watch.op = self.op
            watch.method = self.method
            watch.start = self.start
            watch.deadline = time.monotonic() + watch.timeout
        return self

    def __exit__(self, *exc):
        comms = self.comms
        comms._current = None
        if comms._watch is not None:
            comms._watch.deadline = None
        if _profile.active():
            _profile.record(
                label(self.method, self.op),
                _nbytes(self.payload),
                self.start,
                time.perf_counter() - self.start,
                comms.rank,
                comms.backend,
                _received_bytes(self.result),
            )
        self.payload = self.result = None  # kept as ``_last``: not the caller's arrays
        return False
