"""Scorers computing global scores: ``scorer(estimator, X, y)`` on every rank.

Each scorer is scikit-learn's scorer of the same name (same response
method, sign and keyword arguments) with the metric replaced by its
collective version from :mod:`mlmpi.metrics`. The estimator's local
predictions are agreed on (a failing ``predict`` on one rank raises the
same error on every rank), and the metric runs on the estimator's comms.
"""

import copy
from inspect import signature

from sklearn.metrics import check_scoring as sk_check_scoring

from .._sklearn_compat import _SCORERS as SK_SCORERS
from .._sklearn_compat import _MultimetricScorer, _Scorer
from ..comms import get_comms
from ..utils.validation import agree
from . import _classification, _cluster, _curves, _log_loss, _ranking, _regression

_METRICS = {
    func.__name__: func
    for func in (
        _classification.accuracy_score,
        _classification.balanced_accuracy_score,
        _classification.precision_score,
        _classification.recall_score,
        _classification.f1_score,
        _classification.matthews_corrcoef,
        _ranking.roc_auc_score,
        _curves.average_precision_score,
        _log_loss.log_loss,
        _regression.r2_score,
        _regression.mean_squared_error,
        _regression.root_mean_squared_error,
        _regression.mean_absolute_error,
        _regression.mean_absolute_percentage_error,
        _regression.explained_variance_score,
        _regression.median_absolute_error,
        _cluster.adjusted_rand_score,
        _cluster.fowlkes_mallows_score,
    )
}


def _comms_of(estimator):
    get = getattr(estimator, "_get_comms", None)
    return get() if get is not None else get_comms()


class _GlobalScorer(_Scorer):
    """scikit-learn's ``_Scorer`` whose metric is collective and runs on the
    estimator's comms."""

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        comms = _comms_of(estimator)

        def agreed_call(*args, **call_kwargs):
            return agree(comms, lambda: (method_caller(*args, **call_kwargs), None))[0]

        if "comms" in signature(self._score_func).parameters:
            kwargs["comms"] = comms
        return super()._score(agreed_call, estimator, X, y_true, **kwargs)


def _global_version(scorer):
    """Our scorer for scikit-learn's ``scorer`` (None when its metric is not distributed)."""
    func = _METRICS.get(getattr(scorer._score_func, "__name__", None))
    if func is None or type(scorer) is not _Scorer:
        return None
    return _GlobalScorer(func, scorer._sign, dict(scorer._kwargs), scorer._response_method)


_SCORERS = {
    name: ours
    for name, scorer in SK_SCORERS.items()
    if (ours := _global_version(scorer)) is not None
}


def get_scorer_names():
    """Names of the scorers :func:`get_scorer` knows (they compute global scores).

    Returns
    -------
    names : list of str

    Examples
    --------
    >>> from mlmpi.metrics import get_scorer_names
    >>> "f1_macro" in get_scorer_names()
    True
    """
    return sorted(_SCORERS)


def get_scorer(scoring):
    """The global scorer named ``scoring`` (a callable is returned as it is).

    Parameters
    ----------
    scoring : str or callable
        One of :func:`get_scorer_names` ('accuracy', 'balanced_accuracy',
        'f1', 'f1_macro', 'f1_micro', 'f1_weighted', 'f1_samples',
        'precision*', 'recall*', 'roc_auc', 'roc_auc_ovr', 'roc_auc_ovo',
        'neg_log_loss', 'r2', 'neg_mean_squared_error',
        'neg_root_mean_squared_error', 'neg_mean_absolute_error',
        'adjusted_rand_score', 'fowlkes_mallows_score', ...).

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)`` is collective and
        returns the global score on every rank.

    Examples
    --------
    >>> from mlmpi.linear_model import LogisticRegression
    >>> from mlmpi.metrics import get_scorer
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]
    >>> get_scorer("accuracy")(LogisticRegression().fit(X, y), X, y)
    1.0
    """
    if not isinstance(scoring, str):
        return scoring
    if scoring in _SCORERS:
        return copy.deepcopy(_SCORERS[scoring])
    if scoring in SK_SCORERS:
        raise ValueError(
            f"{scoring!r} is a scikit-learn scorer without a distributed version in mlmpi; "
            "use one of mlmpi.metrics.get_scorer_names()."
        )
    raise ValueError(
        f"{scoring!r} is not a valid scoring value. Use "
        "mlmpi.metrics.get_scorer_names() to get valid options."
    )


