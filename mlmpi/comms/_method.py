"""The public collective call a rank is in, for errors, the timeline and ``profile()``.

A hang or timeout inside an estimator is reported as the method the user
called (``KMeans.score``), not as the internal collective it waits in.
Estimators mark their public collective methods and functions with the
collective contract (:mod:`mlmpi._contract`); the comms layer reads
:func:`current_method`. The ranks agree on the outermost collective call
only (``fit_predict`` calling ``fit`` does not agree again), except inside
:func:`nested_calls_agree`: a cross-validation or a search lets every fit
and score of the estimators it runs agree too.
"""

import time
from contextlib import contextmanager

_current = []  # [name, whether the calls nested right inside it agree] per level
_times = {"entered": None, "left": None, "last": None}  # of the outermost call (monotonic)


def current_method():
    """Name of the outermost collective method running on this rank, or None.

    Returns
    -------
    name : str or None
        ``"<class name>.<method name>"`` (``"KMeans.fit"``), or the function
        name for a collective function.

    Examples
    --------
    >>> from mlmpi.comms import current_method
    >>> current_method() is None  # outside any collective method
    True
    """
    return _current[0][0] if _current else None


def calls_agree_here():
    """Whether a collective call made now agrees with the other ranks: outside
    any collective call, or right inside a :func:`nested_calls_agree` block."""
    return not _current or _current[-1][1]


@contextmanager
def in_collective_method(name):
    """Mark the block as the collective method ``name`` (e.g. ``"KMeans.fit"``).

    Nested blocks keep the outer name: ``fit_predict`` calling ``fit`` is
    reported as ``fit_predict``, the method the user called.
    """
    if not _current:
        _times["entered"] = time.monotonic()
    _current.append([name, False])
    try:
        yield
    finally:
        _current.pop()
        if not _current:
            _times["left"], _times["last"] = time.monotonic(), name


def whereabouts():
    """Where this rank is, in words, for another rank's stall report:
    ``"in KMeans.fit for 12 s"`` or ``"outside mlmpi for 40 s (its last
    collective call: KMeans.fit)"``."""
    now = time.monotonic()
    if _current:
        return f"in {_current[0][0]} for {now - _times['entered']:.0f} s"
    if _times["left"] is None:
        return "outside mlmpi (no collective call yet)"
    return (
        f"outside mlmpi for {now - _times['left']:.0f} s "
        f"(its last collective call: {_times['last']})"
    )


@contextmanager
def nested_calls_agree():
    """Inside a collective call: the collective calls made right inside the
    block agree with the other ranks (each with its own descriptor)."""
    level = _current[-1]
    level[1] = True
    try:
        yield
    finally:
        level[1] = False
