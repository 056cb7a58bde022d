"""The comms protocol shared by every backend.

A backend implements the underscored primitives (``_allreduce`` ...). The
public methods here add what every backend needs the same way: argument
checks, the optional profile/timeline record and the optional collective
timeout (watchdog).
"""

import sys
import threading
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from enum import Enum

import numpy as np

from .._array import is_device_array
from . import profile as _profile


class ReduceOp(str, Enum):
    """Reduction operators understood by every backend."""

    SUM = "sum"
    PROD = "prod"
    MIN = "min"
    MAX = "max"

    @classmethod
    def parse(cls, op):
        try:
            return cls(op.lower() if isinstance(op, str) else op)
        except ValueError:
            names = ", ".join(repr(member.value) for member in cls)
            raise ValueError(f"Unknown reduction op {op!r}; use one of {names}.") from None


class Request:
    """Handle of a non-blocking collective; ``wait()`` returns its result."""

    def __init__(self, wait, test=None):
        self._wait = wait
        self._test = test
        self._done = False
        self._result = None

    def wait(self):
        """Block until the collective completes and return its result."""
        if not self._done:
            self._result = self._wait()
            self._done = True
        return self._result

    def test(self):
        """True once the collective has completed (never blocks)."""
        if self._done:
            return True
        return self._test() if self._test is not None else False


def _nbytes(x):
    return int(getattr(x, "nbytes", 0) or 0)


class _Watchdog:
    """Aborts the job when an armed collective outlives ``timeout`` seconds.

    One daemon thread polls a deadline; arming and disarming are attribute
    writes, so the cost on the hot path is negligible. MPI calls release the
    GIL, so the thread runs while the main thread is blocked inside one.
    """

    def __init__(self, timeout, abort):
        self.timeout = timeout
        self._abort = abort
        self._deadline = None
        self._what = None
        self._poll = min(max(timeout / 10.0, 0.01), 1.0)
        threading.Thread(target=self._run, name="mlmpi-watchdog", daemon=True).start()

    def arm(self, what):
        self._what = what
        self._deadline = time.monotonic() + self.timeout

    def disarm(self):
        self._deadline = None

    def _run(self):
        while True:
            time.sleep(self._poll)
            deadline = self._deadline
            if deadline is not None and time.monotonic() > deadline:
                sys.stderr.write(
                    f"mlmpi: {self._what} did not complete within MLMPI_TIMEOUT="
                    f"{self.timeout:g} s (another rank may have died or skipped it); "
                    "aborting the job.\n"
                )
                sys.stderr.flush()
                self._abort()
                return


