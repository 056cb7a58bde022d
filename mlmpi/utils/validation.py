"""Distributed input validation.

If one rank raises while the others enter a collective, the job hangs. So
every check that can fail on some ranks only runs locally first, and then
all ranks *agree* in one collective: if any rank failed, every rank raises
the error of the lowest failing rank (same type, same message).
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from sklearn.utils import assert_all_finite
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    check_is_fitted,
    validate_data,
)

from .. import _config
from .._array import get_namespace, is_device_array, is_sparse, to_csr, to_host
from .._contract._shards import Shard, shard_mismatch
from .._sklearn_compat import _num_samples
from ..comms._agreement import usage_error
from ..comms._calls import by_rank
from ..comms._method import current_method
from ..kernels import kernels_for
from ._row_hash import rows_checksum
from ._shard_checks import (
    IdenticalShardsWarning,
    PerRankScalingWarning,
    identical_shards,
    may_hold_the_same_rows,
    rows_fingerprint,
    scaling_kind,
    warn_per_rank_scaling,
)
from .shard_local import warn_sklearn_model_selection

__all__ = [
    "FitData",
    "IdenticalShardsWarning",
    "PerRankScalingWarning",
    "RowLayout",
    "agree",
    "agree_on_errors",
    "check_local",
    "validate_fit_data",
]

_FLOAT_DTYPES = (np.float64, np.float32)


@dataclass(frozen=True)
class RowLayout:
    """How the global rows are spread over the ranks.

    Attributes
    ----------
    counts : tuple of int
        Rows held by each rank.
    rank : int
        This rank.
    """

    counts: tuple
    rank: int

    @property
    def n_samples(self):
        """Global number of rows."""
        return int(sum(self.counts))

    @property
    def n_local(self):
        return int(self.counts[self.rank])

    @property
    def offset(self):
        """Global index of this rank's first row."""
        return int(sum(self.counts[: self.rank]))


def _rebuild(error, rank, size):
    """``error`` (class, message) raised again, naming ``rank`` (None: no rank)."""
    cls, message = error
    if rank is not None and size > 1:
        message = f"{message} [raised on rank {rank} of {size}]"
    try:
        return cls(message)
    except Exception:  # an exception class with an unusual constructor
        base = TypeError if issubclass(cls, TypeError) else ValueError
        return base(message)


def agree(comms, check, errors=(ValueError, TypeError)):
    """Run ``check()`` on every rank and agree on its outcome.

    ``check`` returns ``(result, facts)``; ``facts`` must be small and
    picklable. One collective exchanges every rank's facts (or error). If
    ``check`` raised one of ``errors`` (default ``ValueError``/``TypeError``;
    file readers add ``OSError``) on any rank, every rank raises the error of
    the lowest such rank.

    Returns
    -------
    result : object
        This rank's ``result``.
    facts : list
        Every rank's ``facts``, in rank order.

    Notes
    -----
    This function is collective.
    """
    try:
        result, facts = check()
        outcome = (None, facts)
    except errors as exc:
        result = None
        outcome = ((type(exc), str(exc)), None)
    gathered = comms.allgather_object(outcome)
    for rank, (error, _) in enumerate(gathered):
        if error is not None:
            raise usage_error(_rebuild(error, rank, comms.size))
    return result, [facts for _, facts in gathered]


def agree_on_errors(comms, check):
    """:func:`agree` for checks that return nothing. This function is collective."""
    agree(comms, lambda: (check(), None))


def _check_device_sparse(X, accept_sparse):
    """scikit-learn's sparse rules for a ``cupyx.scipy.sparse`` matrix: rejected
    unless the estimator accepts sparse input, converted to CSR otherwise."""
    if not accept_sparse:
        raise TypeError(
            "Sparse data was passed for X, but dense data is required. Use '.toarray()' "
            "to convert to a dense array."
        )
    return to_csr(X)


