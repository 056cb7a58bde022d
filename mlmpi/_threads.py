"""BLAS and numba threads per rank.

One MPI rank per core (or a few cores) is the fast layout; ranks that each
start as many BLAS threads as the node has cores oversubscribe it badly.
The first comms created in a process sets the limit once: through
threadpoolctl for the libraries already loaded, ``numba.set_num_threads``,
and ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``/``MKL_NUM_THREADS`` for
those loaded later. Nothing is changed for a single rank on its node unless
``MLMPI_NUM_THREADS`` is set.
"""

import os

from . import _config

_threads = None
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def available_cores():
    """Cores this process may run on (its CPU affinity where the OS tells)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def threads_for(local_ranks):
    """``MLMPI_NUM_THREADS`` if set, else the cores divided by the ranks on this node."""
    forced = _config.num_threads()
    if forced is not None:
        return forced
    return max(1, available_cores() // max(1, local_ranks))


def configure(local_ranks):
    """Limit BLAS and numba threads of this process (first call only)."""
    global _threads
    if _threads is not None:
        return _threads
    _threads = threads_for(local_ranks)
    if local_ranks > 1 or _config.num_threads() is not None:
        import numba
        from threadpoolctl import threadpool_limits

        # Libraries loaded later (scipy's own OpenBLAS, the OpenMP runtime of
        # scikit-learn) read these when they load; those loaded already
        # (numpy's BLAS, numba's threading layer) obey threadpool_limits.
        for variable in _THREAD_VARIABLES:
            os.environ[variable] = str(_threads)
        numba.set_num_threads(min(_threads, numba.config.NUMBA_NUM_THREADS))
        threadpool_limits(limits=_threads)
    return _threads


def threads_per_rank():
    """Threads this rank uses: the configured limit, or what it would be."""
    return _threads if _threads is not None else threads_for(1)
