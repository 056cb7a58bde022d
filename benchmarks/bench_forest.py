"""mlmpi RandomForestClassifier on R ranks vs scikit-learn's (n_jobs=R): fit time.

    python benchmarks/bench_forest.py --ranks 2 --repeats 3 --out results/forest.json

Both sides fit the same synthetic data (scikit-learn's ``make_classification``,
``--n-samples`` training rows and ``--n-test`` held-out rows, float32) with the
same tree count and depth; mlmpi's ranks each take their rows of it. Reported:
fit seconds (medians of alternating jobs), held-out accuracy of both, the
fraction of mlmpi's time in communication.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver


def _data(args):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        args.n_samples + args.n_test,
        args.n_features,
        n_informative=args.n_features // 2,
        n_classes=args.n_classes,
        random_state=0,
    )
    X = X.astype(np.float32)
    n = args.n_samples
    return X[:n], y[:n], X[n:], y[n:]


def _params(args):
    return {"n_estimators": args.n_estimators, "max_depth": args.max_depth, "random_state": 0}


def worker(args):
    from mlmpi import RandomForestClassifier, get_comms
    from mlmpi.comms import profile
    from mlmpi.datasets import shard

    comms = get_comms()
    X, y, X_test, y_test = _data(args)
    X, y = shard(X, comms), shard(y, comms)
    X_test, y_test = shard(X_test, comms), shard(y_test, comms)
    RandomForestClassifier(n_estimators=1, max_depth=2).fit(X[:1000], y[:1000])  # compile
    comms.barrier()
    start = time.perf_counter()
    with profile() as prof:
        model = RandomForestClassifier(**_params(args)).fit(X, y)
    seconds = float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max"))
    comm = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    accuracy = model.score(X_test, y_test)
    _driver.worker_report(
        args.report,
        {"seconds": seconds, "comm_fraction": comm / seconds, "accuracy": accuracy},
        comms,
    )


def driver(args):
    from sklearn.ensemble import RandomForestClassifier

    X, y, X_test, y_test = _data(args)
    fitted = {}

    def run_peer():
        start = time.perf_counter()
        fitted["model"] = RandomForestClassifier(n_jobs=args.ranks, **_params(args)).fit(X, y)
        return {"seconds": time.perf_counter() - start}

    argv = [
        "--n-samples",
        args.n_samples,
        "--n-test",
        args.n_test,
        "--n-features",
        args.n_features,
        "--n-classes",
        args.n_classes,
        "--n-estimators",
        args.n_estimators,
        "--max-depth",
        args.max_depth,
    ]
    row = _driver.compare(
        f"rf {args.n_samples}x{args.n_features} R={args.ranks}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=run_peer,
        worker_argv=[str(a) for a in argv],
    )
    row["peer_accuracy"] = fitted["model"].score(X_test, y_test)
    _driver.report(
        "forest",
        [row],
        vars(args) | {"metric": "fit seconds"},
        out=args.out,
        peer="scikit-learn",
        extra_columns=[
            ("comm frac", "mlmpi_comm_fraction"),
            ("accuracy", "mlmpi_accuracy"),
            ("peer acc", "peer_accuracy"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=500_000)
    parser.add_argument("--n-test", type=int, default=100_000)
    parser.add_argument("--n-features", type=int, default=20)
    parser.add_argument("--n-classes", type=int, default=3)
    parser.add_argument("--n-estimators", type=int, default=20)
    parser.add_argument("--max-depth", type=int, default=12)
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
