"""The test workers' claims on the cores (``tests/_cores.py``): a job that
wants the cores alone waits for the running tests, and no test starts while
it waits or runs."""

import threading
import time

import _cores
import pytest

#: Long enough for a thread that could go ahead to have gone ahead.
SETTLE = 0.3


@pytest.fixture
def claims(tmp_path, monkeypatch):
    """Claims on the cores through lock files in ``tmp_path``; ``events``
    lists what the threads did, in order."""
    monkeypatch.setenv(_cores.VARIABLE, str(tmp_path))
    return []


def _in_thread(events, name, claim, release):
    def body():
        with claim():
            events.append(f"{name} in")
            release.wait(10)
        events.append(f"{name} out")

    thread = threading.Thread(target=body)
    thread.start()
    return thread


def test_a_job_waits_for_the_running_tests_and_holds_off_new_ones(claims):
    events = claims
    running, job, later = threading.Event(), threading.Event(), threading.Event()
    threads = [_in_thread(events, "test", _cores.shared, running)]
    time.sleep(SETTLE)
    threads.append(_in_thread(events, "job", _cores.alone, job))
    time.sleep(SETTLE)
    threads.append(_in_thread(events, "later test", _cores.shared, later))
    time.sleep(SETTLE)
    assert events == ["test in"]  # the job waits for the test; the later test for the job
    running.set()
    time.sleep(SETTLE)
    assert events == ["test in", "test out", "job in"]
    job.set()
    later.set()
    for thread in threads:
        thread.join(10)
    assert events[3:] == ["job out", "later test in", "later test out"]


def test_tests_share_the_cores(claims):
    events = claims
    release = threading.Event()
    threads = [_in_thread(events, name, _cores.shared, release) for name in ("one", "two")]
    time.sleep(SETTLE)
    assert sorted(events) == ["one in", "two in"]
    release.set()
    for thread in threads:
        thread.join(10)


def test_a_test_that_starts_a_job_gives_up_its_claim_meanwhile(claims):
    events = claims
    with _cores.shared():
        with _cores.alone():  # would wait forever on this thread's own claim otherwise
            events.append("job")
        release = threading.Event()
        other = _in_thread(events, "other test", _cores.shared, release)
        time.sleep(SETTLE)
        release.set()
        other.join(10)
    assert events == ["job", "other test in", "other test out"]


def test_without_the_variable_claims_are_free(monkeypatch):
    monkeypatch.delenv(_cores.VARIABLE, raising=False)
    with _cores.shared(), _cores.alone(), _cores.alone():
        pass
