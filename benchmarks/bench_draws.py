"""Memory of the random draws per rank, in weak scaling: scikit-learn's draws
against per-row draws (mlmpi.random's policy), timed and traced in the same jobs.

Each rank holds ``--rows-per-rank`` rows (4 features, 3 classes). For every
rank count, one ``mpiexec`` job runs each case under both policies (forced
with ``mlmpi.random.draws``) and records, per rank, the peak of the Python
allocations traced during the call (``tracemalloc``: NumPy's buffers
included; the interpreter and libraries are not) and its seconds; the table
shows the busiest rank. With per-row draws the peak should stay flat as
ranks are added (nothing grows with the global rows); with scikit-learn's it
grows with them (every rank replays the draws over all global rows).

    python benchmarks/bench_draws.py --out benchmarks/results/draws.json   # 1, 2, 4, 8 ranks
    python benchmarks/bench_draws.py --ranks 1 2 --rows-per-rank 20000      # smoke run
"""

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402

POLICIES = ("scikit-learn", "per-row")


def _split_and_kfold(X, y):
    from mlmpi.model_selection import KFold, train_test_split

    X_train, _, _, _ = train_test_split(X, y, test_size=0.25, random_state=0)
    for _ in KFold(5, shuffle=True, random_state=0).split(X_train):
        pass


def _forest(X, y):
    from mlmpi import RandomForestClassifier

    RandomForestClassifier(n_estimators=4, max_depth=6, random_state=0).fit(X, y)


def _boosting(X, y):
    from mlmpi import HistGradientBoostingClassifier

    HistGradientBoostingClassifier(early_stopping=True, max_iter=5, random_state=0).fit(X, y)


CASES = {
    "train_test_split + KFold(shuffle)": _split_and_kfold,
    "RandomForestClassifier": _forest,
    "HistGradientBoostingClassifier": _boosting,
}


def _traced(call, comms):
    """``(peak traced bytes, seconds)`` of ``call()`` on this rank."""
    comms.barrier()
    tracemalloc.start()
    start = time.perf_counter()
    call()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, seconds


def worker(args):
    from mlmpi import get_comms
    from mlmpi.datasets import make_blobs
    from mlmpi.random import draws

    comms = get_comms()
    n = args.rows_per_rank * comms.size
    X, y = make_blobs(n, 4, centers=3, cluster_std=4.0, random_state=0, comms=comms)
    y = y.astype("int64")
    metrics = {}
    for name, case in CASES.items():
        with draws("per-row"):  # warm-up: kernels compile
            case(X[: min(len(X), 2000)], y[: min(len(y), 2000)])
        for policy in POLICIES:
            with draws(policy):
                peak, seconds = _traced(lambda case=case: case(X, y), comms)
            peaks = comms.allgather_object((peak, seconds))
            metrics[f"{name}|{policy}"] = {
                "peak_mb": max(p for p, _ in peaks) / 1e6,
                "seconds": max(s for _, s in peaks),
            }
    _driver.worker_report(args.report, metrics, comms)


def driver(args):
    results = {}
    for ranks in args.ranks:
        argv = ["--rows-per-rank", str(args.rows_per_rank)]
        results[ranks] = _driver.run_worker(Path(__file__), ranks, argv, args.timeout)
    header = f"{'case':<36}{'draws':<14}" + "".join(f"{f'{r} ranks MB':>13}" for r in args.ranks)
    header += f"{'peak / 1-rank':>15}"
    print(f"\nbench_draws: {args.rows_per_rank} rows x 4 per rank; {_driver.machine()}")
    print(header)
    print("-" * len(header))
    rows = []
    for name in CASES:
        for policy in POLICIES:
            peaks = [results[r][f"{name}|{policy}"]["peak_mb"] for r in args.ranks]
            growth = peaks[-1] / peaks[0]
            print(
                f"{name:<36}{policy:<14}"
                + "".join(f"{p:>13.1f}" for p in peaks)
                + f"{growth:>15.2f}"
            )
            rows.append(
                {
                    "case": name,
                    "draws": policy,
                    "ranks": list(args.ranks),
                    "peak_mb": peaks,
                    "seconds": [results[r][f"{name}|{policy}"]["seconds"] for r in args.ranks],
                    "growth": growth,
                }
            )
    print(
        "peak: the busiest rank's peak of traced allocations during the call; "
        f"growth: at {args.ranks[-1]} ranks over {args.ranks[0]}."
    )
    if args.out is None:
        print("results not written (pass --out PATH to save them as JSON)")
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    config = {"rows_per_rank": args.rows_per_rank, "machine": _driver.machine()}
    args.out.write_text(
        json.dumps({"benchmark": "draws", "config": config, "rows": rows}, indent=1)
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rows-per-rank", type=int, default=400_000)
    parser.add_argument("--timeout", type=int, default=3600)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args()
    (worker if args.worker else driver)(args)


if __name__ == "__main__":
    main()
