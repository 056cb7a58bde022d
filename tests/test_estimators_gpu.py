"""Every estimator on CuPy arrays equals the NumPy path, at 1 rank and across ranks.

``tests/mpi_cases/gpu_estimator_cases.py`` runs under mpiexec with each comms
backend: ``self`` (one process), ``mpi`` with host staging at 1-4 ranks
(ranks share the GPUs there are), and ``nccl`` at as many ranks as there are
GPUs (NCCL needs one GPU per rank). Skipped without CuPy and a CUDA device.
"""

import pytest

from _mpi import RANK_COUNTS, case_names

pytestmark = pytest.mark.gpu

MODULE = "gpu_estimator_cases"


BACKENDS = [("self", 1)] + [("mpi", n) for n in RANK_COUNTS] + [("nccl", n) for n in RANK_COUNTS]


@pytest.mark.parametrize("backend, nranks", BACKENDS)
@pytest.mark.parametrize("case", case_names(MODULE))
def test_estimators_on_cupy(cupy, mpi_cases, case, backend, nranks):
    if backend == "nccl":
        from mlmpi.comms.nccl import unavailable_reason

        if unavailable_reason() is not None:
            pytest.skip(unavailable_reason())
        devices = cupy.cuda.runtime.getDeviceCount()
        if nranks > devices:
            pytest.skip(f"NCCL needs one GPU per rank ({nranks} ranks, {devices} GPUs)")
    mpi_cases.check(MODULE, case, nranks, env={"MLMPI_COMMS": backend}, timeout=600)
