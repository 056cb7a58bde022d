"""How a rank that ends the program reaches the ranks still waiting in a collective.

Every rank that ends the program meets the others in one last agreement (see
:mod:`mlmpi.comms._agreement`). A rank whose main thread is blocked in a collective
that the ending rank never made (``comms.allreduce(x)`` under ``if rank ==
0:``) cannot join that agreement itself, and the agreement must not meet its
collective on the same communicator (a hang, wrong data or MPI's "Message
truncated"). So the agreement runs on an :class:`EndChannel`, a duplicate of
the comms' MPI communicator that no collective uses:

1. the ending rank sends every other rank a notice on the channel: how many
   collectives it started on this comms;
2. while a rank's main thread has been in its collective number ``M`` for a
   moment, the :class:`_Watcher` thread reads the notices: a rank that ended
   after fewer than ``M`` collectives never made this one;
3. the watcher then joins the agreement with the call its main thread is in,
   so every rank prints the same message, and the job ends.

The collectives themselves send nothing more (the hot path only counts them);
notices are read only while a collective has lasted at least
:data:`_SETTLE` seconds.
"""

import threading
import time
import weakref

import numpy as np

from ._stalls import report_stall, stalled, whereabouts

_TAG = 0x6D6C  # the end notices' tag ("ml")
_FAILURE_TAG = 0x6D66  # failure notices' tag ("mf", :mod:`mlmpi.comms._failures`)
_WHERE_TAG = 0x6D77  # a stall report's question ("mw", :mod:`mlmpi.comms._stalls`)
_HERE_TAG = 0x6D68  # and its answers ("mh")
_POLL = 0.05  # seconds between the watcher's looks
_SETTLE = 0.2  # a collective younger than this is not looked at: it is likely finishing


class EndChannel:
    """The end-of-program channel of one multi-rank comms.

    Creating it is collective over ``comm`` (an mpi4py intracommunicator): it
    duplicates it.
    """

    def __init__(self, comm):
        self.comm = comm.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.ended = {}  # rank -> collectives it started before it ended
        self._lock = threading.Lock()
        self._claimed = False
        self._sends = []
        self._notice = None
        self._small_sends = []  # notices, questions, answers: small (eager), not waited for
        self.reported = None  # the last collective a stall report was made for

    def claim(self):
        """True for the first caller only: the main thread ending the program
        or the watcher meeting the ranks that ended, never both."""
        with self._lock:
            claimed, self._claimed = self._claimed, True
            return not claimed

    def announce(self, started):
        """Tell every other rank that this one ends after ``started`` collectives."""
        self._notice = np.array([started], dtype=np.int64)  # alive until the sends complete
        self._sends = [
            self.comm.Isend(self._notice, dest=rank, tag=_TAG)
            for rank in range(self.size)
            if rank != self.rank
        ]

    def receive(self):
        """The notices so far: ``{rank: collectives it started before it ended}``."""
        from mpi4py import MPI

        status = MPI.Status()
        with self._lock:
            while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG, status=status):
                self._receive_from(status.Get_source())
            return dict(self.ended)

    def _receive_from(self, rank):
        notice = np.empty(1, dtype=np.int64)
        self.comm.Recv(notice, source=rank, tag=_TAG)
        self.ended[rank] = int(notice[0])

    def send_failure(self, notice):
        """Tell every other rank of this rank's failure (a
        :class:`~mlmpi.comms._failures.FailureNotice`)."""
        self._small_sends += [
            self.comm.isend(notice, dest=rank, tag=_FAILURE_TAG)
            for rank in range(self.size)
            if rank != self.rank
        ]

    def failure_notice(self, generation):
        """The first notice of a failure in ``generation`` received so far, or
        None; notices of earlier generations (the ranks moved on since) are dropped."""
        from mpi4py import MPI

        status = MPI.Status()
        with self._lock:
            while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_FAILURE_TAG, status=status):
                notice = self.comm.recv(source=status.Get_source(), tag=_FAILURE_TAG)
                if notice.generation == generation:
                    return notice
        return None

    def ask_where(self, question):
        """Ask every other rank where it is (``question``: a number naming the ask)."""
        self._small_sends += [
            self.comm.isend(question, dest=rank, tag=_WHERE_TAG)
            for rank in range(self.size)
            if rank != self.rank
        ]

    def answer_where(self, whereabouts):
        """Answer every question received so far with ``whereabouts()`` (text)."""
        from mpi4py import MPI

        status = MPI.Status()
        with self._lock:
            while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_WHERE_TAG, status=status):
                rank = status.Get_source()
                question = self.comm.recv(source=rank, tag=_WHERE_TAG)
                self._small_sends.append(
                    self.comm.isend((question, whereabouts()), dest=rank, tag=_HERE_TAG)
                )

    def answers(self, question):
        """``{rank: whereabouts}`` of the answers to ``question`` received so far
        (answers to earlier questions are dropped)."""
        from mpi4py import MPI

        status = MPI.Status()
        found = {}
        with self._lock:
            while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_HERE_TAG, status=status):
                rank = status.Get_source()
                asked, text = self.comm.recv(source=rank, tag=_HERE_TAG)
                if asked == question:
                    found[rank] = text
        return found

    def allgather_object(self, obj):
        """Every rank's ``obj`` (the end agreement). Collective over the channel."""
        return self.comm.allgather(obj)

    def finish(self):
        """After an agreement every rank joined: complete every notice, sent and
        received, so that MPI finalizes with nothing in flight."""
        from mpi4py import MPI

        MPI.Request.Waitall(self._sends)
        with self._lock:
            for rank in range(self.size):
                if rank != self.rank and rank not in self.ended:
                    self._receive_from(rank)


class _Watcher:
    """One daemon thread per process that looks, for every comms with an
    :class:`EndChannel`, whether a rank ended without making the collective
    this rank's main thread waits in; if so it calls ``meet`` (the contract's
    last agreement) with the comms and that collective."""

    def __init__(self):
        self._comms = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread = None
        self.meet = None

    def watch(self, comms, meet):
        with self._lock:
            self._comms.add(comms)
            self.meet = meet
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mlmpi-ends", daemon=True)
                self._thread.start()

    def _run(self):
        while True:
            time.sleep(_POLL)
            with self._lock:
                watched = list(self._comms)
            for comms in watched:
                comms._ends.answer_where(lambda comms=comms: whereabouts(comms))
                current = comms._current
                if current is None or time.perf_counter() - current.start < _SETTLE:
                    continue
                ended = comms._ends.receive()
                if any(started < current.sequence for started in ended.values()):
                    self.meet(comms, current)
                elif stalled(comms, current):
                    report_stall(comms, current)


_watcher = _Watcher()


def watch_ends(comms, comm, meet):
    """Give ``comms`` (of more than one rank) an end channel over the mpi4py
    ``comm`` and watch it: ``meet(comms, collective)`` runs when a rank ended
    without making the collective this rank waits in. Collective over ``comm``."""
    comms._ends = EndChannel(comm)
    _watcher.watch(comms, meet)
