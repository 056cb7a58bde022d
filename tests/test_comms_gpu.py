"""The collective cases on CuPy arrays: SelfComms, MPI with host staging or
CUDA-aware, NCCL (the backends of ``tests/_gpu.py``).

Skipped without CuPy and a CUDA device. NCCL allows one rank per GPU, so its
jobs run only up to the number of visible devices.
"""

import pytest
from _gpu import BACKENDS, backend_env, skip_reason
from _mpi import case_names

pytestmark = pytest.mark.gpu

cupy = pytest.importorskip("cupy")
try:
    DEVICES = cupy.cuda.runtime.getDeviceCount()
except cupy.cuda.runtime.CUDARuntimeError:
    DEVICES = 0
if DEVICES == 0:
    pytest.skip("no CUDA device", allow_module_level=True)

MODULE = "comms_cases"
GPU_CASES = [c for c in case_names(MODULE) if "mpicomms" not in c]


@pytest.mark.parametrize("backend, nranks", BACKENDS)
@pytest.mark.parametrize("case", GPU_CASES)
def test_comms_collectives_on_cupy(mpi_cases, case, backend, nranks):
    reason = skip_reason(backend, nranks, DEVICES)
    if reason is not None:
        pytest.skip(reason)
    mpi_cases.check(MODULE, case, nranks, env={"MLMPI_TEST_XP": "cupy", **backend_env(backend)})
