"""A rank that fails while the others sit in collectives.

``raise``: rank 1 raises after three allreduces; the others keep calling
allreduce. ``skip``: rank 1 skips the fourth allreduce and sleeps; ``stall``:
it waits in a raw mpi4py barrier instead. Either way the job must end
(non-zero) within seconds instead of hanging: the abort hook handles
``raise``, ``MLMPI_TIMEOUT`` the others (after the stall report).

Run as ``mpiexec -n N python comms_fault.py raise|skip|stall``.
"""

import sys
import time

import numpy as np

from mlmpi import get_comms


def main(mode):
    comms = get_comms()
    for step in range(10**6):
        if comms.rank == 1 and step == 3:
            if mode == "raise":
                raise RuntimeError("rank 1 fails on purpose")
            if mode == "stall":
                from mpi4py import MPI

                MPI.COMM_WORLD.Barrier()  # outside mlmpi, never matched
            time.sleep(120)
        comms.allreduce(np.ones(4))
    print("the loop ended: the fault was not noticed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
