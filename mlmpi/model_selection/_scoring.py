"""Scorers every rank can use: each returns the score of all ranks' rows."""


def _collective_scorer(name, comms):
    try:
        from ..metrics import get_scorer
    except ImportError:
        if comms.size == 1:
            return name  # scikit-learn's scorer is right at one rank
        raise ValueError(
            f"scoring={name!r} needs a scorer that reduces over the ranks, and this mlmpi has "
            "no mlmpi.metrics: scikit-learn's scorer would score each rank's rows alone. "
            "Use scoring=None (the estimator's own score, computed over every rank's rows) "
            "or a callable scorer(estimator, X, y) that is collective."
        ) from None
    return get_scorer(name)


def collective_scoring(scoring, comms):
    """``scoring`` (None, a name, a callable, a list of names or a dict) with
    every name replaced by a collective scorer.

    None (the estimator's ``score``) and callables are kept: mlmpi estimators'
    ``score`` is collective; a callable must be collective itself.
    """
    if scoring is None or callable(scoring):
        return scoring
    if isinstance(scoring, str):
        return _collective_scorer(scoring, comms)
    if isinstance(scoring, dict):
        return {key: _collective_scorer(value, comms) if isinstance(value, str) else value
                for key, value in scoring.items()}
    return {name: _collective_scorer(name, comms) for name in scoring}


def rank0_times(results, keys, comms):
    """Replace the timing entries ``keys`` of ``results`` with rank 0's, so that
    the results are the same on every rank. This function is collective."""
    results.update(comms.bcast_object({key: results[key] for key in keys}, root=0))
    return results

