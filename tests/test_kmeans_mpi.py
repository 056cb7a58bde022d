import pytest

from _mpi import RANK_COUNTS, case_names

MODULES = ("kmeans_cases", "kmeans_errors_cases")


@pytest.mark.parametrize("nranks", RANK_COUNTS)
@pytest.mark.parametrize(
    "module, case", [(module, case) for module in MODULES for case in case_names(module)]
)
def test_kmeans_mpi(mpi_cases, module, case, nranks):
    if module == "kmeans_errors_cases" and nranks == 1:
        pytest.skip("errors that differ between ranks need at least 2 ranks")
    mpi_cases.check(module, case, nranks)
