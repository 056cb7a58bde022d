import pytest
from _mpi import CaseRunner


@pytest.fixture(scope="session")
def mpi_cases():
    """Session-wide runner of ``tests/mpi_cases`` modules (one mpiexec job per
    module and rank count)."""
    return CaseRunner()


@pytest.fixture(scope="session")
def cupy():
    """CuPy with a usable CUDA device; skips the test without them (mark such tests ``gpu``)."""
    cp = pytest.importorskip("cupy")
    try:
        devices = cp.cuda.runtime.getDeviceCount()
    except cp.cuda.runtime.CUDARuntimeError as exc:
        pytest.skip(f"no usable CUDA device ({exc})")
    if devices == 0:
        pytest.skip("no CUDA device")
    return cp


def pytest_collection_modifyitems(config, items):
    """Tests that use the ``cupy`` fixture are GPU tests: ``-m gpu`` selects them."""
    for item in items:
        if "cupy" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gpu)
