"""The stall report: where every rank is, once a collective has waited too long.

A rank that waits in a collective for ``MLMPI_STALL_WARNING`` seconds
(default 30; ``0``: never) asks every other rank of the comms where it is,
over the comms' end channel (:mod:`mlmpi.comms._ends`), and prints the
answers: in which collective call and for how long, outside mlmpi since when
(and its last call), or no answer. Each rank's watcher thread answers, so a
rank blocked in its own MPI call or busy in Python answers too; only a dead
or frozen process does not. The job goes on: the collective timeout
(``MLMPI_TIMEOUT``) still ends it if the collective never completes. Like
Horovod's stall inspector, it names the straggler long before the timeout.
"""

import itertools
import sys
import time

from ._method import current_method
from ._method import whereabouts as _call_whereabouts

_ANSWER_WAIT = 2.0  # seconds to wait for every rank's answer
_POLL = 0.02
_questions = itertools.count(1)


def whereabouts(comms):
    """Where this rank is, with respect to ``comms``, in words."""
    current = comms._current
    if current is None:
        text = _call_whereabouts()
    else:
        waited = time.perf_counter() - current.start
        if current_method() is not None:
            call = _call_whereabouts()
        else:  # a raw comms call, outside the contract's methods
            call = f"in {current.method or 'Comms.' + current.op}"
        text = f"{call}, waiting in its collective #{current.sequence} ({current.op})"
        text += f" for {waited:.0f} s"
    failure = comms._last_failure
    if failure is not None:
        caught, when = failure
        text += f"; {time.monotonic() - when:.0f} s ago it failed with {caught}"
    return text


def stalled(comms, current):
    """Whether ``current``, the collective this rank waits in, is due a stall report."""
    limit = comms._stall_warning
    return (
        limit is not None
        and comms._ends.reported is not current
        and time.perf_counter() - current.start >= limit
    )


def report_stall(comms, current):
    """Ask every rank where it is and print the answers (stderr). Run by the
    watcher thread while the main thread waits in ``current``."""
    channel = comms._ends
    channel.reported = current
    question = next(_questions)
    channel.ask_where(question)
    answers = {comms.rank: whereabouts(comms)}
    deadline = time.monotonic() + _ANSWER_WAIT
    while len(answers) < comms.size and time.monotonic() < deadline:
        time.sleep(_POLL)
        channel.answer_where(lambda: whereabouts(comms))  # others may be asking too
        answers.update(channel.answers(question))
    waited = time.perf_counter() - current.start
    call = f" of {current.method}" if current.method is not None else ""
    lines = [
        f"mlmpi: rank {comms.rank} of {comms.size} ({comms.backend}) has waited {waited:.0f} s "
        f"in collective #{current.sequence} ({current.op}){call} "
        f"(MLMPI_STALL_WARNING={comms._stall_warning:g} s). Where each rank is:"
    ]
    for rank in range(comms.size):
        text = answers.get(rank, f"no answer within {_ANSWER_WAIT:g} s (dead or frozen?)")
        lines.append(f"  rank {rank}: {text}")
    lines.append(
        "A rank outside mlmpi, or in another call, is the one to look at: every rank must "
        "make the same collective calls in the same order. The job goes on waiting; "
        "MLMPI_TIMEOUT ends it if the collective never completes."
    )
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
