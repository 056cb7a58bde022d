"""PCA (each solver) and TruncatedSVD: mlmpi under ``mpiexec -n R`` vs scikit-learn.

Both sides fit the same global float32 data (``mlmpi.datasets.make_blobs``,
generated once and saved to a temporary ``.npy`` that each rank reads its
rows of); scikit-learn gets as many BLAS threads as mlmpi has ranks.
scikit-learn is timed in this process while no MPI rank is alive, then
mlmpi, alternating (``benchmarks/_driver.py``). Each timing is one ``fit``.
With scikit-learn-intelex installed (the ``bench`` extra), its PCA with the
same parameters on R oneDAL threads is timed in the same alternation (it has
no TruncatedSVD; version 2026.2 falls back to scikit-learn for the randomized
and arpack solvers: ``sx fallback``), with the largest relative difference of
its explained variances and of its components (up to sign) to scikit-learn's.

    python benchmarks/bench_decomposition.py                    # 2M x 128, 2 ranks
    python benchmarks/bench_decomposition.py --n-samples 20000 --repeats 1   # smoke run
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn.decomposition
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _driver import (  # noqa: E402
    compare,
    report,
    run_main,
    sklearnex_run,
    sklearnex_threads,
    speed_phrase,
    worker_report,
)

CASES = {
    "PCA covariance_eigh": ("PCA", dict(svd_solver="covariance_eigh")),
    "PCA full": ("PCA", dict(svd_solver="full")),
    "PCA randomized": ("PCA", dict(svd_solver="randomized", random_state=0)),
    "PCA arpack": ("PCA", dict(svd_solver="arpack", random_state=0)),
    "TruncatedSVD randomized": ("TruncatedSVD", dict(algorithm="randomized", random_state=0)),
}


def _data(args):
    from mlmpi.comms import SelfComms
    from mlmpi.datasets import make_blobs

    X, _ = make_blobs(
        n_samples=args.n_samples,
        n_features=args.n_features,
        centers=args.centers,
        random_state=0,
        dtype=np.dtype(args.dtype).type,
        comms=SelfComms(),
    )
    return X


def _estimator(module, case, n_components):
    name, params = CASES[case]
    return getattr(module, name)(n_components=n_components, **params)


def _worker(args):
    import mlmpi
    from mlmpi.comms import profile
    from mlmpi.io import load_npy

    comms = mlmpi.get_comms()
    X = load_npy(args.data, comms=comms)
    comms.barrier()
    comms.allreduce(np.zeros(1))  # connections up before timing
    with profile() as prof:
        comms.barrier()
        start = time.perf_counter()
        _estimator(mlmpi, args.case, args.n_components).fit(X)
        comms.barrier()
        seconds = time.perf_counter() - start
    seconds = float(comms.allreduce(np.asarray(seconds), op="max"))
    comm_s = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    worker_report(args.report, {"seconds": seconds, "comm_fraction": comm_s / seconds}, comms)


def _driver(args):
    X = _data(args)
    sklearnex = None
    if sklearnex_threads(args.ranks):
        import sklearnex.decomposition as sklearnex
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "X.npy"
        np.save(data, X)
        rows = [_compare_case(args, case, X, data, sklearnex) for case in args.cases]
    config = {
        k: getattr(args, k)
        for k in ("n_samples", "n_features", "n_components", "centers", "dtype", "ranks", "repeats")
    }
    report(
        "decomposition",
        rows,
        config,
        out=args.out,
        extra_columns=[
            ("sklearnex s", "sklearnex_s"),
            ("ratio sklearnex", "ratio_sklearnex"),
            ("comm frac", "mlmpi_comm_fraction"),
            ("sx fallback", "sklearnex_fallback"),
            ("sx var diff", "sklearnex_variance_rel_diff"),
            ("sx comp diff", "sklearnex_components_diff"),
        ],
    )
    fastest = min(r["peer_s"] for r in rows if r["case"].startswith("PCA"))
    for row in rows:
        if row["case"] == "PCA covariance_eigh":
            print(
                f"PCA covariance_eigh vs scikit-learn's fastest PCA solver: "
                f"{speed_phrase(row['mlmpi_s'], fastest)}"
            )


def _compare_case(args, case, X, data, sklearnex):
    """The row of one case; ``sklearnex``: its decomposition module, or None."""
    fitted = {}

    def timed(module):
        with threadpool_limits(limits=args.ranks):
            start = time.perf_counter()
            fitted[module] = _estimator(module, case, args.n_components).fit(X)
            return {"seconds": time.perf_counter() - start}

    others = {}
    if sklearnex is not None and hasattr(sklearnex, CASES[case][0]):
        others["sklearnex"] = lambda: sklearnex_run(lambda: timed(sklearnex))
    worker_argv = ["--case", case, "--data", str(data), "--n-components", str(args.n_components)]
    row = compare(
        case,
        script=__file__,
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=lambda: timed(sklearn.decomposition),
        worker_argv=worker_argv,
        others=others,
    )
    if others:
        sk, sx = fitted[sklearn.decomposition], fitted[sklearnex]
        variance = np.abs(sx.explained_variance_ - sk.explained_variance_) / sk.explained_variance_
        row["sklearnex_variance_rel_diff"] = float(variance.max())
        sign = np.sign(np.sum(sx.components_ * sk.components_, axis=1, keepdims=True))
        components = np.abs(sign * sx.components_ - sk.components_)
        row["sklearnex_components_diff"] = float(components.max())
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="(worker) the global .npy the driver wrote")
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=sorted(CASES))
    parser.add_argument("--n-samples", type=int, default=2_000_000)
    parser.add_argument("--n-features", type=int, default=128)
    parser.add_argument("--n-components", type=int, default=16)
    parser.add_argument("--centers", type=int, default=32)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    run_main(parser, driver=_driver, worker=_worker)


if __name__ == "__main__":
    main()
