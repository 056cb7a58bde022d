"""sendrecv / isendrecv / alltoallv on CuPy arrays (the NumPy runs at 1-4 ranks
are in test_mpi_cases.py), with each comms backend of ``tests/_gpu.py``.

Skipped without CuPy and a CUDA device."""

import pytest
from _gpu import BACKENDS, backend_env, skip_reason
from _mpi import case_names

pytestmark = pytest.mark.gpu

MODULE = "comms_p2p_cases"


@pytest.mark.parametrize("backend, nranks", BACKENDS)
@pytest.mark.parametrize("case", case_names(MODULE))
def test_p2p_collectives_on_cupy(cupy, mpi_cases, case, backend, nranks):
    reason = skip_reason(backend, nranks, cupy.cuda.runtime.getDeviceCount())
    if reason is not None:
        pytest.skip(reason)
    mpi_cases.check(MODULE, case, nranks, env={"MLMPI_TEST_XP": "cupy", **backend_env(backend)})
