"""Abort the whole MPI job when one rank dies of an uncaught exception.

Without this, the other ranks wait forever in their next collective and the
allocation hangs until the batch system kills it. ``python -m mpi4py
script.py`` does the same; this hook gives plain ``python script.py`` under
``mpiexec`` that behaviour too, from ``import mlmpi`` on (a rank may fail in
its own data loading, before any MPI call). Turn it off with
``MLMPI_ABORT_ON_ERROR=0``.

What really ends the job (checked with MPICH's hydra): a rank that exits
with an error *without* having initialised MPI is not noticed; the others
wait forever. ``MPI_Abort`` ends the job, but initialising MPI just to call
it waits in ``MPI_Init`` until every other rank has initialised MPI too
(hydra's PMI fence), which may be never. So a rank that has not initialised
MPI asks the process manager itself to abort the job (the PMI-1 ``abort``
command on the launcher's ``PMI_FD`` socket, as hydra and Intel MPI provide);
only where that is unavailable does it initialise MPI and call ``Abort``.
"""

import os
import socket
import sys
import time

from . import profile as _profile

_installed = False
# How long an aborting rank waits for the launcher to forward its last output.
FORWARD_SECONDS = 0.5
# How long the launcher may take to act on a PMI abort before MPI_Abort is tried.
_PMI_ABORT_WAIT = 10.0


def install_abort_hook():
    global _installed
    if _installed:
        return
    _installed = True
    previous = sys.excepthook

    def abort_on_uncaught(exc_type, exc, tb):
        previous(exc_type, exc, tb)
        if issubclass(exc_type, KeyboardInterrupt):
            return
        rank, size = _profile.process_rank()
        sys.stderr.write(
            f"mlmpi: uncaught {exc_type.__name__} on rank {rank} of "
            f"{size}; aborting the MPI job (MLMPI_ABORT_ON_ERROR=0 disables).\n"
        )
        sys.stderr.flush()
        _profile.flush_timeline()
        # Let the launcher forward this rank's output before it kills the job.
        time.sleep(FORWARD_SECONDS)
        abort_job(1)

    sys.excepthook = abort_on_uncaught


def _mpi_initialized():
    MPI = sys.modules.get("mpi4py.MPI")
    return MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized()


def abort_job(code):
    """End every process of the job with exit code ``code``."""
    if not _mpi_initialized():
        _pmi_abort(code)  # returns only if the launcher did not act on it
    from mpi4py import MPI

    MPI.COMM_WORLD.Abort(code)


def _pmi_abort(code):
    """Ask the process manager over the PMI-1 wire protocol to kill the job.

    Returns (False) when there is no PMI-1 server to ask, or it did not end
    the job within :data:`_PMI_ABORT_WAIT` seconds.
    """
    fd = os.environ.get("PMI_FD")
    if not fd or not fd.isdigit():
        return False
    try:
        pmi = socket.socket(fileno=int(fd))
        pmi.settimeout(2.0)
        pmi.sendall(b"cmd=init pmi_version=1 pmi_subversion=1\n")
        reply = pmi.recv(1024).split()
        if b"cmd=response_to_init" not in reply or b"rc=0" not in reply:
            return False
        pmi.sendall(f"cmd=abort exitcode={int(code)}\n".encode())
    except OSError:
        return False
    time.sleep(_PMI_ABORT_WAIT)
    return False