def make_scorer(score_func, *, response_method="predict", greater_is_better=True, **kwargs):
    """A scorer from a metric, as scikit-learn's ``make_scorer``.

    With a collective metric of :mod:`mlmpi.metrics` (one taking ``comms``),
    the scorer computes the global score on the estimator's comms.

    Parameters
    ----------
    score_func : callable
        ``score_func(y, y_pred, **kwargs)``.
    response_method : str or list of str, default='predict'
    greater_is_better : bool, default=True
    **kwargs
        Passed to ``score_func``.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)``; collective.

    Examples
    --------
    >>> from mlmpi.metrics import fbeta_score, make_scorer
    >>> f2 = make_scorer(fbeta_score, beta=2)
    """
    sign = 1 if greater_is_better else -1
    return _GlobalScorer(score_func, sign, kwargs, response_method)


def check_scoring(estimator=None, scoring=None, *, allow_none=False, raise_exc=True):
    """The scorer for ``scoring``, as scikit-learn's ``check_scoring``, with
    names resolved by :func:`get_scorer` (global scores).

    ``scoring=None`` uses the estimator's ``score`` (collective and global
    for mlmpi estimators). A list, tuple, set or dict of names gives
    scikit-learn's multimetric scorer of global scorers.

    Parameters
    ----------
    estimator : estimator, default=None
    scoring : str, callable, list, tuple, set, dict or None, default=None
    allow_none : bool, default=False
    raise_exc : bool, default=True

    Returns
    -------
    scorer : callable

    Examples
    --------
    >>> from mlmpi.metrics import check_scoring
    >>> scorer = check_scoring(scoring="r2")
    """
    if isinstance(scoring, str):
        return get_scorer(scoring)
    if isinstance(scoring, (list, tuple, set, dict)):
        named = named_scorings(scoring)
        scorers = {key: check_scoring(estimator, value) for key, value in named.items()}
        return _MultimetricScorer(scorers=scorers, raise_exc=raise_exc)
    return sk_check_scoring(estimator, scoring, allow_none=allow_none, raise_exc=raise_exc)


def named_scorings(scoring):
    """``{name: scoring}`` of a list, tuple, set or dict of scorings, with
    scikit-learn's checks and messages (``_check_multimetric_scoring``)."""
    if isinstance(scoring, dict):
        if not all(isinstance(key, str) for key in scoring):
            raise ValueError(
                f"Non-string types were found in the keys of the given dict. scoring={scoring!r}"
            )
        if not scoring:
            raise ValueError(f"An empty dict was passed. {scoring!r}")
        return scoring
    message = "The list/tuple elements must be unique strings of predefined scorers. "
    try:
        keys = set(scoring)
    except TypeError as exc:
        raise ValueError(message) from exc
    if len(keys) != len(scoring):
        raise ValueError(f"{message} Duplicate elements were found in the given list. {scoring!r}")
    if not keys:
        raise ValueError(f"{message} Empty list was given. {scoring!r}")
    if not all(isinstance(key, str) for key in keys):
        if any(callable(key) for key in keys):
            raise ValueError(
                f"{message} One or more of the elements were callables. Use a dict of score "
                f"name mapped to the scorer callable. Got {scoring!r}"
            )
        raise ValueError(
            f"{message} Non-string types were found in the given list. Got {scoring!r}"
        )
    return {name: name for name in scoring}