def _check_device_array(
    X, *, dtype, ensure_2d, ensure_all_finite, n_features_in=None, accept_sparse=False
):
    xp = get_namespace(X)
    if is_sparse(X):
        X = _check_device_sparse(X, accept_sparse)
    if ensure_2d and len(X.shape) != 2:
        raise ValueError(
            f"Expected 2D array, got {X.ndim}D array instead. Reshape your data "
            "with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample."
        )
    if dtype is not None and not (isinstance(dtype, str) and dtype == "numeric"):
        dtypes = dtype if isinstance(dtype, (list, tuple)) else (dtype,)
        if X.dtype not in [np.dtype(d) for d in dtypes]:
            if X.dtype.kind not in "biuf":
                raise TypeError(f"Expected a numeric array, got dtype {X.dtype}.")
            X = X.astype(dtypes[0])
    values = X.data if is_sparse(X) else X
    if (
        ensure_all_finite
        and X.dtype.kind == "f"
        and values.size
        and not bool(xp.isfinite(values).all())
    ):
        raise ValueError("Input X contains NaN or infinity.")
    if n_features_in is not None and X.shape[1] != n_features_in:
        raise ValueError(
            f"X has {X.shape[1]} features, but the estimator is expecting "
            f"{n_features_in} features as input."
        )
    return X


def check_local(
    estimator, X, *, reset=False, dtype=_FLOAT_DTYPES, ensure_all_finite=True, **check_params
):
    """Validate this rank's rows at ``predict``/``transform`` time (no communication).

    Accepts zero rows. NumPy input goes through scikit-learn's
    ``validate_data``; CuPy input through an equivalent check on the device.
    """
    if is_device_array(X):
        check_is_fitted(estimator)
        return _check_device_array(
            X,
            dtype=dtype,
            ensure_2d=True,
            ensure_all_finite=ensure_all_finite,
            n_features_in=None if reset else estimator.n_features_in_,
            accept_sparse=check_params.get("accept_sparse", False),
        )
    return validate_data(
        estimator,
        X,
        reset=reset,
        dtype=dtype,
        ensure_min_samples=0,
        ensure_all_finite=ensure_all_finite,
        **check_params,
    )


def _check_weights(sample_weight, X):
    """This rank's weights as an array of X's namespace and dtype.

    scikit-learn's check would reject a shard with zero rows, or one whose
    weights are all zero although other ranks' are not; whether some weight
    is non-zero is decided globally in :func:`validate_fit_data`.
    """
    if sample_weight is None:
        return None
    xp = get_namespace(X)
    sample_weight = xp.asarray(sample_weight, dtype=X.dtype)
    if sample_weight.ndim == 0:
        sample_weight = xp.full(X.shape[0], sample_weight, dtype=X.dtype)
    if sample_weight.ndim != 1:  # scikit-learn's message
        raise ValueError(
            f"Sample weights must be 1D array or scalar, got {sample_weight.ndim}D array. "
            f"Expected either a scalar value or a 1D array of length {X.shape[0]}."
        )
    if sample_weight.shape != (X.shape[0],):
        raise ValueError(f"sample_weight.shape == {sample_weight.shape}, expected {(X.shape[0],)}!")
    if sample_weight.size and not bool(xp.isfinite(sample_weight).all()):
        raise ValueError("Input sample_weight contains NaN or infinity.")
    if sample_weight.size and bool((sample_weight < 0).any()):
        raise ValueError("Negative values in data passed to `sample_weight`")
    return sample_weight


def _validate_empty_shard(
    estimator, X, y, *, dtype, multi_output=False, y_numeric=False, **check_params
):
    """``validate_data(X, y)`` for a rank without rows: scikit-learn's check of
    ``y`` would demand at least one sample."""
    Xv = validate_data(estimator, X, reset=True, dtype=dtype, ensure_min_samples=0, **check_params)
    yv = check_array(y, ensure_2d=False, dtype=None, ensure_min_samples=0, input_name="y")
    if not multi_output and yv.ndim == 2 and yv.shape[1] == 1:
        yv = yv.ravel()
    if y_numeric and yv.dtype.kind == "O":
        yv = yv.astype(np.float64)
    check_consistent_length(Xv, yv)
    return Xv, yv


