"""Array namespace dispatch between NumPy (host) and CuPy (device).

Inputs decide where work runs: NumPy in, NumPy out; CuPy in, CuPy out.
CuPy is never imported unless a CuPy array is seen or asked for.
"""

import numpy as np


def is_device_array(x):
    """True for CuPy arrays (found by type, without importing CuPy)."""
    module = type(x).__module__
    return module.startswith("cupy") and module.split(".")[0] in ("cupy", "cupyx")


def get_namespace(*arrays):
    """Return ``cupy`` if any of ``arrays`` is a CuPy array, else ``numpy``."""
    for x in arrays:
        if x is not None and is_device_array(x):
            import cupy

            return cupy
    return np


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


def synchronize(x):
    """Wait for the work queued on ``x``'s CUDA stream (no-op for NumPy)."""
    if is_device_array(x):
        import cupy

        cupy.cuda.get_current_stream().synchronize()


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
