"""The collective contract: every rank agrees on the call before anything can raise.

If one rank raises, or calls something else, while the others enter a
collective, the job hangs. So every public collective method (and the DNN
trainer's collective functions and steps) starts with one small
``allgather_object`` of a *call descriptor*: the method, how many times this
instance called it, the estimator's parameters, the other scalar arguments
and a cheap schema of ``X`` (read from the raw argument, never validated).
Every rank compares the same gathered descriptors and raises the same
``ValueError`` naming the method, the ranks and what differs. Only then does
the method validate locally (scikit-learn's ``_validate_params`` included:
the parameters now agree, so it raises on every rank or on none) and agree
on its verdict (:func:`mlmpi.utils.validation.agree`).

A rank that skipped a call and ran to the end of the program meets the
others in a last agreement run by an exit handler, so every rank gets the
same clear error and the job ends with a non-zero exit code. The agreement
runs on the comms' end channel (:mod:`mlmpi.comms._ends`), where a rank
blocked in any collective -- a collective method's agreement or a raw
``comms.allreduce`` of user code -- joins it from its watcher thread.
"""

import atexit
import functools
import inspect
import re
import sys
import threading
import time
import weakref
import zlib
from dataclasses import dataclass

import numpy as np

from ._array import is_device_array, is_sparse, to_host
from .comms._method import current_method, in_collective_method

END_OF_PROGRAM = None  # the method of the descriptor sent by the exit handler
_SHORT = 80  # longer descriptions of a value are cut and fingerprinted
_DATA = "data"  # an array argument: its contents may differ between ranks


@dataclass(frozen=True)
class Call:
    """What one rank is about to do; gathered from every rank and compared.

    Attributes
    ----------
    method : str or None
        ``"<Class>.<method>"``; None when the rank is ending the program.
    count : int
        Calls of ``method`` on this instance so far, this one included.
    params : dict or None
        Short descriptions of the estimator's parameters (not ``comms``).
    arguments : dict
        Short descriptions of the scalar arguments (arrays are ``"data"``).
    schema : tuple or None
        :func:`input_schema` of ``X``; None without an ``X`` argument.
    """

    method: object
    count: int = 0
    params: object = None
    arguments: tuple = ()
    schema: object = None


# -- describing parameters, arguments and inputs cheaply ---------------------------------


def _crc(data):
    return f"{zlib.crc32(data):08x}"


def describe(value):
    """A short text that is equal on two ranks when ``value`` is (arrays by a
    fingerprint of their bytes)."""
    if isinstance(value, type):  # a class such as np.float64 (a `dtype` parameter)
        return f"{value.__module__}.{value.__qualname__}"
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # NumPy/CuPy arrays
        host = np.ascontiguousarray(to_host(value))
        return f"array{host.shape} {host.dtype} #{_crc(host.tobytes())}"
    if isinstance(value, (np.random.RandomState, np.random.Generator)):
        return f"a {type(value).__name__} instance"  # rank 0's draw is broadcast
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    # Memory addresses (``<object at 0x7f...>``, e.g. a SciPy distribution in a
    # search's ``param_distributions``) differ between processes: not compared.
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))
    if len(text) > _SHORT:
        text = f"{text[: _SHORT - 20]}... #{_crc(text.encode())}"
    return text


def parameter_facts(estimator):
    """``{parameter: description}`` of ``get_params(deep=False)`` without ``comms``."""
    if not hasattr(estimator, "get_params"):
        return None
    params = estimator.get_params(deep=False)
    params.pop("comms", None)
    return {name: describe(value) for name, value in sorted(params.items())}


def _is_data(value):
    return (
        hasattr(value, "shape")
        or is_sparse(value)
        or isinstance(value, (list, tuple))
        or hasattr(value, "__array__")
    )


def _argument_facts(bound):
    """Descriptions of the arguments other than ``self`` and ``X``, arrays as ``"data"``."""
    return tuple(
        (name, _DATA if _is_data(value) else describe(value))
        for name, value in bound.arguments.items()
        if name not in ("self", "X")
    )