class FitData(NamedTuple):
    """What :func:`validate_fit_data` returns.

    Attributes
    ----------
    X, y, sample_weight : arrays
        This rank's validated rows (``y``/``sample_weight`` None when not given).
    layout : RowLayout
        Global row counts.
    """

    X: object
    y: object
    sample_weight: object
    layout: RowLayout


class _ShardFacts(NamedTuple):
    """What one rank tells the others about its shard at ``fit``."""

    shard: Shard  # rows, width (None: an empty list), dtype, device
    y_tail: object  # y.shape[1:], None without y
    weight_sum: float
    weighted: bool  # sample_weight given
    label_kind: object  # see _label_kind
    fingerprint: tuple  # see rows_fingerprint
    scaling: object  # see scaling_kind
    sparse: bool
    identical_shards: str  # this rank's MLMPI_IDENTICAL_SHARDS


def _validate_shard(estimator, X, y, dtype, check_params):
    """``(X, y)`` of this rank after scikit-learn's checks (the device check for CuPy)."""
    if is_device_array(X):
        Xv = _check_device_array(
            X,
            dtype=dtype,
            ensure_2d=True,
            ensure_all_finite=check_params.get("ensure_all_finite", True),
            accept_sparse=check_params.get("accept_sparse", False),
        )
        yv = None
        if y is not None:
            xp = get_namespace(X)
            yv = xp.asarray(y)
            if yv.shape[0] != Xv.shape[0]:
                raise ValueError(
                    "Found input variables with inconsistent numbers of samples: "
                    f"[{Xv.shape[0]}, {yv.shape[0]}]"
                )
            if yv.dtype.kind == "f" and yv.size and not bool(xp.isfinite(yv).all()):
                raise ValueError("Input y contains NaN or infinity.")
        estimator.n_features_in_ = Xv.shape[1]
        return Xv, yv
    if y is None:  # passing y=None raises scikit-learn's error if the estimator needs y
        Xv = validate_data(
            estimator, X, None, reset=True, dtype=dtype, ensure_min_samples=0, **check_params
        )
        return Xv, None
    if _num_samples(X) == 0:
        return _validate_empty_shard(estimator, X, y, dtype=dtype, **check_params)
    return validate_data(
        estimator, X, y, reset=True, dtype=dtype, ensure_min_samples=0, **check_params
    )


