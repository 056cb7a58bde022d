"""NCCLComms' logic without a GPU: shapes of 0-d results and the check that no
two ranks share a GPU, against stand-ins for CuPy, ``cupy.cuda.nccl`` and the
MPI comms (one NCCL rank copies host memory, as NCCL copies device memory)."""

import ctypes
import socket
import sys
import types

import numpy as np
import pytest

from mlmpi import _array
from mlmpi.comms.mpi import MPIComms
from mlmpi.comms.nccl import NCCLComms, shared_gpu_reason

HOST = socket.gethostname()
BUS = "0000:0A:00.0"  # the PCI bus id of the stand-in's GPU


class _DeviceArray:
    """A "CuPy" array over a NumPy array, whose ``data.ptr`` is host memory."""

    __module__ = "cupy.fake"

    def __init__(self, a):
        self.a = a

    def __getattr__(self, name):  # shape, dtype, size, ndim, itemsize, nbytes, flags
        return getattr(self.a, name)

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.a.ctypes.data)

    def reshape(self, shape):
        return _DeviceArray(self.a.reshape(shape))

    def get(self):
        return self.a.copy()


class _Stream:
    ptr = 0

    def synchronize(self):
        pass

    def wait_event(self, event):
        pass

    def record(self):
        return types.SimpleNamespace(synchronize=lambda: None, done=True)


class _Communicator:
    """NCCL at one rank: every collective copies ``count`` items to the target."""

    made = []

    def __init__(self, size, unique_id, rank):
        self.made.append((size, unique_id, rank))

    @staticmethod
    def _copy(source, target, count, dtype):
        ctypes.memmove(target, source, count * np.dtype(dtype).itemsize)

    def allReduce(self, source, target, count, dtype, op, stream):
        self._copy(source, target, count, dtype)

    def reduce(self, source, target, count, dtype, op, root, stream):
        self._copy(source, target, count, dtype)

    def broadcast(self, source, target, count, dtype, root, stream):
        self._copy(source, target, count, dtype)

    def allGather(self, source, target, count, dtype, stream):
        self._copy(source, target, count, dtype)


def _nccl_module():
    nccl = types.ModuleType("cupy.cuda.nccl")
    nccl.available = True
    nccl.get_unique_id = lambda: bytes(128)
    nccl.NcclCommunicator = _Communicator
    dtypes = "int8 uint8 int32 uint32 int64 uint64 float16 float32 float64".split()
    for dtype in dtypes:
        setattr(nccl, f"NCCL_{dtype.upper()}", dtype)  # NumPy's name, for the copies
    for name in ("SUM", "PROD", "MIN", "MAX"):
        setattr(nccl, f"NCCL_{name}", name)
    return nccl


@pytest.fixture
def fake_cupy(monkeypatch):
    """Stand-ins for ``cupy`` (one GPU, at ``BUS``) and ``cupy.cuda.nccl``."""
    stream = _Stream()
    cuda = types.ModuleType("cupy.cuda")
    cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1)
    cuda.Device = lambda device=0: types.SimpleNamespace(use=lambda: None, pci_bus_id=BUS)
    cuda.Stream = lambda non_blocking=False: _Stream()
    cuda.get_current_stream = lambda: stream
    cuda.nccl = _nccl_module()
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda
    cupy.asarray = lambda x: _DeviceArray(np.asarray(x))
    cupy.empty = lambda shape, dtype: _DeviceArray(np.empty(shape, dtype))
    cupy.array = lambda x, copy, order: _DeviceArray(np.array(x.a, copy=copy, order=order))
    # NumPy's, as CuPy's, gives a 0-d array one dimension.
    cupy.ascontiguousarray = lambda x: _DeviceArray(np.ascontiguousarray(x.a))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", cuda.nccl)
    monkeypatch.setattr(_array, "_device_math_set", True)
    monkeypatch.setattr(_Communicator, "made", [])
    return cupy


class _FakeMPI(MPIComms):
    """Rank ``rank`` of MPI comms whose other ranks can use NCCL and are on the
    GPUs ``others`` (``{rank: (host name, PCI bus id)}``), one rank per node."""

    def __init__(self, rank=0, others=None):
        self.others = others or {}
        self.rank, self.size = rank, 1 + len(self.others)
        self.local_rank, self.local_size = 0, 1
        self.comm = None  # no end-of-program channel

    def allgather_object(self, obj):
        if obj is None:  # unavailable_reason(): None on every rank
            return [None] * self.size
        return [self.others.get(r, obj) for r in range(self.size)]

    def bcast_object(self, obj, root=0):
        return bytes(128) if obj is None else obj

    def _bcast_object(self, obj, root):
        return obj


def _value(x, shape):
    assert isinstance(x, _DeviceArray) and x.shape == shape, (type(x), x.shape, shape)
    return x.get()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_zero_d_arrays_come_back_zero_d(fake_cupy, dtype):
    comms = NCCLComms(_FakeMPI(), timeout=0)
    x = fake_cupy.asarray(np.array(3, dtype=dtype))
    assert _value(comms.allreduce(x), ()) == 3
    assert _value(comms.allreduce(x, op="max"), ()) == 3
    assert _value(comms.reduce(x, root=0), ()) == 3
    assert _value(comms.iallreduce(x).wait(), ()) == 3
    assert _value(comms.bcast(x), ()) == 3
    assert _value(comms.allreduce(x, out=fake_cupy.empty((), dtype)), ()) == 3
    assert _value(comms.iallreduce(x, out=fake_cupy.empty((), dtype)).wait(), ()) == 3
    np.testing.assert_array_equal(_value(comms.allgather(x), (1,)), [3])
    rows = fake_cupy.asarray(np.arange(6, dtype=dtype).reshape(3, 2))
    np.testing.assert_array_equal(_value(comms.allreduce(rows), (3, 2)), rows.get())
    np.testing.assert_array_equal(_value(comms.allgather(rows), (3, 2)), rows.get())


def test_ranks_sharing_a_gpu_raise_on_every_rank_before_nccl(fake_cupy):
    errors = []
    for rank in (0, 1):
        with pytest.raises(RuntimeError) as error:
            NCCLComms(_FakeMPI(rank, {1 - rank: (HOST, BUS)}), timeout=0)
        errors.append(str(error.value))
    assert errors[0] == errors[1]
    assert errors[0].startswith(
        f"NCCLComms is unavailable: ranks 0 and 1 share the GPU {BUS} of host {HOST}"
    )
    assert "MLMPI_COMMS=mpi" in errors[0] and errors[0].endswith(".")
    assert _Communicator.made == []  # NCCL never saw the ranks


@pytest.mark.parametrize("other", [(HOST, "0000:0B:00.0"), ("elsewhere", BUS)])
def test_ranks_on_their_own_gpus_make_nccl(fake_cupy, other):
    comms = NCCLComms(_FakeMPI(0, {1: other}), timeout=0)
    assert (comms.rank, comms.size, comms.device_id) == (0, 2, 0)
    assert _Communicator.made == [(2, bytes(128), 0)]


def test_shared_gpu_reason_names_the_ranks_and_the_gpu():
    assert shared_gpu_reason([("a", "x"), ("a", "y"), ("b", "x")]) is None
    assert shared_gpu_reason([("a", "x")]) is None
    reason = shared_gpu_reason([("a", "x"), ("b", "x"), ("a", "x"), ("b", "y"), ("a", "x")])
    assert reason.startswith("ranks 0, 2 and 4 share the GPU x of host a, but NCCL needs")
    assert "one rank per GPU on each node" in reason and "MLMPI_COMMS=mpi" in reason
