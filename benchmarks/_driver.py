"""Shared driver of the mlmpi-vs-peer benchmarks.

The peer (scikit-learn, PyTorch DDP) is timed in this process while no MPI
rank is alive: MPICH ranks busy-poll inside collectives and would steal the
peer's cores. mlmpi runs under ``mpiexec -n R`` as a separate job. The two
alternate (peer, mlmpi, peer, mlmpi, ...) so that drifts in machine load
hit both; medians and the ratio mlmpi/peer are reported.

A benchmark script calls :func:`compare` per case from its driver part and
:func:`worker_report` from its worker part (the same script started with
``--worker`` under mpiexec), then :func:`report`.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import numpy as np

from mlmpi.comms._launch import mpiexec_path as mpiexec


def run_main(parser, *, driver, worker, sized=()):
    """Add the options every benchmark shares, parse, and run the driver
    (or, with ``--worker`` under mpiexec, the worker).

    ``sized`` names the row-count options that ``--size`` multiplies (a
    smoke test on a fraction of the rows); the driver passes the scaled
    counts on to its workers.
    """
    if sized:
        parser.add_argument(
            "--size",
            type=float,
            default=1.0,
            help="multiplies "
            + ", ".join("--" + name.replace("_", "-") for name in sized)
            + " (a smoke test: --size 0.01)",
        )
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="alternating peer/mlmpi jobs")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the results as JSON to this file (default: print only)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.worker:
        for name in sized:
            setattr(args, name, max(1, round(getattr(args, name) * args.size)))
    (worker if args.worker else driver)(args)


#: The report columns of :func:`timed_collective`'s fractions.
COLLECTIVE_COLUMNS = [("comm frac", "mlmpi_comm_fraction"), ("wait frac", "mlmpi_wait_fraction")]


def timed_collective(call, comms):
    """Run ``call()`` once on every rank, profiled: ``(its result, metrics,
    profile)``. The metrics are the slowest rank's ``seconds``, the largest
    fraction of them a rank spent inside collectives (``comm_fraction``) and
    the largest spent there waiting for slower ranks (``wait_fraction``,
    :func:`split_waiting`).

    This function is collective.
    """
    from mlmpi.comms import profile

    def slowest(value):
        return float(comms.allreduce(np.asarray(value), op="max"))

    comms.barrier()
    start = time.perf_counter()
    with profile() as prof:
        result = call()
    seconds = slowest(time.perf_counter() - start)
    metrics = {
        "seconds": seconds,
        "comm_fraction": slowest(prof.total_seconds) / seconds,
        "wait_fraction": slowest(split_waiting(prof, comms)[1]) / seconds,
    }
    return result, metrics, prof


def split_waiting(prof, comms):
    """``(transfer, wait)`` seconds of this rank in the collectives of the
    profile ``prof``: per collective, the shortest time any rank spent in it
    is transfer, the rest of this rank's is wait (for slower ranks).

    This function is collective.
    """
    mine = np.array([event[3] for event in prof.events])
    counts = comms.allgather(np.asarray(mine.size, dtype=np.int64))
    if len(set(counts.tolist())) != 1 or mine.size == 0:  # not comparable event by event
        return float(mine.sum()), 0.0
    every = comms.allgather(mine[None]).reshape(comms.size, mine.size)
    transfer = float(every.min(axis=0).sum())
    return transfer, float(mine.sum()) - transfer


def busy_cores(window=1.0):
    """Cores kept busy by other processes, sampled over ``window`` seconds.

    Called while none of the benchmark's own processes run, so what it sees
    is someone else's load. Reads /proc/stat where there is one (the 1-minute
    load average would still count our own runs), else the load average.
    """

    def snapshot():
        with open("/proc/stat") as f:
            ticks = [float(v) for v in f.readline().split()[1:]]
        return sum(ticks), ticks[3] + ticks[4]  # idle + iowait

    try:
        total0, idle0 = snapshot()
        time.sleep(window)
        total1, idle1 = snapshot()
    except OSError:
        return os.getloadavg()[0]
    return (1.0 - (idle1 - idle0) / max(total1 - total0, 1.0)) * (os.cpu_count() or 1)


def run_worker(script, ranks, argv, timeout):
    """Run ``script --worker argv`` under mpiexec; return rank 0's metrics dict."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "metrics.json"
        command = [
            mpiexec(),
            "-n",
            str(ranks),
            sys.executable,
            str(script),
            "--worker",
            "--report",
            str(out),
        ] + list(argv)
        env = {k: v for k, v in os.environ.items() if k != "MLMPI_COMMS"}
        done = subprocess.run(command, env=env, timeout=timeout, capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(
                f"mlmpi worker failed ({done.returncode}):\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return json.loads(out.read_text())


def worker_report(path, metrics, comms):
    """Rank 0 writes the worker's metrics (a dict with at least ``seconds``)."""
    if comms.rank == 0:
        Path(path).write_text(json.dumps(metrics))


def compare(case, *, script, ranks, repeats, run_peer, worker_argv, timeout=1800, others=None):
    """Alternate ``run_peer()`` and the mlmpi worker ``repeats`` times each.

    ``run_peer`` returns a dict with at least ``seconds`` (one timed run);
    the worker writes one dict with at least ``seconds`` per job (it may
    itself time several fits and report their median). ``others``: more
    peers, ``{name: run}`` timed in the same alternation (``{name}_s``, the
    median, and ``ratio_{name}``, mlmpi's time over it, in the row). Returns
    the row of medians for :func:`report`.
    """
    others = others or {}
    peer_runs, mlmpi_runs = [], []
    other_runs = {name: [] for name in others}
    load_before = busy_cores()
    for _ in range(repeats):
        peer_runs.append(run_peer())
        for name, run in others.items():
            other_runs[name].append(run())
        mlmpi_runs.append(run_worker(script, ranks, worker_argv, timeout))
    load_after = busy_cores()
    peer_s = statistics.median(r["seconds"] for r in peer_runs)
    mlmpi_s = statistics.median(r["seconds"] for r in mlmpi_runs)
    extras = {
        key: statistics.median(r[key] for r in mlmpi_runs)
        for key in mlmpi_runs[0]
        if key != "seconds" and isinstance(mlmpi_runs[0][key], (int, float))
    }
    return {
        "case": case,
        "mlmpi_s": mlmpi_s,
        "peer_s": peer_s,
        "ratio": mlmpi_s / peer_s,
        "mlmpi_runs": mlmpi_runs,
        "peer_runs": peer_runs,
        "load_before": load_before,
        "load_after": load_after,
        **{f"mlmpi_{k}": v for k, v in extras.items()},
        **_other_columns(mlmpi_s, other_runs),
    }


def _other_columns(mlmpi_s, other_runs):
    """The row's columns of the other peers (see :func:`compare`)."""
    columns = {}
    for name, runs in other_runs.items():
        seconds = statistics.median(r["seconds"] for r in runs)
        columns.update({f"{name}_s": seconds, f"ratio_{name}": mlmpi_s / seconds})
        columns[f"{name}_runs"] = runs
        if all("fallback" in r for r in runs):  # see sklearnex_run
            columns[f"{name}_fallback"] = any(r["fallback"] for r in runs)
    return columns


def sklearnex_run(run):
    """``run()``'s dict plus ``"fallback"``: whether sklearnex logged, during the
    run, that it fell back to scikit-learn (its INFO log, kept off stderr)."""
    with unittest.TestCase().assertLogs("sklearnex", "INFO") as log:
        return run() | {"fallback": any("fallback" in m for m in log.output)}


def sklearnex_threads(n):
    """Let oneDAL (scikit-learn-intelex, the ``bench`` extra) use ``n`` threads,
    as scikit-learn's BLAS gets under ``threadpool_limits``; False without
    sklearnex (its column stays empty)."""
    try:
        import daal4py
    except ImportError:
        return False
    daal4py.daalinit(n)
    return True


def speed_phrase(mlmpi_s, peer_s):
    """'2.50x faster' or '4.00x slower': mlmpi against the peer, never a ratio below 1."""
    if mlmpi_s <= peer_s:
        return f"{peer_s / mlmpi_s:.2f}x faster"
    return f"{mlmpi_s / peer_s:.2f}x slower"


def machine():
    """What the results were measured on (the ``machine`` of every results file)."""
    return {
        "node": platform.node(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def report(name, rows, config, *, out=None, peer="scikit-learn", extra_columns=()):
    """Print the table; with ``out`` (``--out``), also write the results there as JSON.

    Results are written only on request, so that a smoke run never
    overwrites the committed ``benchmarks/results/*.json`` behind docs/performance.rst.
    """
    cores = os.cpu_count()
    header = f"{'case':<28}{'mlmpi s':>10}{peer + ' s':>16}{'ratio':>8}"
    widths = [max(14, len(column) + 2) for column, _ in extra_columns]
    for (column, _), width in zip(extra_columns, widths):
        header += f"{column:>{width}}"
    print(f"\n{name}: {json.dumps(config, default=str)}")
    print(
        f"machine: {platform.node()} {platform.machine()} {cores} cores, "
        f"python {platform.python_version()}"
    )
    print(header)
    print("-" * len(header))
    busy = False
    for row in rows:
        line = f"{row['case']:<28}{row['mlmpi_s']:>10.4g}{row['peer_s']:>16.4g}{row['ratio']:>8.3f}"
        for (_, key), width in zip(extra_columns, widths):
            value = row.get(key)
            line += f"{value:>{width}.4g}" if isinstance(value, (int, float)) else f"{'-':>{width}}"
        print(line)
        busy |= max(row["load_before"], row["load_after"]) > 0.25 * cores
    print("ratio = mlmpi / peer (lower is better); medians of alternating runs.")
    for row in rows:
        print(
            f"load ({row['case']}): {row['load_before']:.2f} busy cores before, "
            f"{row['load_after']:.2f} after; load average {os.getloadavg()[0]:.2f}"
        )
    if busy:
        print(
            "WARNING: the machine was not idle (other processes kept more than a quarter "
            "of the cores busy just before or after a timing)."
        )
    if out is None:
        print("results not written (pass --out PATH to save them as JSON)")
        return None
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "benchmark": name,
                "config": config,
                "peer": peer,
                "machine": machine(),
                "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "rows": rows,
            },
            indent=1,
            default=str,
        )
    )
    print(f"wrote {path}")
    return path
