"""Every estimator, transformer, metric and search at 1 to 16 ranks: traffic, memory, time.

    python benchmarks/scale.py --out benchmarks/results/scale.json            # the full run
    python benchmarks/scale.py --ranks 1 2 --modes strong --cases KMeans --size 0.1   # smoke
    python benchmarks/scale.py --size 0.1 --cases DBSCAN --out benchmarks/results/scale.json \
        --merge "why these cases ran again"      # replace some cases' rows in the file

For each case of ``benchmarks/_scale_cases.py`` (one row per estimator,
transformer, metric, search and workflow) and each rank count, one
``mpiexec -n R`` job per (rank count, mode) runs every case on data
generated per global row:

- **strong scaling**: the case's ``n`` global rows (times ``--size``) at
  every rank count;
- **weak scaling**: ``n / 4`` rows (times ``--size``) per rank.

A case that draws rows (bootstraps, splits, subsamples) runs under the
random-draw policy its row names (``draws``: per-row, the policy above a
million global rows, whose cost is what the projection to many ranks is
about). Each case runs once on a slice of its rows (``--warmup``: the kernels
compile), then ``--repeat`` times on all of them; the fastest run (by its
slowest rank) is kept, since a core busy with other work slows one run, not
every one. Per rank and per call it records, from the profile of the comms
(the records the timeline writes too): the bytes it sent and received, the
collectives it started, its seconds inside them, split into *transfer*
(the shortest time any rank spent in that collective) and *wait* (the rest:
waiting for slower ranks), its compute seconds (the rest of its time), and
its peak RSS during the call (``VmHWM`` after resetting it through
``/proc/self/clear_refs``) above its RSS before. Every strong-scaling result
is compared with the 1-rank result at the case's tolerance (the tests'
rule: exact for labels and integer results; ``atol`` where the tests have one).

Every rank uses one thread (``MLMPI_NUM_THREADS=1``): the curves are per
core, one rank per core. More ranks than cores run oversubscribed, labelled
so, with MPICH's progress
loop throttled (``MPIR_CVAR_CH4_PROGRESS_THROTTLE=1``) so that the ranks
share the cores: their bytes, calls and memory are exact, their times are
not speed measurements. ``benchmarks/cost_model.py`` fits and projects from
this file. The tables and plots of docs/performance.rst are drawn from it at
every build of the docs.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402
from _scale_cases import CASES, DATA  # noqa: E402

RANKS = (1, 2, 4, 8, 16)
MODES = ("strong", "weak")
OVERSUBSCRIBED_ENV = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "64",
}


# -- the worker (under mpiexec) ------------------------------------------------------------------
def _status(field):
    """A ``VmRSS``/``VmHWM`` line of /proc/self/status, in bytes (0 where unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak():
    """Start a new peak-RSS window (Linux: ``echo 5 > /proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _rows(case, mode, size, ranks):
    per_rank = max(1, int(case.n * size) // 4)
    return int(case.n * size) if mode == "strong" else per_rank * ranks


def _measure(case, X, y, comms):
    """Run ``case`` once, measured; return this rank's metrics and the result."""
    from mlmpi.comms import profile
    from mlmpi.random import draws

    comms.barrier()
    _reset_peak()
    rss_before = _status("VmRSS")
    with profile() as prof, draws(case.draws):
        start = time.perf_counter()
        result = case.run(X, y, comms)
        seconds = time.perf_counter() - start
    peak = _status("VmHWM")
    transfer, wait = _driver.split_waiting(prof, comms)
    comm = float(sum(event[3] for event in prof.events))
    return {
        "seconds": seconds,
        "comm_s": comm,
        "transfer_s": transfer,
        "wait_s": wait,
        "compute_s": max(seconds - comm, 0.0),
        "sent_bytes": int(prof.total_bytes),
        "received_bytes": int(prof.total_received),
        "collectives": sum(1 for event in prof.events if not event[0].endswith(".wait")),
        "peak_rss": peak,
        "rss_before": rss_before,
        "peak_above_before": max(peak - rss_before, 0),
    }, result


def _fastest(case, X, y, comms, repeat):
    """Every rank's metrics of the fastest of ``repeat`` measured runs (by the
    slowest rank's time: one run's figures, never a mix), and the result."""
    best = None
    for _ in range(repeat):
        metrics, result = _measure(case, X, y, comms)
        every = comms.allgather_object(metrics)
        if best is None or max(m["seconds"] for m in every) < max(m["seconds"] for m in best):
            best = every
    return best, result


def _gathered(result, comms):
    """The replicated results (rank 0's) and the local ones in rank order."""
    replicated, local = result
    out = {f"replicated/{k}": np.asarray(v) for k, v in replicated.items()}
    for key, value in local.items():
        value = np.asarray(value)
        if value.dtype == object:
            value = value.astype(np.float64)
        out[f"local/{key}"] = comms.allgatherv(np.ascontiguousarray(value))
    return out


def worker(args):
    from mlmpi import get_comms
    from mlmpi.random import draws

    comms = get_comms()
    out = Path(args.outdir)
    records = []
    for case in CASES:
        if args.cases and case.name not in args.cases:
            continue
        n = _rows(case, args.mode, args.size, comms.size)
        record = {"case": case.name, "family": case.family, "mode": args.mode, "n": n}
        record.update({"d": case.d, "ranks": comms.size})
        try:
            X, y = DATA[case.data](n, case.d, comms)
            if args.warmup:  # compile and load the kernels on a slice
                with draws(case.draws):
                    case.run(X[: max(1, X.shape[0] // 16)], y[: max(1, X.shape[0] // 16)], comms)
            every, result = _fastest(case, X, y, comms, args.repeat)
            arrays = _gathered(result, comms)
            if comms.rank == 0:
                np.savez(out / f"{args.mode}-{comms.size}-{len(records)}.npz", **arrays)
                record["result"] = f"{args.mode}-{comms.size}-{len(records)}.npz"
            record["per_rank"] = every
            record["seconds"] = max(m["seconds"] for m in every)
        except Exception as exc:  # the same on every rank (the collective contract)
            record["error"] = f"{type(exc).__name__}: {exc}"
        records.append(record)
        del X, y
    if comms.rank == 0:
        (out / f"{args.mode}-{comms.size}.json").write_text(
            json.dumps({"records": records}, default=float)
        )


# -- the driver ----------------------------------------------------------------------------------
def _same(reference, other, rtol, atol=0.0):
    """``(equal, largest relative difference)`` of two result files: equal
    where ``|a - b| <= atol + rtol * max(|a|, |b|)`` (exact for integers, or
    with ``rtol = 0``)."""
    worst = 0.0
    for key in reference.files:
        a, b = reference[key], other[key]
        if a.shape != b.shape:
            return False, float("inf")
        if a.dtype.kind in "iub" or rtol == 0:
            if not np.array_equal(a, b, equal_nan=True):
                return False, float("inf") if a.dtype.kind in "iub" else _relative(a, b)
            continue
        a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        scale = np.maximum(np.abs(a64), np.abs(b64))
        if not np.all(np.abs(a64 - b64) <= atol + rtol * scale):
            return False, _relative(a, b)
        worst = max(worst, _relative(a, b))
    return True, worst


def _relative(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = np.maximum(np.abs(a), np.abs(b))
    diff = np.abs(a - b)
    mask = scale > 0
    return float((diff[mask] / scale[mask]).max(initial=0.0))


def _run_job(args, ranks, mode, outdir, cores):
    env = {"MLMPI_NUM_THREADS": "1"}  # one core per rank, at every rank count
    env |= OVERSUBSCRIBED_ENV if ranks > cores else {}
    argv = ["--mode", mode, "--size", str(args.size), "--outdir", str(outdir)]
    argv += ["--warmup"] if args.warmup else []
    argv += ["--repeat", str(args.repeat)]
    if args.cases:
        argv += ["--cases", *args.cases]
    command = [_driver.mpiexec(), "-n", str(ranks), sys.executable, __file__, "--worker", *argv]
    import subprocess

    full_env = {k: v for k, v in os.environ.items() if k != "MLMPI_COMMS"} | env
    done = subprocess.run(
        command, env=full_env, timeout=args.timeout, capture_output=True, text=True
    )
    report = outdir / f"{mode}-{ranks}.json"
    if done.returncode != 0 or not report.exists():
        raise RuntimeError(
            f"scale job {mode} {ranks} failed ({done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return json.loads(report.read_text())


def _summary(record):
    """The row of the tables: per-rank figures as the largest over the ranks."""
    per = record.get("per_rank") or []
    if not per:
        return record
    largest = {k: max(m[k] for m in per) for k in per[0]}
    record["max_rank"] = largest
    record["mean_sent_bytes"] = float(np.mean([m["sent_bytes"] for m in per]))
    record["mean_received_bytes"] = float(np.mean([m["received_bytes"] for m in per]))
    return record


def driver(args):
    cores = os.cpu_count() or 1
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        outdir = Path(tmp)
        for mode in args.modes:
            for ranks in sorted(args.ranks):
                print(f"{mode} scaling, {ranks} rank(s)...", flush=True)
                job = _run_job(args, ranks, mode, outdir, cores)
                for record in job["records"]:
                    record["oversubscribed"] = ranks > cores
                    rows.append(_summary(record))
        _compare(rows, outdir)
    load_after = os.getloadavg()[0]
    _print(rows, cores, load_before, load_after)
    if not args.out:
        return
    results = {
        "benchmark": "scale",
        "config": {
            "ranks": sorted(args.ranks),
            "modes": list(args.modes),
            "size": args.size,
            "warmup": args.warmup,
            "repeat": args.repeat,
        },
        "machine": _driver.machine(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_before": load_before,
        "load_after": load_after,
        "cases": {c.name: _terms(c) for c in CASES},
        "rows": rows,
    }
    if args.merge:
        results = _merged(json.loads(args.out.read_text()), results, args.cases, args.merge)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=float))
    print(f"wrote {args.out}")


def _terms(case):
    """What ``scale.json`` says of a case: its cost terms, why, and its draws."""
    return {
        "family": case.family,
        "compute": list(case.compute),
        "traffic": list(case.traffic),
        "calls": list(case.calls),
        "note": case.note,
        "draws": case.draws,
    }


def _merged(existing, rerun, cases, why):
    """``existing`` (a ``scale.json``) with the rows and terms of ``cases`` taken
    from ``rerun``, and a ``reruns`` entry that says when and ``why``."""
    merged = dict(existing)
    merged["rows"] = [r for r in existing["rows"] if r["case"] not in cases] + rerun["rows"]
    merged["cases"] = {**existing["cases"], **{name: rerun["cases"][name] for name in cases}}
    entry = {key: rerun[key] for key in ("when", "load_before", "load_after", "config")}
    merged["reruns"] = [*existing.get("reruns", []), {"cases": sorted(cases), **entry, "why": why}]
    return merged


def _compare(rows, outdir):
    """Mark every strong-scaling row that has a 1-rank counterpart."""
    tolerance = {c.name: (c.rtol, c.atol) for c in CASES}
    reference = {
        r["case"]: r["result"]
        for r in rows
        if r["mode"] == "strong" and r["ranks"] == 1 and "result" in r
    }
    for row in rows:
        row.pop("result_same", None)
        if row["mode"] != "strong" or "result" not in row or row["case"] not in reference:
            continue
        with np.load(outdir / reference[row["case"]]) as a, np.load(outdir / row["result"]) as b:
            same, worst = _same(a, b, *tolerance[row["case"]])
        row["same_as_1_rank"] = bool(same)
        row["max_relative_difference"] = worst
        row.pop("result")


def _print(rows, cores, load_before, load_after):
    header = (
        f"{'case':<26}{'mode':<7}{'ranks':>6}{'n':>9}{'s':>9}{'sent/rank':>12}"
        f"{'recv/rank':>12}{'calls':>7}{'comm%':>7}{'wait%':>7}{'peak MB':>9}  same"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        if "error" in r:
            print(f"{r['case']:<26}{r['mode']:<7}{r['ranks']:>6}  ERROR {r['error'][:80]}")
            continue
        m = r["max_rank"]
        same = {True: "yes", False: "NO"}.get(r.get("same_as_1_rank"), "-")
        flag = " (over)" if r["oversubscribed"] else ""
        print(
            f"{r['case']:<26}{r['mode']:<7}{r['ranks']:>6}{r['n']:>9}{r['seconds']:>9.3f}"
            f"{m['sent_bytes']:>12.0f}{m['received_bytes']:>12.0f}{m['collectives']:>7}"
            f"{100 * m['comm_s'] / max(r['seconds'], 1e-12):>7.1f}"
            f"{100 * m['wait_s'] / max(r['seconds'], 1e-12):>7.1f}"
            f"{m['peak_rss'] / 1e6:>9.1f}  {same}{flag}"
        )
    print(
        f"per-rank figures are the largest over the ranks; (over): more ranks than the "
        f"{cores} cores. Load average {load_before:.2f} before, {load_after:.2f} after."
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=list(RANKS))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--cases", nargs="+", default=None, help="case names (default: all)")
    parser.add_argument("--size", type=float, default=1.0, help="multiplies every case's rows")
    parser.add_argument(
        "--warmup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run each case once on a slice first (compiles the kernels)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="measured runs per case; the fastest is kept (a busy core slows one run, not all)",
    )
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per mpiexec job")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument(
        "--merge",
        metavar="WHY",
        default=None,
        help="replace the rows of --cases in the existing --out file instead of writing a new "
        "one, and record the rerun there with this reason",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--outdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.merge and not (args.cases and args.out and args.out.exists()):
        parser.error("--merge needs --cases and an existing --out file")
    (worker if args.worker else driver)(args)


if __name__ == "__main__":
    main()
