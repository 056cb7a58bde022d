"""Mistakes a collective ``fit`` recognises in how the rows were spread over the ranks.

- **The same rows on every rank** (forgetting to shard, each copy in any
  order): the model would fit every row once per rank. Each rank sends its
  row count and keyed column sums (:func:`rows_fingerprint`, from the pass
  over ``X`` that also checks it for NaN/inf) with the facts every rank
  exchanges at ``fit``. Only where these leave room for the same rows on
  every rank does each rank compute an exact, order-free checksum of its
  rows (:mod:`mlmpi.utils._row_hash`, one more read of them) and send it;
  the same count (of more than one row) and checksum on every rank raises
  the same ``ValueError`` on every rank, or warns with
  ``MLMPI_IDENTICAL_SHARDS=warn``.
- **A scaler fitted on each rank** (scikit-learn's ``StandardScaler`` or
  ``MinMaxScaler`` in a scikit-learn ``Pipeline``): every rank's shard has
  mean 0 and variance 1 in every column, or minimum 0 and maximum 1
  (:func:`scaling_kind`). Rank 0 warns.
"""

import os
import sys
import warnings

import numpy as np

from .._array import is_sparse, to_host
from ..comms._agreement import usage_error


class IdenticalShardsWarning(UserWarning):
    """Every rank passed the same rows (in any order) to a collective ``fit``.

    Raised as an error unless ``MLMPI_IDENTICAL_SHARDS=warn``.
    """


class PerRankScalingWarning(UserWarning):
    """Every rank's rows were scaled on their own (a scikit-learn scaler fitted per rank)."""


def user_stacklevel():
    """The ``stacklevel`` of a warning issued by the caller of this function that
    shows the first line outside mlmpi, scikit-learn and joblib (which runs
    scikit-learn's folds): the user's line."""
    import sklearn

    modules = (sys.modules["mlmpi"], sklearn, sys.modules.get("joblib"))
    libraries = tuple(os.path.dirname(module.__file__) for module in modules if module)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(libraries):
        frame, level = frame.f_back, level + 1
    return level


# -- the same rows on every rank -----------------------------------------------------------


_UNIT_ROUNDOFF = 2.0**-53


def rows_fingerprint(rows, moments):
    """What a rank tells the others about its rows so that they can rule out
    that every rank holds the same ones without reading them again.

    ``(rows, summary)``: ``summary`` is None without moments (rows that are
    not real numbers, never taken for copies), else ``(S, Q, ES, EQ)``: the
    keyed sums ``S = Σ_j k_j Σ x_j`` and ``Q = Σ_j k_j Σ x_j²`` over the
    columns (keys ``k_j`` in [1, 2)) and bounds on their rounding errors in
    any order of summation (``|Σ x| <= sqrt(n Σ x²)``, with a margin of two).
    The same rows in another order or on another device give sums within the
    bounds of each other.

    Parameters
    ----------
    rows : int
    moments : ndarray of shape (2, n_features) or None
        ``[Σ x, Σ x²]`` per column (host float64), from any pass.
    """
    if moments is None:
        return rows, None
    sums, squares = moments
    d = sums.shape[0]
    keys = 1.0 + (np.arange(1, d + 1) * 0.6180339887498949) % 1.0
    error = 2 * (rows + d + 4) * _UNIT_ROUNDOFF
    with np.errstate(all="ignore"):
        Q = float(keys @ squares)
        magnitude = float(keys @ np.sqrt(rows * squares))
        return rows, (float(keys @ sums), Q, error * magnitude, error * Q)


def may_hold_the_same_rows(fingerprints):
    """Whether every rank's :func:`rows_fingerprint` leaves room for the same
    rows (more than one) on every rank: the same count, and sums within
    rounding of each other (or not finite). Only then are the rows' checksums
    (:func:`mlmpi.utils._row_hash.rows_checksum`) worth computing.

    Examples
    --------
    >>> one = rows_fingerprint(3, np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> other = rows_fingerprint(3, np.array([[1.0, 2.5], [3.0, 4.0]]))
    >>> may_hold_the_same_rows([one, one]), may_hold_the_same_rows([one, other])
    (True, False)
    >>> may_hold_the_same_rows([rows_fingerprint(1, np.ones((2, 1)))] * 2)
    False
    """
    rows, first = fingerprints[0]
    if rows < 2 or first is None or any(fp[0] != rows or fp[1] is None for fp in fingerprints):
        return False
    if not all(np.isfinite(fp[1]).all() for fp in fingerprints):
        return True  # NaN or inf kept (ensure_all_finite=False): the checksum decides
    S, Q, ES, EQ = first
    return all(
        abs(s - S) <= es + ES and abs(q - Q) <= eq + EQ for _, (s, q, es, eq) in fingerprints
    )


