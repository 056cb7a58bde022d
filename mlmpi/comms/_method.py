"""The public collective method a rank is in, for errors, the timeline and ``profile()``.

A hang or timeout inside an estimator is reported as the method the user
called (``KMeans.score``), not as the internal collective it waits in
(``allgather_object``). Estimators mark their public collective methods with
:func:`collective_method`; the comms layer reads :func:`current_method`.
"""

import functools
from contextlib import contextmanager

_current = []


def current_method():
    """Name of the outermost collective method running on this rank, or None."""
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


def collective_method(method):
    """Decorator of an estimator's public collective method.

    Inside it, a collective that times out, and the timeline and
    ``profile()`` entries of its collectives, name
    ``<class name>.<method name>`` (the class of the instance, so a
    subclass's name appears for an inherited method).

    Examples
    --------
    >>> class Estimator(BaseEstimator):          # doctest: +SKIP
    ...     @collective_method
    ...     def fit(self, X, y=None): ...
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with in_collective_method(f"{type(self).__name__}.{method.__name__}"):
            return method(self, *args, **kwargs)

    return wrapper
