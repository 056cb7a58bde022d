"""Exact ROC AUC from global rank statistics.

For a binary problem, AUC = Σ_pos w_i (W_neg(score < s_i) + ½ W_neg(score = s_i))
/ (W_pos · W_neg): the area under scikit-learn's (trapezoidal, ties
averaged) ROC curve, without binning. Every rank sorts its negatives by
score; the sorted blocks travel round the ring of ranks
(:func:`~mlmpi.utils.ring.ring_blocks`), and every rank counts, for each
of its positives, the weight of the visiting negatives below and equal to
its score (two binary searches). Memory per rank: its rows plus two blocks;
no rank gathers the scores. Multiclass (one-vs-rest, one-vs-one) and
multilabel scores average binary problems as scikit-learn does. Float
weights are first rounded onto a grid on which their sums are exact, so
that the partial AUC crosses ``max_fpr`` at the same score at any rank
count, and the areas are exact sums of per-row terms: the AUC is the same
at any rank count.
"""

import warnings
from itertools import combinations

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.utils import check_array, column_or_1d
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_consistent_length

from .._array import to_host
from .._contract import collective_function
from ..comms import resolve_comms
from ..kernels import kernels_for
from ..utils._exact import onto_exact_grid
from ..utils._exact_totals import exact_totals
from ..utils.ring import ring_blocks
from ..utils.stats import distinct, host_labels, host_weights, union
from ..utils.validation import agree

_BLOCK_ROWS = 1 << 16


def _sorted_block(score, weight):
    """``(n, 2)`` float64 rows (score, weight) sorted by score: what travels the ring."""
    order = np.argsort(score, kind="stable")
    return np.ascontiguousarray(np.column_stack([score[order], weight[order]]), dtype=np.float64)


def _global_weight_below(comms, sorted_rows, counts, queries, ties):
    """For each local query score, the weight of every rank's ``sorted_rows``
    below it plus ``ties`` times the weight equal to it.

    This function is collective.
    """
    below = np.zeros(queries.shape[0])
    for block, _, _, _ in ring_blocks(sorted_rows, comms, counts, _BLOCK_ROWS):
        kernels_for("metrics", queries).add_weight_below(
            block[:, 0], block[:, 1], queries, below, ties
        )
    return below


