"""Regression metrics from exact global sums of errors.

Each metric is a few weighted sums per output, added exactly over the
ranks in one collective (R² takes two: the global weighted mean first, then
the centred sum of squares, so no variance is formed by cancellation), so
that a metric is the same at any rank count. The final formula is
scikit-learn's (``multioutput``, ``force_finite``).
"""

import warnings

import numpy as np
import sklearn.metrics as sk
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.utils import check_array
from sklearn.utils.validation import check_consistent_length

from .._array import get_namespace, to_host
from .._contract import collective_function
from ..comms import resolve_comms
from ..utils._exact_totals import exact_totals
from ..utils.stats import global_median, global_table, host_weights
from ..utils.validation import agree

_MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")


def _as_columns(y, xp):
    y = (
        y
        if xp is not np
        else check_array(y, ensure_2d=False, ensure_min_samples=0, dtype="numeric")
    )
    y = xp.asarray(y, dtype=xp.float64)
    return y.reshape(-1, 1) if y.ndim == 1 else y


def _check_multioutput(multioutput, n_outputs, allowed):
    if isinstance(multioutput, str):
        if multioutput not in allowed:
            raise ValueError(
                f"Allowed 'multioutput' string values are {allowed}. "
                f"You provided multioutput={multioutput!r}"
            )
        return multioutput
    multioutput = check_array(multioutput, ensure_2d=False)
    if n_outputs == 1:
        raise ValueError("Custom weights are useful only in multi-output cases.")
    if n_outputs != multioutput.shape[0]:
        raise ValueError(
            f"There must be equally many custom weights ({multioutput.shape[0]}) "
            f"as outputs ({n_outputs})."
        )
    return multioutput


def _targets(comms, y_true, y_pred, sample_weight, multioutput, allowed):
    """This rank's ``(y_true, y_pred, weights)`` as (n_local, n_outputs) float64
    arrays of ``y_pred``'s namespace, the global number of rows and the checked
    ``multioutput``, after one collective that agrees on the checks (scikit-learn's
    messages; a rank without rows may pass 1-d empty arrays)."""
    xp = get_namespace(y_pred)

    def check():
        check_consistent_length(y_true, y_pred, sample_weight)
        true, pred = _as_columns(y_true, xp), _as_columns(y_pred, xp)
        if true.shape[1] != pred.shape[1]:
            raise ValueError(
                "y_true and y_pred have different number of output "
                f"({true.shape[1]}!={pred.shape[1]})"
            )
        weights = host_weights(sample_weight)
        if weights is not None:
            weights = xp.asarray(weights, dtype=xp.float64)
        return (true, pred, weights), (true.shape[0], true.shape[1])

    (true, pred, weights), facts = agree(comms, check)
    widths = {width for rows, width in facts if rows}
    if len(widths) > 1:
        described = "; ".join(f"rank {r}: {w}" for r, (_, w) in enumerate(facts))
        raise ValueError(f"y has a different number of outputs on different ranks ({described}).")
    n_outputs = widths.pop() if widths else true.shape[1]
    n_samples = sum(rows for rows, _ in facts)
    if n_samples == 0:
        raise ValueError(
            "Found array with 0 sample(s) (shape=(0,)) while a minimum of 1 is required."
        )
    if true.shape[1] != n_outputs:  # an empty shard given as a 1-d array
        true = true.reshape(0, n_outputs)
        pred = pred.reshape(0, n_outputs)
    multioutput = _check_multioutput(multioutput, n_outputs, allowed)
    return true, pred, weights, n_samples, multioutput


def _weighted_sums(comms, weights, *columns):
    """``[Σw, Σw·column for each column]`` over all ranks (float64 host).

    Every weighted value is formed on its own rank, as ``np.average`` forms
    it, and the values are added exactly
    (:func:`~mlmpi.utils._exact_totals.exact_totals`): the sums, and what
    they decide (R²'s zero-denominator branch, a search's best candidate),
    are the same at any rank count.

    This function is collective."""
    if weights is None:
        terms = [np.array([float(columns[0].shape[0])])]
        terms += [c[:, j] for c in columns for j in range(c.shape[1])]
    else:
        terms = [weights] + [c[:, j] * weights for c in columns for j in range(c.shape[1])]
    return exact_totals(terms, comms)


def _average_outputs(errors, multioutput):
    if isinstance(multioutput, str):
        if multioutput == "raw_values":
            return errors
        multioutput = None
    return float(np.average(errors, weights=multioutput))


def _squared(xp, true, pred):
    return (true - pred) ** 2


def _absolute(xp, true, pred):
    return xp.abs(true - pred)


def _mean_errors(comms, y_true, y_pred, sample_weight, multioutput, error):
    true, pred, weights, _, multioutput = _targets(
        comms, y_true, y_pred, sample_weight, multioutput, _MULTIOUTPUT[:2]
    )
    xp = get_namespace(true)
    n_outputs = true.shape[1]
    sums = _weighted_sums(comms, weights, error(xp, true, pred))
    return sums[1 : 1 + n_outputs] / sums[0], multioutput


