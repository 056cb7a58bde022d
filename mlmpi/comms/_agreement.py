"""The ranks agree on every collective call before it runs, and meet once more
when the program ends.

:func:`agree_on_call` is the one synchronisation point of the collective
contract: a collective method or function (:mod:`mlmpi._contract`), a raw
comms collective called outside them, and the DNN trainer's step all agree
through it. Every agreement is the same MPI operation (a MAX allreduce of
:data:`~mlmpi.comms._calls.DIGEST_WORDS` int64), so two ranks in different
calls meet in it, see that their digests differ, exchange their calls and
raise the same error -- never MPI's "Message truncated". When the ranks
agree, that one 64-byte allreduce is the whole cost.

A rank that ends the program meets the others in a last agreement run by an
exit handler, so every rank gets the same clear error and the job ends with
a non-zero exit code. The agreement runs on the comms' end channel
(:mod:`mlmpi.comms._ends`), where a rank blocked in any collective joins it
from its watcher thread.
"""

import atexit
import sys
import threading
import time

from ._abort import FORWARD_SECONDS, abort_job
from ._calls import END_OF_PROGRAM, Call, check_calls, digest, digests_agree
from ._types import ReduceOp


def usage_error(problem):
    """The exception for a problem (a message or an exception) that every rank
    raises alike, marked so that the contract shows it at the user's line."""
    error = ValueError(problem) if isinstance(problem, str) else problem
    error.mlmpi_usage_error = True
    return error


def agree_on_call(comms, call):
    """Compare every rank's :class:`~mlmpi.comms._calls.Call` and raise the
    same ``ValueError`` on every rank if they differ.

    Notes
    -----
    This function is collective: one allreduce of 64 bytes per rank when the
    ranks agree, and one ``allgather_object`` of the calls when they do not;
    nothing for a single rank.
    """
    if comms.size == 1:
        return
    if call.method is not END_OF_PROGRAM:
        meet_at_exit(comms)
    comms._agreeing = call  # what this rank is in, should another one end meanwhile
    problem = None
    try:
        mine = digest(call)
        with comms._collective("agree", mine, method=call.method) as record:
            reduced = record.done(comms._allreduce(mine, ReduceOp.MAX))
        if not digests_agree(reduced):
            with comms._collective("agree.exchange", method=call.method):
                problem = check_calls(comms._allgather_object(call))
    finally:
        comms._agreeing = None
    if problem is not None:
        raise usage_error(problem)
    comms._agreed = call


# -- the end of the program ----------------------------------------------------------

_used = []  # multi-rank comms that agreed on a call: the exit handler meets them again


def meet_at_exit(comms):
    """Join an end-of-program agreement on ``comms`` when this process exits
    (before MPI finalizes). Every rank that makes a multi-rank comms calls
    this, so a rank that ends while others wait in a collective call meets them."""
    if comms.size == 1 or any(c is comms for c in _used):
        return
    if not _used:
        atexit.register(_end_of_program)  # after MPI's import: runs before it finalizes
    _used.append(comms)


def _abort_with(message):
    sys.stderr.write(f"mlmpi: {message}\n")
    sys.stderr.flush()
    time.sleep(FORWARD_SECONDS)  # let the launcher forward the message
    abort_job(1)


def _call_in(comms, collective):
    """The :class:`Call` a rank makes with ``collective`` (a comms' collective
    record): the call it agrees on, the one it agreed on last, or the raw
    comms call."""
    if comms._agreeing is not None:
        return comms._agreeing
    if collective.method is not None:
        return comms._agreed or Call(collective.method)
    return Call(f"Comms.{collective.op}", collective.count)


def end_message(states):
    """The error for the gathered ``(ending, collectives started, call)`` of
    every rank at the end agreement, or None when every rank ended after the
    same collectives. A rank that started more collectives than the fewest is
    in (or made last) its ``call``; the others ended without making it."""
    fewest = min(started for _, started, _ in states)
    calls = [
        Call(END_OF_PROGRAM) if ending and started == fewest else call
        for ending, started, call in states
    ]
    return check_calls(calls)


def meet_ended_ranks(comms, collective):
    """Join the end agreement of ranks that ended without making ``collective``,
    the one this rank's main thread waits in, then end the job with the
    agreed message. Run by the watcher thread of :mod:`mlmpi.comms._ends`."""
    if not comms._ends.claim():
        return  # the main thread is ending the program: it meets them itself
    state = (False, collective.sequence, _call_in(comms, collective))
    message = end_message(comms._ends.allgather_object(state))
    _abort_with(message or f"Comms.{collective.op}: another rank ended the program.")


def _end_of_program():
    """Meet the other ranks once more: a rank still waiting in a collective
    learns that this one ended without making it, and a rank that made
    collectives the others did not (a root's ``bcast`` can return alone) is
    told so. A rank dying of an uncaught exception gets here only when the
    abort hook is off: it meets the others too, so that none waits forever."""
    channels = [comms for comms in _used if comms._ends is not None]
    for comms in channels:  # every notice first: a rank may wait on any of the comms
        if not comms._ends.claim():
            threading.Event().wait()  # the watcher is ending the job
        comms._ends.announce(comms._started)
    for comms in _used:
        if comms._ends is None:
            try:
                agree_on_call(comms, Call(END_OF_PROGRAM))
            except ValueError as exc:
                _abort_with(exc)
            continue
        last = None if comms._last is None else _call_in(comms, comms._last)
        message = end_message(comms._ends.allgather_object((True, comms._started, last)))
        if message is not None:
            _abort_with(message)
        comms._ends.finish()
