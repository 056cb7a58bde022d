"""Every estimator on CuPy arrays equals the NumPy path, at 1 rank and across ranks.

``tests/mpi_cases/gpu_estimator_cases.py`` runs under mpiexec with each comms
backend of ``tests/_gpu.py``: ``self`` (one process), ``mpi`` with host
staging at 2 and 3 ranks (ranks share the GPUs there are), ``mpi-cuda-aware``
where the MPI library is CUDA-aware, and ``nccl`` at as many ranks as there
are GPUs. Skipped without CuPy and a CUDA device.
"""

import pytest
from _gpu import BACKENDS, backend_env, skip_reason
from _mpi import case_names

pytestmark = pytest.mark.gpu

MODULE = "gpu_estimator_cases"


@pytest.mark.parametrize("backend, nranks", BACKENDS)
@pytest.mark.parametrize("case", case_names(MODULE))
def test_estimators_on_cupy(cupy, mpi_cases, case, backend, nranks):
    reason = skip_reason(backend, nranks, cupy.cuda.runtime.getDeviceCount())
    if reason is not None:
        pytest.skip(reason)
    mpi_cases.check(MODULE, case, nranks, env=backend_env(backend), timeout=600)
