"""The collective cases on CuPy arrays: SelfComms, MPI with host staging, NCCL.

Skipped without CuPy and a CUDA device. NCCL allows one rank per GPU, so its
jobs run only up to the number of visible devices.
"""

import pytest

from _mpi import RANK_COUNTS, case_names

pytestmark = pytest.mark.gpu

cupy = pytest.importorskip("cupy")
try:
    DEVICES = cupy.cuda.runtime.getDeviceCount()
except cupy.cuda.runtime.CUDARuntimeError:
    DEVICES = 0
if DEVICES == 0:
    pytest.skip("no CUDA device", allow_module_level=True)

from mlmpi.comms.nccl import unavailable_reason  # noqa: E402

MODULE = "comms_cases"
GPU_CASES = [c for c in case_names(MODULE) if "mpicomms" not in c]
BACKENDS = [("self", 1)] + [("mpi", n) for n in RANK_COUNTS] + [
    ("nccl", n) for n in RANK_COUNTS if n <= DEVICES
]


@pytest.mark.parametrize("backend, nranks", BACKENDS)
@pytest.mark.parametrize("case", GPU_CASES)
def test_comms_collectives_on_cupy(mpi_cases, case, backend, nranks):
    if backend == "nccl" and unavailable_reason() is not None:
        pytest.skip(unavailable_reason())
    env = {"MLMPI_TEST_XP": "cupy", "MLMPI_COMMS": backend}
    mpi_cases.check(MODULE, case, nranks, env=env)
