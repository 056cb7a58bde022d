"""The ``tests/mpi_cases`` modules at their rank counts other than 1 and 4
(``tests/test_mpi_cases.py`` has those and says how the cases run)."""

import pytest
from _mpi import case_params, rank_share


@pytest.mark.parametrize("module, case, nranks", list(case_params(rank_share(False))))
def test_mpi_case(mpi_cases, module, case, nranks):
    mpi_cases.check(module, case, nranks)