@dataclass(frozen=True)
class Schema:
    """What ``X`` looks like on one rank, read without validating it.

    ``kind`` is ``"none"``, ``"list"``, ``"frame"``, ``"dense"``,
    ``"sparse"``, ``"device"`` or ``"device sparse"``; ``names`` a
    ``(checksum, first names, count)`` of the column names of a data frame.
    """

    kind: str
    dtype: object = None
    n_features: object = None
    names: object = None
    has_rows: bool = False


def input_schema(X):
    """The :class:`Schema` of a raw ``X`` argument (no copy, no validation)."""
    if X is None:
        return Schema("none")
    shape = getattr(X, "shape", None)
    if shape is None:
        rows = len(X) if hasattr(X, "__len__") else 1
        return Schema("list", has_rows=rows > 0)
    n_features = int(shape[1]) if len(shape) == 2 else None
    has_rows = len(shape) > 0 and shape[0] > 0
    columns = getattr(X, "columns", None)
    if columns is not None:
        names = list(columns)
        fingerprint = None  # scikit-learn's rule: only string column names are names
        if names and all(isinstance(name, str) for name in names):
            fingerprint = (_crc("\x00".join(names).encode()), names[:6], len(names))
        return Schema("frame", None, n_features, fingerprint, has_rows)
    kind = "sparse" if is_sparse(X) else "dense"
    if is_device_array(X):
        kind = "device" if kind == "dense" else "device sparse"
    dtype = getattr(X, "dtype", None)
    return Schema(kind, None if dtype is None else np.dtype(dtype).str, n_features, None, has_rows)


# -- comparing the gathered descriptors ------------------------------------------------


def _ranks(ranks):
    ranks = list(ranks)
    word = "rank" if len(ranks) == 1 else "ranks"
    return f"{word} {', '.join(str(r) for r in ranks)}"


def _by_rank(values):
    return "; ".join(f"rank {rank}: {value}" for rank, value in values)


def _grouped(values):
    """``{value: [ranks]}`` in order of first appearance."""
    groups = {}
    for rank, value in enumerate(values):
        groups.setdefault(value, []).append(rank)
    return groups


def _call_mismatch(calls):
    groups = _grouped([(c.method, c.count) for c in calls])
    methods = [m for m, _ in groups if m is not END_OF_PROGRAM]
    ended = groups.get((END_OF_PROGRAM, 0))
    if ended is not None and len(groups) == 2:
        (method, count), ranks = next((k, v) for k, v in groups.items() if k[0] is not None)
        text = (
            f"{method} is collective: {_ranks(ranks)} called it (call #{count}), "
            f"{_ranks(ended)} ended the program without calling it."
        )
    else:
        parts = [
            f"{_ranks(ranks)} ended the program"
            if method is END_OF_PROGRAM
            else f"{_ranks(ranks)} called {method} (call #{count})"
            for (method, count), ranks in groups.items()
        ]
        text = f"The ranks disagree on the collective call: {'; '.join(parts)}."
    hint = (
        " Every rank must make the same collective calls in the same order (the same number "
        "of partial_fit/predict chunks on every rank; no collective call under `if rank == "
        "...`)."
    )
    if any(m.startswith("DistributedOptimizer.step") for m in methods):
        hint = (
            " A rank ran out of batches: give every rank the same number of batches "
            "(mlmpi.dnn.DistributedSampler with drop_last=True) or train inside "
            "`with optimizer.join():`."
        )
    return text + hint


def _parameter_mismatch(calls):
    method = calls[0].method
    estimator = method.split(".")[0]
    params = [c.params or {} for c in calls]
    for name in sorted(set().union(*params)):
        values = [p.get(name) for p in params]
        if len(set(values)) > 1:
            return (
                f"{method}: {estimator} has a different {name!r} on different ranks "
                f"({_by_rank(enumerate(values))}); every rank must create the estimator "
                "with the same parameters."
            )
    return None


