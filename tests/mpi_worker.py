"""Runs the ``case_*`` functions of ``tests/mpi_cases`` modules under mpiexec.

Usage: ``mpiexec -n N python tests/mpi_worker.py REPORT.json MODULE [MODULE ...]``

Each case is a function without arguments that runs on every rank and raises
(usually AssertionError) on failure. After each case the ranks exchange
their outcome on a communicator of the harness's own, so a failed case
cannot derail the collectives of the next. The modules run one after the
other in the same processes (one start of Python, MPI and the libraries for
all of them). Rank 0 writes ``{module: {case: {rank: traceback}}}`` (an
empty dict: passed on every rank); a module that fails to import reports
its traceback under the case name ``import``.

With ``MLMPI_CASE_SECONDS=PATH`` set, rank 0 also appends one JSON line per
case to PATH: ``{"ranks", "module", "case", "seconds"}`` (the suite's time
budget: which cases cost what).
"""

import importlib
import json
import os
import sys
import time
import traceback

os.environ.setdefault("MLMPI_ABORT_ON_ERROR", "0")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_cases"))


def _run(call, harness):
    """Run ``call`` on every rank; rank 0 gets ``{rank: traceback}`` of the
    ranks where it raised, the others None."""
    try:
        call()
        error = None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # pytest.fail and a failed pytest.raises raise BaseExceptions
        error = traceback.format_exc()
    gathered = harness.gather(error, root=0)
    if harness.rank == 0:
        return {str(r): tb for r, tb in enumerate(gathered) if tb is not None}
    return None


def main():
    report, module_names = sys.argv[1], sys.argv[2:]
    from mpi4py import MPI

    harness = MPI.COMM_WORLD.Dup()
    results = {}
    seconds_log = os.environ.get("MLMPI_CASE_SECONDS")

    def record(module_name, case, errors):
        if harness.rank == 0:  # rewritten after every case: a later hang keeps these
            results.setdefault(module_name, {})[case] = errors
            with open(report, "w") as f:
                json.dump(results, f, indent=1)

    def timed(module_name, case, call):
        start = time.perf_counter()
        errors = _run(call, harness)
        if seconds_log and harness.rank == 0:
            line = {"ranks": harness.size, "module": module_name, "case": case}
            with open(seconds_log, "a") as f:
                f.write(json.dumps({**line, "seconds": round(time.perf_counter() - start, 3)}))
                f.write("\n")
        return errors

    for module_name in module_names:
        loaded = {}

        def load(name=module_name):
            loaded["module"] = importlib.import_module(name)

        errors = timed(module_name, "import", load)
        if harness.bcast(bool(errors), root=0):
            record(module_name, "import", errors)
            continue
        module = loaded["module"]
        for case in [name for name in vars(module) if name.startswith("case_")]:
            record(module_name, case, timed(module_name, case, getattr(module, case)))


if __name__ == "__main__":
    main()
