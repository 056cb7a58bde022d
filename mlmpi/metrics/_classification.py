"""Label metrics from the global weighted contingency table.

Every metric of predicted labels (accuracy, precision, recall, F-scores,
the confusion matrix, the classification report) is a function of the
distinct ``(y_true, y_pred)`` combinations and their summed weights. Each
rank builds its part of that table, one collective merges them, and
scikit-learn's own function runs on the table with the sums as sample
weights: the result is scikit-learn's on the concatenated data (with its
errors, warnings, ``labels=``, ``pos_label``, ``zero_division`` and
``average`` rules), the same on every rank, and no per-shard score is
ever averaged. Multilabel indicator rows are combinations too, so
``average='samples'`` is exact.
"""

import numpy as np
import sklearn.metrics as sk

from .._contract import collective_function
from ..comms import resolve_comms
from ..utils.stats import global_table

_COLLECTIVE = """
    This function is collective: every rank passes its own rows.
"""


def _table(y_true, y_pred, sample_weight, comms):
    (true, pred), weights = global_table(resolve_comms(comms), (y_true, y_pred), sample_weight)
    return true, pred, weights


@collective_function
def accuracy_score(y_true, y_pred, *, normalize=True, sample_weight=None, comms=None):
    """Accuracy over the rows of all ranks (subset accuracy for multilabel input).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_local,) or (n_local, n_labels)
        This rank's true and predicted labels (label indicators for multilabel).
    normalize : bool, default=True
        Fraction of correct rows; False gives their (weighted) number.
    sample_weight : array-like of shape (n_local,), default=None
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    score : float
        scikit-learn's ``accuracy_score`` of the concatenated rows, on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import accuracy_score
    >>> accuracy_score([0, 1, 2, 2], [0, 2, 2, 2])
    0.75
    """
    true, pred, weights = _table(y_true, y_pred, sample_weight, comms)
    return sk.accuracy_score(true, pred, normalize=normalize, sample_weight=weights)


@collective_function
def balanced_accuracy_score(y_true, y_pred, *, sample_weight=None, adjusted=False, comms=None):
    """Balanced accuracy (mean recall per class) over the rows of all ranks.

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
        This rank's true labels.
    y_pred : array-like of shape (n_local,)
        This rank's predicted labels.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    adjusted : bool, default=False
        Rescale so that chance scores 0 (and a perfect prediction 1).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    score : float
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import balanced_accuracy_score
    >>> balanced_accuracy_score([0, 0, 0, 1], [0, 0, 1, 1])
    0.8333333333333333
    """
    true, pred, weights = _table(y_true, y_pred, sample_weight, comms)
    return sk.balanced_accuracy_score(true, pred, sample_weight=weights, adjusted=adjusted)


@collective_function
def confusion_matrix(
    y_true, y_pred, *, labels=None, sample_weight=None, normalize=None, comms=None
):
    """Confusion matrix of the rows of all ranks.

    Classes are the sorted union over all ranks (a class may be missing on
    some ranks).

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
        This rank's true labels.
    y_pred : array-like of shape (n_local,)
        This rank's predicted labels.
    labels : array-like of shape (n_classes,), default=None
        The labels to index the matrix with (default: the sorted union).
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    normalize : {'true', 'pred', 'all'}, default=None
        Normalise over the true rows, the predicted columns or everything.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    C : ndarray of shape (n_classes, n_classes)
        Replicated; integer counts unless weighted or normalised, as scikit-learn.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import confusion_matrix
    >>> confusion_matrix(["a", "b", "b"], ["a", "a", "b"]).tolist()
    [[1, 0], [1, 1]]
    """
    true, pred, weights = _table(y_true, y_pred, sample_weight, comms)
    return sk.confusion_matrix(
        true, pred, labels=labels, sample_weight=weights, normalize=normalize
    )


