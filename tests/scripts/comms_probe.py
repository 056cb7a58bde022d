"""Prints one ``PROBE {json}`` line per rank: which default comms this process
got, the threads it uses, whether MPI was loaded, and the results of a few
collectives (whose timeline ``tests/test_comms_env.py`` also checks).

Run as ``[mpiexec -n N] python comms_probe.py``.
"""

import json
import sys

import numpy as np
from sklearn.base import BaseEstimator

from mlmpi.comms import resolve_comms
from mlmpi.utils.validation import validate_fit_data


def main():
    comms = resolve_comms(None)  # what an estimator's comms=None gets
    X = np.arange(6.0 * (comms.rank + 1)).reshape(-1, 2)
    _, _, _, layout = validate_fit_data(BaseEstimator(), X, comms=comms)
    total = comms.allreduce(np.arange(5.0))
    comms.bcast(np.ones(3, dtype=np.float32) if comms.rank == 0 else None)
    rows = comms.allgatherv(np.ones((comms.rank, 2)))
    comms.barrier()

    # Loaded only now, after the comms set the limit: these must obey it too.
    import numba
    import scipy.linalg  # noqa: F401  (scipy's own BLAS)
    import sklearn.cluster  # noqa: F401  (the OpenMP runtime)
    from threadpoolctl import threadpool_info

    facts = {
        "backend": comms.backend,
        "rank": comms.rank,
        "size": comms.size,
        "n_samples": layout.n_samples,
        "total": total.tolist(),
        "rows": rows.shape[0],
        "pool_threads": sorted({pool["num_threads"] for pool in threadpool_info()}),
        "numba_threads": numba.get_num_threads(),
        "mpi_loaded": "mpi4py.MPI" in sys.modules,
    }
    # One write per line: the launcher merges the ranks' output chunk by chunk.
    sys.stdout.write("PROBE " + json.dumps(facts) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
