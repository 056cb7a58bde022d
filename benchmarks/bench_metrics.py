"""mlmpi.metrics on R ranks vs scikit-learn on the whole data in one process.

    python benchmarks/bench_metrics.py --ranks 2 --n-samples 1000000 \\
        --n-silhouette 20000 --repeats 3

Every metric gets the same global data (drawn from one seed, then each rank
takes its row block): binary ROC AUC with tied scores (the ring of sorted
scores), macro F1 of 10 classes (the contingency table), R² of 4 outputs
(allreduced sums), and the exact silhouette of 20,000 x 16 rows in 8
clusters (the ring of row blocks). Reported: seconds per call (median of
the calls of a job), and whether mlmpi's value equals scikit-learn's.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver

METRICS = ("roc_auc_score", "f1_score", "r2_score", "silhouette_score")


def _data(metric, args):
    """The global arguments of ``metric`` and its keyword arguments."""
    rng = np.random.RandomState(0)
    n = args.n_samples
    if metric == "roc_auc_score":
        y = rng.randint(0, 2, n)
        return (y, np.round(rng.normal(size=n) + y, 2)), {}
    if metric == "f1_score":
        y = rng.randint(0, 10, n)
        return (y, np.where(rng.rand(n) < 0.7, y, rng.randint(0, 10, n))), {"average": "macro"}
    if metric == "r2_score":
        Y = rng.normal(size=(n, 4))
        return (Y, Y + rng.normal(size=(n, 4))), {}
    centers = rng.uniform(-5, 5, size=(8, 16))
    labels = rng.randint(0, 8, args.n_silhouette)
    return (centers[labels] + rng.normal(size=(args.n_silhouette, 16)), labels), {}


def worker(args):
    import mlmpi.metrics as ml
    from mlmpi import get_comms
    from mlmpi.comms import profile
    from mlmpi.datasets import shard

    comms = get_comms()
    arrays, kwargs = _data(args.metric, args)
    local = [shard(a, comms) for a in arrays]
    metric = getattr(ml, args.metric)
    metric(*local, **kwargs)  # load the compiled kernels
    seconds, comm_seconds = [], []
    for _ in range(args.calls):
        comms.barrier()
        start = time.perf_counter()
        with profile() as prof:
            value = metric(*local, **kwargs)
        seconds.append(float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max")))
        comm_seconds.append(float(comms.allreduce(np.asarray(prof.total_seconds), op="max")))
    best = int(np.argsort(seconds)[len(seconds) // 2])
    _driver.worker_report(
        args.report,
        {
            "seconds": seconds[best],
            "value": float(value),
            "comm_fraction": comm_seconds[best] / seconds[best],
        },
        comms,
    )


def driver(args):
    import sklearn.metrics as sk

    rows = []
    for metric in args.metrics:
        arrays, kwargs = _data(metric, args)
        func = getattr(sk, metric)

        def run_peer(func=func, arrays=arrays, kwargs=kwargs):
            start = time.perf_counter()
            value = func(*arrays, **kwargs)
            return {"seconds": time.perf_counter() - start, "value": float(value)}

        argv = [
            "--metric",
            metric,
            "--n-samples",
            args.n_samples,
            "--n-silhouette",
            args.n_silhouette,
            "--calls",
            args.calls,
        ]
        n = args.n_silhouette if metric == "silhouette_score" else args.n_samples
        row = _driver.compare(
            f"{metric} n={n}",
            script=Path(__file__).resolve(),
            ranks=args.ranks,
            repeats=args.repeats,
            run_peer=run_peer,
            worker_argv=[str(a) for a in argv],
        )
        ours = statistics.median(r["value"] for r in row["mlmpi_runs"])
        theirs = row["peer_runs"][0]["value"]
        row["relative_difference"] = abs(ours - theirs) / abs(theirs)
        rows.append(row)
    _driver.report(
        "metrics",
        rows,
        vars(args) | {"metric": "seconds per call"},
        out=args.out,
        extra_columns=[("comm frac", "mlmpi_comm_fraction"), ("rel. diff", "relative_difference")],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-silhouette", type=int, default=20_000)
    parser.add_argument("--metrics", nargs="+", choices=METRICS, default=list(METRICS))
    parser.add_argument("--metric", choices=METRICS, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=3, help="timed calls per mlmpi job (median)")
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
