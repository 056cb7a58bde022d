"""The test workers' claims on the cores (``tests/_cores.py``): a job that
wants the cores alone waits for the running tests, and no test starts while
it waits or runs. Each claimant is a process of its own, as a test worker is."""

import contextlib
import multiprocessing
import time

import _cores
import pytest

#: Long enough for a process that could go ahead to have gone ahead.
SETTLE = 0.5
FORK = multiprocessing.get_context("fork")


@pytest.fixture
def log(tmp_path, monkeypatch):
    """Claims through lock files in ``tmp_path``; the claimants write what they
    did, in order, to the returned file."""
    monkeypatch.setenv(_cores.VARIABLE, str(tmp_path))
    monkeypatch.setattr(_cores, "PATIENCE", 10)  # a claim that waits on itself gives up then
    path = tmp_path / "log"
    path.touch()
    return path


def _events(log):
    return log.read_text().splitlines()


def _events_once(log, count, timeout=20):
    """The log once it holds ``count`` events (a loaded machine may take more
    than SETTLE to run the next claimant), or as it is at the timeout."""
    deadline = time.monotonic() + timeout
    while len(_events(log)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return _events(log)


def _claimant(log, name, claim, release):
    def body():
        _cores._shared.files = None  # not the claim of the worker that forked it

        def write(event):
            with open(log, "a") as f:
                f.write(f"{name} {event}\n")

        with claim():
            write("in")
            release.wait(20)
            write("out")  # while still holding the claim: the next claimant's "in" comes after

    process = FORK.Process(target=body)
    process.start()
    return process


def _join(processes, timeout=20):
    for process in processes:
        process.join(timeout)
        assert process.exitcode == 0


def test_a_job_waits_for_the_running_tests_and_holds_off_new_ones(log):
    running, job, later = FORK.Event(), FORK.Event(), FORK.Event()
    processes = [_claimant(log, "test", _cores.shared, running)]
    time.sleep(SETTLE)
    processes.append(_claimant(log, "job", _cores.alone, job))
    time.sleep(SETTLE)
    processes.append(_claimant(log, "later", _cores.shared, later))
    time.sleep(SETTLE)
    assert _events(log) == ["test in"]  # the job waits for the test, the later test for the job
    running.set()
    assert _events_once(log, 3) == ["test in", "test out", "job in"]
    time.sleep(SETTLE)
    assert _events(log) == ["test in", "test out", "job in"]  # the later test still waits
    job.set()
    later.set()
    _join(processes)
    assert _events(log)[3:] == ["job out", "later in", "later out"]


def test_tests_share_the_cores(log):
    release = FORK.Event()
    processes = [_claimant(log, name, _cores.shared, release) for name in ("one", "two")]
    assert sorted(_events_once(log, 2)) == ["one in", "two in"]
    release.set()
    _join(processes)


def test_a_test_that_starts_a_job_gives_up_its_claim_meanwhile(log):
    @contextlib.contextmanager
    def test_with_a_job():
        with _cores.shared(), _cores.alone():  # would wait on its own claim otherwise
            yield

    release = FORK.Event()
    release.set()
    _join([_claimant(log, "test with a job", test_with_a_job, release)], timeout=5)
    assert _events(log) == ["test with a job in", "test with a job out"]


def test_without_the_variable_claims_are_free(monkeypatch):
    monkeypatch.delenv(_cores.VARIABLE, raising=False)
    with _cores.shared(), _cores.alone(), _cores.alone():
        pass
