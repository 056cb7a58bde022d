"""A fit by batches under a memory cap that loading this rank's rows would exceed.

Each rank caps its address space (``resource.setrlimit(RLIMIT_AS)``) a few
tens of MiB above what it uses after a warm-up: allocating its share of the
file then fails, yet StandardScaler and LinearRegression fitted by
``partial_fit`` over :func:`mlmpi.io.iter_batches` of the HDF5 file give the
exact model (the file's y is an exact linear function of its X).
"""

import contextlib
import ctypes
import os
import resource

import h5py
import numpy as np
import pytest
from shards import shared_dir

from mlmpi import LinearRegression, get_comms
from mlmpi.io import iter_batches
from mlmpi.preprocessing import StandardScaler

RANKS = (2,)
ALONE = True  # measures the address space of its own processes
REQUIRES = ("h5py",)

COMMS = get_comms()
N_ROWS, N_FEATURES, BLOCK = 320_000, 15, 40_000  # 41 MB of float64 X and y
HEADROOM = 8 << 20  # bytes a rank may allocate above its warmed-up address space
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc's malloc.h)
WEIGHTS = np.linspace(-2.0, 3.0, N_FEATURES)
INTERCEPT = 4.25


def _block(start):
    """Rows ``start:start + BLOCK`` of the file: ``[X, y]`` with ``y = X w + b``."""
    rng = np.random.RandomState(start)
    X = rng.normal(size=(BLOCK, N_FEATURES)) * np.arange(1, N_FEATURES + 1) + 10.0
    return np.c_[X, X @ WEIGHTS + INTERCEPT]


def _write(path):
    with h5py.File(path, "w") as f:
        data = f.create_dataset("Xy", shape=(N_ROWS, N_FEATURES + 1), dtype="f8")
        for start in range(0, N_ROWS, BLOCK):
            data[start : start + BLOCK] = _block(start)


def _map_large_blocks():
    """Make the C heap map every block of 128 KiB or more on its own, and unmap
    it when freed. By default glibc raises that threshold after a large free,
    and later large blocks reuse freed heap memory that the address space still
    counts: the rank could then allocate its share under the cap."""
    ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, 128 << 10)


def _address_space():
    """This process's mapped bytes, once the C heap has given its free memory
    back (memory freed by the warm-up must not make room for the share)."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmSize:"))
    return int(line.split()[1]) * 1024


@contextlib.contextmanager
def _memory_cap(limit):
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _fit(path, batch_rows):
    scaler = StandardScaler()
    for batch in iter_batches(path, batch_rows, dataset="Xy", as_numpy=True):
        scaler.partial_fit(batch[:, :-1])
    model = LinearRegression()
    for batch in iter_batches(path, batch_rows, dataset="Xy", as_numpy=True):
        model.partial_fit(scaler.transform(batch[:, :-1]), batch[:, -1])
    return scaler, model


def _reference_moments():
    """Mean and variance of X, two passes over the blocks in float64."""
    total = sum(_block(start)[:, :-1].sum(axis=0) for start in range(0, N_ROWS, BLOCK))
    mean = total / N_ROWS
    squares = sum(
        ((_block(start)[:, :-1] - mean) ** 2).sum(axis=0) for start in range(0, N_ROWS, BLOCK)
    )
    return mean, squares / N_ROWS


def case_fit_by_batches_under_memory_cap():
    _map_large_blocks()
    with shared_dir() as directory:
        path = os.path.join(directory, "rows.h5")
        if COMMS.rank == 0:
            _write(path)
        COMMS.barrier()
        _fit(path, batch_rows=N_ROWS)  # warm-up: imports, kernels, threads, every buffer size
        share = (N_ROWS // COMMS.size) * (N_FEATURES + 1) * 8
        assert share > 2 * HEADROOM
        with _memory_cap(_address_space() + HEADROOM):
            with pytest.raises(MemoryError):
                np.ones(share // 8)  # this rank's rows would not fit
            scaler, model = _fit(path, batch_rows=10_000)
        mean, var = _reference_moments()
        np.testing.assert_allclose(scaler.mean_, mean, rtol=1e-10)
        np.testing.assert_allclose(scaler.var_, var, rtol=1e-10)
        assert model.solver_ == "cholesky"
        np.testing.assert_allclose(model.coef_ / scaler.scale_, WEIGHTS, rtol=1e-10)
        intercept = model.intercept_ - model.coef_ @ (scaler.mean_ / scaler.scale_)
        np.testing.assert_allclose(intercept, INTERCEPT, rtol=1e-10)