@collective_function
def precision_recall_fscore_support(
    y_true,
    y_pred,
    *,
    beta=1.0,
    labels=None,
    pos_label=1,
    average=None,
    warn_for=("precision", "recall", "f-score"),
    sample_weight=None,
    zero_division="warn",
    comms=None,
):
    """Precision, recall, F-beta and support over the rows of all ranks.

    Every ``average`` mode of scikit-learn (``'binary'``, ``'micro'``,
    ``'macro'``, ``'weighted'``, ``'samples'``, None).

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
        This rank's true labels.
    y_pred : array-like of shape (n_local,)
        This rank's predicted labels.
    beta : float, default=1.0
        Weight of recall in the F-score.
    labels : array-like, default=None
        The labels to include (and their order), as scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class for ``average='binary'``.
    average : {'binary', 'micro', 'macro', 'weighted', 'samples'} or None, default=None
        How the per-class scores are combined; None returns them all.
    warn_for : tuple of str, default=('precision', 'recall', 'f-score')
        The metrics to warn about when undefined.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    zero_division : {'warn', 0.0, 1.0, np.nan}, default='warn'
        The value of an undefined ratio, as scikit-learn.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    precision, recall, fbeta_score, support
        Replicated; as scikit-learn's (``support`` counts rows, None when averaged).

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import precision_recall_fscore_support
    >>> p, r, f, s = precision_recall_fscore_support([0, 1, 1], [0, 1, 0])
    >>> s.tolist()
    [1, 2]
    """
    true, pred, weights = _table(y_true, y_pred, sample_weight, comms)
    precision, recall, fscore, support = sk.precision_recall_fscore_support(
        true,
        pred,
        beta=beta,
        labels=labels,
        pos_label=pos_label,
        average=average,
        warn_for=warn_for,
        sample_weight=weights,
        zero_division=zero_division,
    )
    if support is not None and sample_weight is None:  # counts, as scikit-learn's
        support = np.rint(support).astype(np.int64)
    return precision, recall, fscore, support


def _averaged(name, doc_example):
    """``precision_score``, ``recall_score`` or ``f1_score``: scikit-learn's on the table."""
    sk_func = getattr(sk, name)

    def metric(
        y_true,
        y_pred,
        *,
        labels=None,
        pos_label=1,
        average="binary",
        sample_weight=None,
        zero_division="warn",
        comms=None,
    ):
        true, pred, weights = _table(y_true, y_pred, sample_weight, comms)
        return sk_func(
            true,
            pred,
            labels=labels,
            pos_label=pos_label,
            average=average,
            sample_weight=weights,
            zero_division=zero_division,
        )

    metric.__name__ = metric.__qualname__ = name
    metric.__module__ = __name__
    metric.__doc__ = f"""scikit-learn's ``{name}`` over the rows of all ranks.

    Every ``average`` mode (``'binary'``, ``'micro'``, ``'macro'``,
    ``'weighted'``, ``'samples'``, None), ``labels``, ``pos_label`` and
    ``zero_division`` as scikit-learn.

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
        This rank's true labels.
    y_pred : array-like of shape (n_local,)
        This rank's predicted labels.
    labels : array-like, default=None
        The labels to include (and their order), as scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class for ``average='binary'``.
    average : {{'binary', 'micro', 'macro', 'weighted', 'samples'}} or None, default='binary'
        How the per-class scores are combined; None returns them all.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    zero_division : {{'warn', 0.0, 1.0, np.nan}}, default='warn'
        The value of an undefined ratio, as scikit-learn.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    score : float or ndarray
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import {name}
    >>> {name}([0, 1, 1, 0], [0, 1, 0, 0])
    {doc_example}
    """
    return collective_function(metric)


precision_score = _averaged("precision_score", "1.0")
recall_score = _averaged("recall_score", "0.5")
f1_score = _averaged("f1_score", "0.6666666666666666")


@collective_function
def fbeta_score(
    y_true,
    y_pred,
    *,
    beta,
    labels=None,
    pos_label=1,
    average="binary",
    sample_weight=None,
    zero_division="warn",
    comms=None,
):
    """scikit-learn's ``fbeta_score`` over the rows of all ranks.

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
        This rank's true labels.
    y_pred : array-like of shape (n_local,)
        This rank's predicted labels.
    beta : float
        Weight of recall in the F-score.
    labels : array-like, default=None
        The labels to include (and their order), as scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class for ``average='binary'``.
    average : {'binary', 'micro', 'macro', 'weighted', 'samples'} or None, default='binary'
        How the per-class scores are combined; None returns them all.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    zero_division : {'warn', 0.0, 1.0, np.nan}, default='warn'
        The value of an undefined ratio, as scikit-learn.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    score : float or ndarray
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import fbeta_score
    >>> round(fbeta_score([0, 1, 1, 0], [0, 1, 0, 0], beta=2), 4)
    0.5556
    """
    true, pred, weights = _table(y_true, y_pred, sample_weight, comms)
    return sk.fbeta_score(
        true,
        pred,
        beta=beta,
        labels=labels,
        pos_label=pos_label,
        average=average,
        sample_weight=weights,
        zero_division=zero_division,
    )


