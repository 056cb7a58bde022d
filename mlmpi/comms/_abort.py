"""Abort the whole MPI job when one rank dies of an uncaught exception.

Without this, the other ranks wait forever in their next collective and the
allocation hangs until the batch system kills it. ``python -m mpi4py
script.py`` does the same; this hook gives plain ``python script.py`` under
``mpiexec`` that behaviour too. Turn it off with ``MLMPI_ABORT_ON_ERROR=0``.
"""

import sys
import time

_installed = False
# How long an aborting rank waits for the launcher to forward its last output.
FORWARD_SECONDS = 0.5


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
        from mpi4py import MPI

        world = MPI.COMM_WORLD
        sys.stderr.write(
            f"mlmpi: uncaught {exc_type.__name__} on rank {world.Get_rank()} of "
            f"{world.Get_size()}; aborting the MPI job (MLMPI_ABORT_ON_ERROR=0 disables).\n"
        )
        sys.stderr.flush()
        # Let the launcher forward this rank's output before it kills the job.
        time.sleep(FORWARD_SECONDS)
        world.Abort(1)

    sys.excepthook = abort_on_uncaught
