"""NCCLComms: CuPy arrays through NCCL, everything else through MPI.

Device arrays go through ``cupy.cuda.nccl``; NumPy arrays, objects,
barriers and splits go through the :class:`~mlmpi.comms.MPIComms` it wraps
(which also broadcasts NCCL's unique id at creation). Each rank binds to the
GPU of its node-local rank (``local_rank % device count``), as Horovod does;
NCCL takes one rank per GPU, which every rank checks before NCCL starts.
"""

import math

from .._array import is_device_array
from ._base import Comms
from ._types import ReduceOp


def unavailable_reason():
    """Why NCCL cannot be used in this process, or None when it can."""
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as exc:
        if exc.name == "cupy":
            return "CuPy is not installed"
        return f"CuPy does not import: {exc}"
    if not nccl.available:
        return "this CuPy was built without NCCL or libnccl cannot be loaded"
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        return f"CUDA reports no usable device ({exc})"
    if devices == 0:
        return "no CUDA device is visible"
    return None


def _gpu_place(device_id):
    """``(host name, PCI bus id)`` of CUDA device ``device_id``: the GPU as NCCL
    tells GPUs apart, whatever ``CUDA_VISIBLE_DEVICES`` each rank sees."""
    import socket

    import cupy

    return socket.gethostname(), cupy.cuda.Device(device_id).pci_bus_id


def _listed(ranks):
    return ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


def shared_gpu_reason(places):
    """Why NCCL cannot run on the GPUs at ``places``, or None when no two ranks share one.

    NCCL refuses two ranks of one communicator on one GPU (``invalid usage``).

    Parameters
    ----------
    places : sequence of tuple
        Every rank's ``(host name, PCI bus id)`` of its GPU, in rank order.

    Returns
    -------
    reason : str or None
        Names the ranks of the first GPU shared (the same text on every rank).
    """
    ranks = {}
    for rank, place in enumerate(places):
        ranks.setdefault(place, []).append(rank)
    for (host, bus_id), on in ranks.items():
        if len(on) > 1:
            return (
                f"ranks {_listed(on)} share the GPU {bus_id} of host {host}, but NCCL needs "
                "one GPU per rank: launch at most one rank per GPU on each node (a rank "
                "takes GPU local_rank % device count), or set MLMPI_COMMS=mpi to let ranks "
                "share a GPU"
            )
    return None


def _nccl_tables():
    from cupy.cuda import nccl

    dtypes = {
        "b": nccl.NCCL_INT8,
        "?": nccl.NCCL_UINT8,
        "B": nccl.NCCL_UINT8,
        "i": nccl.NCCL_INT32,
        "I": nccl.NCCL_UINT32,
        "l": nccl.NCCL_INT64,
        "q": nccl.NCCL_INT64,
        "L": nccl.NCCL_UINT64,
        "Q": nccl.NCCL_UINT64,
        "e": nccl.NCCL_FLOAT16,
        "f": nccl.NCCL_FLOAT32,
        "d": nccl.NCCL_FLOAT64,
    }
    ops = {
        ReduceOp.SUM: nccl.NCCL_SUM,
        ReduceOp.PROD: nccl.NCCL_PROD,
        ReduceOp.MIN: nccl.NCCL_MIN,
        ReduceOp.MAX: nccl.NCCL_MAX,
    }
    return dtypes, ops


def communicator(nccl, size, unique_id, rank):
    """``nccl.NcclCommunicator`` from NCCL's unique id in either of CuPy's forms.

    CuPy 13 gives and takes a tuple of 128 signed chars, CuPy 14 bytes; an id
    in the form this CuPy does not take is converted to the other one.
    """
    try:
        return nccl.NcclCommunicator(size, unique_id, rank)
    except TypeError:
        if isinstance(unique_id, (bytes, bytearray)):
            other = tuple(b - 256 if b > 127 else b for b in unique_id)
        else:
            other = bytes(int(b) & 0xFF for b in unique_id)
        return nccl.NcclCommunicator(size, other, rank)


