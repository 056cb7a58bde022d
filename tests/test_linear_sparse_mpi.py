import pytest

from _mpi import RANK_COUNTS, case_names

MODULE = "linear_sparse_cases"


@pytest.mark.parametrize("nranks", RANK_COUNTS)
@pytest.mark.parametrize("case", case_names(MODULE))
def test_sparse_linear_models_across_ranks(mpi_cases, case, nranks):
    mpi_cases.check(MODULE, case, nranks)
