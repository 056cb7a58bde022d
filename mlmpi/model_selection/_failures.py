"""A fold that fails on one rank fails on every rank, with the failing rank's cause.

scikit-learn's loops catch a failing fit or score and go on to the next fold
(``error_score``). Under MPI that rank would start the next fold while the
others wait in a collective of this one. So every fold of a search, a
cross-validation or a validation curve runs through :func:`agreed_fit_and_score`:

1. scikit-learn's ``_fit_and_score`` runs with ``error_score="raise"``; a
   failure is announced (:meth:`mlmpi.comms.Comms.announce_failure`), so
   ranks waiting in one of the fold's collectives leave it;
2. the ranks agree on the fold's outcome: one allreduce of a flag per fold,
   then, only when a rank failed, the failures themselves;
3. every rank then reports the lowest failed rank's exception alike: raised
   with ``error_score="raise"`` (that rank raises its own, the others the
   same type and text, naming it), else scikit-learn's own failure result
   and warning, made by replaying the failure with a stand-in estimator.
"""

import dataclasses
import functools
import pickle
import time
import traceback
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator

from .._sklearn_compat import (
    _fit_and_score,
    _score,
    raising_scorer,
    replaced_fit_and_score,
)
from ..comms import RankFailedError
from ..comms._failures import mark_announced
from ..utils.validation import _rebuild


@dataclass(frozen=True)
class FoldFailure:
    """One rank's failure in a fold: in which phase (``"fit"`` or
    ``"score"``), the exception's class and text, its traceback as text, and
    the rank it started on (another one for a :class:`RankFailedError`)."""

    phase: str
    error_type: type
    message: str
    traceback: str
    origin: int

    @classmethod
    def of(cls, error, rank):
        phase = "score" if _raised_in_scoring(error) else "fit"
        text = "".join(traceback.format_exception(error))
        if isinstance(error, RankFailedError):
            return cls(phase, RuntimeError, str(error), text, error.rank)
        return cls(phase, _sendable(type(error)), str(error), text, rank)

    def error(self, size):
        """The exception every rank but the origin raises (type, text, rank)."""
        error = _rebuild((self.error_type, self.message), self.origin, size)
        error.__cause__ = _OriginTraceback(self.traceback)
        mark_announced(error)
        return error


class _OriginTraceback(Exception):
    """The failing rank's traceback, shown as the cause of the error every rank reports."""

    def __str__(self):
        return "\n\n" + self.args[0]


def _sendable(error_type):
    """``error_type``, or ``RuntimeError`` where the class cannot be pickled
    (defined inside a function, say)."""
    try:
        pickle.loads(pickle.dumps(error_type))
    except Exception:
        return RuntimeError
    return error_type


def _raised_in_scoring(error):
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code is _score.__code__:
            return True
        frame = frame.tb_next
    return False


def _agreed_failures(comms, failure):
    """Every rank's :class:`FoldFailure` (None where the fold went well), or
    None when it went well everywhere. Collective: an allreduce of one flag,
    then an ``allgather_object`` only if a rank failed."""
    failed = comms.allreduce(np.array([failure is not None], dtype=np.int8), op="max")
    if not failed[0]:
        return None
    return comms.allgather_object(failure)


def _first(failures):
    """The failure to report: the lowest rank that failed itself (its origin
    None when every rank failed with the same error, an agreed one), else the
    first notice of another rank's failure."""
    own = [f for rank, f in enumerate(failures) if f is not None and f.origin == rank]
    if not own:
        return next(f for f in failures if f is not None)
    if len(own) == len(failures) and len({(f.error_type, f.message) for f in own}) == 1:
        return dataclasses.replace(own[0], origin=None)
    return own[0]


class _Replay(BaseEstimator):
    """Stands for the estimator of a failed fold: it fails where the fold
    failed (``fit``, or any method a scorer calls), with the agreed error,
    so that scikit-learn builds its own failure result and warning."""

    def __init__(self, estimator, failure, size):
        self._estimator = estimator
        self._failure = failure
        self._size = size
        self._fitted = False

    def set_params(self, **params):
        return self

    def __sklearn_tags__(self):
        return self._estimator.__sklearn_tags__()

    def fit(self, *args, **kwargs):
        if self._failure.phase == "fit":
            raise self._failure.error(self._size)
        self._fitted = True
        return self

    def __getattr__(self, name):
        # After fit, the public names a scorer reads (predict, classes_ ...) fail.
        if name.startswith("_") or not self.__dict__.get("_fitted"):
            raise AttributeError(name)
        raise self._failure.error(self._size)


def agreed_fit_and_score(comms, estimator, X, y, *, scorer, error_score=np.nan, **kwargs):
    """scikit-learn's ``_fit_and_score`` of one fold, its failures agreed.

    This function is collective: every rank fits and scores the same fold.
    """
    if comms.size == 1:
        return _fit_and_score(estimator, X, y, scorer=scorer, error_score=error_score, **kwargs)
    start = time.perf_counter()
    try:
        result = _fit_and_score(
            estimator, X, y, scorer=raising_scorer(scorer), error_score="raise", **kwargs
        )
        failure = None
    except Exception as exc:
        comms.announce_failure(exc)  # the ranks waiting in the fold's collectives leave
        failure, raised = FoldFailure.of(exc, comms.rank), exc
    failures = _agreed_failures(comms, failure)
    if failures is None:
        return result
    first = _first(failures)
    if error_score == "raise":
        if first.origin in (comms.rank, None):
            raise raised
        raise first.error(comms.size)
    result = _fit_and_score(
        _Replay(estimator, first, comms.size),
        X,
        y,
        scorer=scorer,
        error_score=error_score,
        **kwargs,
    )
    if "fit_time" in result:
        result["fit_time"] = time.perf_counter() - start
    if "estimator" in result:
        result["estimator"] = estimator
    return result


def agreed_folds(comms):
    """A context in which scikit-learn's search and cross-validation loops
    fit and score every fold through :func:`agreed_fit_and_score` on ``comms``."""
    return replaced_fit_and_score(functools.partial(agreed_fit_and_score, comms))
