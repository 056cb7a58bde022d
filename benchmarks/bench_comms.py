"""Overhead of mlmpi's collectives over raw mpi4py calls, per call.

Both run in the same ``mpiexec`` job on the same duplicated communicator,
in alternating blocks (raw, mlmpi, raw, mlmpi, ...); the per-call median
of the blocks is reported. The peer column is the raw mpi4py call.
``allreduce out=`` reduces into a caller-owned buffer reused every call
(what the DNN trainer's fusion buckets do); plain ``allreduce`` returns a
new array each call.
``allgatherv`` includes mlmpi's agreement on shapes and dtypes (one small
allgather), which raw ``Allgatherv`` with precomputed counts skips. The calls
are timed as estimators make them, inside a collective call; called from
user code, each also agrees on the call first (one 64-byte allreduce, timed
by ``benchmarks/bench_contract.py``).

Usage::

    python benchmarks/bench_comms.py [--ranks 2] [--repeats 3] [--calls 2000]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _driver  # noqa: E402

SIZES = (8, 1024, 131072)  # float64 elements per rank (131072: 1 MiB)
BLOCKS = 5


def _per_call(fn, calls, barrier):
    barrier()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def _cases(comms, size):
    from mpi4py import MPI

    comm = comms.comm
    x = np.ones(size)
    out = np.empty_like(x)
    rows = np.ones((size // 8, 8))
    counts = [size] * comms.size
    gathered = np.empty(sum(counts))
    ours = np.empty_like(x)
    return {
        f"allreduce {size * 8} B": (
            lambda: comm.Allreduce(x, out, op=MPI.SUM),
            lambda: comms.allreduce(x),
        ),
        f"allreduce out= {size * 8} B": (
            lambda: comm.Allreduce(x, out, op=MPI.SUM),
            lambda: comms.allreduce(x, out=ours),
        ),
        f"allgatherv {size * 8} B": (
            lambda: comm.Allgatherv(rows, [gathered, counts]),
            lambda: comms.allgatherv(rows),
        ),
    }


def worker(args):
    from mlmpi import get_comms
    from mlmpi.comms._method import in_collective_method

    comms = get_comms("mpi")
    metrics = {}
    # As inside an estimator's collective method: called from user code, each
    # collective would first agree on the call (benchmarks/bench_contract.py).
    with in_collective_method("bench_comms"):
        for size in args.sizes:
            calls = max(10, args.calls * 1024 // max(size, 1024))  # fewer calls for large ones
            for case, (raw, ours) in _cases(comms, size).items():
                raw_s, ours_s = [], []
                for _ in range(BLOCKS):
                    raw_s.append(_per_call(raw, calls, comms.barrier))
                    ours_s.append(_per_call(ours, calls, comms.barrier))
                metrics[case] = {
                    "raw": statistics.median(raw_s),
                    "mlmpi": statistics.median(ours_s),
                }
    _driver.worker_report(args.report, {"seconds": 0.0, "cases": metrics}, comms)


def driver(args):
    argv = ["--calls", str(args.calls), "--sizes", *map(str, args.sizes)]
    runs = []
    load_before = _driver.busy_cores()
    for _ in range(args.repeats):
        runs.append(_driver.run_worker(__file__, args.ranks, argv, timeout=600)["cases"])
    load_after = _driver.busy_cores()
    rows = []
    for case in runs[0]:
        mlmpi_s = statistics.median(run[case]["mlmpi"] for run in runs)
        raw_s = statistics.median(run[case]["raw"] for run in runs)
        rows.append(
            {
                "case": case,
                "mlmpi_s": mlmpi_s,
                "peer_s": raw_s,
                "ratio": mlmpi_s / raw_s,
                "mlmpi_us": mlmpi_s * 1e6,
                "peer_us": raw_s * 1e6,
                "overhead_us": (mlmpi_s - raw_s) * 1e6,
                "load_before": load_before,
                "load_after": load_after,
            }
        )
    config = {
        "ranks": args.ranks,
        "repeats": args.repeats,
        "calls": args.calls,
        "sizes": list(args.sizes),
    }
    _driver.report(
        "comms",
        rows,
        config,
        out=args.out,
        peer="mpi4py",
        extra_columns=(
            ("mlmpi us", "mlmpi_us"),
            ("mpi4py us", "peer_us"),
            ("overhead us", "overhead_us"),
        ),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
