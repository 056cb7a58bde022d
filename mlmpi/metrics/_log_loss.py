"""Log loss from exact global sums (the same at any rank count), with
scikit-learn's labels and clipping rules."""

import warnings

import numpy as np
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils import check_array
from sklearn.utils.validation import check_consistent_length

from .._array import to_host
from .._contract import collective_function
from ..comms import resolve_comms
from ..utils._exact_totals import exact_totals
from ..utils.stats import distinct, host_labels, host_weights, union
from ..utils.validation import agree


def _binarizer(values, labels, numpy_labels):
    """scikit-learn's LabelBinarizer of the global labels, with its checks
    (``numpy_labels``: y_true is a NumPy array, whose labels its messages show
    as NumPy scalars; other containers give Python objects)."""
    binarizer = LabelBinarizer()
    if labels is None:
        binarizer.fit(values)
    else:
        binarizer.fit(labels)
        if not np.all(binarizer.classes_ == labels):
            warnings.warn(
                f"Labels passed were {labels}. But this function assumes labels are ordered "
                f"lexicographically. Pass the ordered labels={binarizer.classes_.tolist()} and "
                "ensure that the columns of y_prob correspond to this ordering.",
                UserWarning,
                stacklevel=2,
            )
        undeclared = (set(values) if numpy_labels else set(values.tolist())) - set(labels)
        if undeclared:
            raise ValueError(
                f"y_true contains values {undeclared} not belonging to the passed labels {labels}."
            )
    if binarizer.classes_.shape[0] == 1:
        if labels is None:
            raise ValueError(
                f"y_true contains only one label ({binarizer.classes_[0]}). Please provide the "
                "list of all expected class labels explicitly through the labels argument."
            )
        raise ValueError(
            f"The labels array needs to contain at least two labels, got {binarizer.classes_}."
        )
    return binarizer


@collective_function
def log_loss(
    y_true,
    y_proba=None,
    *,
    normalize=True,
    sample_weight=None,
    labels=None,
    y_pred="deprecated",
    comms=None,
):
    """Log loss (cross-entropy) over the rows of all ranks.

    Classes are ``labels`` or the sorted union of ``y_true`` over all
    ranks; probabilities are clipped to ``[eps, 1 - eps]`` of their dtype, as
    scikit-learn does.

    Parameters
    ----------
    y_true : array-like of shape (n_local,)
    y_proba : array-like of shape (n_local,) or (n_local, n_classes)
    normalize : bool, default=True
        Mean loss; False gives the (weighted) sum.
    sample_weight : array-like of shape (n_local,), default=None
    labels : array-like, default=None
    y_pred : array-like of shape (n_local,) or (n_local, n_classes)
        Deprecated name of ``y_proba``, as in scikit-learn (with its
        ``FutureWarning``).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    loss : float
        scikit-learn's value on the concatenated rows, on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import log_loss
    >>> round(log_loss(["spam", "ham", "ham", "spam"],
    ...                [[.1, .9], [.9, .1], [.8, .2], [.35, .65]]), 6)
    0.216162
    """
    if not (isinstance(y_pred, str) and y_pred == "deprecated"):
        if y_proba is not None:
            raise ValueError(
                "Cannot use both `y_pred` and `y_proba`. `y_pred` is deprecated, "
                "use `y_proba` instead."
            )
        warnings.warn(
            "`y_pred` was renamed to `y_proba` in version 1.9 and will be removed "
            "in 1.11. Use `y_proba` instead.",
            FutureWarning,
            stacklevel=2,
        )
        y_proba = y_pred
    comms = resolve_comms(comms)

    def check():
        proba = check_array(
            to_host(y_proba), ensure_2d=False, ensure_min_samples=0, dtype=[np.float64, np.float32]
        )
        check_consistent_length(proba, y_true, sample_weight)
        true = host_labels(y_true)
        columns = proba if proba.ndim == 2 else proba.reshape(-1, 1)
        if columns.shape[1] == 1:
            columns = np.concatenate([1 - columns, columns], axis=1)
        normalised = np.isclose(columns.sum(axis=1), 1, rtol=np.sqrt(np.finfo(proba.dtype).eps))
        extremes = (float(proba.max()), float(proba.min())) if proba.size else None
        facts = (
            true.shape[0],
            distinct(true)[0],
            columns.shape[1],
            extremes,
            bool(normalised.all()),
        )
        return (true, columns, host_weights(sample_weight)), facts

    (true, proba, weight), facts = agree(comms, check)
    extremes = [f[3] for f in facts if f[3] is not None]
    if extremes and max(e[0] for e in extremes) > 1:
        raise ValueError(f"y_prob contains values greater than 1: {max(e[0] for e in extremes)}")
    if extremes and min(e[1] for e in extremes) < 0:
        raise ValueError(f"y_prob contains values lower than 0: {min(e[1] for e in extremes)}")
    with_rows = [f for f in facts if f[0]] or facts[:1]
    values = union([f[1] for f in facts])
    binarizer = _binarizer(values, labels, isinstance(y_true, np.ndarray))
    if not all(f[4] for f in facts):
        warnings.warn(
            "The y_prob values do not sum to one. Make sure to pass probabilities.",
            UserWarning,
            stacklevel=2,
        )
    n_columns = with_rows[0][2]
    n_classes = binarizer.classes_.shape[0]
    if n_classes != n_columns:
        if labels is None:
            raise ValueError(
                f"y_true and y_prob contain different number of classes: {n_classes} vs "
                f"{n_columns}. Please provide the true labels explicitly through the labels "
                f"argument. Classes found in y_true: {binarizer.classes_}"
            )
        raise ValueError(
            "The number of classes in labels is different from that in y_prob. Classes "
            f"found in labels: {binarizer.classes_}"
        )
    loss = np.zeros(0)
    if true.shape[0]:
        onehot = binarizer.transform(true)
        if onehot.shape[1] == 1:
            onehot = np.concatenate([1 - onehot, onehot], axis=1)
        eps = np.finfo(proba.dtype).eps
        clipped = np.clip(proba, eps, 1 - eps)
        loss = -(onehot * np.log(clipped)).sum(axis=1, where=onehot > 0)
    if weight is None:
        total, weight_sum = exact_totals([loss, np.array([float(loss.shape[0])])], comms)
    else:
        total, weight_sum = exact_totals([weight * loss, weight], comms)
    return float(total / weight_sum if normalize else total)
