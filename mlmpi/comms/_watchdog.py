"""The collective timeout: one thread that aborts the job when a collective
outlives ``MLMPI_TIMEOUT``, naming the public call it served."""

import sys
import threading
import time
import weakref

from . import profile as _profile
from ._abort import FORWARD_SECONDS


def label(method, op):
    """Name of a collective in the timeline and ``profile()``: the public
    call it serves, if any (``KMeans.fit/allreduce``)."""
    return op if method is None else f"{method}/{op}"


class Watch:
    """The deadline of one comms' current collective (None: not in one)."""

    __slots__ = ("timeout", "abort", "where", "deadline", "op", "method", "start", "__weakref__")

    def __init__(self, timeout, abort, where):
        self.timeout = timeout
        self.abort = abort
        self.where = where
        self.deadline = None
        self.op = None
        self.method = None
        self.start = None

    def message(self):
        """What the watchdog prints when this collective outlives its timeout."""
        waited = (
            f"collective {self.op!r} on {self.where} did not complete within "
            f"MLMPI_TIMEOUT={self.timeout:g} s"
        )
        if self.method is None:
            return (
                f"mlmpi: {waited} (another rank may have died or skipped it); aborting the job.\n"
            )
        return (
            f"mlmpi: {self.method} is collective: every rank must call it, with the same "
            f"parameters. Its {waited} (another rank may have skipped the call, died, or be "
            "still busy: raise MLMPI_TIMEOUT for very imbalanced work); aborting the job.\n"
        )


class _Watchdog:
    """One daemon thread per process that aborts the job when an armed
    collective of any comms outlives its timeout.

    Arming and disarming are attribute writes on the comms' :class:`Watch`,
    so the cost on the hot path is negligible. MPI calls release the GIL, so
    the thread runs while the main thread is blocked inside one.
    """

    def __init__(self):
        self._watches = weakref.WeakSet()
        self._lock = threading.Lock()
        self._poll = 1.0
        self._thread = None

    def watch(self, timeout, abort, where):
        watch = Watch(timeout, abort, where)
        with self._lock:
            self._watches.add(watch)
            self._poll = min(self._poll, max(timeout / 10.0, 0.01))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mlmpi-watchdog", daemon=True
                )
                self._thread.start()
        return watch

    def _run(self):
        while True:
            time.sleep(self._poll)
            now = time.monotonic()
            with self._lock:
                watches = list(self._watches)
            for watch in watches:
                deadline = watch.deadline
                if deadline is not None and now > deadline:
                    sys.stderr.write(watch.message())
                    sys.stderr.flush()
                    _profile.flush_timeline(unfinished=(label(watch.method, watch.op), watch.start))
                    time.sleep(FORWARD_SECONDS)  # let the launcher forward the message
                    watch.abort()
                    return


watchdog = _Watchdog()
