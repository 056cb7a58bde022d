"""Scorers every rank can use: each returns the score of all ranks' rows."""

from ..metrics import get_scorer
from ..metrics._scorer import named_scorings


def collective_scoring(scoring):
    """``scoring`` (None, a name, a callable, a list of names or a dict) with
    every name replaced by mlmpi's collective scorer of that name.

    None (the estimator's ``score``) and callables are kept: mlmpi estimators'
    ``score`` is collective; a callable must be collective itself.
    """
    if scoring is None or callable(scoring):
        return scoring
    if isinstance(scoring, str):
        return get_scorer(scoring)
    return {
        key: get_scorer(value) if isinstance(value, str) else value
        for key, value in named_scorings(scoring).items()
    }


def rank0_times(results, keys, comms):
    """Replace the timing entries ``keys`` of ``results`` with rank 0's, so that
    the results are the same on every rank. This function is collective."""
    results.update(comms.bcast_object({key: results[key] for key in keys}, root=0))
    return results
