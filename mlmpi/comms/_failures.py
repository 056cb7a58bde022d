"""A failure on one rank inside a collective call reaches every rank of it.

MPI cannot cancel a collective. A rank waiting in one that a failed rank will
never make would wait until ``MLMPI_TIMEOUT`` and then end the job, without a
word of the failure. So :class:`~mlmpi.comms.MPIComms` waits for every
collective in small steps (:func:`wait_for`), and:

1. a rank whose collective call fails (an exception leaves a method or
   function of the collective contract, or a fold of a search) *announces*
   it: it sends every other rank a :class:`FailureNotice` on the comms' end
   channel (:mod:`mlmpi.comms._ends`) and moves on to the comms' next
   *generation*;
2. a rank waiting in a collective of that generation that the failed rank
   never started (the notice says how many it started; collectives are
   numbered alike on every rank) reads the notice, leaves the collective (its
   request and buffers are kept, never reused), moves on too and raises
   :class:`RankFailedError`, which names the failed rank, its call and its
   exception. A collective the failed rank did start will complete: the rank
   waits for it and keeps the notice for its next collective;
3. moving on makes a fresh duplicate of the comms' parent communicator, once
   per failure on every rank, so that no collective left behind can meet a
   later one; the ranks then agree on how many collectives they made.

A search or a cross-validation catches both exceptions in a fold and agrees on
the fold's outcome (:mod:`mlmpi.model_selection._failures`).

Each failure leaves one communicator and the buffers of the collective left
behind allocated until the program ends. NCCL collectives cannot be left
either: an NCCL comms ends the job with the failure's message instead.
"""

import os
import time
from dataclasses import dataclass

_LOOK_EVERY = 0.005  # seconds between two looks for a notice while a collective waits
_POLLS_BEFORE_YIELD = 16  # then give the core away between polls (ranks may share cores)
_TEXT_LIMIT = 4000  # characters of an exception's text sent in a notice


class RankFailedError(RuntimeError):
    """Another rank failed inside the collective call this rank was making.

    Raised on the ranks that waited for the failed one; the failed rank
    raises its own exception. The job can go on: every rank has left the
    call, and the next collective call starts afresh.

    Parameters
    ----------
    rank : int
        The rank that failed.
    size : int
        The number of ranks of the comms.
    method : str
        The collective call it failed in (``"GridSearchCV.fit"``).
    error_type : str
        The name of its exception's class.
    error_message : str
        Its exception's text.

    Attributes
    ----------
    rank, size, method, error_type, error_message
        The parameters.

    Examples
    --------
    >>> from mlmpi.comms import RankFailedError
    >>> error = RankFailedError(1, 2, "KMeans.fit", "ValueError", "Input X contains NaN.")
    >>> print(error)  # doctest: +NORMALIZE_WHITESPACE
    rank 1 of 2 failed in KMeans.fit: ValueError: Input X contains NaN. (this rank left the
    collective it was waiting in; the other ranks did too)
    """

    def __init__(self, rank, size, method, error_type, error_message):
        self.rank = rank
        self.size = size
        self.method = method
        self.error_type = error_type
        self.error_message = error_message
        super().__init__(
            f"rank {rank} of {size} failed in {method}: {error_type}: {error_message} "
            "(this rank left the collective it was waiting in; the other ranks did too)"
        )

    def __reduce__(self):
        return type(self), (
            self.rank,
            self.size,
            self.method,
            self.error_type,
            self.error_message,
        )


@dataclass(frozen=True)
class FailureNotice:
    """What a failed rank tells the others: the generation of the comms it
    failed in, how many collectives it started in it, its rank, its call and
    its exception's class name and text."""

    generation: int
    started: int
    rank: int
    method: str
    error_type: str
    error_message: str

    @classmethod
    def of(cls, error, comms, method):
        text = str(error)
        if len(text) > _TEXT_LIMIT:
            text = text[:_TEXT_LIMIT] + " [...]"
        return cls(
            comms._generation,
            comms._started,
            comms.rank,
            method or "a collective call",
            type(error).__name__,
            text,
        )

    def error(self, size):
        return RankFailedError(self.rank, size, self.method, self.error_type, self.error_message)


def announced(error):
    """Whether the ranks already know of ``error``: announced once, raised on
    every rank by an agreement, or the notice of another rank's failure."""
    return isinstance(error, RankFailedError) or any(
        getattr(error, flag, False) for flag in ("mlmpi_announced", "mlmpi_usage_error")
    )


def mark_announced(error):
    try:
        error.mlmpi_announced = True
    except AttributeError:  # an exception type with __slots__: announced again, harmlessly
        pass


def wait_for(comms, test, keep):
    """Poll ``test()`` until the collective it tests completes.

    Between polls, every :data:`_LOOK_EVERY` seconds, look for another
    rank's failure notice of ``comms``' generation; on one, leave the
    collective (``keep``: what MPI may still write into or read from, kept
    alive with it), move on to the next generation and raise
    :class:`RankFailedError`.
    """
    if test():
        return
    polls = 0
    look = time.perf_counter() + _LOOK_EVERY
    while not test():
        polls += 1
        if polls > _POLLS_BEFORE_YIELD:
            os.sched_yield()
        if comms._ends is not None and time.perf_counter() > look:
            notice = comms._notice or comms._ends.failure_notice(comms._generation)
            comms._notice = notice
            current = comms._current
            waiting_in = comms._started if current is None else current.sequence
            if notice is not None and waiting_in > notice.started:
                comms._left_behind.append((test, keep))
                comms._move_on()
                raise notice.error(comms.size)
            look = time.perf_counter() + _LOOK_EVERY
