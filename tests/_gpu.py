"""The comms backends the GPU tests run under, and when each must be skipped.

``self`` (one process), ``mpi`` (host staging through pinned buffers; ranks
share the GPUs there are), ``mpi-cuda-aware`` (device buffers straight to
MPI; only where the MPI library says it is CUDA-aware) and ``nccl`` (one GPU
per rank).
"""

import functools
import sys

from _mpi import RANK_COUNTS, run_mpi

#: MPI's ranks share the GPUs there are: at 2 and 3 ranks (uneven shards), as
#: the single-process ``self`` covers 1 and every job pays CuPy's start again.
SHARED_GPU_RANKS = (2, 3)
BACKENDS = (
    [("self", 1)]
    + [(backend, n) for backend in ("mpi", "mpi-cuda-aware") for n in SHARED_GPU_RANKS]
    + [("nccl", n) for n in RANK_COUNTS]
)

_ENV = {
    "self": {"MLMPI_COMMS": "self"},
    "mpi": {"MLMPI_COMMS": "mpi", "MLMPI_CUDA_AWARE_MPI": "0"},
    "mpi-cuda-aware": {"MLMPI_COMMS": "mpi", "MLMPI_CUDA_AWARE_MPI": "1"},
    "nccl": {"MLMPI_COMMS": "nccl"},
}


def backend_env(backend):
    """Environment variables that select ``backend`` in the mpiexec job."""
    return dict(_ENV[backend])


@functools.cache
def mpi_cuda_support():
    """Whether the MPI library under mpi4py reports CUDA support (asked under mpiexec)."""
    probe = (
        "from mpi4py import MPI; query = getattr(MPI, 'Query_cuda_support', None); "
        "print('CUDA-SUPPORT', bool(query and query()))"
    )
    _, output, _ = run_mpi(1, [sys.executable, "-c", probe], timeout=60)
    return "CUDA-SUPPORT True" in output


def skip_reason(backend, nranks, devices):
    """Why ``backend`` cannot run at ``nranks`` ranks on ``devices`` GPUs, or None."""
    if backend == "nccl":
        from mlmpi.comms.nccl import unavailable_reason

        if unavailable_reason() is not None:
            return unavailable_reason()
        if nranks > devices:
            return f"NCCL needs one GPU per rank ({nranks} ranks, {devices} GPUs)"
    if backend == "mpi-cuda-aware" and not mpi_cuda_support():
        return "the MPI library under mpi4py is not CUDA-aware (MPI.Query_cuda_support)"
    return None
