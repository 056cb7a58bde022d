import pytest

from _mpi import RANK_COUNTS, case_names

MODULE = "comms_cases"


@pytest.mark.parametrize("nranks", RANK_COUNTS)
@pytest.mark.parametrize("case", case_names(MODULE))
def test_comms_collectives(mpi_cases, case, nranks):
    mpi_cases.check(MODULE, case, nranks)
