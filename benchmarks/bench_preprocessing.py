"""Preprocessing fits: mlmpi under ``mpiexec -n R`` vs scikit-learn on the gathered data.

Both sides fit the same global float64 data (normal columns with 5% NaN,
saved once to a temporary ``.npy`` that each rank reads its rows of);
scikit-learn gets as many threads as mlmpi has ranks. scikit-learn is timed in
this process while no MPI rank is alive, then mlmpi, alternating
(``benchmarks/_driver.py``). Each timing is one ``fit``, after an untimed fit of
2,000 rows per rank that loads the compiled kernels (the peer's repeats are warm too).

    python benchmarks/bench_preprocessing.py                     # 1M x 16, 2 ranks
    python benchmarks/bench_preprocessing.py --n-samples 20000 --repeats 1   # smoke run
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn.preprocessing
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _driver import compare, report, run_main, worker_report

CASES = {
    "StandardScaler": ("StandardScaler", {}),
    "RobustScaler": ("RobustScaler", {}),
    "QuantileTransformer": ("QuantileTransformer", {"subsample": None}),
}


def _data(args):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n_samples, args.n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    return X


def _estimator(module, case):
    name, params = CASES[case]
    return getattr(module, name)(**params)


def _worker(args):
    import mlmpi
    import mlmpi.preprocessing
    from mlmpi.comms import profile
    from mlmpi.io import load_npy

    comms = mlmpi.get_comms()
    X = load_npy(args.data, comms=comms)
    comms.barrier()
    comms.allreduce(np.zeros(1))  # connections up before timing
    # one untimed fit on a few rows loads the compiled kernels (numba's cache), as
    # the peer's repeats in the driver process are warm too
    _estimator(mlmpi.preprocessing, args.case).fit(X[:2000])
    with profile() as prof:
        comms.barrier()
        start = time.perf_counter()
        _estimator(mlmpi.preprocessing, args.case).fit(X)
        comms.barrier()
        seconds = time.perf_counter() - start
    seconds = float(comms.allreduce(np.asarray(seconds), op="max"))
    comm_s = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    worker_report(args.report, {"seconds": seconds, "comm_fraction": comm_s / seconds}, comms)


def _driver(args):
    X = _data(args)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "X.npy"
        np.save(data, X)
        rows = [_compare_case(args, case, X, data) for case in args.cases]
    config = {k: getattr(args, k) for k in ("n_samples", "n_features", "ranks", "repeats")}
    report(
        "preprocessing",
        rows,
        config,
        out=args.out,
        extra_columns=[("comm frac", "mlmpi_comm_fraction")],
    )


def _compare_case(args, case, X, data):
    def run_peer():
        with threadpool_limits(limits=args.ranks):
            start = time.perf_counter()
            _estimator(sklearn.preprocessing, case).fit(X)
            return {"seconds": time.perf_counter() - start}

    return compare(
        case,
        script=__file__,
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=run_peer,
        worker_argv=["--case", case, "--data", str(data)],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="(worker) the global .npy the driver wrote")
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=sorted(CASES))
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=16)
    run_main(parser, driver=_driver, worker=_worker)


if __name__ == "__main__":
    main()