class Comms(ABC):
    """A group of processes and the collectives between them.

    Attributes
    ----------
    rank : int
        This process's index in the group, ``0 <= rank < size``.
    size : int
        Number of processes in the group.
    backend : str
        ``"self"``, ``"mpi"`` or ``"nccl"``.

    Notes
    -----
    Every method except the attributes is collective: all ranks of the group
    must call it, in the same order. Array arguments may be NumPy or CuPy;
    the result has the type of the argument. Python scalars are treated as
    0-d NumPy arrays.
    """

    backend = None
    rank = 0
    size = 1
    _watchdog = None

    # -- helpers for subclasses -------------------------------------------
    def _start_observers(self, timeout):
        """Arm the timeline and the watchdog configured for this comms."""
        from .. import _config

        path = _config.timeline_path()
        if path:
            _profile.start_timeline(path, self.rank, self.size)
        if timeout is None:
            timeout = _config.collective_timeout()
        if timeout is not None and self.size > 1:
            self._watchdog = _Watchdog(timeout, self._abort)

    def _abort(self):  # pragma: no cover - overridden by multi-process backends
        import os

        os._exit(1)

    @contextmanager
    def _collective(self, op, payload=None):
        watchdog = self._watchdog
        if watchdog is not None:
            watchdog.arm(f"collective {op!r} on rank {self.rank} of {self.size} ({self.backend})")
        start = time.perf_counter()
        try:
            yield
        finally:
            if watchdog is not None:
                watchdog.disarm()
            if _profile.active():
                _profile.record(
                    op, _nbytes(payload), start, time.perf_counter() - start, self.rank, self.backend
                )

    def _check_root(self, root):
        if not 0 <= root < self.size:
            raise ValueError(f"root={root} is not a rank of this comms (size {self.size}).")

    @staticmethod
    def _as_array(x):
        if is_device_array(x) or isinstance(x, np.ndarray):
            return x
        return np.asarray(x)

    # -- array collectives --------------------------------------------------
    def allreduce(self, x, op="sum"):
        """Element-wise reduction of ``x`` over all ranks, result on every rank.

        This method is collective.
        """
        x = self._as_array(x)
        op = ReduceOp.parse(op)
        with self._collective("allreduce", x):
            return self._allreduce(x, op)

    def reduce(self, x, op="sum", root=0):
        """Element-wise reduction to ``root``; other ranks get ``None``.

        This method is collective.
        """
        x = self._as_array(x)
        op = ReduceOp.parse(op)
        self._check_root(root)
        with self._collective("reduce", x):
            return self._reduce(x, op, root)

    def bcast(self, x, root=0):
        """Copy of ``root``'s array on every rank.

        Non-root ranks may pass ``None`` (or any placeholder): shape and dtype
        come from ``root``. A non-root rank gets a CuPy array when it passes
        one, or passes ``None`` and ``root`` sent one.

        This method is collective.
        """
        self._check_root(root)
        if self.rank == root:
            x = self._as_array(x)
        with self._collective("bcast", x if self.rank == root else None):
            return self._bcast(x, root)

    def allgather(self, x):
        """Concatenation along axis 0 of every rank's ``x`` (same shape on all ranks).

        A 0-d ``x`` gives a 1-d result of length ``size``.

        This method is collective.
        """
        x = self._as_array(x)
        with self._collective("allgather", x):
            return self._allgather(x)

    def allgatherv(self, x):
        """Concatenation along axis 0 of every rank's ``x``; the number of rows
        may differ between ranks (including zero), the other dimensions and
        the dtype may not.

        This method is collective.
        """
        x = self._as_array(x)
        if x.ndim == 0:
            raise ValueError("allgatherv needs arrays with at least one dimension.")
        with self._collective("allgatherv", x):
            return self._allgatherv(x)

    def iallreduce(self, x, op="sum"):
        """Start an allreduce and return a :class:`Request`; ``wait()`` gives the result.

        ``x`` must not be modified until the request completes.

        This method is collective.
        """
        x = self._as_array(x)
        op = ReduceOp.parse(op)
        start = time.perf_counter()
        request = self._iallreduce(x, op)

        def wait():
            with self._collective("iallreduce.wait"):
                result = request()
            if _profile.active():
                _profile.record(
                    "iallreduce", _nbytes(x), start, time.perf_counter() - start,
                    self.rank, self.backend,
                )
            return result

        return Request(wait)

    # -- object collectives -------------------------------------------------
    def bcast_object(self, obj, root=0):
        """Picklable ``obj`` from ``root`` on every rank.

        This method is collective.
        """
        self._check_root(root)
        with self._collective("bcast_object"):
            return self._bcast_object(obj, root)

    def allgather_object(self, obj):
        """List of every rank's picklable ``obj``, in rank order.

        This method is collective.
        """
        with self._collective("allgather_object"):
            return self._allgather_object(obj)

    def barrier(self):
        """Wait until every rank has entered the barrier.

        This method is collective.
        """
        with self._collective("barrier"):
            self._barrier()

    def split(self, color, key=0):
        """Sub-communicators of the ranks sharing ``color`` (ordered by ``key``,
        then rank). Ranks passing ``color=None`` take part but get ``None``.

        This method is collective.
        """
        with self._collective("split"):
            return self._split(color, key)

    # -- helpers built on the primitives -----------------------------------
    def exclusive_scan_rows(self, n_rows):
        """``(offset, total)``: global index of this rank's first row and the
        global row count, for ``n_rows`` local rows.

        This method is collective.
        """
        counts = self.allgather(np.asarray(n_rows, dtype=np.int64))
        return int(counts[: self.rank].sum()), int(counts.sum())

    # -- primitives ---------------------------------------------------------
    @abstractmethod
    def _allreduce(self, x, op): ...

    @abstractmethod
    def _reduce(self, x, op, root): ...

    @abstractmethod
    def _bcast(self, x, root): ...

    @abstractmethod
    def _allgather(self, x): ...

    @abstractmethod
    def _allgatherv(self, x): ...

    @abstractmethod
    def _iallreduce(self, x, op):
        """Start the reduction; return a callable that waits and returns the result."""

    @abstractmethod
    def _bcast_object(self, obj, root): ...

    @abstractmethod
    def _allgather_object(self, obj): ...

    @abstractmethod
    def _barrier(self): ...

    @abstractmethod
    def _split(self, color, key): ...

    # -- sklearn.base.clone deep-copies parameters; a comms is a handle ---------
    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self

    def __repr__(self):
        return f"{type(self).__name__}(rank={self.rank}, size={self.size})"
