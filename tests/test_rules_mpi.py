import pytest

from _mpi import case_names


@pytest.mark.parametrize("nranks", (2, 3))
@pytest.mark.parametrize("case", case_names("rules_cases"))
def test_rules_mpi(mpi_cases, case, nranks):
    mpi_cases.check("rules_cases", case, nranks)
