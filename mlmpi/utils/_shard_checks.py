"""Mistakes a collective ``fit`` recognises in how the rows were spread over the ranks.

- **The same rows on every rank** (forgetting to shard): the model would fit
  every row once per rank. Each rank's shard is summarised by its row count
  and every column's sum and sum of squares (:func:`rows_fingerprint`, from
  the pass over ``X`` that also checks it for NaN/inf); only when every
  rank's summary is the same does each rank compute an exact, order-free
  checksum of its rows (:func:`rows_checksum`), since shards that only share
  their moments are common (a scaler fitted on each rank makes every shard's
  sums 0 and n). The same checksum everywhere raises the same ``ValueError``
  on every rank, or warns with ``MLMPI_IDENTICAL_SHARDS=warn``.
- **A scaler fitted on each rank** (scikit-learn's ``StandardScaler`` or
  ``MinMaxScaler`` in a scikit-learn ``Pipeline``): every rank's shard has
  mean 0 and variance 1 in every column, or minimum 0 and maximum 1
  (:func:`scaling_kind`). Rank 0 warns.
"""

import os
import sys
import warnings

import numpy as np

from .._array import get_namespace, is_sparse, to_host
from ..comms._agreement import usage_error

_FINGERPRINT_RTOL = 1e-9  # sums of the same rows in another order agree to rounding
_CHUNK_ROWS = 1 << 13  # rows hashed at a time
_MIX = np.uint64(0x9E3779B97F4A7C15)
_FOLD = np.uint64(0xBF58476D1CE4E5B9)


class IdenticalShardsWarning(UserWarning):
    """Every rank passed the same rows (in any order) to a collective ``fit``.

    Raised as an error unless ``MLMPI_IDENTICAL_SHARDS=warn``.
    """


class PerRankScalingWarning(UserWarning):
    """Every rank's rows were scaled on their own (a scikit-learn scaler fitted per rank)."""


def user_stacklevel():
    """The ``stacklevel`` of a warning issued by the caller of this function that
    shows the first line outside mlmpi and scikit-learn (the user's line)."""
    import sklearn

    libraries = tuple(
        os.path.dirname(module.__file__) for module in (sys.modules["mlmpi"], sklearn)
    )
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(libraries):
        frame, level = frame.f_back, level + 1
    return level


# -- the same rows on every rank -----------------------------------------------------------


def rows_fingerprint(X, moments):
    """An order-invariant summary of this shard's rows, or None without
    ``moments`` (column sums and sums of squares): the row count, then the moments."""
    return None if moments is None else (X.shape[0], moments.ravel())


def same_fingerprints(fingerprints):
    """Whether every rank's :func:`rows_fingerprint` shows more than one row and
    agrees with rank 0's to rounding."""
    first = fingerprints[0]
    if first is None or first[0] < 2 or not np.isfinite(first[1]).all():
        return False  # NaN (a missing value) compares with nothing
    scale = np.abs(first[1]).max()
    return all(
        fp is not None
        and fp[0] == first[0]
        and np.allclose(fp[1], first[1], rtol=_FINGERPRINT_RTOL, atol=_FINGERPRINT_RTOL * scale)
        for fp in fingerprints
    )


def _mix(h, xp):
    """A bijective scramble of uint64 words (splitmix64's finaliser)."""
    h = h ^ (h >> xp.uint64(30))
    h = h * _FOLD
    h = h ^ (h >> xp.uint64(27))
    h = h * _MIX
    return h ^ (h >> xp.uint64(31))


def _words(values, xp):
    """The bit patterns of ``values`` as uint64."""
    width = {1: xp.uint8, 2: xp.uint16, 4: xp.uint32, 8: xp.uint64}[values.dtype.itemsize]
    return xp.ascontiguousarray(values).view(width).astype(xp.uint64)


def rows_checksum(X):
    """A checksum of the multiset of this shard's rows: the wrapping sum of a
    hash of every row, so the same rows in any order give the same value and
    other rows almost surely another. Each entry is hashed with its column
    (sparse: its stored entries), so rows that share moments do not collide."""
    xp = get_namespace(X)
    with np.errstate(over="ignore"):
        if is_sparse(X):
            X = X.tocsr()
            X.sum_duplicates()
            entries = _mix(_words(X.data, xp) ^ _mix(X.indices.astype(xp.uint64) + 1, xp), xp)
            running = xp.concatenate([xp.zeros(1, xp.uint64), xp.cumsum(entries, dtype=xp.uint64)])
            per_row = running[X.indptr[1:]] - running[X.indptr[:-1]]  # wrapping, as the sums
            return int(to_host(_mix(per_row, xp).sum(dtype=xp.uint64)))
        columns = _mix(xp.arange(1, X.shape[1] + 1, dtype=xp.uint64), xp)
        total = 0
        for start in range(0, X.shape[0], _CHUNK_ROWS):
            block = _words(X[start : start + _CHUNK_ROWS], xp)
            per_row = _mix(block ^ columns, xp).sum(axis=1, dtype=xp.uint64)
            total += int(to_host(_mix(per_row, xp).sum(dtype=xp.uint64)))
        return total % 2**64


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
