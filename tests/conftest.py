import sys
from pathlib import Path

import pytest
from _mpi import CaseRunner

sys.path.insert(0, str(Path(__file__).resolve().parent / "mpi_cases"))
import _fake_cupy  # noqa: E402

#: Session-wide runner of ``tests/mpi_cases`` modules (:class:`CaseRunner`).
_RUNNER = CaseRunner()


@pytest.fixture(scope="session")
def mpi_cases():
    """Session-wide runner of ``tests/mpi_cases`` modules: the modules selected at
    the same rank count share mpiexec jobs (:class:`CaseRunner`), run ahead
    while the session's other tests run."""
    return _RUNNER


@pytest.fixture
def fake_cupy(monkeypatch):
    """The strict CPU stand-in for CuPy (``tests/mpi_cases/_fake_cupy.py``) as the
    ``cupy`` and ``cupyx`` modules, for this test."""
    from mlmpi import _array

    for name, module in _fake_cupy.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(_array, "_device_math_set", False)
    return sys.modules["cupy"]


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


def _is_mpi_case(item):
    return getattr(item, "originalname", None) == "test_mpi_case"


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(config, items):
    """Tests that use the ``cupy`` fixture are GPU tests: ``-m gpu`` selects them.
    The mpiexec cases that will run are planned (:meth:`CaseRunner.plan`) and
    checked last, so that their jobs run ahead beside the other tests."""
    for item in items:
        if "cupy" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gpu)
    cases = [item for item in items if _is_mpi_case(item)]
    items[:] = [item for item in items if not _is_mpi_case(item)] + cases
    _RUNNER.plan(
        (item.callspec.params["module"], item.callspec.params["nranks"])
        for item in cases
        if not any(item.iter_markers("skip"))
    )


def pytest_collection_finish(session):
    """Start the planned mpiexec jobs (none when only collecting)."""
    if not session.config.option.collectonly:
        _RUNNER.run_ahead()


def pytest_sessionfinish(session):
    """Kill a job still running ahead (an interrupted or failing-fast session)."""
    _RUNNER.stop()
