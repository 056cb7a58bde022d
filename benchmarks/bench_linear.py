"""mlmpi linear models on R ranks vs scikit-learn with R threads: fit time.

    python benchmarks/bench_linear.py --ranks 2 --repeats 3
    python benchmarks/bench_linear.py --cases logistic --n-samples-logistic 100000

Cases: ``linear`` (LinearRegression) and ``ridge`` (Ridge, solver 'auto') on
``--n-samples`` x ``--n-features`` float64; ``logistic`` (multinomial
LogisticRegression, lbfgs) and ``logistic_newton`` (the same with
``solver='newton-cholesky'``: allreduced Hessian) on ``--n-samples-logistic``
rows and ``--n-classes`` classes. Both sides fit the same global data, generated per
global row (``mlmpi.datasets.make_blobs``), so it does not depend on R.
Reported: fit seconds, mlmpi's fraction of time in communication, and the
largest coefficient difference to scikit-learn's; with scikit-learn-intelex
installed (the ``bench`` extra), its estimators on R oneDAL threads, timed in
the same alternation (``ratio sklearnex``: mlmpi's time over theirs).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402

CASES = ("linear", "ridge", "logistic", "logistic_newton")


def _data(case, args, comms):
    """``(X, y)``: this rank's rows of the case's global data."""
    from mlmpi.datasets import make_blobs

    d = args.n_features
    if case.startswith("logistic"):
        # overlapping classes: L-BFGS needs a realistic number of iterations
        return make_blobs(
            args.n_samples_logistic,
            d,
            centers=args.n_classes,
            cluster_std=4.0,
            center_box=(-1.0, 1.0),
            random_state=0,
            comms=comms,
        )
    # one extra column of per-row noise for the target
    Z, _ = make_blobs(args.n_samples, d + 1, centers=4, random_state=0, comms=comms)
    coef = np.random.RandomState(1).normal(size=d)
    return np.ascontiguousarray(Z[:, :d]), Z[:, :d] @ coef + Z[:, d]


def _estimator(module, case):
    if case == "linear":
        return module.LinearRegression()
    if case == "ridge":
        return module.Ridge(alpha=1.0)
    if case == "logistic_newton":
        return module.LogisticRegression(solver="newton-cholesky", max_iter=100)
    return module.LogisticRegression(max_iter=100)


def _n_iter(model):
    """Solver iterations (0 for the direct solvers)."""
    n_iter = getattr(model, "n_iter_", None)
    return 0 if n_iter is None else int(np.max(n_iter))


def worker(args):
    import mlmpi.linear_model as ml
    from mlmpi import get_comms
    from mlmpi.comms import profile

    comms = get_comms()
    X, y = _data(args.cases[0], args, comms)
    fits, comm_seconds = [], []
    for _ in range(args.fits):
        comms.barrier()
        start = time.perf_counter()
        with profile() as prof:
            model = _estimator(ml, args.cases[0]).fit(X, y)
        fits.append(float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max")))
        comm_seconds.append(float(comms.allreduce(np.asarray(prof.total_seconds), op="max")))
    best = int(np.argsort(fits)[len(fits) // 2])
    _driver.worker_report(
        args.report,
        {
            "seconds": fits[best],
            "comm_fraction": comm_seconds[best] / fits[best],
            "n_iter": _n_iter(model),
            "coef": np.asarray(model.coef_).tolist(),
        },
        comms,
    )


def driver(args):
    import sklearn.linear_model as sk
    from threadpoolctl import threadpool_limits

    from mlmpi.comms import SelfComms

    others = {}
    if _driver.sklearnex_threads(args.ranks):
        import sklearnex.linear_model as sx

        others["sklearnex"] = sx
    rows = []
    for case in args.cases:
        X, y = _data(case, args, SelfComms())
        fitted = {}

        def timed(module, name):
            with threadpool_limits(limits=args.ranks):
                start = time.perf_counter()
                fitted[name] = _estimator(module, case).fit(X, y)
                elapsed = time.perf_counter() - start
            return {"seconds": elapsed, "n_iter": _n_iter(fitted[name])}

        argv = [
            "--cases",
            case,
            "--n-samples",
            args.n_samples,
            "--n-samples-logistic",
            args.n_samples_logistic,
            "--n-features",
            args.n_features,
            "--n-classes",
            args.n_classes,
            "--fits",
            args.fits,
        ]
        n = args.n_samples_logistic if case.startswith("logistic") else args.n_samples
        row = _driver.compare(
            f"{case} {n}x{args.n_features} R={args.ranks}",
            script=Path(__file__).resolve(),
            ranks=args.ranks,
            repeats=args.repeats,
            run_peer=lambda: timed(sk, "scikit-learn"),
            worker_argv=[str(a) for a in argv],
            others={
                name: (
                    lambda module=module, name=name: _driver.sklearnex_run(
                        lambda: timed(module, name)
                    )
                )
                for name, module in others.items()
            },
        )
        ours = np.asarray(row["mlmpi_runs"][-1].pop("coef"))
        for run in row["mlmpi_runs"]:
            run.pop("coef", None)
        reference = fitted["scikit-learn"].coef_
        row["coef_max_diff"] = float(np.abs(ours - reference).max())
        for name in others:
            row[f"{name}_coef_max_diff"] = float(np.abs(fitted[name].coef_ - reference).max())
        row["peer_n_iter"] = row["peer_runs"][-1]["n_iter"]
        rows.append(row)
        del X, y
    _driver.report(
        "linear",
        rows,
        vars(args) | {"metric": "fit seconds"},
        out=args.out,
        extra_columns=[
            ("sklearnex s", "sklearnex_s"),
            ("ratio sklearnex", "ratio_sklearnex"),
            ("comm frac", "mlmpi_comm_fraction"),
            ("n_iter", "mlmpi_n_iter"),
            ("peer n_iter", "peer_n_iter"),
            ("coef diff", "coef_max_diff"),
            ("sklearnex diff", "sklearnex_coef_max_diff"),
            ("sx fallback", "sklearnex_fallback"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--n-samples", type=int, default=2_000_000)
    parser.add_argument("--n-samples-logistic", type=int, default=500_000)
    parser.add_argument("--n-features", type=int, default=64)
    parser.add_argument("--n-classes", type=int, default=10)
    parser.add_argument("--fits", type=int, default=3, help="timed fits per mlmpi job (median)")
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
