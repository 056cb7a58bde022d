import os
import sys
from pathlib import Path

import _cores
import pytest
from _mpi import CaseRunner

sys.path.insert(0, str(Path(__file__).resolve().parent / "mpi_cases"))
import _fake_cupy  # noqa: E402

#: ``(module, nranks)`` of every ``test_mpi_case`` the session runs.
_MPI_CASE_JOBS = []


#: Most test workers ``-n auto`` starts (pyproject's addopts): the tests launch
#: mpiexec jobs of up to 4 ranks, so more workers would oversubscribe the cores.
#: ``--dist loadfile`` keeps each test file on one worker: the mpiexec cases of
#: a rank count share jobs (:class:`CaseRunner`) within one process, and
#: test_mpi_cases.py and test_mpi_cases_two_three.py split the rank counts.
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config):
    """One worker per core, at most :data:`MAX_WORKERS`; none (one process) for a
    run of marked tests only (``-m scale``, ``-m cluster``, ``-m gpu``), whose jobs
    fill the machine or the GPU by themselves."""
    from _pytest.mark.expression import Expression

    markexpr = config.option.markexpr
    if markexpr and not Expression.compile(markexpr).evaluate(lambda *mark, **arguments: False):
        return 0
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def pytest_configure(config):
    """Before the test workers start: name the lock files of their claims on the
    cores (:mod:`_cores`), and on a cold kernel cache compile the kernels once,
    in parallel (:mod:`_warm_kernels`): otherwise every worker and every rank of
    the first mpiexec jobs compiles them at the same time."""
    import _warm_kernels

    if hasattr(config, "workerinput"):
        return
    workers = getattr(config.option, "numprocesses", None) and not config.option.collectonly
    _cores.configure(workers)
    if workers and _warm_kernels.cache_is_cold():
        _warm_kernels.warm(len(os.sched_getaffinity(0)))


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        _cores.remove()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Each test, fixtures included, holds a shared claim on the cores, which
    an mpiexec case job trades for the cores alone (:mod:`_cores`)."""
    with _cores.shared():
        return (yield)


@pytest.fixture(scope="session")
def mpi_cases():
    """Session-wide runner of ``tests/mpi_cases`` modules: the modules selected at
    the same rank count share mpiexec jobs (:class:`CaseRunner`)."""
    runner = CaseRunner()
    runner.plan(_MPI_CASE_JOBS)
    return runner


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


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(config, items):
    """Tests that use the ``cupy`` fixture are GPU tests: ``-m gpu`` selects them.
    The mpiexec cases that will run are noted for :meth:`CaseRunner.plan`."""
    for item in items:
        if "cupy" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gpu)
        if getattr(item, "originalname", None) == "test_mpi_case" and not any(
            item.iter_markers("skip")
        ):
            params = item.callspec.params
            _MPI_CASE_JOBS.append((params["module"], params["nranks"]))
