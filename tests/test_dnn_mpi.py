"""The data-parallel trainer at 1, 2 and 3 ranks (one mpiexec job per rank count)."""

import pytest

from _mpi import case_names

torch = pytest.importorskip("torch")

MODULE = "dnn_cases"


@pytest.mark.parametrize("nranks", [1, 2, 3])
@pytest.mark.parametrize("case", case_names(MODULE))
def test_dnn(mpi_cases, case, nranks):
    mpi_cases.check(MODULE, case, nranks)


@pytest.mark.parametrize("nranks", [1, 2])
@pytest.mark.parametrize("case", case_names(MODULE))
def test_dnn_on_gpu_with_nccl(mpi_cases, case, nranks):
    if not torch.cuda.is_available() or torch.cuda.device_count() < nranks:
        pytest.skip("needs CUDA devices (one per rank)")
    pytest.importorskip("cupy")
    mpi_cases.check(MODULE, case, nranks, env={"MLMPI_TEST_DEVICE": "cuda", "MLMPI_COMMS": "nccl"})
