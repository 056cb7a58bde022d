"""MPIComms: collectives over an mpi4py intracommunicator.

CuPy arrays are staged through reused pinned host buffers unless CUDA-aware
MPI is switched on (``cuda_aware=True`` or ``MLMPI_CUDA_AWARE_MPI=1``), in
which case the device buffers go to MPI directly after the current stream is
synchronized. When the program has imported CuPy, the first MPIComms binds
the process to the GPU of its node-local rank.
"""

import atexit
import math
import pickle

import numpy as np

from .. import _config, _threads
from .._array import bind_local_device, is_device_array, synchronize
from ._abort import install_abort_hook
from ._base import Comms
from ._failures import wait_for
from ._staging import HostStaging
from ._types import ReduceOp

_MPI_OPS = {}


def _mpi_op(op):
    if not _MPI_OPS:
        from mpi4py import MPI

        _MPI_OPS.update(
            {
                ReduceOp.SUM: MPI.SUM,
                ReduceOp.PROD: MPI.PROD,
                ReduceOp.MIN: MPI.MIN,
                ReduceOp.MAX: MPI.MAX,
            }
        )
    return _MPI_OPS[op]


def _finalize_if_needed():
    from mpi4py import MPI

    if not MPI.Is_finalized():
        MPI.Finalize()


_world = []  # the process's MPIComms of MPI.COMM_WORLD, once made


def world_comms():
    """The process's :class:`MPIComms` of ``MPI.COMM_WORLD`` (``get_comms("mpi")``),
    made on the first call (collective over the world)."""
    if not _world:
        _world.append(MPIComms())
    return _world[0]


