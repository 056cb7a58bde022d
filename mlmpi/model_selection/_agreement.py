"""What every rank of a split, a cross-validation or a search must agree on:
the random state, and whether joblib's process pool may be used."""

import numbers

import numpy as np

from ..comms import launched_by_mpi
from ..random import shared_seed


def agreed_random_state(random_state, comms):
    """``random_state`` as every rank will use it.

    An int is used as it is; for None, rank 0 draws a seed and broadcasts it;
    a ``RandomState`` instance takes rank 0's state on every rank (and is then
    consumed exactly as scikit-learn would consume it, the same way everywhere).

    Notes
    -----
    This function is collective unless ``random_state`` is an int.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        random_state.set_state(comms.bcast_object(random_state.get_state(), root=0))
        return random_state
    return shared_seed(random_state, comms)


def check_n_jobs(n_jobs, comms):
    """Refuse a joblib process pool under an MPI launcher (the same error on every rank).

    joblib's worker processes inherit the launcher's environment but are no
    MPI ranks: they fail while initialising MPI (joblib reports a
    ``TerminatedWorkerError``), even at one rank. No communication: every
    rank decides from the same parameter and environment.
    """
    if n_jobs in (None, 1) or not (launched_by_mpi() or comms.size > 1):
        return
    raise ValueError(
        f"n_jobs={n_jobs!r} cannot be used under mpiexec: joblib's worker processes are not "
        "part of the MPI job and fail when they initialise MPI. The candidates and folds "
        "already run in parallel across the MPI ranks (every fit is collective over all "
        f"{comms.size} rank(s)); leave n_jobs=None and start more ranks (mpiexec -n N) "
        "instead. Without mpiexec, n_jobs works as in scikit-learn."
    )
