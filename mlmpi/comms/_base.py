"""The comms protocol shared by every backend.

A backend implements the underscored primitives (``_allreduce`` ...). The
public methods here add what every backend needs the same way: argument
checks, the optional profile/timeline record and the optional collective
timeout (watchdog).
"""

import operator
import pickle
import sys
import threading
import time
import weakref
import zlib
from abc import ABC, abstractmethod
from enum import Enum

import numpy as np

from .._array import get_namespace, is_device_array
from . import profile as _profile
from ._abort import FORWARD_SECONDS
from ._method import current_method


class ReduceOp(str, Enum):
    """Reduction operators understood by every backend.

    Collectives take a member or its lower-case name (``op="sum"``).

    Examples
    --------
    >>> from mlmpi.comms import ReduceOp
    >>> ReduceOp.parse("max") is ReduceOp.MAX
    True
    """

    SUM = "sum"
    PROD = "prod"
    MIN = "min"
    MAX = "max"

    @classmethod
    def parse(cls, op):
        """The member named by ``op``.

        Parameters
        ----------
        op : ReduceOp or str
            A member, or its name in any case (``"sum"``, ``"MAX"``).

        Returns
        -------
        op : ReduceOp
        """
        try:
            return _REDUCE_OPS[op]  # members and their lower-case names
        except (KeyError, TypeError):
            pass
        try:
            return cls(op.lower() if isinstance(op, str) else op)
        except ValueError:
            names = ", ".join(repr(member.value) for member in cls)
            raise ValueError(f"Unknown reduction op {op!r}; use one of {names}.") from None


_REDUCE_OPS = {member.value: member for member in ReduceOp}


class Request:
    """Handle of a non-blocking collective; ``wait()`` returns its result.

    Parameters
    ----------
    wait : callable
        Blocks until the collective completes; returns its result.
    test : callable
        Returns whether the collective has completed, without blocking.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.comms import SelfComms
    >>> request = SelfComms().iallreduce(np.array([1.0, 2.0]))
    >>> request.wait()
    array([1., 2.])
    >>> request.test()
    True
    """

    def __init__(self, wait, test):
        self._wait = wait
        self._test = test
        self._done = False
        self._result = None

    def wait(self):
        """Block until the collective completes and return its result.

        Returns
        -------
        result : object
            The collective's result (the same object on later calls).
        """
        if not self._done:
            self._result = self._wait()
            self._done = True
            self._wait = self._test = None
        return self._result

    def test(self):
        """Whether the collective has completed (never blocks).

        ``wait()`` still gives the result.

        Returns
        -------
        done : bool
        """
        return self._done or self._test()


def _nbytes(x):
    return int(getattr(x, "nbytes", 0) or 0)


class _Pickled:
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


