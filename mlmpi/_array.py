"""Array namespace dispatch between NumPy (host) and CuPy (device).

Inputs decide where work runs: NumPy in, NumPy out; CuPy in, CuPy out.
CuPy is never imported unless a CuPy array is seen or asked for.
"""

import numpy as np

from . import _config

_device_math_set = False
_device_bound = False


def is_device_array(x):
    """True for CuPy arrays (found by type, without importing CuPy)."""
    module = type(x).__module__
    return module.startswith("cupy") and module.split(".")[0] in ("cupy", "cupyx")


def get_namespace(*arrays):
    """Return ``cupy`` if any of ``arrays`` is a CuPy array, else ``numpy``."""
    for x in arrays:
        if x is not None and is_device_array(x):
            import cupy

            if not _device_math_set:
                set_device_math(cupy)
            return cupy
    return np


def set_device_math(cupy, allow_tf32=None):
    """Apply ``MLMPI_ALLOW_TF32`` to CuPy's float32 GEMMs (once, at the first CuPy input).

    ``True``: cuBLAS may use TF32 tensor cores; ``False``: full float32.
    None reads ``MLMPI_ALLOW_TF32``; unset, CuPy's own default stays (its
    ``CUPY_TF32`` variable, off unless set). The setting is CuPy's
    process-wide compute type for float32 (and complex64) matrix products.
    """
    global _device_math_set
    _device_math_set = True
    allow = _config.allow_tf32() if allow_tf32 is None else allow_tf32
    if allow is None:
        return
    from cupy._core import _routines_linalg as linalg

    kind = linalg.COMPUTE_TYPE_TF32 if allow else linalg.COMPUTE_TYPE_DEFAULT
    for dtype in (np.float32, np.complex64):
        linalg.set_compute_type(dtype, kind)


def bind_local_device(local_rank):
    """Make GPU ``local_rank % device count`` current, as NCCLComms does; return its id.

    Acts once per process (the first MPIComms made calls it), so that ranks on a
    node spread over its GPUs (Horovod's ``local_rank()`` rule). Does nothing
    (returns None) unless the program has imported CuPy (a CPU-only job never
    touches CUDA), without a GPU, or when this process already holds CuPy
    device memory (its arrays live on the current device, which stays).
    """
    import sys

    global _device_bound
    cupy = sys.modules.get("cupy")
    if cupy is None or _device_bound:
        return None
    _device_bound = True
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # CuPy without a usable CUDA driver or device
        return None
    if count == 0 or cupy.get_default_memory_pool().total_bytes() > 0:
        return None
    device = local_rank % count
    cupy.cuda.Device(device).use()
    return device


def to_host(x):
    """NumPy copy (or view) of ``x``, wherever it lives."""
    if is_device_array(x):
        return x.get()
    return np.asarray(x)


def to_namespace(x, xp):
    """``x`` as an array of namespace ``xp`` (copying between host and device as needed)."""
    if xp is np:
        return to_host(x)
    return xp.asarray(x)


def on_host(x):
    """``x`` on the host: NumPy rows, or SciPy sparse rows for sparse ``x``."""
    if is_sparse(x):
        return x.get() if is_device_array(x) else x
    return to_host(x)


def back_like(out, x):
    """``out``, computed on the host from ``x``, where ``x`` lives: a CuPy array
    (``cupyx.scipy.sparse`` CSR for sparse ``out``) when ``x`` is on the device
    and ``out`` numeric; otherwise ``out`` itself (strings stay on the host)."""
    if not is_device_array(x) or getattr(out, "dtype", np.dtype(object)).kind not in "biuf":
        return out
    if is_sparse(out):
        return sparse_namespace(x).csr_matrix(out)
    return to_namespace(out, get_namespace(x))


def log_softmax(scores):
    """Row-wise ``log(softmax(scores))`` of a 2-D array, shifted by each row's
    maximum so that no ``exp`` overflows."""
    xp = get_namespace(scores)
    top = scores.max(axis=1, keepdims=True)
    return scores - top - xp.log(xp.exp(scores - top).sum(axis=1, keepdims=True))


def synchronize(x):
    """Wait for the work queued on ``x``'s CUDA stream (no-op for NumPy)."""
    if is_device_array(x):
        import cupy

        cupy.cuda.get_current_stream().synchronize()


def scratch_bytes(xp, host_bytes, device_cap):
    """Bytes a kernel may take for one block's temporaries in namespace ``xp``.

    NumPy: ``host_bytes`` (blocks that stay near the caches). CuPy: a quarter
    of the device memory free now (the pool's cached blocks included), at
    most ``device_cap``: a device runs a launch-bound loop per block, so its
    blocks must be as large as its memory allows.
    """
    if xp is np:
        return host_bytes
    free, _ = xp.cuda.Device().mem_info
    return int(min(device_cap, (free + xp.get_default_memory_pool().free_bytes()) // 4))


def is_sparse(x):
    """True for SciPy sparse matrices/arrays and ``cupyx.scipy.sparse`` matrices
    (found by type, without importing CuPy)."""
    import scipy.sparse

    if scipy.sparse.issparse(x):
        return True
    return type(x).__module__.startswith("cupyx.scipy.sparse")


def sparse_namespace(x):
    """``scipy.sparse`` for a host sparse matrix, ``cupyx.scipy.sparse`` for a device one."""
    if is_device_array(x):
        import cupyx.scipy.sparse

        return cupyx.scipy.sparse
    import scipy.sparse

    return scipy.sparse


def to_csr(x):
    """``x`` (dense or sparse, host or device) as a CSR matrix in the same place.

    CSR input is returned as it is; other sparse formats and dense arrays are
    converted (a dense array becomes a ``csr_matrix``).
    """
    if is_sparse(x):
        return x if x.format == "csr" else x.tocsr()
    return sparse_namespace(x).csr_matrix(x)