def validate_fit_data(
    estimator,
    X,
    y=None,
    *,
    comms,
    sample_weight=None,
    dtype=_FLOAT_DTYPES,
    ensure_min_samples=1,
    row_pass=None,
    **check_params,
):
    """Validate the shards of a collective ``fit`` and agree on the outcome.

    Local checks (shape, dtype, NaN/inf, ``y`` and ``sample_weight``
    lengths, negative weights) run on every rank; then one collective
    exchanges the facts and every rank checks the same global rules: equal
    ``n_features``, dtype and device on every rank (the rules of
    :mod:`mlmpi._contract._shards`), at least ``ensure_min_samples`` rows in
    total, the same ``y.shape[1:]``, the same kind of labels, and shards
    that are not all the same rows (:mod:`mlmpi.utils._shard_checks`). Any
    failure raises the same error on every rank.

    The column moments that these checks read (NaN/inf, scaling, a summary
    of the rows) come from one pass over ``X``: the validation's own, or
    ``row_pass``'s.

    Parameters
    ----------
    row_pass : callable, optional
        ``row_pass(X, y, sample_weight)``, called on this rank's validated
        shard inside the agreed checks, where the estimator's own first read
        of the rows yields their column moments: it returns ``[Σ x, Σ x²]``
        per column (host float64 of shape (2, n_features), in any order of
        summation) to be read in place of the validation's pass, or None
        (then the validation reads the rows itself). It keeps what else it
        computes; it must not communicate.

    Returns
    -------
    fit_data : FitData
        ``(X, y, sample_weight, layout)``: this rank's validated rows and the
        global row counts.

    Notes
    -----
    This function is collective. It sets ``estimator.n_features_in_``.
    A rank without rows may pass a plain empty list (``X=[]``, ``y=[]``).

    Sparse input (``accept_sparse`` in ``check_params``, as scikit-learn's
    ``validate_data``): SciPy sparse shards are checked by scikit-learn (other
    formats converted to CSR, NaN/inf in ``.data`` caught), ``cupyx.scipy.sparse``
    shards by the device check. Shards may mix dense and sparse and different
    sparse formats: when any rank's ``X`` is sparse, every rank's shard is
    returned as CSR (a dense shard is converted), so every rank takes the same
    (sparse) path and the result is that of the stacked sparse matrix, as with
    ``scipy.sparse.vstack``. An estimator without ``accept_sparse`` raises
    scikit-learn's "dense data is required" error on every rank.

    ``sample_weight=None`` means weights of one, as in scikit-learn: when some
    ranks pass weights and others None, the latter get an array of ones, so
    that every rank takes the same (weighted) path.
    """
    X, unknown_width = _empty_list_as_rows(X)
    own_finite_check = _checks_finite_itself(X, check_params)
    if own_finite_check:
        check_params = {**check_params, "ensure_all_finite": False}

    def check():
        Xv, yv = _validate_shard(estimator, X, y, dtype, check_params)
        name = type(estimator).__name__
        try:
            swv = _check_weights(sample_weight, Xv)
        except (ValueError, TypeError):
            if own_finite_check:  # scikit-learn reports NaN/inf in X before bad weights
                assert_all_finite(Xv, input_name="X", estimator_name=name)
            raise
        moments = _column_moments(Xv, row_pass(Xv, yv, swv) if row_pass is not None else None)
        if own_finite_check and moments is not None and not np.isfinite(moments).all():
            assert_all_finite(Xv, input_name="X", estimator_name=name)
        facts = _ShardFacts(
            shard=Shard(
                Xv.shape[0],
                None if unknown_width else Xv.shape[1],
                Xv.dtype.str,
                is_device_array(Xv),
            ),
            y_tail=None if yv is None else tuple(yv.shape[1:]),
            weight_sum=Xv.shape[0] if swv is None else float(swv.sum()),
            weighted=swv is not None,
            label_kind=_label_kind(yv),
            fingerprint=rows_fingerprint(Xv.shape[0], moments),
            scaling=scaling_kind(Xv, moments),
            sparse=is_sparse(Xv),
            identical_shards=_config.identical_shards(),
        )
        return (Xv, yv, swv), facts

    (Xv, yv, swv), facts = agree(comms, check)
    _check_global_facts(estimator, facts, ensure_min_samples)
    if comms.size > 1:
        warn_sklearn_model_selection(estimator, comms)
        if may_hold_the_same_rows([f.fingerprint for f in facts]):
            if len(set(comms.allgather_object(rows_checksum(Xv)))) == 1:
                identical_shards(estimator, Xv.shape[0], comms, facts[0].identical_shards)
        warn_per_rank_scaling(estimator, [(f.scaling, f.shard.rows) for f in facts], comms)
    if unknown_width:
        Xv = _empty_rows_like(estimator, Xv, facts)
    if any(f.sparse for f in facts):  # sparse on some rank: CSR on every rank (see Notes)
        Xv = to_csr(Xv)
    if swv is None and any(f.weighted for f in facts):  # weights on some rank: on every rank
        swv = _check_weights(1.0, Xv)
    common = next((np.dtype(f.shard.dtype) for f in facts if f.shard.rows > 0), Xv.dtype)
    if Xv.dtype != common:  # an empty shard built with another dtype
        Xv = Xv.astype(common)
        if swv is not None:
            swv = swv.astype(common)
    counts = tuple(f.shard.rows for f in facts)
    return FitData(Xv, yv, swv, RowLayout(counts, comms.rank))


