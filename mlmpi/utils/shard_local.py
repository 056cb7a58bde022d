"""A warning for estimators that learn from this rank's rows only.

Inside a pipeline or a search under several ranks, a scikit-learn scaler
(say) fitted on each rank's shard learns a different mean on every rank: the
result then depends on how the rows are spread. mlmpi's own estimators learn
from every rank's rows; stateless steps (``FunctionTransformer``,
``Normalizer``) learn nothing and are fine.

The same holds the other way round: scikit-learn's own cross-validation and
searches (``sklearn.model_selection.cross_val_score``, ``GridSearchCV`` ...)
around an mlmpi estimator cut their folds from each rank's rows, so the ranks
fit and score different folds together (:func:`warn_sklearn_model_selection`).
"""

import importlib
import os
import sys
import warnings

from sklearn.utils import get_tags

from ._shard_checks import user_stacklevel

_CONTAINERS = {  # meta-estimators whose own fit only fits the estimators they hold
    "Pipeline": "steps",
    "FeatureUnion": "transformer_list",
    "ColumnTransformer": "transformers",
}
_warned = set()


class ShardLocalFitWarning(UserWarning):
    """An estimator fitted under several ranks learns from this rank's rows only
    (or scikit-learn's model selection cuts folds from this rank's rows only)."""


def _held_estimators(estimator):
    """The estimators a container holds (skipping 'drop' and 'passthrough')."""
    for step in getattr(estimator, _CONTAINERS[type(estimator).__name__]):
        held = step[1]
        if held is not None and not isinstance(held, str):
            yield held


def _is_container(estimator):
    name = type(estimator).__name__
    return name in _CONTAINERS and type(estimator).__module__.startswith(("sklearn.", "mlmpi."))


def shard_local_learners(estimator):
    """The estimators inside ``estimator`` (itself included) that are not
    mlmpi's and learn from the data they are fitted on."""
    if _is_container(estimator):
        for held in _held_estimators(estimator):
            yield from shard_local_learners(held)
    elif not type(estimator).__module__.startswith("mlmpi.") and get_tags(estimator).requires_fit:
        yield estimator


def _replacement(module, name):
    """``mlmpi.<subpackage>.<name>`` when mlmpi has ``name`` in the subpackage
    of the same name as scikit-learn's ``module``, else None."""
    parts = module.split(".")
    if parts[0] != "sklearn" or len(parts) < 2:
        return None
    try:
        counterpart = importlib.import_module(f"mlmpi.{parts[1]}")
    except ImportError:
        return None
    return f"mlmpi.{parts[1]}.{name}" if hasattr(counterpart, name) else None


def warn_shard_local_learners(estimator, comms):
    """Warn once per class (on rank 0) for each estimator inside ``estimator``
    that would learn from this rank's rows only, naming mlmpi's replacement.

    Does nothing at one rank. No communication.
    """
    if comms.size == 1:
        return
    for learner in shard_local_learners(estimator):
        cls = type(learner)
        if cls in _warned:
            continue
        _warned.add(cls)
        if comms.rank != 0:
            continue
        origin = "scikit-learn" if cls.__module__.startswith("sklearn.") else cls.__module__
        replacement = _replacement(cls.__module__, cls.__name__)
        advice = (
            f"use {replacement}"
            if replacement
            else "mlmpi has no replacement for it yet; its result depends on how the rows are "
            "spread over the ranks"
        )
        warnings.warn(
            f"{cls.__name__} from {origin} learns from this rank's rows only; {advice}.",
            ShardLocalFitWarning,
            stacklevel=3,
        )


def _sklearn_fold_loops():
    """The files of scikit-learn that cut folds from the rows they are given:
    its model selection, and CalibratedClassifierCV's own loop over folds."""
    loops = []
    module = sys.modules.get("sklearn.model_selection")
    if module is not None:  # never imported: not on the stack
        loops.append(os.path.dirname(module.__file__) + os.sep)
    module = sys.modules.get("sklearn.calibration")
    if module is not None:
        loops.append(module.__file__)
    return tuple(loops)


def _sklearn_model_selection_caller():
    """The outermost frame of scikit-learn's fold loops (:func:`_sklearn_fold_loops`)
    on the call stack, or None, also when mlmpi's code runs further out:
    mlmpi's own cross-validation and searches drive scikit-learn's loop with
    folds cut by global row."""
    sklearn_loops = _sklearn_fold_loops()
    if not sklearn_loops:
        return None
    mlmpi_code = os.path.dirname(sys.modules["mlmpi"].__file__) + os.sep
    found, frame = None, sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(sklearn_loops):
            found = frame
        elif found is not None and filename.startswith(mlmpi_code):
            return None
        frame = frame.f_back
    return found


def warn_sklearn_model_selection(estimator, comms):
    """Warn on every rank, once per scikit-learn function (or search) and class,
    when scikit-learn's model selection (not mlmpi's) fits ``estimator``
    under several ranks, naming mlmpi's replacement.

    scikit-learn's ``cross_val_score``, ``cross_validate``, ``GridSearchCV``
    and the like (``StackingClassifier``'s ``cross_val_predict`` and
    ``CalibratedClassifierCV`` too) cut their folds from each rank's rows: every rank fits and
    scores its own folds inside collective fits, so the scores are not those
    of the whole data and, with scikit-learn's scorers, differ from rank to
    rank. Does nothing at one rank. No communication: every rank runs the
    same loop, so every rank warns.
    """
    frame = None if comms.size == 1 else _sklearn_model_selection_caller()
    if frame is None:
        return
    owner = frame.f_locals.get("self") if frame.f_code.co_varnames[:1] == ("self",) else None
    entry = frame.f_code.co_name if owner is None else type(owner).__name__
    if (entry, type(estimator)) in _warned:
        return
    _warned.add((entry, type(estimator)))
    replacement = _replacement("sklearn.model_selection", entry)
    advice = (
        f"use {replacement}, which cuts the folds by global row"
        if replacement
        else "mlmpi.model_selection has no replacement for it yet"
    )
    warnings.warn(
        f"scikit-learn's {entry} is fitting {type(estimator).__name__} under {comms.size} "
        "ranks: it cuts its folds from each rank's rows only, so the ranks fit and score "
        "different folds together and the scores are neither scikit-learn's on the whole "
        f"data nor the same on every rank; {advice}.",
        ShardLocalFitWarning,
        stacklevel=user_stacklevel(),
    )
