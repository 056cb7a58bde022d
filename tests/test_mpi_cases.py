"""Every ``tests/mpi_cases/*_cases.py`` module under ``mpiexec``, at each of its rank counts.

A module says at which rank counts it runs with a literal ``RANKS = (...)``
(default: 1, 2, 3 and 4), which optional packages it needs with
``REQUIRES = (...)`` (skipped without them), and ``ALONE = True`` if it
needs processes of its own. All are read from the source, so collecting
does not import the cases. The other modules selected at a rank count share
mpiexec jobs (``_mpi.CaseRunner``), which saves starting Python, MPI and the
libraries once per module. Runs of the same modules with a GPU
or another backend live in their own test files.

This file runs them at 1 and 4 ranks, ``test_mpi_cases_two_three.py`` at the
others: xdist gives each worker whole files, so both workers start on case
jobs, which take the cores alone one after the other (``_cores``) instead of
waiting for a long test on the other worker to end.
"""

import pytest
from _mpi import case_params, rank_share


@pytest.mark.parametrize("module, case, nranks", list(case_params(rank_share(True))))
def test_mpi_case(mpi_cases, module, case, nranks):
    mpi_cases.check(module, case, nranks)
