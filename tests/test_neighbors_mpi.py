import pytest

from _mpi import RANK_COUNTS, case_names


@pytest.mark.parametrize("nranks", RANK_COUNTS)
@pytest.mark.parametrize("case", case_names("neighbors_cases"))
def test_neighbors_across_ranks(mpi_cases, case, nranks):
    mpi_cases.check("neighbors_cases", case, nranks)


@pytest.mark.parametrize("nranks", RANK_COUNTS)
@pytest.mark.parametrize("case", case_names("neighbors_errors_cases"))
def test_neighbors_bad_input_across_ranks(mpi_cases, case, nranks):
    mpi_cases.check("neighbors_errors_cases", case, nranks)
