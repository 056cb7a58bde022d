"""A warning for estimators that learn from this rank's rows only.

Inside a pipeline or a search under several ranks, a scikit-learn scaler
(say) fitted on each rank's shard learns a different mean on every rank: the
result then depends on how the rows are spread. mlmpi's own estimators learn
from every rank's rows; stateless steps (``FunctionTransformer``,
``Normalizer``) learn nothing and are fine.
"""

import importlib
import warnings

from sklearn.utils import get_tags

_CONTAINERS = {  # meta-estimators whose own fit only fits the estimators they hold
    "Pipeline": "steps",
    "FeatureUnion": "transformer_list",
    "ColumnTransformer": "transformers",
}
_warned = set()


class ShardLocalFitWarning(UserWarning):
    """An estimator fitted under several ranks learns from this rank's rows only."""


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


def _replacement(cls):
    """``mlmpi.<subpackage>.<name>`` when mlmpi has a class of the same name
    in the subpackage of the same name as scikit-learn's, else None."""
    parts = cls.__module__.split(".")
    if parts[0] != "sklearn" or len(parts) < 2:
        return None
    try:
        module = importlib.import_module(f"mlmpi.{parts[1]}")
    except ImportError:
        return None
    return f"mlmpi.{parts[1]}.{cls.__name__}" if hasattr(module, cls.__name__) else None


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
        replacement = _replacement(cls)
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
