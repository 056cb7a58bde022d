"""A scale -> fit -> search workflow: mlmpi on R ranks vs scikit-learn with n_jobs=R.

    python benchmarks/bench_workflow.py --ranks 2 --repeats 3
    python benchmarks/bench_workflow.py --n-samples 100000 --repeats 1   # smoke run

``GridSearchCV(StandardScaler + LogisticRegression)`` over ``--c-values`` C
values with ``--folds`` stratified folds (and the refit of the best
candidate) on ``--n-samples`` x ``--n-features`` float64 rows of two
overlapping classes, generated per global row (``mlmpi.datasets.make_blobs``)
so that both sides search the same global data. scikit-learn runs its
candidates on a joblib pool of R workers; mlmpi runs each fit collectively on
R ranks (``mlmpi.preprocessing.StandardScaler``, ``mlmpi.pipeline``,
``mlmpi.model_selection.GridSearchCV``). Reported: search seconds, mlmpi's
fraction of time in communication, and whether both found the same best C
and the same best score.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver


def _data(args, comms):
    """This rank's rows: two overlapping blobs, columns on very different scales."""
    from mlmpi.datasets import make_blobs

    X, y = make_blobs(
        args.n_samples,
        args.n_features,
        centers=2,
        cluster_std=4.0,
        center_box=(-1.0, 1.0),
        random_state=0,
        comms=comms,
    )
    scales = np.logspace(-2, 3, args.n_features)
    return X * scales + 10.0 * scales, y


def _grid(args):
    return {"logisticregression__C": list(args.c_values)}


def worker(args):
    from mlmpi import LogisticRegression, get_comms
    from mlmpi.comms import profile
    from mlmpi.model_selection import GridSearchCV
    from mlmpi.pipeline import make_pipeline
    from mlmpi.preprocessing import StandardScaler

    comms = get_comms()
    X, y = _data(args, comms)
    search = GridSearchCV(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=100)),
        _grid(args),
        cv=args.folds,
    )
    comms.barrier()
    start = time.perf_counter()
    with profile() as prof:
        search.fit(X, y)
    seconds = float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max"))
    comm_seconds = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    _driver.worker_report(
        args.report,
        {
            "seconds": seconds,
            "comm_fraction": comm_seconds / seconds,
            "best_C": search.best_params_["logisticregression__C"],
            "best_score": float(search.best_score_),
        },
        comms,
    )


def driver(args):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from mlmpi.comms import SelfComms

    X, y = _data(args, SelfComms())
    fitted = {}

    def run_peer():
        search = GridSearchCV(
            make_pipeline(StandardScaler(), LogisticRegression(max_iter=100)),
            _grid(args),
            cv=args.folds,
            n_jobs=args.ranks,
        )
        start = time.perf_counter()
        fitted["search"] = search.fit(X, y)
        return {"seconds": time.perf_counter() - start}

    argv = [
        "--n-samples",
        args.n_samples,
        "--n-features",
        args.n_features,
        "--folds",
        args.folds,
        "--c-values",
        *args.c_values,
    ]
    row = _driver.compare(
        f"search {args.n_samples}x{args.n_features} R={args.ranks}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=run_peer,
        worker_argv=[str(a) for a in argv],
    )
    reference = fitted["search"]
    ours = row["mlmpi_runs"][-1]
    row["same_best_C"] = float(ours["best_C"] == reference.best_params_["logisticregression__C"])
    row["best_score_diff"] = abs(ours["best_score"] - float(reference.best_score_))
    _driver.report(
        "workflow",
        [row],
        vars(args) | {"metric": "GridSearchCV.fit seconds (folds x C values + refit)"},
        out=args.out,
        extra_columns=[
            ("comm frac", "mlmpi_comm_fraction"),
            ("same best C", "same_best_C"),
            ("score diff", "best_score_diff"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=500_000)
    parser.add_argument("--n-features", type=int, default=20)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--c-values", type=float, nargs="+", default=[0.001, 0.01, 0.1, 1.0])
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
