"""The communication layer: one handle, swappable backends.

Nothing here knows about machine learning. Estimators take ``comms=None``,
meaning :func:`get_comms`.
"""

from .. import _config
from ._agreement import meet_at_exit
from ._base import Comms
from ._failures import RankFailedError
from ._launch import launched_by_mpi
from ._method import current_method
from ._types import ReduceOp, Request
from .profile import profile
from .self import SelfComms

__all__ = [
    "Comms",
    "ReduceOp",
    "Request",
    "SelfComms",
    "MPIComms",
    "NCCLComms",
    "get_comms",
    "resolve_comms",
    "launched_by_mpi",
    "profile",
    "current_method",
    "RankFailedError",
]


def __getattr__(name):
    # MPIComms and NCCLComms import lazily so that `import mlmpi` never loads MPI.
    if name == "MPIComms":
        from .mpi import MPIComms

        return MPIComms
    if name == "NCCLComms":
        from .nccl import NCCLComms

        return NCCLComms
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_defaults = {}


def get_comms(backend=None):
    """The process-wide default comms.

    Parameters
    ----------
    backend : {"mpi", "nccl", "self"}, default=None
        None picks, in order: the ``MLMPI_COMMS`` environment variable; MPI's
        world when the process was launched by ``mpiexec``/``srun``;
        :class:`SelfComms` otherwise.

    Returns
    -------
    comms : Comms
        The same object on every call with the same backend.

    Notes
    -----
    The first call for a backend is collective over ``MPI.COMM_WORLD`` (it
    duplicates the world communicator). Under an MPI launcher, ``import
    mlmpi`` makes the MPI one at once (see :mod:`mlmpi.comms._launch`).

    Examples
    --------
    >>> from mlmpi import get_comms
    >>> comms = get_comms()  # SelfComms outside mpiexec, MPI's world under it
    >>> comms.backend, comms.rank, comms.size
    ('self', 0, 1)
    >>> get_comms() is comms
    True
    """
    if backend is None:
        backend = _config.comms_backend()
    if backend is None:
        backend = "mpi" if launched_by_mpi() else "self"
    backend = backend.lower()
    if backend not in _defaults:
        if backend == "self":
            _defaults[backend] = SelfComms()
        elif backend == "mpi":
            from .mpi import world_comms

            _defaults[backend] = world_comms()
        elif backend == "nccl":
            from .nccl import NCCLComms

            _defaults[backend] = NCCLComms()
        else:
            raise ValueError(f"Unknown comms backend {backend!r}; use 'mpi', 'nccl' or 'self'.")
        meet_at_exit(_defaults[backend])  # a rank that ends early meets the others' calls
    return _defaults[backend]


def resolve_comms(comms):
    """``comms`` itself, or :func:`get_comms` for None (estimators' ``comms=None``).

    Parameters
    ----------
    comms : Comms or None
        A comms, or None for the default one.

    Returns
    -------
    comms : Comms

    Raises
    ------
    TypeError
        When ``comms`` is neither None nor a :class:`Comms`.

    Examples
    --------
    >>> from mlmpi.comms import get_comms, resolve_comms
    >>> resolve_comms(None) is get_comms()
    True
    """
    if comms is None:
        return get_comms()
    if not isinstance(comms, Comms):
        raise TypeError(
            f"comms must be an mlmpi Comms (e.g. mlmpi.get_comms() or "
            f"mlmpi.comms.MPIComms(mpi4py_comm)), got {type(comms).__name__}."
        )
    return comms
