"""sendrecv / isendrecv / alltoallv on CuPy arrays (the NumPy runs at 1-4 ranks
are in test_mpi_cases.py)
through MPI host staging and NCCL where a GPU is present."""

import pytest
from _mpi import RANK_COUNTS, case_names

MODULE = "comms_p2p_cases"


def _gpu_backends():
    try:
        import cupy

        devices = cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return []
    from mlmpi.comms.nccl import unavailable_reason

    nccl = [("nccl", n) for n in RANK_COUNTS if n <= devices and unavailable_reason() is None]
    return [("self", 1)] + [("mpi", n) for n in RANK_COUNTS] + nccl


@pytest.mark.parametrize(
    "backend, nranks",
    _gpu_backends() or [pytest.param(None, 0, marks=pytest.mark.skip(reason="no CuPy/GPU"))],
)
@pytest.mark.parametrize("case", case_names(MODULE))
def test_p2p_collectives_on_cupy(mpi_cases, case, backend, nranks):
    env = {"MLMPI_TEST_XP": "cupy", "MLMPI_COMMS": backend}
    mpi_cases.check(MODULE, case, nranks, env=env)
