"""Optional per-collective timeline and profiling.

Every collective of every backend passes through :func:`record`. Nothing is
kept unless a recorder is active: either the :func:`profile` context manager,
or the Chrome-trace timeline switched on with ``MLMPI_TIMELINE=path.json``.
"""

import atexit
import json
import os
import sys
import time
from collections import defaultdict
from contextlib import contextmanager

_recorders = []
_labels = {}  # extra timeline args of the collectives recorded now (see label)


def active():
    """True when some recorder wants events (cheap check for the hot path)."""
    return bool(_recorders)


def record(op, nbytes, start, seconds, rank, backend, received=0):
    """Hand one finished collective to every active recorder.

    ``nbytes`` is what this rank passed in (the bytes it contributes or
    sends), ``received`` the size of what it got back (the result): the
    payloads' sizes, not the bytes on the wire, which depend on MPI's
    algorithm (a ring allreduce moves about twice its buffer per rank)."""
    for recorder in _recorders:
        recorder.add(op, nbytes, start, seconds, rank, backend, received)


class ProfileSummary:
    """Collectives seen inside a :func:`profile` block, summed per operation.

    Attributes
    ----------
    events : list of tuple
        ``(op, nbytes, start, seconds, rank, backend, received)`` for every
        collective: ``nbytes`` sent (this rank's payload), ``received`` the
        bytes of its result.
    """

    def __init__(self):
        self.events = []

    def add(self, op, nbytes, start, seconds, rank, backend, received=0):
        self.events.append((op, nbytes, start, seconds, rank, backend, received))

    def rows(self):
        """List of ``(op, calls, bytes, seconds)`` sorted by total seconds, largest first."""
        calls = defaultdict(int)
        nbytes = defaultdict(int)
        seconds = defaultdict(float)
        for op, size, _, secs, *_ in self.events:
            calls[op] += 1
            nbytes[op] += size
            seconds[op] += secs
        return sorted(
            ((op, calls[op], nbytes[op], seconds[op]) for op in calls),
            key=lambda row: -row[3],
        )

    @property
    def total_seconds(self):
        """Seconds spent inside collectives (this rank)."""
        return sum(event[3] for event in self.events)

    @property
    def total_bytes(self):
        """Bytes this rank passed to collectives (sent)."""
        return sum(event[1] for event in self.events)

    @property
    def total_received(self):
        """Bytes of the results this rank got back from collectives (received)."""
        return sum(event[6] for event in self.events)

    def table(self):
        """The summary as a fixed-width text table."""
        rows = self.rows()
        w = max([18] + [len(op) + 2 for op, *_ in rows])  # "KMeans.fit/allreduce" and the like
        lines = [f"{'op':<{w}}{'calls':>8}{'bytes':>14}{'seconds':>12}"]
        for op, calls, size, secs in rows:
            lines.append(f"{op:<{w}}{calls:>8}{size:>14}{secs:>12.6f}")
        lines.append(
            f"{'total':<{w}}{len(self.events):>8}{self.total_bytes:>14}{self.total_seconds:>12.6f}"
        )
        return "\n".join(lines)

    def __str__(self):
        return self.table()


@contextmanager
def label(**fields):
    """Add ``fields`` (e.g. ``bucket=3, step=12``) to the timeline args of
    every collective recorded inside the block."""
    saved = dict(_labels)
    _labels.update(fields)
    try:
        yield
    finally:
        _labels.clear()
        _labels.update(saved)


@contextmanager
def profile():
    """Record the collectives run inside the block.

    Only this rank's collectives are seen. A collective run inside an
    estimator's collective method is named after the method, e.g.
    ``KMeans.fit/allreduce``.

    Yields
    ------
    summary : ProfileSummary
        Print it (or call ``.table()``) for ``op, calls, bytes, seconds``;
        ``.rows()`` gives the same as tuples.

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi import KMeans
    >>> from mlmpi.comms import profile
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> with profile() as prof:
    ...     km = KMeans(n_clusters=2, n_init=1, random_state=0).fit(X)
    >>> all(op.startswith("KMeans.fit/") for op, calls, nbytes, seconds in prof.rows())
    True
    """
    summary = ProfileSummary()
    _recorders.append(summary)
    try:
        yield summary
    finally:
        _recorders.remove(summary)


class _Timeline:
    def __init__(self, path, rank, size):
        self.path = timeline_file(path, rank, size)
        self.rank = rank
        self.events = []
        self._origin = time.perf_counter()

    def add(self, op, nbytes, start, seconds, rank, backend, received=0):
        # pid is the process (world rank): events of sub-communicators land in
        # the same row; their own rank goes in args.
        self.events.append(
            {
                "name": op,
                "cat": backend,
                "ph": "X",
                "ts": (start - self._origin) * 1e6,
                "dur": seconds * 1e6,
                "pid": self.rank,
                "tid": 0,
                "args": {"bytes": nbytes, "received": received, "comms_rank": rank, **_labels},
            }
        )

    def write(self, unfinished=None):
        """Write the trace; ``unfinished=(name, start)`` adds the collective
        this rank is stuck in (the job is being aborted)."""
        if unfinished is not None and unfinished[1] is not None:
            name, start = unfinished
            self.add(name, 0, start, time.perf_counter() - start, None, "unfinished")
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        # Write beside and rename: a rank killed while writing (its job being
        # aborted) leaves the previous file, never an empty or truncated one.
        partial = f"{self.path}.{os.getpid()}.tmp"
        with open(partial, "w") as f:
            json.dump({"traceEvents": self.events, "displayTimeUnit": "ms"}, f)
        os.replace(partial, self.path)


def timeline_file(path, rank, size):
    """Where rank ``rank`` writes its trace: ``path`` itself in a 1-rank job,
    else ``stem.rank<r>.json`` beside it (load them together in Perfetto)."""
    if size == 1:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.rank{rank}{ext or '.json'}"


# (rank, size) variables of the process managers (MPICH/Intel hydra, Open MPI).
_LAUNCHER_RANKS = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"))


def process_rank():
    """``(rank, size)`` of this process in the whole job: MPI's world when MPI
    is up, else what the launcher says, else ``(0, 1)``."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        return mpi.COMM_WORLD.Get_rank(), mpi.COMM_WORLD.Get_size()
    for rank, size in _LAUNCHER_RANKS:
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    return 0, 1


_timeline = None


def start_timeline(path):
    """Record every collective of this process from now on and write a
    Chrome-trace JSON at exit (one file per process of the job, see
    :func:`timeline_file`). Called by every comms created while
    ``MLMPI_TIMELINE`` is set; the first call wins."""
    global _timeline
    if _timeline is not None:
        return
    _timeline = _Timeline(path, *process_rank())
    _recorders.append(_timeline)
    atexit.register(_timeline.write)


def flush_timeline(unfinished=None):
    """Write the timeline recorded so far, now: the job is about to be
    aborted and ``atexit`` will not run. ``unfinished=(name, start)`` is the
    collective this rank is stuck in. No-op without a timeline."""
    if _timeline is not None:
        # MPICH's MPI_Abort exits through Python's atexit handlers while the
        # launcher kills the job: do not write again then.
        atexit.unregister(_timeline.write)
        try:
            _timeline.write(unfinished)
        except OSError as exc:  # never let a full disk hide the real error
            sys.stderr.write(f"mlmpi: could not write the timeline {_timeline.path}: {exc}\n")