class _Watch:
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

    Arming and disarming are attribute writes on the comms' :class:`_Watch`,
    so the cost on the hot path is negligible. MPI calls release the GIL, so
    the thread runs while the main thread is blocked inside one.
    """

    def __init__(self):
        self._watches = weakref.WeakSet()
        self._lock = threading.Lock()
        self._poll = 1.0
        self._thread = None

    def watch(self, timeout, abort, where):
        watch = _Watch(timeout, abort, where)
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
                    _profile.flush_timeline(
                        unfinished=(_label(watch.method, watch.op), watch.start)
                    )
                    time.sleep(FORWARD_SECONDS)  # let the launcher forward the message
                    watch.abort()
                    return


_watchdog = _Watchdog()


def _label(method, op):
    """Name of a collective in the timeline and ``profile()``: the public
    method it serves, if any (``KMeans.fit/allreduce``)."""
    return op if method is None else f"{method}/{op}"


class _Collective:
    """Context of one collective: counts it, arms the watchdog, records the profile.

    ``sequence`` numbers the collectives of the comms (the same on every rank);
    ``count`` numbers the calls of ``op`` made outside any collective method
    (raw calls by user code). The comms keeps the one in progress
    (``_current``) and the last one (``_last``) for the end of the program
    (:mod:`mlmpi.comms._ends`).
    """

    __slots__ = ("comms", "op", "payload", "result", "start", "method", "sequence", "count")

    def __init__(self, comms, op, payload):
        self.comms = comms
        self.op = op
        self.payload = payload
        self.result = None  # what this rank received: set by the collective, for the profile

    def done(self, result):
        """Note ``result`` as what this rank received; return it."""
        self.result = result
        return result

    def __enter__(self):
        comms = self.comms
        watch = comms._watch
        self.start = time.perf_counter()
        self.method = current_method()
        comms._started += 1
        self.sequence = comms._started
        self.count = 0
        if self.method is None:
            self.count = comms._raw_calls[self.op] = comms._raw_calls.get(self.op, 0) + 1
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
                _label(self.method, self.op),
                _nbytes(self.payload),
                self.start,
                time.perf_counter() - self.start,
                comms.rank,
                comms.backend,
                _received_bytes(self.result),
            )
        self.payload = self.result = None  # kept as ``_last``: not the caller's arrays
        return False


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

    Concrete comms: :class:`mlmpi.comms.SelfComms` (one process),
    :class:`mlmpi.comms.MPIComms` and :class:`mlmpi.comms.NCCLComms`;
    :func:`mlmpi.get_comms` picks one.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import get_comms
    >>> comms = get_comms()  # one process outside mpiexec
    >>> comms.rank, comms.size
    (0, 1)
    >>> comms.allreduce(np.array([1.0, 2.0]), op="max")
    array([1., 2.])
    """

    backend = None
    rank = 0
    size = 1
    _watch = None
    _ends = None  # the end-of-program channel of a multi-rank comms
    _current = None  # the collective in progress (None between collectives)
    _last = None  # the last collective started
    _started = 0  # collectives started: numbers them alike on every rank
    _agreeing = None  # the contract's call this rank is agreeing on

    # -- helpers for subclasses -------------------------------------------
    def _start_observers(self, timeout, mpi_comm=None):
        """Arm the timeline and the watchdog configured for this comms and,
        with more than one rank, its end-of-program channel over the mpi4py
        ``mpi_comm`` (collective over it)."""
        from .. import _config

        self._raw_calls = {}
        if mpi_comm is not None and self.size > 1:
            from ._ends import watch_ends

            watch_ends(self, mpi_comm)
        path = _config.timeline_path()
        if path:
            _profile.start_timeline(path)
        if timeout is None:
            timeout = _config.collective_timeout()
        if timeout and self.size > 1:  # 0 or None: no watchdog
            where = f"rank {self.rank} of {self.size} ({self.backend})"
            world_rank, world_size = _profile.process_rank()
            if (world_rank, world_size) != (self.rank, self.size):
                where += f", world rank {world_rank} of {world_size}"
            self._watch = _watchdog.watch(float(timeout), self._abort, where)

    def _abort(self):  # pragma: no cover - overridden by multi-process backends
        import os

        os._exit(1)

    def _collective(self, op, payload=None):
        return _Collective(self, op, payload)

    def _check_root(self, root):
        if not 0 <= root < self.size:
            raise ValueError(f"root={root} is not a rank of this comms (size {self.size}).")

    @staticmethod
    def _as_array(x):
        if isinstance(x, np.ndarray) or is_device_array(x):
            return x
        return np.asarray(x)

    # -- array collectives --------------------------------------------------
    def allreduce(self, x, op="sum", out=None):
        """Element-wise reduction of ``x`` over all ranks, result on every rank.

        Reusing one ``out`` avoids allocating and faulting in a new result
        every call.

        This method is collective.

        Parameters
        ----------
        x : array
            NumPy or CuPy array (a scalar is a 0-d array), the same shape
            and dtype on every rank.
        op : {'sum', 'prod', 'min', 'max'} or ReduceOp, default='sum'
            The reduction.
        out : array, default=None
            A caller-owned, C-contiguous array of ``x``'s shape, dtype and
            array type that receives the result; it may be ``x`` itself (in
            place).

        Returns
        -------
        result : array
            The reduction (``out`` when given), of ``x``'s array type.
        """
        x = self._as_array(x)
        op = ReduceOp.parse(op)
        if out is not None:
            x = _check_out(x, out)
            with self._collective("allreduce", x) as call:
                self._allreduce_into(x, out, op)
                return call.done(out)
        with self._collective("allreduce", x) as call:
            return call.done(self._allreduce(x, op))

    def reduce(self, x, op="sum", root=0):
        """Element-wise reduction to ``root``; other ranks get ``None``.

        This method is collective.

        Parameters
        ----------
        x : array
            NumPy or CuPy array, the same shape and dtype on every rank.
        op : {'sum', 'prod', 'min', 'max'} or ReduceOp, default='sum'
            The reduction.
        root : int, default=0
            The rank that receives the result.

        Returns
        -------
        result : array or None
            The reduction on ``root``, None elsewhere.
        """
        x = self._as_array(x)
        op = ReduceOp.parse(op)
        self._check_root(root)
        with self._collective("reduce", x) as call:
            return call.done(self._reduce(x, op, root))

    def reduce_scatter(self, x, counts, op="sum"):
        """Element-wise reduction of ``x`` whose blocks of rows go to the ranks:
        rank ``r`` gets the reduction of rows ``sum(counts[:r])`` to
        ``sum(counts[:r + 1])``.

        Each rank receives only its block, so the traffic per rank is about
        ``len(x) / size`` rows (LightGBM's data-parallel histograms).

        This method is collective.

        Parameters
        ----------
        x : array
            NumPy or CuPy array of at least one dimension, the same shape and
            dtype on every rank.
        counts : sequence of int
            Rows of the block of each rank (non-negative, summing to
            ``len(x)``), the same on every rank.
        op : {'sum', 'prod', 'min', 'max'} or ReduceOp, default='sum'
            The reduction.

        Returns
        -------
        block : array
            This rank's reduced block, of shape ``(counts[rank],) + x.shape[1:]``
            and ``x``'s array type.

        Examples
        --------
        >>> import numpy as np
        >>> from mlmpi import get_comms
        >>> get_comms().reduce_scatter(np.arange(6.0).reshape(3, 2), [3])
        array([[0., 1.],
               [2., 3.],
               [4., 5.]])
        """
        x = self._as_array(x)
        op = ReduceOp.parse(op)
        try:
            counts = [operator.index(c) for c in counts]
        except TypeError:
            raise TypeError(f"counts must be integers, got {counts!r}.") from None
        if x.ndim == 0 or len(counts) != self.size or min(counts) < 0 or sum(counts) != len(x):
            raise ValueError(
                f"reduce_scatter needs one non-negative count per rank ({self.size}) adding up "
                f"to the rows of x ({x.shape[0] if x.ndim else 'a 0-d array'}); got {counts}."
            )
        with self._collective("reduce_scatter", x) as call:
            x = get_namespace(x).ascontiguousarray(x)
            return call.done(self._reduce_scatter(x, counts, op))

    def bcast(self, x, root=0):
        """Copy of ``root``'s array on every rank.

        A non-root rank gets a CuPy array when it passes one, or passes
        ``None`` and ``root`` sent one.

        This method is collective.

        Parameters
        ----------
        x : array or None
            The array on ``root``. Non-root ranks may pass ``None`` (or any
            placeholder): shape and dtype come from ``root``.
        root : int, default=0
            The rank that sends.

        Returns
        -------
        result : array
            A new array equal to ``root``'s ``x``.
        """
        self._check_root(root)
        if self.rank == root:
            x = self._as_array(x)
        with self._collective("bcast", x if self.rank == root else None) as call:
            if self.rank == root:
                out = get_namespace(x).array(x, copy=True, order="C")
                meta = (out.shape, out.dtype.str, is_device_array(out))
                self._bcast_object(meta, root)
            else:
                shape, dtype, root_on_device = self._bcast_object(None, root)
                xp = _device_namespace(is_device_array(x) or (x is None and root_on_device))
                out = xp.empty(shape, dtype=np.dtype(dtype))
            self._bcast_into(out, root)
            if self.rank != root:
                call.done(out)
            return out

    def allgather(self, x):
        """Concatenation along axis 0 of every rank's ``x`` (same shape on all ranks).

        This method is collective.

        Parameters
        ----------
        x : array
            This rank's array; the same shape and dtype on every rank.

        Returns
        -------
        result : array
            Of ``size * len(x)`` rows in rank order; a 0-d ``x`` gives a 1-d
            result of length ``size``.
        """
        x = self._as_array(x)
        with self._collective("allgather", x) as call:
            return call.done(self._allgather(x))

    def allgatherv(self, x):
        """Concatenation along axis 0 of every rank's ``x``, of any number of rows.

        The number of rows may differ between ranks (including zero), the
        other dimensions and the dtype may not (ValueError on every rank
        otherwise).

        This method is collective.

        Parameters
        ----------
        x : array
            This rank's rows (at least one dimension).

        Returns
        -------
        result : array
            Every rank's rows, in rank order.
        """
        x = self._as_array(x)
        with self._collective("allgatherv", x) as call:
            return call.done(self._allgatherv(x, self._agreed_rows(x)))

    def _agreed_rows(self, x):
        """Rows of ``x`` on every rank, after checking on every rank that all
        have at least one dimension and the same trailing shape and dtype.

        One allgather of three integers per rank (ndim, rows, a checksum of
        the trailing shape and dtype); only on a mismatch do the ranks
        exchange their layouts to say which rank differs.
        """
        layout = (x.shape[1:], x.dtype.str)
        key = zlib.crc32(repr(layout).encode())
        mine = np.array([x.ndim, x.shape[0] if x.ndim else 0, key], dtype=np.int64)
        ndims, rows, keys = zip(*self._allgather(mine).reshape(self.size, 3).tolist())
        if 0 in ndims or len(set(keys)) > 1:
            layouts = self._allgather_object((x.shape, x.dtype.str))
            described = ", ".join(
                f"rank {r}: shape {shape} dtype {np.dtype(dtype)}"
                for r, (shape, dtype) in enumerate(layouts)
            )
            raise ValueError(
                "allgatherv needs arrays with at least one dimension and the same trailing "
                "shape and dtype on every rank; got " + described
            )
        return list(rows)

    def iallreduce(self, x, op="sum", out=None):
        """Start an allreduce and return a :class:`Request`; ``wait()`` gives the result.

        The profile records the start (``iallreduce``, with the bytes) and
        the wait (``iallreduce.wait``) separately: their sum is the time this
        rank was blocked.

        This method is collective.

        Parameters
        ----------
        x : array
            As in :meth:`allreduce`; it must not be modified until the
            request completes.
        op : {'sum', 'prod', 'min', 'max'} or ReduceOp, default='sum'
            The reduction.
        out : array, default=None
            As in :meth:`allreduce` (``x`` itself for in place): the result
            is written there and ``wait()`` returns ``out``; it must not be
            read before then.

        Returns
        -------
        request : Request
            ``request.wait()`` gives the reduction.
        """
        x = self._as_array(x)
        op = ReduceOp.parse(op)
        if out is not None:
            x = _check_out(x, out)
        with self._collective("iallreduce", x):
            if out is None:
                wait, test = self._iallreduce(x, op)
            else:
                wait, test = self._iallreduce_into(x, out, op)

        def finish():
            with self._collective("iallreduce.wait") as call:
                return call.done(wait())

        return Request(finish, test)

    # -- point-to-point exchanges (every rank takes part) -----------------------
    def sendrecv(self, x, dest, source):
        """Send ``x`` to rank ``dest`` and return the array received from rank ``source``.

        Every rank calls it at the same time with its own ``dest`` and
        ``source`` (a ring: ``dest=(rank + 1) % size``, ``source=(rank - 1) % size``);
        the rank that sends to ``r`` must be the one ``r`` receives from.
        The number of rows may differ between ranks (including zero); the
        trailing shape and the dtype may not. Mismatched pairs or layouts
        raise the same ValueError on every rank.

        This method is collective.

        Parameters
        ----------
        x : array
            The rows to send (at least one dimension).
        dest : int
            The rank that receives ``x``.
        source : int
            The rank whose array this rank receives.

        Returns
        -------
        received : array
            ``source``'s ``x``.
        """
        x = self._as_array(x)
        with self._collective("sendrecv", x) as call:
            rows = self._agreed_pairs(x, dest, source)
            wait, _ = self._isendrecv(x, int(dest), int(source), rows)
            return call.done(wait())

    def isendrecv(self, x, dest, source, *, recv_rows=None):
        """Start a :meth:`sendrecv` and return a :class:`Request`; ``wait()``
        gives the received array.

        The ranks first agree on the layout (one small allgather), then the
        transfer runs in the background. ``x`` must not be modified until
        the request completes. The profile records the start
        (``isendrecv``) and the wait (``isendrecv.wait``).

        This method is collective.

        Parameters
        ----------
        x : array
            The rows to send (at least one dimension).
        dest : int
            The rank that receives ``x``.
        source : int
            The rank whose array this rank receives.
        recv_rows : int, default=None
            The rows ``source`` sends, when every rank knows what it receives
            (a ring over shards whose sizes every rank holds): the ranks then
            skip the agreement, and the exchange is point-to-point only. The
            pairs and layouts are the caller's promise; a wrong one hangs or
            fails in MPI.

        Returns
        -------
        request : Request
            ``request.wait()`` gives ``source``'s ``x``.
        """
        x = self._as_array(x)
        with self._collective("isendrecv", x):
            if recv_rows is None:
                recv_rows = self._agreed_pairs(x, dest, source)
            wait, test = self._isendrecv(x, int(dest), int(source), int(recv_rows))

        def finish():
            with self._collective("isendrecv.wait") as call:
                return call.done(wait())

        return Request(finish, test)

    def alltoallv(self, x, counts, *, return_counts=False):
        """Send ``counts[r]`` consecutive rows of ``x`` to rank ``r`` (in rank
        order); return the rows received, concatenated in source-rank order.

        Bad counts or mismatched layouts raise the same ValueError on every
        rank. Besides the rows, each rank sends and receives one integer per
        rank (the counts) and takes part in one allreduce of four integers
        (the agreement on the layout).

        This method is collective.

        Parameters
        ----------
        x : array
            The rows to send, grouped by destination; every rank must pass
            arrays with the same trailing shape and dtype.
        counts : sequence of int
            One non-negative entry per rank, summing to ``len(x)``.
        return_counts : bool, default=False
            Also return how many rows came from each rank.

        Returns
        -------
        received : array
            The rows sent to this rank, in source-rank order.
        received_counts : list of int
            Rows received from each rank (only with ``return_counts=True``).
        """
        x = self._as_array(x)
        with self._collective("alltoallv", x) as call:
            try:
                send = [int(c) for c in counts]
            except (TypeError, ValueError):
                send = None
            rows = x.shape[0] if x.ndim else -1
            fine = send is not None and len(send) == self.size
            fine = fine and min(send, default=0) >= 0 and sum(send) == rows
            if not self._layouts_agree(x, fine):
                self._explain_alltoallv(x, [rows] + (send if send is not None else [None]))
            ones = [1] * self.size
            recv = self._alltoallv(np.asarray(send, dtype=np.int64), ones, ones).tolist()
            received = call.done(self._alltoallv(x, send, recv))
            return (received, recv) if return_counts else received

    def _layouts_agree(self, x, fine):
        """Whether every rank's ``x`` has at least one dimension and the same
        trailing shape and dtype, and every rank's ``fine`` is true (one
        allreduce of four integers)."""
        key = zlib.crc32(repr((x.shape[1:], x.dtype.str)).encode())
        flags = np.array([x.ndim == 0, key, -key, not fine], dtype=np.int64)
        flags = self._allreduce(flags, ReduceOp.MAX)
        return not flags[0] and flags[1] == -flags[2] and not flags[3]

    def _explain_alltoallv(self, x, ints):
        """Raise, on every rank, the error that says which rank's layout or
        counts are wrong (the ranks found that some are); ``ints`` is this
        rank's rows and counts."""
        matrix = self._agreed_exchange(x, "alltoallv", ints)
        bad = [
            r
            for r, row in enumerate(matrix)
            if len(row) != self.size + 1 or min(row[1:], default=0) < 0 or sum(row[1:]) != row[0]
        ] or [0]
        raise ValueError(
            f"alltoallv needs one non-negative count per rank ({self.size}) adding up to "
            f"the rows of x; rank {bad[0]} passed counts {matrix[bad[0]][1:]} for "
            f"{matrix[bad[0]][0]} rows."
        )

    def _agreed_pairs(self, x, dest, source):
        """Rows that ``source`` sends to this rank, after checking on every rank
        that the (dest, source) pairs match and the layouts agree."""
        matrix = self._agreed_exchange(x, "sendrecv", [x.shape[0] if x.ndim else -1, dest, source])
        size = self.size
        for r, (_, d, s) in enumerate(matrix):
            if not (0 <= d < size and 0 <= s < size) or matrix[d][2] != r:
                raise ValueError(
                    f"sendrecv pairs do not match: rank {r} sends to {d} and receives from {s}, "
                    + (
                        f"but rank {d} receives from {matrix[d][2]}."
                        if 0 <= d < size
                        else f"but the comms has {size} ranks."
                    )
                )
        return int(matrix[int(source)][0])

    def _agreed_exchange(self, x, op, ints):
        """Every rank's ``ints`` (one list per rank), after checking on every
        rank that all ``x`` have at least one dimension and the same trailing
        shape and dtype, and that all ``ints`` are integers.

        One allgather; only on a mismatch do the ranks exchange their layouts
        to say which rank differs.
        """
        layout = (x.shape[1:], x.dtype.str)
        try:
            ints = [operator.index(i) for i in ints]
        except TypeError:
            ints = None
        mine = (x.ndim, zlib.crc32(repr(layout).encode()), ints)
        gathered = self._allgather_object(mine)
        if any(ndim == 0 for ndim, _, _ in gathered) or len({key for _, key, _ in gathered}) > 1:
            layouts = self._allgather_object((x.shape, x.dtype.str))
            described = ", ".join(
                f"rank {r}: shape {shape} dtype {np.dtype(dtype)}"
                for r, (shape, dtype) in enumerate(layouts)
            )
            raise ValueError(
                f"{op} needs arrays with at least one dimension and the same trailing "
                "shape and dtype on every rank; got " + described
            )
        wrong = [r for r, (_, _, values) in enumerate(gathered) if values is None]
        if wrong:
            raise ValueError(
                f"{op} needs integer ranks and counts (rank {wrong[0]} passed others)."
            )
        return [values for _, _, values in gathered]

    # -- object collectives -------------------------------------------------
    def bcast_object(self, obj, root=0):
        """Picklable ``obj`` from ``root`` on every rank.

        This method is collective.

        Parameters
        ----------
        obj : object
            The object on ``root`` (ignored elsewhere).
        root : int, default=0
            The rank that sends.

        Returns
        -------
        obj : object
            ``root``'s object.
        """
        self._check_root(root)
        with self._collective("bcast_object", _Pickled(obj) if self.rank == root else None) as c:
            result = self._bcast_object(obj, root)
            if self.rank != root:
                c.done(_Pickled(result))
            return result

    def allgather_object(self, obj):
        """List of every rank's picklable ``obj``, in rank order.

        This method is collective.

        Parameters
        ----------
        obj : object
            This rank's object.

        Returns
        -------
        objects : list
            One object per rank.
        """
        with self._collective("allgather_object", _Pickled(obj)) as call:
            result = self._allgather_object(obj)
            call.done(_Pickled(result))
            return result

    def barrier(self):
        """Wait until every rank has entered the barrier.

        This method is collective.
        """
        with self._collective("barrier"):
            self._barrier()

    def split(self, color, key=0):
        """Sub-communicators of the ranks sharing ``color``.

        The result has this comms' backend and settings.

        This method is collective.

        Parameters
        ----------
        color : int or None
            Ranks with the same non-negative color form one sub-communicator;
            ranks passing None take part but get None.
        key : int, default=0
            Order of the ranks in their sub-communicator (then by rank).

        Returns
        -------
        comms : Comms or None
        """
        if color is not None and int(color) < 0:
            raise ValueError(f"color must be None or a non-negative int, got {color!r}.")
        with self._collective("split"):
            return self._split(color, key)

    # -- helpers built on the primitives -----------------------------------
    def exclusive_scan_rows(self, n_rows):
        """Global index of this rank's first row, and the global row count.

        This method is collective.

        Parameters
        ----------
        n_rows : int
            Rows on this rank.

        Returns
        -------
        offset : int
            Rows on the ranks before this one.
        total : int
            Rows on all ranks.
        """
        counts = self.allgather(np.asarray(n_rows, dtype=np.int64))
        return int(counts[: self.rank].sum()), int(counts.sum())

    # -- primitives ---------------------------------------------------------
    @abstractmethod
    def _allreduce(self, x, op): ...

    @abstractmethod
    def _reduce(self, x, op, root): ...

    @abstractmethod
    def _reduce_scatter(self, x, counts, op):
        """This rank's block of the reduction of the C-contiguous ``x``;
        ``counts[r]`` rows of it go to rank ``r``."""

    @abstractmethod
    def _bcast_into(self, buf, root):
        """Overwrite the C-contiguous ``buf`` of every rank with ``root``'s."""

    @abstractmethod
    def _allgather(self, x): ...

    @abstractmethod
    def _allgatherv(self, x, rows):
        """Concatenate every rank's ``x``; ``rows[r]`` rows come from rank ``r``."""

    @abstractmethod
    def _iallreduce(self, x, op):
        """Start the reduction; return ``(wait, test)``: ``wait()`` blocks and
        returns the result, ``test()`` says whether it completed."""

    @abstractmethod
    def _allreduce_into(self, x, out, op):
        """Reduce ``x`` into the checked ``out`` (``out is x``: in place)."""

    @abstractmethod
    def _iallreduce_into(self, x, out, op):
        """Start the reduction of ``x`` into ``out``; return ``(wait, test)``
        as :meth:`_iallreduce`, ``wait()`` returning ``out``."""

    @abstractmethod
    def _isendrecv(self, x, dest, source, rows):
        """Start sending ``x`` to ``dest`` and receiving ``rows`` rows (same
        trailing shape and dtype) from ``source``; return ``(wait, test)``."""

    @abstractmethod
    def _alltoallv(self, x, send_rows, recv_rows):
        """Rows ``send_rows[r]`` of ``x`` (consecutive, in rank order) to rank ``r``;
        ``recv_rows[r]`` rows from rank ``r``, concatenated in rank order."""

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


def _check_out(x, out):
    """``x`` (C-contiguous) after checking that ``out`` can receive its reduction."""
    if is_device_array(out) != is_device_array(x) or not hasattr(out, "flags"):
        raise TypeError(
            f"out must be an array of the same type as x ({type(x).__name__}), "
            f"got {type(out).__name__}."
        )
    if out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(
            f"out must have x's shape {x.shape} and dtype {x.dtype}, "
            f"got shape {out.shape} and dtype {out.dtype}."
        )
    if not out.flags.c_contiguous or not getattr(out.flags, "writeable", True):
        raise ValueError("out must be a writeable C-contiguous array.")
    if x is out:
        return x
    return get_namespace(x).ascontiguousarray(x)


def _device_namespace(on_device):
    if on_device:
        import cupy

        return cupy
    return np