def identical_shards(estimator, rows, comms, policy):
    """Raise on every rank (``policy="error"``) or warn on rank 0 (``"warn"``)
    that every rank passed the same ``rows`` rows."""
    name = type(estimator).__name__
    message = (
        f"Every rank passed the same {rows} rows to {name} (in some order): the model "
        f"would fit each row {comms.size} times. Each rank must pass only its own rows; take "
        "them with mlmpi.datasets.shard(X, comms) (or mlmpi.io.load_npy, which reads only "
        "this rank's rows)."
    )
    if policy == "error":
        raise usage_error(
            f"{message} To fit every rank's copy on purpose, set MLMPI_IDENTICAL_SHARDS=warn."
        )
    if comms.rank == 0:
        warnings.warn(message, IdenticalShardsWarning, stacklevel=user_stacklevel())


# -- a scaler fitted on each rank --------------------------------------------------------


def _tolerance(dtype):
    return 1e-9 if np.dtype(dtype).itemsize >= 8 else 1e-5


def scaling_kind(X, moments):
    """``"standard"`` when every column of this shard has mean 0 and variance 1
    (or is constant 0), ``"min-max"`` when every column has minimum 0 and
    maximum 1 (or is constant 0) and some values lie strictly between, else
    None. The extrema are computed only when the moments allow them."""
    n = X.shape[0]
    if moments is None or n < 2 or is_sparse(X) or X.dtype.kind != "f":
        return None
    if not np.isfinite(moments).all():  # inf or NaN kept (HDBSCAN's outlier rows): not scaled
        return None
    tol = _tolerance(X.dtype)
    sums, squares = moments
    mean = sums / n
    var = squares / n - mean**2
    unit = np.abs(var - 1) <= tol
    if np.all(np.abs(mean) <= tol) and np.all(unit | (var <= tol)) and unit.any():
        return "standard"
    within = np.all((mean >= -tol) & (mean <= 1 + tol)) and np.all(squares <= sums * (1 + tol))
    if not (within and np.any(squares < (1 - 1e-3) * sums)):  # values in [0, 1], not all 0/1
        return None
    low, high = to_host(X.min(axis=0)), to_host(X.max(axis=0))
    top = np.abs(high - 1) <= tol
    if np.all(np.abs(low) <= tol) and np.all(top | (np.abs(high) <= tol)):
        return "min-max"
    return None


_SCALERS = {
    "standard": ("standardised (mean 0 and variance 1", "StandardScaler"),
    "min-max": ("scaled to [0, 1] (minimum 0 and maximum 1", "MinMaxScaler"),
}


def warn_per_rank_scaling(estimator, kinds, comms):
    """Warn on rank 0 when every rank with at least two rows found the same
    :func:`scaling_kind` (``kinds``: every rank's, None for the others)."""
    found = {kind for kind, rows in kinds if rows > 1}
    if comms.rank != 0 or len(found) != 1 or None in found:
        return
    if sum(rows > 1 for _, rows in kinds) < 2:
        return
    what, scaler = _SCALERS[found.pop()]
    warnings.warn(
        f"Every rank's X is {what} in every column of each rank's rows): this is "
        f"scikit-learn's {scaler} fitted on each rank's rows (in a scikit-learn Pipeline, "
        f"say), which scales every rank differently, so {type(estimator).__name__} learns "
        "from data that depends on how the rows are spread over the ranks. Scale with "
        f"mlmpi.preprocessing.{scaler} (fitted on every rank's rows), in an "
        "mlmpi.pipeline.Pipeline.",
        PerRankScalingWarning,
        stacklevel=user_stacklevel(),
    )