class MPIComms(Comms):
    """Comms over an MPI intracommunicator (``COMM_WORLD`` by default).

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm, default=None
        Any intracommunicator, including one a user made with ``Split``.
        It is duplicated, so mlmpi's traffic never mixes with the user's.
        None means ``MPI.COMM_WORLD``.
    cuda_aware : bool, default=None
        Hand CuPy buffers to MPI directly. None reads ``MLMPI_CUDA_AWARE_MPI``.
    timeout : float, default=None
        Abort the job when a collective takes longer than this many seconds.
        None reads ``MLMPI_TIMEOUT`` (unset: 300 s; ``0``: no timeout).

    Attributes
    ----------
    comm : mpi4py.MPI.Intracomm
        mlmpi's own duplicate of ``comm`` (a new one after a rank's failure:
        see Notes).
    local_rank, local_size : int
        This process's rank among, and the number of, the ranks of this
        comms on the same node.

    Notes
    -----
    Creating an MPIComms is collective over ``comm``. The first one created
    in a process also limits BLAS/numba threads to the cores of the node
    divided by the ranks on it (``MLMPI_NUM_THREADS`` overrides) and, in a
    multi-process job, installs an exception hook that aborts the whole job
    on an uncaught exception (``MLMPI_ABORT_ON_ERROR=0`` turns it off).

    Every collective waits in small steps, looking for another rank's
    failure: when a collective call fails on one rank (the exception leaves
    the call), the ranks waiting in a collective of it leave that collective
    and raise :class:`~mlmpi.comms.RankFailedError` instead of waiting for
    ``timeout`` (:mod:`mlmpi.comms._failures`).

    Examples
    --------
    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> from mlmpi.comms import MPIComms
    >>> comms = MPIComms(MPI.COMM_SELF)  # usually get_comms() under mpiexec
    >>> comms.backend, comms.size
    ('mpi', 1)
    >>> comms.allreduce(np.array([1.0, 2.0]))
    array([1., 2.])
    """

    backend = "mpi"

    def __init__(self, comm=None, *, cuda_aware=None, timeout=None):
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise ImportError(
                f"MPIComms needs mpi4py ({exc}); install it, or use SelfComms / MLMPI_COMMS=self."
            ) from exc

        if not MPI.Is_initialized():  # mpi4py imported with rc.initialize off (``mlmpi info``)
            MPI.Init_thread()
            atexit.register(_finalize_if_needed)
        if comm is None:
            comm = MPI.COMM_WORLD
        if not isinstance(comm, MPI.Intracomm) or comm == MPI.COMM_NULL:
            raise TypeError(f"MPIComms needs an mpi4py intracommunicator, got {comm!r}.")
        self._adopt(comm.Dup(), cuda_aware, timeout)

    def _adopt(self, comm, cuda_aware, timeout):
        from mpi4py import MPI

        self._parent = comm  # makes a fresh ``comm`` for each generation
        self.comm = comm.Dup()
        self._left_behind = []  # communicators, buffers and requests of failed generations
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.cuda_aware = _config.cuda_aware_mpi() if cuda_aware is None else bool(cuda_aware)
        self._timeout = timeout
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_rank = node.Get_rank()
        self.local_size = node.Get_size()
        node.Free()
        _threads.configure(self.local_size)
        bind_local_device(self.local_rank)
        self._staging = HostStaging()
        if MPI.COMM_WORLD.Get_size() > 1 and _config.abort_on_error():
            install_abort_hook()
        self._start_observers(timeout, comm)

    def _announce(self, notice):
        self._ends.send_failure(notice)
        self._move_on()

    def _move_on(self):
        """Leave this generation's communicator (and its staging buffers, which a
        collective left behind may still use) for a fresh duplicate of the
        parent, and agree again on the counts of collectives. Collective over
        the parent: every rank moves on once per failure."""
        from mpi4py import MPI

        self._notice = None  # of the generation left
        with self._collective("move_on"):
            self._left_behind.append((self.comm, self._staging))
            self.comm = self._parent.Dup()
            self._staging = HostStaging()
            self._generation += 1
            started = np.array([self._started], dtype=np.int64)
            self.comm.Allreduce(MPI.IN_PLACE, started, op=MPI.MAX)
            raw_calls = self.comm.allgather(self._raw_calls)
        self._started = int(started[0])
        self._raw_calls = {
            op: max(calls.get(op, 0) for calls in raw_calls) for op in set().union(*raw_calls)
        }

    def _wait(self, request, *keep):
        """Complete ``request`` (a request or a list of them); ``keep``: the
        buffers it uses, kept alive should it be left behind."""
        from mpi4py import MPI

        if isinstance(request, list):
            wait_for(self, lambda: MPI.Request.Testall(request), keep)
        else:
            wait_for(self, request.Test, keep)

    def _abort(self):
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(1)

    # -- staging ------------------------------------------------------------
    def _stage(self, x, slot="send"):
        """Contiguous 1-d buffer that MPI may read now, and the namespace of results.

        A CuPy array goes to ``slot``'s reused pinned buffer (None: a new
        host array, for requests still in flight when the next call comes).
        """
        if is_device_array(x):
            import cupy

            if self.cuda_aware:
                buf = cupy.ascontiguousarray(x).reshape(-1)
                synchronize(buf)
                return buf, cupy
            if slot is None:
                return cupy.asnumpy(x).reshape(-1), cupy
            return self._staging.download(slot, x), cupy
        return np.ascontiguousarray(x).reshape(-1), np

    def _empty(self, n, dtype, xp, slot="recv"):
        if xp is not np and self.cuda_aware:
            return xp.empty(n, dtype=dtype)
        if xp is not np and slot is not None:
            return self._staging.buffer(slot, n, dtype)
        return np.empty(n, dtype=dtype)

    @staticmethod
    def _unstage(buf, xp, shape):
        if xp is np or is_device_array(buf):
            return buf.reshape(shape)
        return HostStaging.upload(buf, shape)

    # -- primitives ---------------------------------------------------------
    def _allreduce(self, x, op):
        send, xp = self._stage(x)
        recv = self._empty(send.size, send.dtype, xp)
        self._wait(self.comm.Iallreduce(send, recv, op=_mpi_op(op)), send, recv)
        return self._unstage(recv, xp, x.shape)

    def _reduce(self, x, op, root):
        send, xp = self._stage(x)
        recv = self._empty(send.size, send.dtype, xp) if self.rank == root else None
        self._wait(self.comm.Ireduce(send, recv, op=_mpi_op(op), root=root), send, recv)
        return self._unstage(recv, xp, x.shape) if self.rank == root else None

    def _reduce_scatter(self, x, counts, op):
        send, xp = self._stage(x)
        row = math.prod(x.shape[1:])
        recv = self._empty(counts[self.rank] * row, send.dtype, xp)
        request = self.comm.Ireduce_scatter(send, recv, [n * row for n in counts], op=_mpi_op(op))
        self._wait(request, send, recv)
        return self._unstage(recv, xp, (counts[self.rank],) + x.shape[1:])

    def _bcast_into(self, buf, root):
        if not is_device_array(buf):
            self._bcast_buffer(buf, root)
        elif self.cuda_aware:
            synchronize(buf)
            self._bcast_buffer(buf, root)
        elif self.rank == root:
            self._bcast_buffer(self._staging.download("send", buf), root)
        else:
            host = self._staging.buffer("recv", buf.size, buf.dtype)
            self._bcast_buffer(host, root)
            buf[...] = HostStaging.upload(host, buf.shape)

    def _bcast_buffer(self, buf, root):
        self._wait(self.comm.Ibcast(buf, root=root), buf)

    def _allgather(self, x):
        send, xp = self._stage(x)
        recv = self._empty(send.size * self.size, send.dtype, xp)
        self._wait(self.comm.Iallgather(send, recv), send, recv)
        shape = (self.size,) if x.ndim == 0 else (self.size * x.shape[0],) + x.shape[1:]
        return self._unstage(recv, xp, shape)

    def _allgatherv(self, x, rows):
        send, xp = self._stage(x)
        row = math.prod(x.shape[1:])
        counts = [n * row for n in rows]
        recv = self._empty(sum(counts), send.dtype, xp)
        self._wait(self.comm.Iallgatherv(send, [recv, counts]), send, recv)
        return self._unstage(recv, xp, (sum(rows),) + x.shape[1:])

    def _iallreduce(self, x, op):
        send, xp = self._stage(x, slot=None)
        recv = self._empty(send.size, send.dtype, xp, slot=None)
        request = self.comm.Iallreduce(send, recv, op=_mpi_op(op))

        def wait():
            self._wait(request, send, recv)
            return self._unstage(recv, xp, x.shape)

        return wait, request.Test

    def _into_buffers(self, x, out):
        """``(send, recv, finish)``: MPI buffers that reduce ``x`` into ``out``.

        ``finish`` (or None) copies a host-staged result into a CuPy ``out``.
        ``out is x`` reduces in place (``MPI.IN_PLACE``), without a copy.
        """
        from mpi4py import MPI

        if is_device_array(out) and not self.cuda_aware:
            recv = out.get() if x is out else np.empty(out.shape, out.dtype)
            send = MPI.IN_PLACE if x is out else x.get()
            return send, recv, lambda: out.set(recv)
        synchronize(out)
        return (MPI.IN_PLACE if x is out else x), out, None

    def _allreduce_into(self, x, out, op):
        send, recv, finish = self._into_buffers(x, out)
        self._wait(self.comm.Iallreduce(send, recv, op=_mpi_op(op)), send, recv)
        if finish is not None:
            finish()

    def _iallreduce_into(self, x, out, op):
        send, recv, finish = self._into_buffers(x, out)
        request = self.comm.Iallreduce(send, recv, op=_mpi_op(op))

        def wait():
            self._wait(request, send, recv)
            if finish is not None:
                finish()
            return out

        return wait, request.Test

    def _isendrecv(self, x, dest, source, rows):
        from mpi4py import MPI

        send, xp = self._stage(x, slot=None)  # in flight across calls: no reused buffer
        shape = (rows,) + x.shape[1:]
        recv = self._empty(math.prod(shape), send.dtype, xp, slot=None)
        requests = [self.comm.Irecv(recv, source=source), self.comm.Isend(send, dest=dest)]

        def wait():
            self._wait(requests, send, recv)
            return self._unstage(recv, xp, shape)

        return wait, lambda: MPI.Request.Testall(requests)

    def _alltoallv(self, x, send_rows, recv_rows):
        send, xp = self._stage(x)
        row = math.prod(x.shape[1:])
        send_counts = [n * row for n in send_rows]
        recv_counts = [n * row for n in recv_rows]
        recv = self._empty(sum(recv_counts), send.dtype, xp)
        request = self.comm.Ialltoallv([send, send_counts], [recv, recv_counts])
        self._wait(request, send, recv)
        return self._unstage(recv, xp, (sum(recv_rows),) + x.shape[1:])

    # Objects go as pickled bytes through the buffer collectives (which can be
    # left behind), in two steps as mpi4py's own: sizes first, then the bytes.
    def _bcast_object(self, obj, root):
        size = np.empty(1, dtype=np.int64)
        if self.rank == root:
            data = np.frombuffer(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), dtype=np.uint8)
            size[0] = data.size
        self._bcast_buffer(size, root)
        if self.rank != root:
            data = np.empty(int(size[0]), dtype=np.uint8)
        self._bcast_buffer(data, root)
        return pickle.loads(data)

    def _allgather_object(self, obj):
        data = np.frombuffer(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), dtype=np.uint8)
        sizes = self._allgather(np.array([data.size], dtype=np.int64))
        everything = self._allgatherv(data, [int(n) for n in sizes])
        ends = np.cumsum(sizes)
        return [pickle.loads(everything[end - n : end]) for n, end in zip(sizes, ends)]

    def _barrier(self):
        self._wait(self.comm.Ibarrier())

    def _split(self, color, key):
        from mpi4py import MPI

        sub = self.comm.Split(MPI.UNDEFINED if color is None else int(color), int(key))
        if sub == MPI.COMM_NULL:
            return None
        child = MPIComms.__new__(MPIComms)
        child._adopt(sub, self.cuda_aware, self._timeout)
        return child