@collective_function
def mean_squared_error(
    y_true, y_pred, *, sample_weight=None, multioutput="uniform_average", comms=None
):
    """Mean squared error over the rows of all ranks.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_local,) or (n_local, n_outputs)
    sample_weight : array-like of shape (n_local,), default=None
    multioutput : {'raw_values', 'uniform_average'} or array-like, default='uniform_average'
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    loss : float or ndarray of shape (n_outputs,)
        scikit-learn's value on the concatenated rows, on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import mean_squared_error
    >>> mean_squared_error([3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0])
    0.375
    """
    errors, multioutput = _mean_errors(
        resolve_comms(comms),
        y_true,
        y_pred,
        sample_weight,
        multioutput,
        _squared,
    )
    return _average_outputs(errors, multioutput)


@collective_function
def root_mean_squared_error(
    y_true, y_pred, *, sample_weight=None, multioutput="uniform_average", comms=None
):
    """Root mean squared error (per output, then averaged) over the rows of all ranks.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_local,) or (n_local, n_outputs)
        This rank's true and predicted targets.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    multioutput : {'raw_values', 'uniform_average'} or array-like, default='uniform_average'
        Per-output values, their mean, or their weighted mean.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    loss : float or ndarray of shape (n_outputs,)
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import root_mean_squared_error
    >>> root_mean_squared_error([3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0])
    0.6123724356957945
    """
    errors, multioutput = _mean_errors(
        resolve_comms(comms),
        y_true,
        y_pred,
        sample_weight,
        multioutput,
        _squared,
    )
    return _average_outputs(np.sqrt(errors), multioutput)


@collective_function
def mean_absolute_error(
    y_true, y_pred, *, sample_weight=None, multioutput="uniform_average", comms=None
):
    """Mean absolute error over the rows of all ranks.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_local,) or (n_local, n_outputs)
        This rank's true and predicted targets.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    multioutput : {'raw_values', 'uniform_average'} or array-like, default='uniform_average'
        Per-output values, their mean, or their weighted mean.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    loss : float or ndarray of shape (n_outputs,)
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import mean_absolute_error
    >>> mean_absolute_error([3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0])
    0.5
    """
    errors, multioutput = _mean_errors(
        resolve_comms(comms),
        y_true,
        y_pred,
        sample_weight,
        multioutput,
        _absolute,
    )
    return _average_outputs(errors, multioutput)


