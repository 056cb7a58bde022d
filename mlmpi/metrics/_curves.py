"""ROC and precision-recall curves over the rows of all ranks.

A curve's points are the distinct scores, in decreasing order, with the
weights of the positive and negative rows at or above each. So the curve of
the concatenated data is scikit-learn's curve of the global table of
distinct (label, score) pairs with their summed weights
(:func:`~mlmpi.utils.stats.global_table`, one collective), which
scikit-learn's own function computes, with its checks, warnings,
``pos_label`` and ``drop_intermediate`` rules. Every rank holds the table:
as many entries as distinct (label, score) pairs, at most as many as the
curve (before dropping intermediate points) has points times the labels.
"""

import sklearn.metrics as sk

from .._contract import collective_function
from ..comms import resolve_comms
from ..utils.stats import global_table


def _table(y_true, y_score, sample_weight, comms):
    (true, score), weights = global_table(resolve_comms(comms), (y_true, y_score), sample_weight)
    return true, score, weights


def _curve(name, drop_default, what, returns, example):
    """scikit-learn's ``roc_curve`` or ``precision_recall_curve`` on the global table."""
    sk_curve = getattr(sk, name)

    def curve(
        y_true,
        y_score,
        *,
        pos_label=None,
        sample_weight=None,
        drop_intermediate=drop_default,
        comms=None,
    ):
        true, score, weights = _table(y_true, y_score, sample_weight, comms)
        return sk_curve(
            true,
            score,
            pos_label=pos_label,
            sample_weight=weights,
            drop_intermediate=drop_intermediate,
        )

    curve.__name__ = curve.__qualname__ = name
    curve.__module__ = __name__
    curve.__doc__ = f"""{what} of the rows of all ranks.

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
        This rank's true binary labels.
    y_score : array-like of shape (n_local,)
        This rank's scores.
    pos_label : int, float, bool or str, default=None
        The positive class, as scikit-learn.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    drop_intermediate : bool, default={drop_default}
        Drop the thresholds that add nothing to the curve's shape.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    {returns} : ndarray
        scikit-learn's values on the concatenated rows, on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import {name}
    {example}
    """
    return collective_function(curve)


roc_curve = _curve(
    "roc_curve",
    True,
    "Receiver operating characteristic curve",
    "fpr, tpr, thresholds",
    """>>> fpr, tpr, thresholds = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> tpr.tolist()
    [0.0, 0.5, 0.5, 1.0, 1.0]""",
)
precision_recall_curve = _curve(
    "precision_recall_curve",
    False,
    "Precision-recall pairs, for every threshold,",
    "precision, recall, thresholds",
    """>>> precision, recall, _ = precision_recall_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> recall.tolist()
    [1.0, 1.0, 0.5, 0.5, 0.0]""",
)


@collective_function
def average_precision_score(
    y_true, y_score, *, average="macro", pos_label=1, sample_weight=None, comms=None
):
    """Average precision of the rows of all ranks (binary, multilabel or multiclass).

    Parameters
    ----------
    y_true : array-like of shape (n_local,) or (n_local, n_classes)
        This rank's true labels or label indicators.
    y_score : array-like of shape (n_local,) or (n_local, n_classes)
        This rank's scores.
    average : {'micro', 'samples', 'weighted', 'macro'} or None, default='macro'
        How the per-class scores are combined, as scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class of binary labels.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    average_precision : float or ndarray
        scikit-learn's value on the concatenated rows, on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import average_precision_score
    >>> round(average_precision_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]), 6)
    0.833333
    """
    true, score, weights = _table(y_true, y_score, sample_weight, comms)
    return sk.average_precision_score(
        true, score, average=average, pos_label=pos_label, sample_weight=weights
    )