@collective_function
def classification_report(
    y_true,
    y_pred,
    *,
    labels=None,
    target_names=None,
    sample_weight=None,
    digits=2,
    output_dict=False,
    zero_division="warn",
    comms=None,
):
    """scikit-learn's text (or dict) report over the rows of all ranks.

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
        This rank's true labels.
    y_pred : array-like of shape (n_local,)
        This rank's predicted labels.
    labels : array-like of shape (n_labels,), default=None
        The labels in the report.
    target_names : list of str, default=None
        Display names of the labels.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    digits : int, default=2
        Digits of the printed floats.
    output_dict : bool, default=False
        Return a dict instead of the text.
    zero_division : {'warn', 0.0, 1.0, np.nan}, default='warn'
        The value of an undefined ratio, as scikit-learn.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    report : str or dict
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import classification_report
    >>> print(classification_report([0, 1, 1], [0, 1, 0]).splitlines()[2])
               0       0.50      1.00      0.67         1
    """
    true, pred, weights = _table(y_true, y_pred, sample_weight, comms)
    report = sk.classification_report(
        true,
        pred,
        labels=labels,
        target_names=target_names,
        sample_weight=weights,
        digits=digits,
        output_dict=output_dict,
        zero_division=zero_division,
    )
    if output_dict or sample_weight is not None:
        return report
    return "\n".join(_support_as_count(line) for line in report.split("\n"))


def _support_as_count(line):
    """A report line with its support printed as scikit-learn prints a count.

    The table's counts reach scikit-learn as weights, which it prints as
    floats (``12.0``); unweighted, it prints the integer (``12``) right-aligned
    in the same 9-character column."""
    token = line.rsplit(" ", 1)[-1]
    if not token.endswith(".0"):
        return line
    width = max(9, len(token))
    return f"{line[:-width]}{int(float(token)):>9}"


@collective_function
def matthews_corrcoef(y_true, y_pred, *, sample_weight=None, comms=None):
    """Matthews correlation coefficient over the rows of all ranks.

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
        This rank's true labels.
    y_pred : array-like of shape (n_local,)
        This rank's predicted labels.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    mcc : float
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import matthews_corrcoef
    >>> round(matthews_corrcoef([1, 1, 1, 0], [1, 0, 1, 1]), 6)
    -0.333333
    """
    true, pred, weights = _table(y_true, y_pred, sample_weight, comms)
    return sk.matthews_corrcoef(true, pred, sample_weight=weights)


@collective_function(data=("y1", "y2"))
def cohen_kappa_score(
    y1,
    y2,
    *,
    labels=None,
    weights=None,
    sample_weight=None,
    replace_undefined_by=np.nan,
    comms=None,
):
    """Cohen's kappa of two annotators over the rows of all ranks.

    Parameters
    ----------
    y1, y2 : array-like of shape (n_local,)
        This rank's labels from each annotator.
    labels : array-like of shape (n_classes,), default=None
        The labels of the confusion matrix (default: every label seen).
    weights : {'linear', 'quadratic'}, default=None
        Disagreement weights.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    replace_undefined_by : np.nan, float in [-1.0, 1.0], default=np.nan
        The value when kappa is undefined, as scikit-learn.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    kappa : float
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import cohen_kappa_score
    >>> round(cohen_kappa_score([0, 1, 1, 2], [0, 1, 2, 2]), 6)
    0.636364
    """
    first, second, counts = _table(y1, y2, sample_weight, comms)
    return sk.cohen_kappa_score(
        first,
        second,
        labels=labels,
        weights=weights,
        sample_weight=counts,
        replace_undefined_by=replace_undefined_by,
    )
