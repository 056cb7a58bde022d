"""A dead or stuck rank ends the whole job within seconds instead of hanging.

The jobs run ``tests/scripts/comms_fault.py`` with raw collectives; a hang
would run into ``run_mpi``'s 30 s timeout and fail the test.
"""

import sys

import pytest
from _mpi import HERE, run_mpi

SCRIPT = HERE / "scripts" / "comms_fault.py"
WITHIN = 30


def _run(argv, env=None):
    returncode, output, timed_out = run_mpi(2, argv, timeout=WITHIN, env=env)
    assert not timed_out, f"the job hung for {WITHIN} s:\n{output}"
    assert returncode != 0, output
    assert "the loop ended" not in output
    return output


@pytest.mark.parametrize("launch", [[], ["-m", "mpi4py"]], ids=["python", "python-m-mpi4py"])
def test_uncaught_exception_aborts_the_job(launch):
    output = _run([sys.executable, *launch, SCRIPT, "raise"])
    assert "RuntimeError: rank 1 fails on purpose" in output
    assert "mlmpi: uncaught RuntimeError on rank 1 of 2; aborting the MPI job" in output


def test_python_m_mpi4py_aborts_without_the_hook_too():
    output = _run(
        [sys.executable, "-m", "mpi4py", SCRIPT, "raise"], env={"MLMPI_ABORT_ON_ERROR": "0"}
    )
    # mpi4py aborts at once: the launcher may drop the traceback, so only
    # the end of the job (checked by _run) is certain.
    assert "mlmpi: uncaught" not in output


def test_timeout_names_the_collective_and_the_rank():
    output = _run([sys.executable, SCRIPT, "skip"], env={"MLMPI_TIMEOUT": "2"})
    # rank 0 waits in the agreement on its raw allreduce
    assert "mlmpi: Comms.allreduce is collective: every rank must call it" in output
    assert "collective 'agree' on rank 0 of 2 (mpi) did not complete" in output
    assert "MLMPI_TIMEOUT=2 s" in output


def test_a_stall_names_where_every_rank_is_before_the_timeout():
    env = {"MLMPI_STALL_WARNING": "1", "MLMPI_TIMEOUT": "6"}
    output = _run([sys.executable, SCRIPT, "stall"], env=env)
    report = output.index("mlmpi: rank 0 of 2 (mpi) has waited 1 s in collective #")
    assert "(MLMPI_STALL_WARNING=1 s). Where each rank is:" in output
    assert "  rank 0: in Comms.allreduce, waiting in its collective #" in output
    assert "  rank 1: outside mlmpi (no collective call yet)\n" in output
    assert report < output.index("did not complete within MLMPI_TIMEOUT=6 s")


def test_abort_hook_can_be_switched_off():
    # Without the hook, the dying rank still meets the others when it exits: the
    # end agreement ends the job, with no timeout.
    env = {"MLMPI_ABORT_ON_ERROR": "0", "MLMPI_TIMEOUT": "0"}
    output = _run([sys.executable, SCRIPT, "raise"], env=env)
    assert "RuntimeError: rank 1 fails on purpose" in output
    assert "mlmpi: uncaught" not in output
    assert (
        "mlmpi: Comms.allreduce is collective: rank 0 called it (call #4), rank 1 ended the "
        "program without calling it." in output
    )


FAIL_BEFORE_FIT = HERE / "scripts" / "fail_before_fit.py"


@pytest.mark.parametrize("others", [["fit", "0"], ["fit", "60"]], ids=["in-fit", "still-loading"])
def test_failure_before_any_mpi_call_ends_the_job(others):
    # Rank 1 dies after `import mlmpi`, before MPI is initialised anywhere;
    # the others wait in MPI_Init (in-fit) or are busy for a minute (still-loading).
    returncode, output, timed_out = run_mpi(
        3, [sys.executable, FAIL_BEFORE_FIT, *others], timeout=WITHIN
    )
    assert not timed_out, f"the job hung for {WITHIN} s:\n{output}"
    assert returncode != 0, output
    assert "FileNotFoundError: [Errno 2] No such file or directory" in output
    assert "mlmpi: uncaught FileNotFoundError on rank 1 of 3; aborting the MPI job" in output
    assert "fit returned" not in output
    if others[1] == "60":
        assert "loaded" not in output


def test_failure_before_any_mpi_call_can_be_left_alone():
    returncode, output, timed_out = run_mpi(
        2,
        [sys.executable, FAIL_BEFORE_FIT, "nompi", "2"],
        timeout=WITHIN,
        env={"MLMPI_ABORT_ON_ERROR": "0"},
    )
    assert not timed_out, output
    assert "FileNotFoundError" in output and "mlmpi: uncaught" not in output
    assert "rank 0: loaded" in output  # nobody killed rank 0
