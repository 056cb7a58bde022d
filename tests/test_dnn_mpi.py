"""The data-parallel trainer on CUDA with NCCL (the CPU runs at 1-3 ranks are
in test_mpi_cases.py)."""

import pytest
from _mpi import case_names

torch = pytest.importorskip("torch")

MODULE = "dnn_cases"


@pytest.mark.parametrize("nranks", [1, 2])
@pytest.mark.parametrize("case", case_names(MODULE))
def test_dnn_on_gpu_with_nccl(mpi_cases, case, nranks):
    if not torch.cuda.is_available() or torch.cuda.device_count() < nranks:
        pytest.skip("needs CUDA devices (one per rank)")
    pytest.importorskip("cupy")
    mpi_cases.check(MODULE, case, nranks, env={"MLMPI_TEST_DEVICE": "cuda", "MLMPI_COMMS": "nccl"})
