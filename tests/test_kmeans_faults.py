"""A rank that dies or skips a collective in KMeans.fit ends the job, never hangs it."""

import sys
import time
from pathlib import Path

import pytest
from _mpi import run_mpi

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def _run(argv, env=None):
    start = time.monotonic()
    returncode, output, timed_out = run_mpi(2, argv, timeout=60, env=env)
    return returncode, output, timed_out, time.monotonic() - start


@pytest.mark.parametrize("launcher", [[], ["-m", "mpi4py"]], ids=["excepthook", "mpi4py-run"])
def test_exception_on_one_rank_aborts_the_job(launcher):
    returncode, output, timed_out, elapsed = _run(
        [sys.executable, *launcher, SCRIPTS / "kmeans_raise.py"], env={"MLMPI_ABORT_ON_ERROR": "1"}
    )
    assert not timed_out, output
    assert returncode != 0, output
    assert elapsed < 30, (elapsed, output)
    assert "injected failure" in output
    assert "fit returned" not in output


def test_skipped_collective_times_out():
    returncode, output, timed_out, elapsed = _run(
        [sys.executable, SCRIPTS / "kmeans_skip.py"], env={"MLMPI_TIMEOUT": "3"}
    )
    assert not timed_out, output
    assert returncode != 0, output
    assert elapsed < 30, (elapsed, output)
    assert "did not complete within MLMPI_TIMEOUT" in output
    assert "collective '" in output