def _in_call(message):
    """``message`` prefixed with the collective call it is raised in, as the
    contract's own messages are."""
    method = current_method()
    return message if method is None else f"{method}: {message}"


def _check_global_facts(estimator, facts, ensure_min_samples):
    """The rules every rank checks on every rank's :class:`_ShardFacts` (no
    communication): the same error on every rank."""
    problem = shard_mismatch([f.shard for f in facts])
    if problem is not None:
        raise usage_error(_in_call(problem))
    if len({f.y_tail for f in facts}) > 1:
        shapes = by_rank((r, f"y.shape[1:] = {f.y_tail}") for r, f in enumerate(facts))
        raise usage_error(
            "y has a different number of dimensions or targets on different ranks; "
            f"every shard must have the same targets ({shapes})."
        )
    n_samples = sum(f.shard.rows for f in facts)
    if n_samples < ensure_min_samples:
        raise usage_error(
            f"Found array with {n_samples} sample(s) (shape=({n_samples}, "
            f"{facts[0].shard.n_features})) while a minimum of {ensure_min_samples} is "
            "required (all ranks together)."
        )
    if n_samples and sum(f.weight_sum for f in facts) == 0:
        raise usage_error(
            "Sample weights must contain at least one non-zero number (all ranks together)."
        )
    has_rows = [f.shard.rows > 0 for f in facts]
    kinds = {f.label_kind for f, rows in zip(facts, has_rows) if rows and f.label_kind}
    if len(kinds) > 1 or "mixed" in kinds:
        described = by_rank(
            (r, f"{f.label_kind} labels") for r, f in enumerate(facts) if f.label_kind
        )
        raise usage_error(
            f"y mixes string and numeric labels ({described}); 'a' and 0 would be "
            "different classes. Encode the labels the same way on every rank."
        )


def _checks_finite_itself(X, check_params):
    """True for a dense NumPy float ``X`` to be checked for NaN/inf: the check
    then comes from the column moments' pass (scikit-learn's would be one more
    pass over X), with scikit-learn's message."""
    return (
        isinstance(X, np.ndarray)
        and X.dtype.kind == "f"
        and check_params.get("ensure_all_finite", True) is True
    )


def _column_moments(X, read=None):
    """``[Σ x, Σ x²]`` per column of this shard (float64, on the host): those
    ``read`` by an estimator's row pass, else from a pass of their own. None
    for an empty shard or rows that are not real numbers (strings or complex
    values, which encoders check themselves)."""
    if X.shape[0] == 0 or X.dtype.kind not in "biuf":
        return None
    if read is not None:
        return read
    xp = get_namespace(X)
    moments = xp.zeros((2, X.shape[1]), dtype=xp.float64)
    kernels_for("decomposition", X).column_moments(X, moments[0], moments[1])
    return to_host(moments)


def _label_kind(y):
    """'string', 'numeric' or 'mixed' for the labels of ``y``; None without labels."""
    if y is None or y.size == 0:
        return None
    if is_device_array(y) or y.dtype.kind in "biufc":
        return "numeric"
    if y.dtype.kind in "USa":
        return "string"
    is_text = {isinstance(v, (str, bytes)) for v in y.ravel().tolist()}
    return "mixed" if len(is_text) > 1 else ("string" if True in is_text else "numeric")


def _empty_list_as_rows(X):
    """``(X, unknown_width)``: a plain empty list or tuple (a rank without rows)
    becomes 0 rows (of a placeholder width) whose width is taken from the other
    ranks."""
    if isinstance(X, (list, tuple)) and len(X) == 0:
        return np.empty((0, 1)), True
    return X, False


def _empty_rows_like(estimator, X, facts):
    """0 rows with the width agreed by the ranks that passed arrays."""
    n_features = next((f.shard.n_features for f in facts if f.shard.n_features is not None), 0)
    estimator.n_features_in_ = n_features
    return np.empty((0, n_features), dtype=X.dtype)