class NCCLComms(Comms):
    """Comms whose CuPy collectives run on NCCL.

    Parameters
    ----------
    comms : MPIComms, default=None
        The MPI comms over the same ranks; it carries NCCL's unique id and
        every collective of host data. None means ``get_comms("mpi")``, the
        MPI comms of ``MPI.COMM_WORLD``.
    device : int, default=None
        The CUDA device of this rank. None means the node-local rank modulo
        the number of visible devices (one rank per GPU, as Horovod does).
    timeout : float, default=None
        Abort the job when a collective takes longer than this many seconds.
        None reads ``MLMPI_TIMEOUT`` (unset: 300 s; ``0``: no timeout).

    Attributes
    ----------
    mpi : MPIComms
        The wrapped MPI comms.
    device_id : int
        The CUDA device this rank uses (made current at creation).

    Notes
    -----
    Creating an NCCLComms is collective. Device collectives run on the
    current CuPy stream and return when their result is ready;
    ``iallreduce`` runs on a side stream. Raises RuntimeError on every rank,
    saying why, where NCCL is unavailable on some rank (see :meth:`available`)
    or two ranks would share a GPU.

    Examples
    --------
    Under ``mpiexec``, one rank per GPU (needs CuPy, NCCL and a GPU, so not
    run here):

    >>> import cupy as cp  # doctest: +SKIP
    >>> from mlmpi.comms import NCCLComms
    >>> comms = NCCLComms()  # doctest: +SKIP
    >>> comms.allreduce(cp.ones(3)) / comms.size  # doctest: +SKIP
    array([1., 1., 1.])
    """

    backend = "nccl"

    def __init__(self, comms=None, *, device=None, timeout=None):
        from ._launch import launched_by_mpi
        from .mpi import MPIComms, world_comms

        reason = unavailable_reason()
        if reason is not None and comms is None and not launched_by_mpi():
            raise RuntimeError(f"NCCLComms is unavailable: {reason}.")
        comms = world_comms() if comms is None else comms
        if not isinstance(comms, MPIComms):
            raise TypeError(f"NCCLComms wraps an MPIComms, got {type(comms).__name__}.")
        # Every rank raises when any rank cannot use NCCL (no rank is left waiting).
        reasons = comms.allgather_object(reason)
        failed = [r for r, why in enumerate(reasons) if why is not None]
        if failed:
            raise RuntimeError(
                f"NCCLComms is unavailable: {reasons[failed[0]]} (on rank {failed[0]})."
            )
        import cupy
        from cupy.cuda import nccl

        self.mpi = comms
        self.rank = comms.rank
        self.size = comms.size
        self.local_rank = comms.local_rank
        self.local_size = comms.local_size
        if device is None:
            device = comms.local_rank % cupy.cuda.runtime.getDeviceCount()
        self.device_id = int(device)
        cupy.cuda.Device(self.device_id).use()
        # NCCL fails on two ranks of one GPU: every rank raises before creating it.
        shared = shared_gpu_reason(comms.allgather_object(_gpu_place(self.device_id)))
        if shared is not None:
            raise RuntimeError(f"NCCLComms is unavailable: {shared}.")
        unique_id = comms.bcast_object(nccl.get_unique_id() if comms.rank == 0 else None)
        self._nccl = communicator(nccl, self.size, unique_id, self.rank)
        self._side = cupy.cuda.Stream(non_blocking=True)
        self._dtypes, self._ops = _nccl_tables()
        self._timeout = timeout
        self._start_observers(timeout, comms.comm)

    @staticmethod
    def available():
        """Whether CuPy with NCCL and a CUDA device are usable here.

        Returns
        -------
        available : bool
        """
        return unavailable_reason() is None

    def _abort(self):
        self.mpi._abort()

    # -- helpers ------------------------------------------------------------
    def _dtype(self, x):
        try:
            return self._dtypes[x.dtype.char]
        except KeyError:
            raise TypeError(f"NCCL cannot communicate arrays of dtype {x.dtype}.") from None

    @staticmethod
    def _stream():
        import cupy

        return cupy.cuda.get_current_stream()

    @staticmethod
    def _contiguous(x):
        """C-contiguous ``x`` of ``x``'s shape (CuPy's ``ascontiguousarray`` makes 0-d 1-d)."""
        import cupy

        return cupy.ascontiguousarray(x).reshape(x.shape)

    @staticmethod
    def _empty(shape, dtype):
        import cupy

        return cupy.empty(shape, dtype=dtype)

    # -- primitives: device arrays through NCCL, the rest through MPI --------
    def _allreduce(self, x, op):
        if not is_device_array(x):
            return self.mpi._allreduce(x, op)
        x = self._contiguous(x)
        out = self._empty(x.shape, x.dtype)
        self._allreduce_into(x, out, op)
        return out

    def _reduce(self, x, op, root):
        if not is_device_array(x):
            return self.mpi._reduce(x, op, root)
        x = self._contiguous(x)
        out = self._empty(x.shape, x.dtype) if self.rank == root else x
        if x.size:
            stream = self._stream()
            self._nccl.reduce(
                x.data.ptr, out.data.ptr, x.size, self._dtype(x), self._ops[op], root, stream.ptr
            )
            stream.synchronize()
        return out if self.rank == root else None

    def _reduce_scatter(self, x, counts, op):
        if not is_device_array(x):
            return self.mpi._reduce_scatter(x, counts, op)
        from cupy.cuda import nccl

        row = math.prod(x.shape[1:])
        out = self._empty((counts[self.rank],) + x.shape[1:], x.dtype)
        dtype, stream = self._dtype(x), self._stream()
        # One reduce per block (NCCL's reduceScatter needs equal blocks), fused by NCCL.
        nccl.groupStart()
        offset = 0
        for root, n in enumerate(counts):
            if n * row:
                source = x.data.ptr + offset * row * x.itemsize
                target = out.data.ptr if root == self.rank else source
                self._nccl.reduce(source, target, n * row, dtype, self._ops[op], root, stream.ptr)
            offset += n
        nccl.groupEnd()
        stream.synchronize()
        return out

    def _bcast_into(self, buf, root):
        if not is_device_array(buf):
            return self.mpi._bcast_into(buf, root)
        if buf.size:
            stream = self._stream()
            self._nccl.broadcast(
                buf.data.ptr, buf.data.ptr, buf.size, self._dtype(buf), root, stream.ptr
            )
            stream.synchronize()

    def _allgather(self, x):
        if not is_device_array(x):
            return self.mpi._allgather(x)
        x = self._contiguous(x)
        shape = (self.size,) if x.ndim == 0 else (self.size * x.shape[0],) + x.shape[1:]
        out = self._empty(shape, x.dtype)
        if x.size:
            stream = self._stream()
            self._nccl.allGather(x.data.ptr, out.data.ptr, x.size, self._dtype(x), stream.ptr)
            stream.synchronize()
        return out

    def _allgatherv(self, x, rows):
        if not is_device_array(x):
            return self.mpi._allgatherv(x, rows)
        from cupy.cuda import nccl

        x = self._contiguous(x)
        out = self._empty((sum(rows),) + x.shape[1:], x.dtype)
        row = math.prod(x.shape[1:])
        dtype = self._dtype(x)
        stream = self._stream()
        # One broadcast per contributing rank, fused by NCCL into one launch.
        nccl.groupStart()
        offset = 0
        for root, n in enumerate(rows):
            if n * row:
                target = out.data.ptr + offset * row * x.itemsize
                source = x.data.ptr if root == self.rank else target
                self._nccl.broadcast(source, target, n * row, dtype, root, stream.ptr)
            offset += n
        nccl.groupEnd()
        stream.synchronize()
        return out

    def _allreduce_into(self, x, out, op):
        if not is_device_array(x):
            return self.mpi._allreduce_into(x, out, op)
        if x.size:
            stream = self._stream()
            self._nccl.allReduce(
                x.data.ptr, out.data.ptr, x.size, self._dtype(x), self._ops[op], stream.ptr
            )
            stream.synchronize()

    def _iallreduce(self, x, op):
        if not is_device_array(x):
            return self.mpi._iallreduce(x, op)
        x = self._contiguous(x)
        return self._iallreduce_into(x, self._empty(x.shape, x.dtype), op)

    def _iallreduce_into(self, x, out, op):
        """On the side stream, after the work queued on the current stream."""
        if not is_device_array(x):
            return self.mpi._iallreduce_into(x, out, op)
        side = self._side
        if x.size:
            side.wait_event(self._stream().record())
            self._nccl.allReduce(
                x.data.ptr, out.data.ptr, x.size, self._dtype(x), self._ops[op], side.ptr
            )
        done = side.record()

        def wait(x=x):  # the default argument keeps the send buffer alive
            done.synchronize()
            return out

        return wait, lambda: done.done

    def _isendrecv(self, x, dest, source, rows):
        if not is_device_array(x):
            return self.mpi._isendrecv(x, dest, source, rows)
        from cupy.cuda import nccl

        x = self._contiguous(x)
        out = self._empty((rows,) + x.shape[1:], x.dtype)
        side = self._side
        side.wait_event(self._stream().record())
        dtype = self._dtype(x)
        nccl.groupStart()
        if x.size:
            self._nccl.send(x.data.ptr, x.size, dtype, dest, side.ptr)
        if out.size:
            self._nccl.recv(out.data.ptr, out.size, dtype, source, side.ptr)
        nccl.groupEnd()
        done = side.record()
        self._stream().wait_event(done)  # later work on the current stream sees the result

        def wait(x=x):  # the default argument keeps the send buffer alive
            done.synchronize()
            return out

        return wait, lambda: done.done

    def _alltoallv(self, x, send_rows, recv_rows):
        if not is_device_array(x):
            return self.mpi._alltoallv(x, send_rows, recv_rows)
        from cupy.cuda import nccl

        x = self._contiguous(x)
        row = math.prod(x.shape[1:])
        out = self._empty((sum(recv_rows),) + x.shape[1:], x.dtype)
        dtype = self._dtype(x)
        stream = self._stream()
        nccl.groupStart()
        sent = received = 0
        for peer in range(self.size):
            if send_rows[peer] * row:
                ptr = x.data.ptr + sent * row * x.itemsize
                self._nccl.send(ptr, send_rows[peer] * row, dtype, peer, stream.ptr)
            if recv_rows[peer] * row:
                ptr = out.data.ptr + received * row * x.itemsize
                self._nccl.recv(ptr, recv_rows[peer] * row, dtype, peer, stream.ptr)
            sent += send_rows[peer]
            received += recv_rows[peer]
        nccl.groupEnd()
        stream.synchronize()
        return out

    def _bcast_object(self, obj, root):
        return self.mpi._bcast_object(obj, root)

    def _allgather_object(self, obj):
        return self.mpi._allgather_object(obj)

    def _barrier(self):
        self.mpi._barrier()

    def _split(self, color, key):
        sub = self.mpi._split(color, key)
        if sub is None:
            return None
        return NCCLComms(sub, device=self.device_id, timeout=self._timeout)
