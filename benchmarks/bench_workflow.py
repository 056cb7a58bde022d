"""Searches of linear models: mlmpi on R ranks vs scikit-learn with n_jobs=R.

    python benchmarks/bench_workflow.py --ranks 2 --repeats 3
    python benchmarks/bench_workflow.py --n-samples 20000 --repeats 1   # smoke run

Cases (``--cases``, all by default), on ``--n-samples`` x ``--n-features``
float64 rows generated per global row (``mlmpi.datasets.make_blobs``), so
both sides search the same global data:

* ``logistic``: ``GridSearchCV(StandardScaler + LogisticRegression)`` over
  ``--c-values`` (8) with ``--folds`` (5) stratified folds, and the refit of
  the best C; two overlapping classes, columns on very different scales;
* ``ridge``: ``GridSearchCV(Ridge)`` over ``--n-alphas`` (20) alphas, 5 folds;
* ``lasso_cv``: ``LassoCV`` with a grid of ``--n-alphas-lasso`` (100) alphas, 5 folds.

scikit-learn runs its fits on a joblib pool of R workers (timed by the driver
while no MPI rank is alive); mlmpi runs the searches collectively on R ranks,
where the linear models' (fold, candidate) pairs are fitted together.
Reported: seconds, mlmpi's fraction of time in communication, and whether
both chose the same hyper-parameter (and how far apart the mean scores are).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver

CASES = ("logistic", "ridge", "lasso_cv")


def _data(args, comms):
    """This rank's rows: two overlapping blobs, columns on very different scales,
    and a regression target that depends on a few columns."""
    from mlmpi.datasets import make_blobs

    X, labels = make_blobs(
        args.n_samples,
        args.n_features,
        centers=2,
        cluster_std=4.0,
        center_box=(-1.0, 1.0),
        random_state=0,
        comms=comms,
    )
    scales = np.logspace(-2, 3, args.n_features)
    X = X * scales + 10.0 * scales
    weights = np.zeros(args.n_features)
    weights[:: max(1, args.n_features // 5)] = 1.0
    target = (X / scales) @ weights + 2.0 * labels
    return X, labels, target


def _estimators(case, args, library):
    """``(search or estimator, data key, chosen-parameter name)`` of ``library``
    ('mlmpi' or 'sklearn'); ``n_jobs`` for scikit-learn's."""
    if library == "mlmpi":
        from mlmpi import LassoCV, LogisticRegression, Ridge
        from mlmpi.model_selection import GridSearchCV
        from mlmpi.pipeline import make_pipeline
        from mlmpi.preprocessing import StandardScaler

        jobs = {}
    else:
        from sklearn.linear_model import LassoCV, LogisticRegression, Ridge
        from sklearn.model_selection import GridSearchCV
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        jobs = {"n_jobs": args.ranks}
    if case == "logistic":
        pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=100))
        grid = {"logisticregression__C": list(args.c_values)}
        return GridSearchCV(pipe, grid, cv=args.folds, **jobs), "labels", "logisticregression__C"
    if case == "ridge":
        grid = {"alpha": list(np.logspace(-3, 4, args.n_alphas))}
        return GridSearchCV(Ridge(), grid, cv=args.folds, **jobs), "target", "alpha"
    return LassoCV(alphas=args.n_alphas_lasso, cv=args.folds, **jobs), "target", "alpha_"


def _chosen(fitted, name):
    """``(chosen parameter, mean scores)`` of a fitted search or CV estimator."""
    if name.endswith("_"):
        return float(getattr(fitted, name)), -fitted.mse_path_.mean(axis=-1)
    return float(fitted.best_params_[name]), fitted.cv_results_["mean_test_score"]


def worker(args):
    from mlmpi import get_comms
    from mlmpi.comms import profile

    comms = get_comms()
    X, labels, target = _data(args, comms)
    model, key, name = _estimators(args.case, args, "mlmpi")
    y = labels if key == "labels" else target
    comms.barrier()
    start = time.perf_counter()
    with profile() as prof:
        model.fit(X, y)
    seconds = float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max"))
    comm_seconds = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    chosen, scores = _chosen(model, name)
    _driver.worker_report(
        args.report,
        {
            "seconds": seconds,
            "comm_fraction": comm_seconds / seconds,
            "chosen": chosen,
            "scores": [float(s) for s in scores],
        },
        comms,
    )


def driver(args):
    from mlmpi.comms import SelfComms

    X, labels, target = _data(args, SelfComms())
    rows = []
    for case in args.cases:
        fitted = {}

        def run_peer(case=case, fitted=fitted):
            model, key, _ = _estimators(case, args, "sklearn")
            y = labels if key == "labels" else target
            start = time.perf_counter()
            fitted["model"] = model.fit(X, y)
            return {"seconds": time.perf_counter() - start}

        argv = [
            "--case",
            case,
            "--n-samples",
            args.n_samples,
            "--n-features",
            args.n_features,
            "--folds",
            args.folds,
            "--n-alphas",
            args.n_alphas,
            "--n-alphas-lasso",
            args.n_alphas_lasso,
            "--c-values",
            *args.c_values,
        ]
        row = _driver.compare(
            f"{case} {args.n_samples}x{args.n_features} R={args.ranks}",
            script=Path(__file__).resolve(),
            ranks=args.ranks,
            repeats=args.repeats,
            run_peer=run_peer,
            worker_argv=[str(a) for a in argv],
        )
        chosen, scores = _chosen(fitted["model"], _estimators(case, args, "sklearn")[2])
        ours = row["mlmpi_runs"][-1]
        row["same_choice"] = float(np.isclose(ours["chosen"], chosen, rtol=1e-9))
        row["max_score_diff"] = float(np.max(np.abs(np.asarray(ours["scores"]) - scores)))
        rows.append(row)
    _driver.report(
        "workflow",
        rows,
        vars(args) | {"metric": "fit seconds (every fold and candidate + refit)"},
        out=args.out,
        extra_columns=[
            ("comm frac", "mlmpi_comm_fraction"),
            ("same choice", "same_choice"),
            ("score diff", "max_score_diff"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=50)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--c-values", type=float, nargs="+", default=list(np.logspace(-3, 2, 8).round(6))
    )
    parser.add_argument("--n-alphas", type=int, default=20)
    parser.add_argument("--n-alphas-lasso", type=int, default=100)
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
