"""The decorator of every public collective method and function."""

import functools
import inspect
import weakref

from ..comms import resolve_comms
from ..comms._agreement import agree_on_call, usage_error
from ..comms._calls import Call
from ..comms._launch import started_by_a_rank
from ..comms._method import calls_agree_here, current_method, in_collective_method
from ..random._policy import get_draws
from ._describe import ROW_ARGUMENTS, argument_facts, parameter_facts
from ._details import CallDetails
from ._schema import input_schema

NOT_A_RANK = (
    "This process was started by an MPI rank (a joblib/loky worker, e.g. of scikit-learn's "
    "n_jobs) and is not itself a rank of the MPI job, so it cannot run mlmpi's collective "
    "calls. Under mpiexec, use mlmpi.model_selection (GridSearchCV, RandomizedSearchCV, "
    "cross_validate, cross_val_score) with n_jobs=None: its candidates and folds run on "
    "every rank's rows, the ranks being the parallelism."
)

_counts = weakref.WeakKeyDictionary()  # instance or comms -> {name: calls so far}


def _count(owner, name, step):
    """Add ``step`` to the calls of ``name`` counted for ``owner``; the new count."""
    try:
        counts = _counts.setdefault(owner, {})
    except TypeError:  # neither hashable nor weakly referable: calls are not counted
        return 0
    counts[name] = counts.get(name, 0) + step
    return counts[name]


def _comms_of(instance, bound):
    given = getattr(instance, "comms", None) if instance is not None else bound.get("comms")
    if given is None and started_by_a_rank():
        raise usage_error(NOT_A_RANK)
    if hasattr(instance, "_get_comms"):
        return instance._get_comms()
    return resolve_comms(given)


def collective(function=None, *, data=(), same=()):
    """Decorator of a public collective method or function: the contract's one entry.

    The ranks first agree on the call (:func:`mlmpi.comms._agreement.agree_on_call`):
    its name, how many times this instance (a function: this comms) made it,
    the instance's parameters, the arguments (those holding this rank's rows
    only by kind) and the schema of ``X``; any difference raises the same
    ``ValueError`` on every rank. Collective calls made inside it do not
    agree again (``fit_predict`` calling ``fit``), except inside
    :func:`mlmpi.comms._method.nested_calls_agree`. An exception that leaves
    the call on one rank after the agreement is announced to the others
    (:meth:`mlmpi.comms.Comms.announce_failure`): those waiting in one of its
    collectives raise :class:`~mlmpi.comms.RankFailedError`. Inside it, a collective
    that times out, and the timeline and ``profile()`` entries of its
    collectives, name the call (``<class name>.<method name>``, the class of
    the instance, so a subclass's name appears for an inherited method).

    Parameters
    ----------
    function : callable
        The method (``self`` first) or function (with a ``comms`` parameter,
        or using the default comms); its docstring should say "This method
        is collective." or "This function is collective.".
    data : tuple of str, default=()
        Arguments holding this rank's rows, beside scikit-learn's usual
        names (``X``, ``y``, ``sample_weight`` ...).
    same : tuple of str, default=()
        Usual row arguments that must nonetheless be the same on every rank.

    Returns
    -------
    wrapper : callable
        The function entered through the contract (or, without ``function``,
        the decorator with these options).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from mlmpi._contract import collective
    >>> from mlmpi.base import DistributedEstimatorMixin
    >>> from mlmpi.comms import current_method
    >>> class Total(DistributedEstimatorMixin, BaseEstimator):
    ...     def __init__(self, comms=None):
    ...         self.comms = comms
    ...
    ...     @collective
    ...     def fit(self, X, y=None):
    ...         # Sum of every rank's X. This method is collective.
    ...         self.method_ = current_method()
    ...         self.total_ = float(self._get_comms().allreduce(np.sum(X)))
    ...         return self
    >>> est = Total().fit(np.ones((3, 2)))
    >>> est.method_, est.total_
    ('Total.fit', 6.0)
    """
    if function is None:
        return functools.partial(collective, data=data, same=same)
    signature = inspect.signature(function)
    is_method = next(iter(signature.parameters), None) == "self"
    rows = (ROW_ARGUMENTS | set(data)) - set(same)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if not calls_agree_here():  # an outer call agreed
            return function(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        instance = args[0] if is_method else None
        name = f"{type(instance).__name__}.{function.__name__}" if is_method else function.__name__
        outermost = current_method() is None
        try:
            comms = _comms_of(instance, bound.arguments)
            with in_collective_method(name):
                if comms.size > 1:
                    bound.apply_defaults()
                    owner = instance if is_method else comms
                    details = CallDetails(
                        parameter_facts(instance) if is_method else (),
                        argument_facts(bound, rows),
                        input_schema(bound.arguments["X"]) if "X" in bound.arguments else None,
                        (("random-draw", get_draws()),),
                    )
                    call = Call(name, _count(owner, function.__name__, 1), details)
                    try:
                        agree_on_call(comms, call)
                    except (ValueError, TypeError):
                        _count(owner, function.__name__, -1)  # a refused call was not made
                        raise
                try:
                    return function(*args, **kwargs)
                except Exception as exc:
                    comms.announce_failure(exc, name)  # the ranks waiting for this one leave
                    raise
        except (ValueError, TypeError) as exc:
            if outermost and getattr(exc, "mlmpi_usage_error", False):
                # The same error on every rank, about the user's call: shown at the user's
                # line, without the library's frames.
                raise exc.with_traceback(None) from None
            raise

    wrapper.collective = True
    return wrapper
