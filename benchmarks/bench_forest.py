"""mlmpi forests on R ranks vs scikit-learn's (n_jobs=R): fit time.

    python benchmarks/bench_forest.py --ranks 2 --repeats 3 --out results/forest.json
    python benchmarks/bench_forest.py --estimator ExtraTreesRegressor --ranks 2
    python benchmarks/bench_forest.py --ranks 2 --repeats 1 --size 0.01   # smoke
    python benchmarks/bench_forest.py --ranks 2 --fits 3   # median of 3 fits a job

Both sides fit the same synthetic data (scikit-learn's ``make_classification``,
or ``make_regression`` for a regressor: ``--n-samples`` training rows and
``--n-test`` held-out rows, float32) with the same tree count and depth;
mlmpi's ranks each take their rows of it. Reported: fit seconds (medians of
alternating jobs), held-out score of both (accuracy or R²), the fraction of
mlmpi's fit spent inside collectives (waiting for the other ranks included;
the slowest rank's), the part of it spent waiting for slower ranks (per
collective, the time beyond the shortest any rank spent in it), and the time
per collective (``comm by op``). With scikit-learn-intelex installed (the
``bench`` extra), its forest with the same parameters and ``n_jobs=R`` (R
oneDAL threads) is timed in the same alternation, with whether it fell back
to scikit-learn and its held-out score (``sx same``: within 0.005 of
scikit-learn's; its trees are grown from other random draws).
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver


def _data(args):
    from sklearn.datasets import make_classification, make_regression

    if args.estimator.endswith("Regressor"):
        X, y = make_regression(
            args.n_samples + args.n_test,
            args.n_features,
            n_informative=args.n_features // 2,
            noise=10.0,
            random_state=0,
        )
    else:
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


#: Rows of each rank's warm-up fit: more than the subtrees' LOCAL_ROWS, so that it
#: runs both the levels' kernels and the subtrees'.
_WARM_UP_ROWS = 20_000


def _params(args):
    return {"n_estimators": args.n_estimators, "max_depth": args.max_depth, "random_state": 0}


def worker(args):
    import mlmpi.ensemble
    from mlmpi import get_comms
    from mlmpi.datasets import shard

    forest = getattr(mlmpi.ensemble, args.estimator)
    comms = get_comms()
    X, y, X_test, y_test = _data(args)
    X, y = shard(X, comms), shard(y, comms)
    X_test, y_test = shard(X_test, comms), shard(y_test, comms)
    # compile and load every kernel the timed fits run: the same parameters, on
    # enough rows for the levels and the subtrees (a max_depth=2 warm-up left the
    # subtrees' kernels to the first timed fit, 0.1-0.3 s of it)
    forest(**{**_params(args), "n_estimators": 2}).fit(X[:_WARM_UP_ROWS], y[:_WARM_UP_ROWS])
    runs = [
        _driver.timed_collective(lambda: forest(**_params(args)).fit(X, y), comms)
        for _ in range(args.fits)
    ]
    model, metrics, prof = sorted(runs, key=lambda run: run[1]["seconds"])[len(runs) // 2]
    by_op = {
        op.rsplit("/", 1)[-1]: float(comms.allreduce(np.asarray(secs), op="max"))
        for op, _, _, secs in sorted(prof.rows())
    }
    score = model.score(X_test, y_test)
    _driver.worker_report(
        args.report,
        metrics | {"accuracy": score, "comm_by_op": by_op},
        comms,
    )


def driver(args):
    import sklearn.ensemble

    X, y, X_test, y_test = _data(args)
    fitted = {}

    def timed(module):
        forest = getattr(module, args.estimator)
        start = time.perf_counter()
        fitted[module] = forest(n_jobs=args.ranks, **_params(args)).fit(X, y)
        return {"seconds": time.perf_counter() - start}

    others = {}
    if _driver.sklearnex_threads(args.ranks):
        import sklearnex.ensemble

        others["sklearnex"] = lambda: _driver.sklearnex_run(lambda: timed(sklearnex.ensemble))

    argv = [
        "--estimator",
        args.estimator,
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
        "--fits",
        args.fits,
    ]
    short = "".join(c for c in args.estimator if c.isupper()).lower()
    row = _driver.compare(
        f"{short} {args.n_samples}x{args.n_features} R={args.ranks}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=lambda: timed(sklearn.ensemble),
        worker_argv=[str(a) for a in argv],
        others=others,
    )
    row["peer_accuracy"] = fitted[sklearn.ensemble].score(X_test, y_test)
    if others:
        row["sklearnex_accuracy"] = fitted[sklearnex.ensemble].score(X_test, y_test)
        row["sklearnex_same"] = abs(row["sklearnex_accuracy"] - row["peer_accuracy"]) <= 0.005
    by_op = [run["comm_by_op"] for run in row["mlmpi_runs"]]
    row["mlmpi_comm_by_op"] = {op: statistics.median(r[op] for r in by_op) for op in by_op[0]}
    _driver.report(
        "forest",
        [row],
        vars(args) | {"metric": "fit seconds"},
        out=args.out,
        peer="scikit-learn",
        extra_columns=[("sklearnex s", "sklearnex_s"), ("ratio sklearnex", "ratio_sklearnex")]
        + _driver.COLLECTIVE_COLUMNS
        + [
            ("score", "mlmpi_accuracy"),
            ("peer score", "peer_accuracy"),
            ("sx fallback", "sklearnex_fallback"),
            ("sx score", "sklearnex_accuracy"),
            ("sx same", "sklearnex_same"),
        ],
    )
    print(
        "mlmpi seconds inside collectives, per operation (median run, slowest rank): "
        + ", ".join(f"{op} {secs:.3g}" for op, secs in row["mlmpi_comm_by_op"].items())
    )


def _max_depth(text):
    return None if text.lower() == "none" else int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--estimator",
        default="RandomForestClassifier",
        choices=[
            "RandomForestClassifier",
            "ExtraTreesClassifier",
            "RandomForestRegressor",
            "ExtraTreesRegressor",
        ],
    )
    parser.add_argument("--n-samples", type=int, default=500_000)
    parser.add_argument("--n-test", type=int, default=100_000)
    parser.add_argument("--n-features", type=int, default=20)
    parser.add_argument("--n-classes", type=int, default=3)
    parser.add_argument("--n-estimators", type=int, default=20)
    parser.add_argument(
        "--max-depth", type=_max_depth, default=12, help="an integer, or none (full trees)"
    )
    parser.add_argument(
        "--fits",
        type=int,
        default=1,
        help="timed fits per mlmpi job, the median reported (1: a fresh process, as a job "
        "fits once; more: a process that has fitted before, as the peers' later repeats)",
    )
    _driver.run_main(parser, driver=driver, worker=worker, sized=("n_samples", "n_test"))


if __name__ == "__main__":
    main()
