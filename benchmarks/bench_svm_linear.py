"""mlmpi LinearSVC / LinearSVR on R ranks vs scikit-learn (liblinear, one thread): fit time.

    python benchmarks/bench_svm_linear.py --ranks 2 --repeats 3
    python benchmarks/bench_svm_linear.py --size 0.01 --repeats 1     # smoke test

Cases: ``svc`` (LinearSVC defaults: L2 penalty, squared hinge, dual='auto'
which is the primal here) and ``svr`` (LinearSVR,
``loss='squared_epsilon_insensitive'``) on ``--n-samples`` x
``--n-features`` float64, the same global data on both sides, generated per
global row (``mlmpi.datasets.make_blobs``), so it does not depend on R.
Reported: fit seconds, mlmpi's fraction of time in communication,
iterations and the largest coefficient difference to scikit-learn's.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402

CASES = ("svc", "svr")


def _data(case, args, comms):
    """``(X, y)``: this rank's rows of the case's global data (overlapping classes)."""
    from mlmpi.datasets import make_blobs

    d = args.n_features
    Z, labels = make_blobs(
        args.n_samples,
        d + 1,
        centers=2,
        cluster_std=3.0,
        center_box=(-1.0, 1.0),
        random_state=0,
        comms=comms,
    )
    X = np.ascontiguousarray(Z[:, :d])
    if case == "svc":
        return X, labels
    coef = np.random.RandomState(1).normal(size=d)
    return X, X @ coef + Z[:, d]


def _estimator(module, case):
    if case == "svc":
        return module.LinearSVC()
    return module.LinearSVR(loss="squared_epsilon_insensitive", dual=False)


def worker(args):
    import mlmpi.svm as ml
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
            "n_iter": int(model.n_iter_),
            "coef": np.asarray(model.coef_).tolist(),
        },
        comms,
    )


def driver(args):
    import sklearn.svm as sk
    from threadpoolctl import threadpool_limits

    from mlmpi.comms import SelfComms

    rows = []
    for case in args.cases:
        X, y = _data(case, args, SelfComms())
        fitted = {}

        def timed(case=case, X=X, y=y):
            with threadpool_limits(limits=args.ranks):
                start = time.perf_counter()
                fitted["scikit-learn"] = _estimator(sk, case).fit(X, y)
                elapsed = time.perf_counter() - start
            return {"seconds": elapsed, "n_iter": int(fitted["scikit-learn"].n_iter_)}

        argv = ["--cases", case, "--n-samples", args.n_samples]
        argv += ["--n-features", args.n_features, "--fits", args.fits]
        row = _driver.compare(
            f"{case} {args.n_samples}x{args.n_features} R={args.ranks}",
            script=Path(__file__).resolve(),
            ranks=args.ranks,
            repeats=args.repeats,
            run_peer=timed,
            worker_argv=[str(a) for a in argv],
        )
        ours = np.asarray(row["mlmpi_runs"][-1].pop("coef"))
        for run in row["mlmpi_runs"]:
            run.pop("coef", None)
        row["coef_max_diff"] = float(np.abs(ours - fitted["scikit-learn"].coef_).max())
        row["peer_n_iter"] = row["peer_runs"][-1]["n_iter"]
        rows.append(row)
        del X, y
    _driver.report(
        "svm_linear",
        rows,
        vars(args) | {"metric": "fit seconds"},
        out=args.out,
        extra_columns=[
            ("comm frac", "mlmpi_comm_fraction"),
            ("n_iter", "mlmpi_n_iter"),
            ("peer n_iter", "peer_n_iter"),
            ("coef diff", "coef_max_diff"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=50)
    parser.add_argument("--fits", type=int, default=3, help="timed fits per mlmpi job (median)")
    _driver.run_main(parser, driver=driver, worker=worker, sized=("n_samples",))


if __name__ == "__main__":
    main()
