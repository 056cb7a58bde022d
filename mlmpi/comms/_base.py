"""The comms protocol shared by every backend.

A backend implements the underscored primitives (``_allreduce`` ...). The
public collectives (:mod:`._arrays`, :mod:`._exchanges`, :mod:`._objects`)
add what every backend needs the same way: argument checks, the agreement
on a raw call (:meth:`Comms._checked`), and the record of each collective
(:mod:`._record`: profile, timeline, collective timeout).
"""

import sys
import time
from abc import ABC, abstractmethod

from . import profile as _profile
from ._agreement import agree_on_call, meet_ended_ranks
from ._arrays import ArrayCollectives
from ._calls import Arguments, Call
from ._exchanges import Exchanges
from ._failures import FailureNotice, announced, mark_announced
from ._method import current_method
from ._objects import ObjectCollectives
from ._record import Collective
from ._watchdog import watchdog


class Comms(ArrayCollectives, Exchanges, ObjectCollectives, ABC):
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

    Called outside any collective method or function of mlmpi, a collective
    first agrees with the other ranks on the call (one allreduce of 64
    bytes): which collective, how many times this comms made it, and the
    arguments that must be the same on every rank (``op``, ``root``, the
    shape and dtype of a reduction). A rank that calls another collective,
    or passes other arguments, gets the same ``ValueError`` as every other
    rank, never an MPI error.

    A comms is a handle: copies (``sklearn.base.clone``) share it, and a
    pickle holds none: unpickling gives the loading process's default comms
    (:func:`mlmpi.get_comms`; :class:`~mlmpi.comms.SelfComms` in a plain
    process), so that models, searches and pipelines that hold one pickle.

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
    _agreeing = None  # the call this rank is agreeing on
    _agreed = None  # the last call the ranks agreed on
    _generation = 0  # failures announced on this comms so far (:mod:`._failures`)
    _last_failure = None  # (text, monotonic time) of this rank's last announced failure
    _notice = None  # another rank's failure notice, read while this rank finished a collective
    _stall_warning = None  # seconds before a waiting collective reports (:mod:`._stalls`)

    # -- helpers for subclasses -------------------------------------------
    def _start_observers(self, timeout, mpi_comm=None):
        """Arm the timeline and the watchdog configured for this comms and,
        with more than one rank, its end-of-program channel over the mpi4py
        ``mpi_comm`` (collective over it)."""
        from .. import _config

        self._raw_calls = {}  # raw calls agreed so far, by collective
        if mpi_comm is not None and self.size > 1:
            from ._ends import watch_ends

            watch_ends(self, mpi_comm, meet_ended_ranks)
        path = _config.timeline_path()
        if path:
            _profile.start_timeline(path)
        if self.size > 1:
            self._stall_warning = _config.stall_warning()
        if timeout is None:
            timeout = _config.collective_timeout()
        if timeout and self.size > 1:  # 0 or None: no watchdog
            where = f"rank {self.rank} of {self.size} ({self.backend})"
            world_rank, world_size = _profile.process_rank()
            if (world_rank, world_size) != (self.rank, self.size):
                where += f", world rank {world_rank} of {world_size}"
            self._watch = watchdog.watch(float(timeout), self._abort, where)

    def _abort(self):  # pragma: no cover - overridden by multi-process backends
        import os

        os._exit(1)

    def _collective(self, op, payload=None, method=None):
        return Collective(self, op, payload, method)

    def _checked(self, op, check, *args):
        """``check(*args)``'s checked arguments of the collective ``op``.

        ``check`` returns ``(checked, agreed)``. Called outside any collective
        call of the contract (user code), the ranks first agree on the call:
        ``Comms.<op>``, its number and ``agreed`` (the arguments that must be
        the same everywhere), with the outcome of ``check`` on every rank, so
        that a check failing on one rank raises on every rank. Inside a
        collective method, that method's agreement covers the call.
        """
        if self.size == 1 or current_method() is not None:
            return check(*args)[0]
        try:
            checked, agreed = check(*args)
            error = None
        except (ValueError, TypeError) as exc:
            checked, agreed, error = None, (), exc
        count = self._raw_calls[op] = self._raw_calls.get(op, 0) + 1
        failure = None if error is None else (type(error), str(error))
        try:
            agree_on_call(self, Call(f"Comms.{op}", count, Arguments(agreed, failure)))
        except (ValueError, TypeError):
            self._raw_calls[op] = count - 1  # a refused call was not made
            raise
        if error is not None:
            raise error
        return checked

    def announce_failure(self, error, method=None):
        """Tell the other ranks that this rank's collective call failed with ``error``.

        The ranks waiting in a collective of the call leave it and raise
        :class:`~mlmpi.comms.RankFailedError`; the next collective call of
        every rank starts afresh. Nothing happens for one rank, for an error
        the ranks already know of (announced before, raised by every rank
        alike, or another rank's :class:`~mlmpi.comms.RankFailedError`), or
        on a backend whose collectives cannot be left (NCCL: the collective
        timeout ends the job).

        This method is collective over the ranks that are still in the call:
        it returns once every rank has left it.

        Parameters
        ----------
        error : BaseException
            The exception leaving this rank's call.
        method : str, default=None
            The call that failed; None names the collective call this rank is in.
        """
        if self.size == 1 or announced(error):
            return
        mark_announced(error)
        self._last_failure = (f"{type(error).__name__}: {error}"[:500], time.monotonic())
        self._announce(FailureNotice.of(error, self, method or current_method()))

    def _announce(self, notice):
        """Send ``notice`` and move on to the next generation; a backend whose
        collectives can be left behind overrides this."""

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

    # -- a pickle holds no communicator: loading binds the loader's default comms
    def __reduce__(self):
        # mlmpi.comms.get_comms, found loaded (this module is imported by mlmpi.comms)
        return sys.modules[__package__].get_comms, ()

    def __repr__(self):
        return f"{type(self).__name__}(rank={self.rank}, size={self.size})"
