"""The cores of a test run with several workers: the mpiexec case jobs
(``_mpi.CaseRunner``, minutes each) run with no other test beside them.

Any process beside a job's ranks slows the whole job, because its ranks wait
for each other at every collective (on the 2-core CI machine, a case job beside
a busy worker took 2.3 times as long). So under xdist every test holds a
shared claim on the cores while it runs (conftest's
``pytest_runtest_protocol``, fixtures included), and :func:`alone` trades it
for an exclusive claim for the length of a job. Shorter jobs (the examples,
the mistakes, a case module run alone or with its own environment: seconds
each) run beside the other tests: waiting for the running tests to end would
cost more than sharing the cores (measured: the examples and mistakes that
took the cores alone waited up to a minute and a half each behind a suite
run or the docs build; two CuPy stand-in case jobs waited 78 s for 8 s of
work). Two ``flock`` files make
the exclusive claim win: a waiting job holds the *turnstile*, which every
claim passes through, so no test starts until the job has run. A claim
that cannot be had within :data:`PATIENCE` seconds is given up with a
warning: a slow run, never a stuck one.

The controller names the lock directory in :data:`VARIABLE` before the workers
start; without it (one process, ``-n 0``, or a pytest run inside a test)
every claim is a no-op.
"""

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
import types
import warnings
from pathlib import Path

#: Environment variable naming the directory of the two lock files.
VARIABLE = "MLMPI_TEST_CORES"
#: Longest wait for a claim, in seconds (longer than any one test should hold one).
PATIENCE = 900

#: This process's shared claim, while it holds one: its open lock files (a
#: process's threads share it: a job started from any of them trades it).
_shared = types.SimpleNamespace(files=None)


def configure(workers):
    """On a controller: make the lock directory and name it in :data:`VARIABLE`
    when there are ``workers`` (before they start, so that they inherit it);
    otherwise drop a name inherited from a test that started this run (the
    run's claims would wait on that test's own)."""
    if workers:
        os.environ[VARIABLE] = tempfile.mkdtemp(prefix="mlmpi-cores-")
    else:
        os.environ.pop(VARIABLE, None)


def remove():
    """On the controller, after the run: remove the lock directory."""
    directory = os.environ.pop(VARIABLE, None)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)


def _open(name):
    return open(Path(os.environ[VARIABLE]) / name, "a")


def _lock(file, operation):
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            fcntl.flock(file, operation | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                warnings.warn(
                    f"no claim on the cores after {PATIENCE} s; going on without", stacklevel=3
                )
                return
            time.sleep(0.02)


def _claim(operation):
    """Pass the turnstile, then take the cores with ``operation`` (``LOCK_SH`` or
    ``LOCK_EX``); return the files whose closing lets go. An exclusive claim keeps
    the turnstile until then, so that no other claim starts meanwhile."""
    turnstile = _open("turnstile")
    _lock(turnstile, fcntl.LOCK_EX)
    cores = _open("cores")
    _lock(cores, operation)
    if operation == fcntl.LOCK_SH:
        turnstile.close()
        return [cores]
    return [cores, turnstile]


def _let_go(files):
    for file in files:
        file.close()


@contextlib.contextmanager
def shared():
    """Hold a shared claim on the cores (under xdist) while the body runs."""
    if VARIABLE not in os.environ:
        yield
        return
    outer = _shared.files  # a claim through other lock files
    _shared.files = _claim(fcntl.LOCK_SH)
    try:
        yield
    finally:
        _let_go(_shared.files)
        _shared.files = outer


@contextlib.contextmanager
def alone(wanted=True):
    """Hold the cores alone while the body runs (under xdist, when ``wanted``):
    this process's shared claim is given up meanwhile and taken again after."""
    if VARIABLE not in os.environ or not wanted:
        yield
        return
    held = _shared.files
    if held is not None:
        _let_go(held)
        _shared.files = None
    files = _claim(fcntl.LOCK_EX)
    try:
        yield
    finally:
        _let_go(files)
        if held is not None:
            _shared.files = _claim(fcntl.LOCK_SH)