def _argument_mismatch(calls):
    method = calls[0].method
    arguments = [dict(c.arguments) for c in calls]
    for name in arguments[0]:
        values = [a.get(name) for a in arguments]
        if len({v for v in values if v != _DATA}) > 1:
            return (
                f"{method} was called with a different {name!r} on different ranks "
                f"({_by_rank(enumerate(values))}); every rank must pass the same arguments."
            )
    return None


def _schema_mismatch(calls):
    method = calls[0].method
    schemas = [c.schema for c in calls]
    if schemas[0] is None:
        return None
    given = [s.kind != "none" for s in schemas]
    if len(set(given)) > 1:
        return (
            f"{method}: X is None on {_ranks(r for r, g in enumerate(given) if not g)} and "
            f"given on {_ranks(r for r, g in enumerate(given) if g)}; pass X on every rank "
            "or on none."
        )
    widths = [(r, s.n_features) for r, s in enumerate(schemas) if s.n_features is not None]
    if len({w for _, w in widths}) > 1:
        described = _by_rank((r, f"{w} features") for r, w in widths)
        return (
            f"{method}: X has a different number of features on different ranks; every "
            f"shard must have the same columns ({described})."
        )
    with_rows = [(r, s) for r, s in enumerate(schemas) if s.has_rows]
    floats = {s.dtype for _, s in with_rows if s.dtype and np.dtype(s.dtype).kind == "f"}
    if len(floats) > 1:
        described = _by_rank((r, np.dtype(s.dtype).name) for r, s in with_rows if s.dtype)
        return (
            f"{method}: X has a different dtype on different ranks; convert every shard to "
            f"the same dtype ({described})."
        )
    devices = {s.kind.startswith("device") for _, s in with_rows if s.kind != "list"}
    if len(devices) > 1:
        described = _by_rank((r, s.kind) for r, s in with_rows)
        return (
            f"{method}: X is a GPU (CuPy) array on some ranks and a host array on others; "
            f"put every shard on the same kind of device ({described})."
        )
    names = [s.names for _, s in with_rows]
    if any(n is not None for n in names) and (
        len({n[0] for n in names if n is not None}) > 1 or None in names
    ):
        described = _by_rank(
            (
                r,
                "no column names"
                if s.names is None
                else f"{s.names[2]} columns {s.names[1]}"
                f"{' ...' if s.names[2] > len(s.names[1]) else ''}",
            )
            for r, s in with_rows
        )
        return (
            f"{method}: X has different column names or a different column order on "
            f"different ranks ({described}); every shard must have the same columns in the "
            "same order (e.g. df[columns] with one list of columns on every rank)."
        )
    return None


def check_calls(calls):
    """The error message every rank raises for the gathered ``calls``, or None."""
    if len({(c.method, c.count) for c in calls}) > 1:
        return _call_mismatch(calls)
    if calls[0].method is END_OF_PROGRAM:
        return None
    return _parameter_mismatch(calls) or _argument_mismatch(calls) or _schema_mismatch(calls)


# -- the agreement and the entry points ------------------------------------------------

_used = []  # multi-rank comms that agreed on a call: the exit handler meets them again


def agree_on_call(comms, call):
    """Gather every rank's :class:`Call` and raise the same ``ValueError`` on
    every rank if they differ.

    Notes
    -----
    This function is collective (one ``allgather_object``; nothing for a
    single rank).
    """
    if comms.size == 1:
        return
    if call.method is not END_OF_PROGRAM:
        meet_at_exit(comms)
    comms._agreeing = call  # what this rank is in, should another one end meanwhile
    try:
        message = check_calls(comms.allgather_object(call))
    finally:
        comms._agreeing = None
    if message is not None:
        raise ValueError(message)


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
    from .comms._abort import FORWARD_SECONDS, abort_job

    sys.stderr.write(f"mlmpi: {message}\n")
    sys.stderr.flush()
    time.sleep(FORWARD_SECONDS)  # let the launcher forward the message
    abort_job(1)


def _call_in(comms, collective):
    """The :class:`Call` a rank makes with ``collective`` (a comms' collective
    record): the collective method it agrees on, or the raw comms call."""
    if comms._agreeing is not None:
        return comms._agreeing
    if collective.method is not None:
        return Call(collective.method)
    return Call(f"Comms.{collective.op}", collective.count)


