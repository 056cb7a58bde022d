"""Settings seeded from environment variables.

Every setting can be given as a constructor argument where it matters
(``MPIComms(cuda_aware=True)``); the environment only supplies defaults so
that a job can be reconfigured without a code change.

==========================  ==================================================
``MLMPI_COMMS``             ``mpi`` | ``nccl`` | ``self``: backend of
                            :func:`mlmpi.get_comms`.
``MLMPI_CUDA_AWARE_MPI``    ``1``: pass CuPy buffers straight to MPI instead of
                            staging them through host memory.
``MLMPI_NUM_THREADS``       BLAS/numba/OpenMP threads per rank (default: the
                            cores of the node divided by the ranks on it).
``MLMPI_TIMELINE``          path: record every collective and write a Chrome
                            trace (one file per rank) at exit.
``MLMPI_TIMEOUT``           seconds: abort the job when a collective does not
                            complete in time (default 300; ``0`` turns it off).
``MLMPI_ABORT_ON_ERROR``    ``0``: do not install the hook that aborts the whole
                            MPI job on an uncaught exception.
``MLMPI_IDENTICAL_SHARDS``  ``error`` (default) | ``warn``: what a collective
                            ``fit`` does when every rank passes the same rows
                            (forgetting to shard): raise the same ValueError on
                            every rank, or fit every rank's copy and warn.
``MLMPI_RANDOM_DRAWS``      ``auto`` (default) | ``scikit-learn`` | ``per-row``:
                            which random draws splits, bootstraps and
                            subsamples make (:mod:`mlmpi.random`).
``MLMPI_ALLOW_TF32``        ``1``: let cuBLAS use TF32 tensor cores for float32
                            GEMMs on CuPy arrays (faster, ~1e-3 relative
                            error); ``0``: never. Unset: CuPy's own default
                            (``CUPY_TF32``, off unless set).
==========================  ==================================================
"""

import os

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _env_flag(name, default):
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    value = value.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={value!r} is not a boolean; use 1 or 0.")


def _env_positive(name, kind):
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    try:
        parsed = kind(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a {kind.__name__}.") from None
    if parsed <= 0:
        raise ValueError(f"{name}={value!r} must be positive.")
    return parsed


def comms_backend():
    """Backend named by ``MLMPI_COMMS`` (lower case), or None."""
    value = os.environ.get("MLMPI_COMMS", "").strip().lower()
    if not value:
        return None
    if value not in ("mpi", "nccl", "self"):
        raise ValueError(
            f"MLMPI_COMMS={value!r} is not a comms backend; use 'mpi', 'nccl' or 'self'."
        )
    return value


def random_draws():
    """``MLMPI_RANDOM_DRAWS`` (lower case), or None when unset."""
    value = os.environ.get("MLMPI_RANDOM_DRAWS", "").strip().lower()
    return value or None


def cuda_aware_mpi():
    return _env_flag("MLMPI_CUDA_AWARE_MPI", False)


def num_threads():
    return _env_positive("MLMPI_NUM_THREADS", int)


def timeline_path():
    return os.environ.get("MLMPI_TIMELINE") or None


# Seconds a rank may wait in one collective before the watchdog aborts the
# job. The collective contract (mlmpi._contract) catches ranks that call
# different methods, a different number of chunks, or end the program early,
# at once; this is only the backstop for a rank that never arrives (stuck,
# deadlocked, or busy far longer than the others). Five minutes covers the
# slowest rank's legitimate work between two collectives in ordinary jobs
# (raise it for very imbalanced work, e.g. one rank loading a huge shard).
DEFAULT_TIMEOUT = 300.0
DEFAULT_STALL_WARNING = 30.0  # seconds a collective waits before the ranks are asked where they are


def _env_seconds(name, default):
    """The environment variable ``name`` in seconds; ``default`` when unset; None for ``0``."""
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    if value in ("0", "0.0"):
        return None
    return _env_positive(name, float)


def collective_timeout():
    """``MLMPI_TIMEOUT`` in seconds; :data:`DEFAULT_TIMEOUT` when unset; None for ``0``."""
    return _env_seconds("MLMPI_TIMEOUT", DEFAULT_TIMEOUT)


def stall_warning():
    """``MLMPI_STALL_WARNING`` in seconds; :data:`DEFAULT_STALL_WARNING` when unset;
    None for ``0``."""
    return _env_seconds("MLMPI_STALL_WARNING", DEFAULT_STALL_WARNING)


def abort_on_error():
    return _env_flag("MLMPI_ABORT_ON_ERROR", True)


def identical_shards():
    """``MLMPI_IDENTICAL_SHARDS``: ``"error"`` (unset) or ``"warn"``."""
    value = os.environ.get("MLMPI_IDENTICAL_SHARDS", "").strip().lower() or "error"
    if value not in ("error", "warn"):
        raise ValueError(f"MLMPI_IDENTICAL_SHARDS={value!r} is not 'error' or 'warn'.")
    return value


def allow_tf32():
    """``MLMPI_ALLOW_TF32`` as True/False, or None when unset."""
    return _env_flag("MLMPI_ALLOW_TF32", None)