def _binary_auc(comms, positive, score, weight, max_fpr=None):
    """Global AUC of ``score`` for the rows where ``positive`` (bool) against
    the others (McClish-corrected partial AUC up to ``max_fpr`` < 1); NaN with
    scikit-learn's warning when one class is absent.

    This function is collective.
    """
    weight = np.ones(positive.shape[0]) if weight is None else weight
    score = score.astype(np.float64)
    negatives = ~positive
    sorted_negatives = _sorted_block(score[negatives], weight[negatives])
    pos_score, pos_weight = score[positive], weight[positive]
    stats = comms.allgather(
        np.array(
            [positive.sum(), negatives.sum(), pos_weight.sum(), sorted_negatives[:, 1].sum()],
            dtype=np.float64,
        )
    ).reshape(comms.size, 4)
    n_pos, n_neg, w_pos, w_neg = stats.sum(axis=0)
    if n_pos == 0 or n_neg == 0:
        warnings.warn(
            "Only one class is present in y_true. ROC AUC score is not defined in that case.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        return np.nan
    negative_counts = stats[:, 1].astype(np.int64).tolist()
    if max_fpr is not None and max_fpr != 1:
        if max_fpr <= 0 or max_fpr > 1:
            raise ValueError(f"Expected max_fpr in range (0, 1], got: {max_fpr!r}")
        return _partial_auc(comms, stats, sorted_negatives, pos_score, pos_weight, max_fpr)
    below = _global_weight_below(comms, sorted_negatives, negative_counts, pos_score, 0.5)
    (area,) = exact_totals([below * pos_weight], comms)
    return float(area / (w_pos * w_neg))


def _partial_auc(comms, stats, sorted_negatives, pos_score, pos_weight, max_fpr):
    """scikit-learn's McClish-corrected area of the ROC curve up to ``max_fpr``.

    The curve crosses ``max_fpr`` on its segment ending at the threshold
    ``t``: the largest negative score whose global weight at or above it
    exceeds ``max_fpr · W_neg``. Before that segment the area is the sum,
    over negatives scoring above ``t``, of their weight times the positive
    weight above them (ties halved); the segment is interpolated as
    scikit-learn does. Two ring passes (negatives, then positives).

    This function is collective.
    """
    _, _, w_pos, w_neg = stats.sum(axis=0)
    neg_score, neg_weight = sorted_negatives[:, 0], sorted_negatives[:, 1]
    negative_counts = stats[:, 1].astype(np.int64).tolist()
    at_or_above = w_neg - _global_weight_below(
        comms, sorted_negatives, negative_counts, neg_score, 0.0
    )
    crossing = neg_score[at_or_above > max_fpr * w_neg]
    t = comms.allreduce(np.array([crossing.max() if crossing.size else -np.inf]), op="max")[0]
    sorted_positives = _sorted_block(pos_score, pos_weight)
    positive_counts = stats[:, 0].astype(np.int64).tolist()
    above = neg_score > t
    positive_above = w_pos - _global_weight_below(
        comms, sorted_positives, positive_counts, neg_score[above], 0.5
    )
    at_t = neg_score == t
    area, fps, tps, fps_t, tps_t = exact_totals(
        [
            neg_weight[above] * positive_above,
            neg_weight[above],
            pos_weight[pos_score > t],
            neg_weight[above | at_t],
            pos_weight[pos_score >= t],
        ],
        comms,
    )
    fpr = [fps / w_neg, fps_t / w_neg]
    tpr = [tps / w_pos, tps_t / w_pos]
    tpr_at_max = np.interp(max_fpr, fpr, tpr)
    partial = area / (w_pos * w_neg) + (max_fpr - fpr[0]) * (tpr[0] + tpr_at_max) / 2
    min_area, max_area = 0.5 * max_fpr**2, max_fpr
    return float(0.5 * (1 + (partial - min_area) / (max_area - min_area)))


def _exact_weights(weight, facts):
    """Float weights rounded onto the grid on which every sum of them is exact
    (:func:`~mlmpi.utils._exact.onto_exact_grid`), so that the partial AUC's
    crossing of ``max_fpr`` is found at the same score at any rank count;
    ``facts`` are every rank's ``(n_rows, ..., n_columns, ..., largest float
    weight or None)``. Other weights are returned as they are."""
    largest = [f[5] for f in facts if f[5] is not None]
    if weight is None or not largest:
        return weight
    columns = max([f[2][0] for f in facts if f[2]], default=1)  # micro repeats the weights
    return onto_exact_grid(weight, max(largest), sum(f[0] for f in facts) * columns)


def _indicator_auc(comms, Y, S, weight, average, max_fpr=None):
    """scikit-learn's ``_average_binary_score`` of the binary AUC for indicator
    columns ``Y`` (n_local, n_labels) and scores ``S``, over all ranks."""
    if average == "micro":
        repeated = None if weight is None else np.repeat(weight, Y.shape[1])
        return _binary_auc(comms, Y.ravel().astype(bool), S.ravel(), repeated, max_fpr)
    if average == "samples":
        if max_fpr is not None and max_fpr != 1:
            raise NotImplementedError(
                "mlmpi's roc_auc_score has no partial AUC (max_fpr) with average='samples'."
            )
        return _average_of_rows(comms, Y, S, weight)
    average_weight = None
    if average == "weighted":
        w = np.ones(Y.shape[0]) if weight is None else weight
        average_weight = comms.allreduce(np.asarray(w @ Y, dtype=np.float64))
        if np.isclose(average_weight.sum(), 0):
            return 0
    scores = np.array(
        [
            _binary_auc(comms, Y[:, c].astype(bool), S[:, c], weight, max_fpr)
            for c in range(Y.shape[1])
        ]
    )
    if average is None:
        return scores
    if average_weight is not None:
        scores[average_weight == 0] = 0
    return float(np.average(scores, weights=average_weight))


def _row_auc(y, s):
    """AUC of one row's labels (local; NaN and scikit-learn's warning for one class)."""
    positive = y.astype(bool)
    if positive.all() or not positive.any():
        warnings.warn(
            "Only one class is present in y_true. ROC AUC score is not defined in that case.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        return np.nan
    below = kernels_for("metrics", s).add_weight_below(
        np.sort(s[~positive]), np.ones((~positive).sum()), s[positive], np.zeros(positive.sum())
    )
    return below.sum() / (positive.sum() * (~positive).sum())


def _average_of_rows(comms, Y, S, weight):
    """``average='samples'``: the weighted mean of every row's own AUC."""
    scores = np.array([_row_auc(y, s) for y, s in zip(Y, S)], dtype=np.float64)
    w = np.ones(Y.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    if weight is not None:
        scores[w == 0] = 0
    total, weight_sum = exact_totals([w * scores, w], comms)
    return float(total / weight_sum)


def _check_multiclass(
    classes_present, n_columns, sums_to_one, labels, multi_class, average, sample_weight
):
    """scikit-learn's checks of a multiclass ``roc_auc_score`` call, in its order;
    returns the classes (the columns of the scores)."""
    if n_columns is None:
        raise ValueError(
            "`y_score` needs to be of shape `(n_samples, n_classes)`, since `y_true` "
            "contains multiple classes."
        )
    if not sums_to_one:
        raise ValueError(
            "Target scores need to be probabilities for multiclass roc_auc, i.e. they "
            "should sum up to 1.0 over classes"
        )
    options = (("micro",) if multi_class == "ovr" else ()) + ("macro", "weighted", None)
    if average not in options:
        raise ValueError(f"average must be one of {options} for multiclass problems")
    if multi_class not in ("ovo", "ovr"):
        raise ValueError(
            f"multi_class='{multi_class}' is not supported for multiclass ROC AUC, "
            "multi_class must be in ('ovo', 'ovr')"
        )
    if average is None and multi_class == "ovo":
        raise NotImplementedError("average=None is not implemented for multi_class='ovo'.")
    if labels is not None:
        labels = column_or_1d(labels)
        classes = np.unique(labels)
        if len(classes) != len(labels):
            raise ValueError("Parameter 'labels' must be unique")
        if not np.array_equal(classes, labels):
            raise ValueError("Parameter 'labels' must be ordered")
        if len(classes) != n_columns:
            raise ValueError(
                f"Number of given labels, {len(classes)}, not equal to the number of "
                f"columns in 'y_score', {n_columns}"
            )
        if len(np.setdiff1d(classes_present, classes)):
            raise ValueError("'y_true' contains labels not in parameter 'labels'")
    else:
        classes = classes_present
        if len(classes) != n_columns:
            raise ValueError(
                "Number of classes in y_true not equal to the number of columns in 'y_score'"
            )
    if multi_class == "ovo" and sample_weight is not None:
        raise ValueError(
            "sample_weight is not supported for multiclass one-vs-one ROC AUC, "
            "'sample_weight' must be None in this case."
        )
    return classes


def _ovo_auc(comms, true, S, classes, present, average):
    """Hand & Till's one-vs-one average over all ranks, over the pairs of
    classes ``present`` in ``y_true`` (scikit-learn's order)."""
    n_rows = comms.allreduce(np.array([true.shape[0]], dtype=np.float64))[0]
    pair_scores, prevalence = [], []
    for a, b in combinations(np.searchsorted(classes, present), 2):
        a_mask, b_mask = true == classes[a], true == classes[b]
        ab = a_mask | b_mask
        prevalence.append(comms.allreduce(np.array([ab.sum()], dtype=np.float64))[0] / n_rows)
        a_score = _binary_auc(comms, a_mask[ab], S[ab, a], None)
        b_score = _binary_auc(comms, b_mask[ab], S[ab, b], None)
        pair_scores.append((a_score + b_score) / 2)
    weights = prevalence if average == "weighted" else None
    return float(np.average(pair_scores, weights=weights))


@collective_function
def roc_auc_score(
    y_true,
    y_score,
    *,
    average="macro",
    sample_weight=None,
    max_fpr=None,
    multi_class="raise",
    labels=None,
    comms=None,
):
    """Exact area under the ROC curve over the rows of all ranks.

    Binary, multiclass (``multi_class='ovr'`` or ``'ovo'``) and multilabel
    input, every ``average`` of scikit-learn. The scores are ranked over the
    global data with ties averaged (no binning), see the module notes.

    Parameters
    ----------
    y_true : array-like of shape (n_local,) or (n_local, n_labels)
    y_score : array-like of shape (n_local,) or (n_local, n_classes)
    average : {'micro', 'macro', 'samples', 'weighted'} or None, default='macro'
    sample_weight : array-like of shape (n_local,), default=None
    max_fpr : float in (0, 1], default=None
        Standardised partial AUC up to this false positive rate (McClish),
        binary and multilabel, as scikit-learn.
    multi_class : {'raise', 'ovr', 'ovo'}, default='raise'
    labels : array-like of shape (n_classes,), default=None
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    auc : float or ndarray
        scikit-learn's value on the concatenated rows, on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import roc_auc_score
    >>> roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    comms = resolve_comms(comms)

    def check():
        check_consistent_length(y_true, y_score)
        try:  # scikit-learn checks the weights' length after the multiclass rules
            check_consistent_length(y_true, y_score, sample_weight)
            weight_error = None
        except ValueError as exc:
            weight_error = str(exc)
        true = check_array(host_labels(y_true), ensure_2d=False, dtype=None, ensure_min_samples=0)
        score = check_array(to_host(y_score), ensure_2d=False, ensure_min_samples=0)
        weight = None if weight_error else host_weights(sample_weight)
        sums_to_one = score.ndim == 2 and bool(np.allclose(1, score.sum(axis=1)))
        floats = weight is not None and weight.dtype.kind not in "iub"
        largest = float(np.abs(weight).max(initial=0)) if floats else None
        facts = (true.shape[0], distinct(true)[0], score.shape[1:], sums_to_one, weight_error)
        return (true, score, weight), facts + (largest,)

    (true, score, weight), facts = agree(comms, check)
    weight = _exact_weights(weight, facts)
    weight_errors = [f[4] for f in facts if f[4] is not None]
    with_rows = [f for f in facts if f[0]] or facts[:1]
    values = union([f[1] for f in facts])
    tails = {f[2] for f in with_rows}
    if len(tails) > 1:
        raise ValueError(f"y_score has a different number of columns on different ranks {tails}.")
    tail = tails.pop()
    n_columns = tail[0] if tail else None
    if score.shape[1:] != tail:  # an empty shard given as a 1-d array
        score = score.reshape((0,) + tail)
    y_type = type_of_target(values, input_name="y_true")
    if y_type == "multiclass" or (y_type == "binary" and n_columns and n_columns > 2):
        if max_fpr is not None and max_fpr != 1.0:
            raise ValueError(
                "Partial AUC computation not available in multiclass setting, 'max_fpr' "
                f"must be set to `None`, received `max_fpr={max_fpr}` instead"
            )
        if multi_class == "raise":
            raise ValueError("multi_class must be in ('ovo', 'ovr')")
        classes = _check_multiclass(
            values,
            n_columns,
            all(f[3] for f in with_rows),
            labels,
            multi_class,
            average,
            sample_weight,
        )
        if weight_errors:
            raise ValueError(weight_errors[0])
        if multi_class == "ovo":
            return _ovo_auc(comms, true, score, classes, values, average)
        Y = true.reshape(-1, 1) == classes.reshape(1, -1)
        return _indicator_auc(comms, Y, score, weight, average)
    if y_type in ("binary", "multilabel-indicator") and weight_errors:
        raise ValueError(weight_errors[0])
    if y_type == "binary":
        positive = (true == values[1]) if len(values) == 2 else np.zeros(true.shape[0], bool)
        return _binary_auc(comms, positive, column_or_1d(score), weight, max_fpr)
    if y_type == "multilabel-indicator":
        return _indicator_auc(comms, true, score, weight, average, max_fpr)
    raise ValueError(f"{y_type} format is not supported")