@collective_function
def r2_score(
    y_true,
    y_pred,
    *,
    sample_weight=None,
    multioutput="uniform_average",
    force_finite=True,
    comms=None,
):
    """R² (coefficient of determination) over the rows of all ranks.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_local,) or (n_local, n_outputs)
    sample_weight : array-like of shape (n_local,), default=None
    multioutput : {'raw_values', 'uniform_average', 'variance_weighted'} or array-like
    force_finite : bool, default=True
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    score : float or ndarray of shape (n_outputs,)
        scikit-learn's value on the concatenated rows, on every rank.

    Notes
    -----
    This function is collective (two exact sums: the weighted mean, then
    the residual and centred sums of squares).

    Examples
    --------
    >>> from mlmpi.metrics import r2_score
    >>> r2_score([3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0])
    0.9486081370449679
    """
    comms = resolve_comms(comms)
    true, pred, weights, n_samples, multioutput = _targets(
        comms, y_true, y_pred, sample_weight, multioutput, _MULTIOUTPUT
    )
    if n_samples < 2:
        warnings.warn(
            "R^2 score is not well-defined with less than two samples.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        return float("nan")
    xp = get_namespace(true)
    n_outputs = true.shape[1]
    sums = _weighted_sums(comms, weights, true)
    mean = xp.asarray(sums[1:] / sums[0])
    residual, centred = true - pred, true - mean
    sums = _weighted_sums(comms, weights, residual * residual, centred * centred)
    numerator, denominator = sums[1 : 1 + n_outputs], sums[1 + n_outputs :]
    return _fraction_explained(numerator, denominator, multioutput, force_finite)


def _fraction_explained(numerator, denominator, multioutput, force_finite):
    """scikit-learn's rules for 1 - numerator / denominator per output, and their average."""
    nonzero_denominator = denominator != 0
    if force_finite:
        nonzero_numerator = numerator != 0
        scores = np.ones_like(numerator)
        valid = nonzero_denominator & nonzero_numerator
        scores[valid] = 1 - numerator[valid] / denominator[valid]
        scores[nonzero_numerator & ~nonzero_denominator] = 0.0
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = 1 - numerator / denominator
    if isinstance(multioutput, str):
        if multioutput == "raw_values":
            return scores
        weights = None
        if multioutput == "variance_weighted" and nonzero_denominator.any():
            weights = denominator
    else:
        weights = multioutput
    return float(np.average(scores, weights=weights))


@collective_function
def mean_absolute_percentage_error(
    y_true, y_pred, *, sample_weight=None, multioutput="uniform_average", comms=None
):
    """Mean absolute percentage error over the rows of all ranks.

    ``|y_true - y_pred| / max(|y_true|, eps)`` averaged (weighted), as scikit-learn.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_local,) or (n_local, n_outputs)
        This rank's true and predicted targets.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    multioutput : {'raw_values', 'uniform_average'} or array-like, default='uniform_average'
        Per-output values, their mean, or their weighted mean.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    loss : float or ndarray of shape (n_outputs,)
        Replicated.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.metrics import mean_absolute_percentage_error
    >>> round(mean_absolute_percentage_error([3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0]), 6)
    0.327381
    """
    eps = np.finfo(np.float64).eps

    def error(xp, t, p):
        return xp.abs(p - t) / xp.maximum(xp.abs(t), eps)

    errors, multioutput = _mean_errors(
        resolve_comms(comms), y_true, y_pred, sample_weight, multioutput, error
    )
    return _average_outputs(errors, multioutput)


@collective_function
def explained_variance_score(
    y_true,
    y_pred,
    *,
    sample_weight=None,
    multioutput="uniform_average",
    force_finite=True,
    comms=None,
):
    """Explained variance over the rows of all ranks.

    ``1 - Var(y_true - y_pred) / Var(y_true)`` (weighted), with scikit-learn's
    ``multioutput`` and ``force_finite`` rules.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_local,) or (n_local, n_outputs)
        This rank's true and predicted targets.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights.
    multioutput : {'raw_values', 'uniform_average', 'variance_weighted'} or array-like, \
            default='uniform_average'
        How the outputs' scores are combined.
    force_finite : bool, default=True
        Replace the undefined scores of constant ``y_true`` by 1 or 0.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    score : float or ndarray of shape (n_outputs,)
        Replicated.

    Notes
    -----
    This function is collective (two exact sums: the weighted means, then
    the centred sums of squares).

    Examples
    --------
    >>> from mlmpi.metrics import explained_variance_score
    >>> round(explained_variance_score([3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0]), 6)
    0.957173
    """
    comms = resolve_comms(comms)
    true, pred, weights, _, multioutput = _targets(
        comms, y_true, y_pred, sample_weight, multioutput, _MULTIOUTPUT
    )
    xp = get_namespace(true)
    n_outputs = true.shape[1]
    residual = true - pred
    sums = _weighted_sums(comms, weights, residual, true)
    means = sums[1:] / sums[0]
    residual = residual - xp.asarray(means[:n_outputs])
    centred = true - xp.asarray(means[n_outputs:])
    sums = _weighted_sums(comms, weights, residual * residual, centred * centred)
    numerator, denominator = sums[1 : 1 + n_outputs], sums[1 + n_outputs :]
    return _fraction_explained(numerator, denominator, multioutput, force_finite)


@collective_function
def median_absolute_error(
    y_true, y_pred, *, multioutput="uniform_average", sample_weight=None, comms=None
):
    """Median absolute error over the rows of all ranks (the exact global median).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_local,) or (n_local, n_outputs)
        This rank's true and predicted targets.
    multioutput : {'raw_values', 'uniform_average'} or array-like, default='uniform_average'
        Per-output values, their mean, or their weighted mean.
    sample_weight : array-like of shape (n_local,), default=None
        This rank's sample weights (scikit-learn's weighted median, averaged).
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    loss : float or ndarray of shape (n_outputs,)
        Replicated.

    Notes
    -----
    This function is collective. Without weights, the median is found by
    distributed selection (:func:`mlmpi.utils.global_median`: a few rounds of
    small allreduces, no rank gathers the errors). With weights, every rank
    gathers each output's distinct (error, summed weight) pairs and computes
    scikit-learn's weighted median on them.

    Examples
    --------
    >>> from mlmpi.metrics import median_absolute_error
    >>> median_absolute_error([3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0])
    0.5
    """
    comms = resolve_comms(comms)
    true, pred, weights, _, multioutput = _targets(
        comms, y_true, y_pred, sample_weight, multioutput, _MULTIOUTPUT[:2]
    )
    errors = to_host(get_namespace(true).abs(pred - true))
    if weights is None:
        output_errors = global_median(errors, comms=comms)
    else:
        output_errors = np.array(
            [
                _weighted_median(errors[:, j], to_host(weights), comms)
                for j in range(errors.shape[1])
            ]
        )
    return _average_outputs(output_errors, multioutput)


def _weighted_median(errors, weights, comms):
    """scikit-learn's weighted median (averaged) of one output's global errors,
    from the distinct (error, weight) pairs of every rank. Collective."""
    (values,), summed = global_table(comms, (errors,), weights)
    return float(sk.median_absolute_error(values, np.zeros_like(values), sample_weight=summed))
