"""User mistakes that end the job (tests/scripts/mistakes.py): every rank reports
the same clear error, the job exits non-zero within seconds of the mistake, and
MPI never reports a fatal error of its own ("Message truncated"). The mistakes
include raw comms collectives (``comms.allreduce`` under ``if rank == 0:``),
which without the end channel hung, returned wrong data or died of MPI errors."""

import re
import sys
import time

import pytest
from _mpi import HERE, run_mpi

SCRIPT = HERE / "scripts" / "mistakes.py"
HANG = 180  # the launcher's timeout: a hang fails the test, never the CI
WITHIN = 30  # seconds from the mistake to the end of the job, with the default settings

MISTAKES = {  # the message each mistake must give on every rank
    "score_on_rank_0": (
        "KMeans.score is collective: rank 0 called it (call #1), {others} ended the program "
        "without calling it. Every rank must make the same collective calls"
    ),
    "skipped_fit": (
        "LogisticRegression.fit is collective: {firsts} called it (call #1), rank {last} ended "
        "the program without calling it."
    ),
    "uneven_partial_fit": (
        "PCA.partial_fit is collective: rank {last} called it (call #3), {firsts} ended the "
        "program without calling it. Every rank must make the same collective calls in the same "
        "order (the same number of partial_fit/predict chunks"
    ),
    "uneven_predict": (
        "KNeighborsClassifier.predict is collective: rank {last} called it (call #3), {firsts} "
        "ended the program without calling it."
    ),
    "raw_allreduce": (
        "Comms.allreduce is collective: rank 0 called it (call #2), {others} ended the program "
        "without calling it. Every rank must make the same collective calls"
    ),
    "raw_bcast": (
        "Comms.bcast is collective: rank 0 called it (call #1), {others} ended the program "
        "without calling it."
    ),
    "raw_barrier": (
        "Comms.barrier is collective: rank 0 called it (call #1), {others} ended the program "
        "without calling it."
    ),
    "uneven_batches_then_metrics": (
        "The ranks disagree on the collective call: {firsts} called allreduce_metrics "
        "(call #1); rank {last} called DistributedOptimizer.step (call #4). A rank ran out of "
        "batches: give every rank the same number of batches (mlmpi.dnn.DistributedSampler "
        "with drop_last=True) or train inside `with optimizer.join():`."
    ),
    "uneven_batches_then_end": (
        "DistributedOptimizer.step is collective: rank {last} called it (call #4), {firsts} "
        "ended the program without calling it. A rank ran out of batches"
    ),
    "as_sklearn_on_rank_0": (  # rank 0 holds no rows of the neighbours' index
        "KNeighborsClassifier.as_sklearn is collective: rank 0 called it (call #1), {others} "
        "ended the program without calling it. Every rank must make the same collective calls"
    ),
}

# Every rank prints the message of a mistake caught when ranks end the program
# before any rank aborts; where every rank raises instead, the first abort may
# cut the other ranks' tracebacks.
EVERY_RANK_PRINTS = set(MISTAKES) - {"uneven_batches_then_metrics"}


def _ranks(ranks):
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def _at_three_and_two_ranks_in_turn(params):
    """``(*param, nranks)`` for each of ``params``, at 3 and 2 ranks in turn: each
    mistake once (a job each; both counts for each doubled this file's time),
    three ranks putting two ranks on a side of it, two giving the messages'
    one-rank forms."""
    return [(*param, 3 if i % 2 == 0 else 2) for i, param in enumerate(params)]


@pytest.mark.parametrize(
    "mistake, nranks", _at_three_and_two_ranks_in_turn([(name,) for name in MISTAKES])
)
def test_mistake_ends_the_job_with_one_clear_error(mistake, nranks):
    dnn = "batches" in mistake
    if dnn:
        pytest.importorskip("torch")
    expected = MISTAKES[mistake].format(
        others=_ranks(range(1, nranks)), firsts=_ranks(range(nranks - 1)), last=nranks - 1
    )
    argv = [sys.executable, SCRIPT, mistake] + (["dnn"] if dnn else [])
    returncode, output, timed_out = run_mpi(nranks, argv, timeout=HANG)
    ended = time.time()
    assert not timed_out, f"the job hung for {HANG} s:\n{output}"
    assert returncode != 0, output
    assert expected in output, output
    # Every rank raised (or, ending, printed) the same message. The ranks write to
    # one pipe, so a line may hold the ends of two ranks' lines: each message is
    # read from its "ValueError: " or "mlmpi: " prefix up to the end of the line.
    messages = [
        piece.splitlines()[0]
        for piece in re.split(r"ValueError: |mlmpi: ", output)
        if piece.startswith(expected[:40])
    ]
    assert messages, output
    if mistake in EVERY_RANK_PRINTS:
        assert len(messages) == nranks, output
    assert all(message.startswith(expected) for message in messages), messages
    assert "Fatal error" not in output and "truncated" not in output, output
    starts = [float(t) for t in re.findall(r"rank \d+: start ([\d.]+)", output)]
    assert len(starts) == nranks, output
    assert ended - min(starts) < WITHIN, f"{ended - min(starts):.1f} s\n{output}"


EARLY_END = HERE / "scripts" / "early_end.py"


@pytest.mark.parametrize(
    "mode, runner, nranks",
    _at_three_and_two_ranks_in_turn(
        [("before_any_comms", False), ("exit_before_import", True), ("raise_before_import", True)]
    ),
)
def test_a_rank_that_ends_before_any_collective_meets_the_others(mode, runner, nranks):
    # Without the import-time join (or the runner), the others waited in MPI_Init forever.
    others = _ranks(range(nranks - 1))
    argv = [sys.executable, *(["-m", "mlmpi"] if runner else []), EARLY_END, mode]
    returncode, output, timed_out = run_mpi(nranks, argv, timeout=HANG)
    ended = time.time()
    assert not timed_out, f"the job hung for {HANG} s:\n{output}"
    assert returncode != 0, output
    if mode == "raise_before_import":
        # The ranks write to one pipe, and the others' start lines, written
        # meanwhile, may land inside the failing rank's lines: read them without.
        alone = re.sub(r"rank \d+: start [\d.]+", "", output).replace("\n", "")
        assert f"RuntimeError: rank {nranks - 1} fails before importing mlmpi" in alone, output
        assert f"mlmpi: uncaught RuntimeError on rank {nranks - 1} of {nranks}" in alone, output
    else:
        expected = (
            f"mlmpi: StandardScaler.fit is collective: {others} called it (call #1), rank "
            f"{nranks - 1} ended the program without calling it."
        )
        assert output.count(expected) == nranks, output  # every rank says so
    assert "done" not in output.replace(f"rank {nranks - 1}: done", "")
    assert "Fatal error" not in output and "PMI" not in output, output
    starts = [float(t) for t in re.findall(r"rank \d+: start ([\d.]+)", output)]
    assert len(starts) == nranks, output
    assert ended - min(starts) < WITHIN, f"{ended - min(starts):.1f} s\n{output}"
