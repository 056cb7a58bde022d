"""The GPU-support logic that does not need a GPU: pinned-buffer reuse, NCCL's
unique-id forms, GPU binding and the TF32 switch (against stand-ins for CuPy)."""

import sys
import types

import numpy as np
import pytest

from mlmpi import _array
from mlmpi.comms._staging import HostStaging
from mlmpi.comms.nccl import communicator


def test_staging_reuses_its_buffers():
    made = []

    def allocate(nbytes):
        made.append(nbytes)
        return np.empty(nbytes, dtype=np.uint8)

    staging = HostStaging(allocate)
    first = staging.buffer("send", 10, np.float64)
    assert first.shape == (10,) and first.dtype == np.float64
    again = staging.buffer("send", 3, np.int32)
    assert np.shares_memory(first, again) and again.shape == (3,)
    assert made == [4096]
    staging.buffer("recv", 1, np.float32)
    assert made == [4096, 4096]
    grown = staging.buffer("send", 1000, np.float64)  # 8000 bytes: the next power of two
    assert made[-1] == 8192 and grown.shape == (1000,)
    assert np.shares_memory(staging.buffer("send", 1, np.int8), grown)
    assert staging.buffer("recv", 0, np.float64).shape == (0,)


class _FakeNccl:
    """Takes the id only in one form, as CuPy 13 (tuple) or CuPy 14 (bytes) does."""

    def __init__(self, form):
        outer = self

        class NcclCommunicator:
            def __init__(self, size, unique_id, rank):
                if not isinstance(unique_id, outer.form):
                    raise TypeError("Argument 'commId' has incorrect type")
                self.args = (size, unique_id, rank)

        self.form = form
        self.NcclCommunicator = NcclCommunicator


@pytest.mark.parametrize("form", [tuple, bytes])
def test_nccl_unique_id_in_either_form(form):
    raw = bytes(range(256))[::2]  # 128 bytes, half of them above 127
    as_tuple = tuple(b - 256 if b > 127 else b for b in raw)
    for given in (raw, as_tuple):
        made = communicator(_FakeNccl(form), 4, given, 2)
        size, unique_id, rank = made.args
        assert (size, rank) == (4, 2)
        assert unique_id == (as_tuple if form is tuple else raw)


@pytest.fixture
def fake_cupy(monkeypatch):
    """A stand-in ``cupy`` module recording the device made current."""
    state = types.SimpleNamespace(devices=3, pool_bytes=0, current=None, compute={})
    device = lambda i: types.SimpleNamespace(use=lambda: setattr(state, "current", i))  # noqa: E731
    runtime = types.SimpleNamespace(getDeviceCount=lambda: state.devices)
    cupy = types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=runtime, Device=device),
        get_default_memory_pool=lambda: types.SimpleNamespace(total_bytes=lambda: state.pool_bytes),
    )
    linalg = types.SimpleNamespace(
        COMPUTE_TYPE_DEFAULT="default",
        COMPUTE_TYPE_TF32="tf32",
        set_compute_type=lambda dtype, kind: state.compute.__setitem__(np.dtype(dtype), kind),
    )
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy._core", types.SimpleNamespace(_routines_linalg=linalg))
    monkeypatch.setitem(sys.modules, "cupy._core._routines_linalg", linalg)
    monkeypatch.setattr(_array, "_device_bound", False)
    monkeypatch.setattr(_array, "_device_math_set", False)
    return state


def test_bind_local_device_once_per_process(fake_cupy):
    assert _array.bind_local_device(4) == 1 and fake_cupy.current == 1
    assert _array.bind_local_device(2) is None and fake_cupy.current == 1


def test_bind_local_device_keeps_a_device_already_in_use(fake_cupy):
    fake_cupy.pool_bytes = 512
    assert _array.bind_local_device(1) is None and fake_cupy.current is None


def test_bind_local_device_without_cupy_or_gpu(fake_cupy, monkeypatch):
    fake_cupy.devices = 0
    assert _array.bind_local_device(1) is None
    monkeypatch.setattr(_array, "_device_bound", False)
    monkeypatch.delitem(sys.modules, "cupy")
    assert _array.bind_local_device(1) is None


@pytest.mark.parametrize("value, expected", [("1", "tf32"), ("0", "default"), (None, None)])
def test_tf32_only_when_asked(fake_cupy, monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("MLMPI_ALLOW_TF32", raising=False)
    else:
        monkeypatch.setenv("MLMPI_ALLOW_TF32", value)
    _array.set_device_math(sys.modules["cupy"])
    if expected is None:
        assert fake_cupy.compute == {}
    else:
        assert fake_cupy.compute == {
            np.dtype(np.float32): expected,
            np.dtype(np.complex64): expected,
        }


def test_tf32_flag_must_be_boolean(monkeypatch):
    monkeypatch.setattr(_array, "_device_math_set", False)
    monkeypatch.setenv("MLMPI_ALLOW_TF32", "maybe")
    with pytest.raises(ValueError, match="MLMPI_ALLOW_TF32"):
        _array.set_device_math(None)
