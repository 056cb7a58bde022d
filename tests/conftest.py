import pytest

from _mpi import CaseRunner


@pytest.fixture(scope="session")
def mpi_cases():
    """Session-wide runner of ``tests/mpi_cases`` modules (one mpiexec job per module and rank count)."""
    return CaseRunner()