def _end_message(states):
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
    message = _end_message(comms._ends.allgather_object(state))
    _abort_with(message or f"Comms.{collective.op}: another rank ended the program.")


def _end_of_program():
    """Meet the other ranks once more: a rank still waiting in a collective
    learns that this one ended without making it, and a rank that made
    collectives the others did not (a root's ``bcast`` can return alone) is
    told so."""
    if getattr(sys, "last_value", None) is not None:
        return  # dying of an uncaught exception: the abort hook or the timeout ends the job
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
        message = _end_message(comms._ends.allgather_object((True, comms._started, last)))
        if message is not None:
            _abort_with(message)
        comms._ends.finish()


_counts = weakref.WeakKeyDictionary()  # instance -> {method name: calls so far}


def _count_call(instance, name):
    try:
        counts = _counts.setdefault(instance, {})
    except TypeError:  # neither hashable nor weakly referable: calls are not counted
        return 0
    counts[name] = counts.get(name, 0) + 1
    return counts[name]


def _comms_of(instance):
    if hasattr(instance, "_get_comms"):
        return instance._get_comms()
    from .comms import resolve_comms

    return resolve_comms(getattr(instance, "comms", None))


def collective_method(method):
    """Decorator of an estimator's public collective method: the contract's one entry.

    The outermost collective call agrees with the other ranks on the call
    (:func:`agree_on_call`) before the method runs; nested ones
    (``fit_predict`` calling ``fit``) do not agree again. Inside it, a
    collective that times out, and the timeline and ``profile()`` entries
    of its collectives, name ``<class name>.<method name>`` (the class of
    the instance, so a subclass's name appears for an inherited method).

    Parameters
    ----------
    method : callable
        The method, taking ``self`` first; its docstring should say "This
        method is collective.".

    Returns
    -------
    wrapper : callable
        The method entered through the contract.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from mlmpi.base import DistributedEstimatorMixin
    >>> from mlmpi.comms import collective_method, current_method
    >>> class Total(DistributedEstimatorMixin, BaseEstimator):
    ...     def __init__(self, comms=None):
    ...         self.comms = comms
    ...
    ...     @collective_method
    ...     def fit(self, X, y=None):
    ...         # Sum of every rank's X. This method is collective.
    ...         self.method_ = current_method()
    ...         self.total_ = float(self._get_comms().allreduce(np.sum(X)))
    ...         return self
    >>> est = Total().fit(np.ones((3, 2)))
    >>> est.method_, est.total_
    ('Total.fit', 6.0)
    """
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if current_method() is not None:  # the outer call agreed
            return method(self, *args, **kwargs)
        name = f"{type(self).__name__}.{method.__name__}"
        with in_collective_method(name):
            comms = _comms_of(self)
            if comms.size > 1:
                bound = signature.bind(self, *args, **kwargs)
                bound.apply_defaults()
                X = bound.arguments.get("X")
                call = Call(
                    name,
                    _count_call(self, method.__name__),
                    parameter_facts(self),
                    _argument_facts(bound),
                    input_schema(X) if "X" in bound.arguments else None,
                )
                agree_on_call(comms, call)
            return method(self, *args, **kwargs)

    return wrapper


def collective_function(function):
    """Decorator of a collective function taking ``comms=None``.

    The DNN trainer's broadcasts, metrics and checkpoints use it: the same
    agreement as :func:`collective_method`, counted per comms.

    Parameters
    ----------
    function : callable
        A function with a ``comms`` parameter.

    Returns
    -------
    wrapper : callable
    """
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if current_method() is not None:
            return function(*args, **kwargs)
        with in_collective_method(function.__name__):
            bound = signature.bind(*args, **kwargs)
            from .comms import resolve_comms

            comms = resolve_comms(bound.arguments.get("comms"))
            if comms.size > 1:
                agree_on_call(comms, Call(function.__name__, _count_call(comms, function.__name__)))
            return function(*args, **kwargs)

    return wrapper
