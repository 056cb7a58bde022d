"""Runs the ``case_*`` functions of one ``tests/mpi_cases`` module under mpiexec.

Usage: ``mpiexec -n N python tests/mpi_worker.py MODULE REPORT.json``

Each case is a function without arguments that runs on every rank and raises
(usually AssertionError) on failure. After each case the ranks exchange
their outcome on a communicator of the harness's own, so a failed case
cannot derail the collectives of the next. Rank 0 writes
``{case: {rank: traceback}}`` (empty dict: passed on every rank).
"""

import importlib
import json
import os
import sys
import traceback

os.environ.setdefault("MLMPI_ABORT_ON_ERROR", "0")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_cases"))


def main():
    module_name, report = sys.argv[1], sys.argv[2]
    from mpi4py import MPI

    harness = MPI.COMM_WORLD.Dup()
    module = importlib.import_module(module_name)
    cases = [name for name in vars(module) if name.startswith("case_")]
    results = {}
    for name in cases:
        try:
            getattr(module, name)()
            error = None
        except Exception:
            error = traceback.format_exc()
        gathered = harness.gather(error, root=0)
        if harness.rank == 0:
            results[name] = {str(r): tb for r, tb in enumerate(gathered) if tb is not None}
            with open(report, "w") as f:  # rewritten after every case: a later hang keeps these
                json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
