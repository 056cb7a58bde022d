"""The public collective method a rank is in, for errors, the timeline and ``profile()``.

A hang or timeout inside an estimator is reported as the method the user
called (``KMeans.score``), not as the internal collective it waits in
(``allgather_object``). Estimators mark their public collective methods with
:func:`mlmpi.comms.collective_method` (the collective contract, in
:mod:`mlmpi._contract`); the comms layer reads :func:`current_method`.
"""

from contextlib import contextmanager

_current = []


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
    return _current[0] if _current else None


@contextmanager
def in_collective_method(name):
    """Mark the block as the collective method ``name`` (e.g. ``"KMeans.fit"``).

    Nested blocks keep the outer name: ``fit_predict`` calling ``fit`` is
    reported as ``fit_predict``, the method the user called.
    """
    _current.append(name)
    try:
        yield
    finally:
        _current.pop()
