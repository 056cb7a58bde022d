"""Whether this process is a rank of an MPI job, and joining the job at ``import mlmpi``.

Under an MPI launcher, ``import mlmpi`` initialises MPI and makes the
default comms at once (:func:`join_launched_job`), so that every rank has a
comms that meets the others when the program ends: a rank that ends or
fails before its first collective call is then noticed by the ranks
waiting in theirs, instead of leaving them in ``MPI_Init`` (where no
timeout can fire). A process started by a rank (a joblib/loky worker of
scikit-learn's ``n_jobs``) inherits the launcher's environment but is no
rank: the rank records its process id for its children to compare
(:func:`started_by_a_rank`).
"""

import os
import shutil
import sys
from pathlib import Path

# Environment variables set by the process managers that start MPI jobs
# (MPICH/Intel hydra, Open MPI, PMIx, Slurm's PMI plugins).
_LAUNCHER_VARIABLES = (
    "PMI_RANK",
    "PMI_SIZE",
    "PMIX_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "MPI_LOCALNRANKS",
)
_RANK_PROCESS = "MLMPI_RANK_PROCESS"  # the process id of the rank, for its children


def started_by_a_rank():
    """Whether this process is a child of an MPI rank (it inherited the
    launcher's environment from a rank that imported mlmpi) rather than a rank."""
    recorded = os.environ.get(_RANK_PROCESS)
    return recorded is not None and recorded != str(os.getpid())


def launched_by_mpi():
    """Whether this process was started by an MPI launcher (or MPI is already up).

    Reads the launchers' environment variables; MPI is not initialised by
    this. A process started by a rank (a joblib worker) is not.

    Returns
    -------
    launched : bool

    Examples
    --------
    >>> from mlmpi.comms import launched_by_mpi
    >>> launched_by_mpi()  # a plain ``python`` process
    False
    """
    if started_by_a_rank():
        return False
    if any(variable in os.environ for variable in _LAUNCHER_VARIABLES):
        return True
    MPI = sys.modules.get("mpi4py.MPI")
    return bool(
        MPI is not None
        and MPI.Is_initialized()
        and not MPI.Is_finalized()
        and MPI.COMM_WORLD.Get_size() > 1
    )


def join_launched_job():
    """Under an MPI launcher: install the abort hook, initialise MPI and make
    the default MPI comms (collective over ``MPI.COMM_WORLD``). Nothing
    otherwise, or with ``MLMPI_COMMS=self``."""
    from .. import _config

    if not launched_by_mpi():
        return
    os.environ[_RANK_PROCESS] = str(os.getpid())
    if _config.abort_on_error():
        from ._abort import install_abort_hook

        install_abort_hook()
    try:
        backend = _config.comms_backend()
    except ValueError:
        return  # get_comms() raises the error where the program asks for a comms
    if backend != "self":
        from ._agreement import meet_at_exit
        from .mpi import world_comms

        meet_at_exit(world_comms())


def mpiexec_path():
    """The ``mpiexec`` beside this Python (the ``mpich`` wheel's, the MPI of
    mpi4py), else the first on ``PATH``: a Jupyter kernel, a test or a
    benchmark driver often runs without its environment's ``bin`` on ``PATH``."""
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("mpiexec not found; install mlmpi with its MPI dependency.")
    return found
