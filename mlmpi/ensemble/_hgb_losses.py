"""The global statistics of the loss in a boosting fit, the same at any number of ranks.

scikit-learn computes these on the concatenated rows with NumPy: the
baseline (``loss.fit_intercept_only``: a weighted mean, a median or a
percentile), the leaf values of the non-smooth losses (a median or
percentile of each leaf's residuals) and the early-stopping loss (a
weighted mean of the per-row loss). Here means come from exact sums
(:func:`mlmpi.utils.stats.exact_sums`, correctly rounded where NumPy's
pairwise sum may differ in the last bit) and medians and percentiles from
the exact distributed selection of :mod:`mlmpi.utils._quantiles`
(:mod:`mlmpi.utils._weighted_quantiles` with sample weights).
"""

import numpy as np

from .._sklearn_compat import BaseLoss, HalfMultinomialLoss
from ..utils.stats import (
    SortedColumns,
    exact_sums,
    global_median,
    global_percentiles,
    global_weighted_percentiles,
)


def _percentile_of(loss):
    """The percentile a non-smooth loss's intercept is (None for a mean);
    "median" for scikit-learn's ``np.median`` (the absolute error's)."""
    name = type(loss).__name__
    if name == "AbsoluteError":
        return "median"
    if name == "PinballLoss":
        return 100 * loss.closs.quantile
    return None


def _clipped_link(loss, y_pred):
    """The tail of scikit-learn's ``BaseLoss.fit_intercept_only``: the mean
    clipped into the loss's range, through the link."""
    eps = 10 * np.finfo(y_pred.dtype).eps
    interval = loss.interval_y_pred
    low, high = interval.low, interval.high
    a_min = None if low == -np.inf else (low if interval.low_inclusive else low + eps)
    a_max = None if high == np.inf else (high if interval.high_inclusive else high - eps)
    if a_min is None and a_max is None:
        return loss.link.link(y_pred)
    return loss.link.link(np.clip(y_pred, a_min, a_max))


def _percentiles(columns, weights, percentile, comms):
    """scikit-learn's per-column ``np.median`` (``percentile="median"``) or
    ``np.percentile`` without weights, ``_weighted_percentile`` with them, of
    every rank's values."""
    if weights is not None:
        rank = 50.0 if percentile == "median" else percentile
        return global_weighted_percentiles(columns, weights, [rank], average=False, comms=comms)[0]
    sorted_columns = SortedColumns.from_columns(columns, [0] * len(columns), np.float64)
    if percentile == "median":
        return global_median(sorted_columns, comms=comms)
    return global_percentiles(sorted_columns, float(percentile), comms=comms)


def baseline(loss, y, sample_weight, comms):
    """``loss.fit_intercept_only(y, sample_weight)`` on every rank's rows.

    Returns an array of shape (n_trees_per_iteration,). This function is collective.
    """
    percentile = _percentile_of(loss)
    if percentile is not None:
        weights = None if sample_weight is None else [sample_weight]
        return _percentiles([y], weights, percentile, comms)
    if type(loss).fit_intercept_only not in (
        BaseLoss.fit_intercept_only,
        HalfMultinomialLoss.fit_intercept_only,
    ):
        raise ValueError(
            f"{type(loss).__name__} has its own fit_intercept_only, which needs the rows of "
            "every rank; mlmpi computes the baseline of scikit-learn's losses only."
        )
    w = np.ones_like(y) if sample_weight is None else sample_weight
    if isinstance(loss, HalfMultinomialLoss):
        columns = [w * (y == k) for k in range(loss.n_classes)] + [w]
        sums = exact_sums(columns, comms)
        eps = np.finfo(y.dtype).eps
        out = np.clip(sums[:-1] / sums[-1], eps, 1 - eps)
        return loss.link.link(out[None, :]).reshape(-1)
    total, weight = exact_sums([w * y, w], comms)
    return np.atleast_1d(_clipped_link(loss, np.float64(total / weight)))


def leaf_values(loss, residuals, weights, comms):
    """``loss.fit_intercept_only(residuals[l], weights[l])`` of each leaf ``l``
    over every rank's rows (the line search of the non-smooth losses).

    ``residuals`` is this rank's ``y - raw_prediction`` of each leaf's rows,
    ``weights`` their sample weights or None. This function is collective.
    """
    return _percentiles(residuals, weights, _percentile_of(loss), comms)


def mean_losses(loss, sets, n_threads, comms):
    """``loss(y, raw_prediction, sample_weight)`` (the weighted mean of the
    per-row loss) of each ``(y, raw_prediction, sample_weight)`` in ``sets``,
    over every rank's rows: one collective for all."""
    columns = []
    for y, raw, sample_weight in sets:
        per_row = loss.loss(y_true=y, raw_prediction=raw, n_threads=n_threads)
        w = np.ones_like(per_row) if sample_weight is None else sample_weight
        columns += [per_row * w, w]
    sums = exact_sums(columns, comms)
    return [float(sums[2 * i] / sums[2 * i + 1]) for i in range(len(sets))]
