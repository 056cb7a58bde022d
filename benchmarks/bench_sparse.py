"""Sparse (CSR) rows: mlmpi at 1 and 2 ranks vs scikit-learn, fit time and peak memory.

    python benchmarks/bench_sparse.py                   # 1M x 100k, ~50 words per row
    python benchmarks/bench_sparse.py --n-samples 20000 --n-features 5000 --repeats 1  # smoke

Cases: ``tsvd`` (TruncatedSVD, ``--n-components`` components, randomized),
``logistic`` (LogisticRegression, ``--n-classes`` classes) and ``ridge``
(Ridge, alpha=1) on the same global bag-of-words matrix
(``mlmpi.datasets.make_sparse_text``: Zipf column frequencies, generated per
global row, so it does not depend on the number of ranks; each rank
generates only its rows). scikit-learn is timed in this process with as
many BLAS threads as mlmpi has ranks, while no MPI rank is alive, then
mlmpi under ``mpiexec -n R`` for each R of ``--rank-counts``, alternating
(``benchmarks/_driver.py``). Reported: fit seconds, mlmpi's fraction of time
in communication, each rank's peak RSS and local non-zeros (memory should
follow the local non-zeros), and the largest difference to scikit-learn's
result (singular values relative; coefficients absolute).
"""

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402

CASES = ("tsvd", "logistic", "ridge")


def _data(case, args, comms):
    """``(X, y)``: this rank's rows of the case's global sparse data."""
    from mlmpi.datasets import make_sparse_text

    return make_sparse_text(
        args.n_samples,
        args.n_features,
        nnz_per_row=args.nnz_per_row,
        n_classes=args.n_classes if case == "logistic" else None,
        random_state=0,
        comms=comms,
    )


def _estimator(case, args, *, ours):
    if ours:
        import mlmpi.decomposition as decomposition
        import mlmpi.linear_model as linear_model
    else:
        import sklearn.decomposition as decomposition
        import sklearn.linear_model as linear_model
    if case == "tsvd":
        return decomposition.TruncatedSVD(args.n_components, algorithm="randomized", random_state=0)
    if case == "logistic":
        return linear_model.LogisticRegression(max_iter=100)
    return linear_model.Ridge(alpha=1.0)


def _result(case, model):
    """What is compared with scikit-learn: singular values or coefficients."""
    return np.asarray(model.singular_values_ if case == "tsvd" else model.coef_)


def _difference(case, ours, theirs):
    if case == "tsvd":
        return float(np.max(np.abs(ours / theirs - 1.0)))
    return float(np.max(np.abs(ours - theirs)))


def _peak_rss_mb():
    """This process's peak resident memory (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(args):
    from mlmpi import get_comms
    from mlmpi.comms import profile

    comms = get_comms()
    case = args.cases[0]
    X, y = _data(case, args, comms)
    fits, comm_seconds = [], []
    for _ in range(args.fits):
        comms.barrier()
        start = time.perf_counter()
        with profile() as prof:
            model = _estimator(case, args, ours=True).fit(X, y)
        fits.append(float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max")))
        comm_seconds.append(float(comms.allreduce(np.asarray(prof.total_seconds), op="max")))
    best = int(np.argsort(fits)[len(fits) // 2])
    rss = comms.allgather_object(round(_peak_rss_mb(), 1))
    local_nnz = comms.allgather_object(int(X.nnz))
    _driver.worker_report(
        args.report,
        {
            "seconds": fits[best],
            "comm_fraction": comm_seconds[best] / fits[best],
            "peak_rss_mb_max": max(rss),
            "peak_rss_mb_per_rank": rss,
            "local_nnz_per_rank": local_nnz,
            "result": _result(case, model).tolist(),
        },
        comms,
    )


def driver(args):
    from threadpoolctl import threadpool_limits

    from mlmpi.comms import SelfComms

    rows = []
    args.rank_counts = args.rank_counts or sorted({1, args.ranks})
    for case in args.cases:
        X, y = _data(case, args, SelfComms())
        nnz_per_row = X.nnz / X.shape[0]
        fitted = {}
        for ranks in args.rank_counts:

            def run_peer():
                with threadpool_limits(limits=ranks):
                    start = time.perf_counter()
                    fitted["model"] = _estimator(case, args, ours=False).fit(X, y)
                    return {"seconds": time.perf_counter() - start}

            argv = [
                "--cases",
                case,
                "--n-samples",
                args.n_samples,
                "--n-features",
                args.n_features,
                "--nnz-per-row",
                args.nnz_per_row,
                "--n-components",
                args.n_components,
                "--n-classes",
                args.n_classes,
                "--fits",
                args.fits,
            ]
            row = _driver.compare(
                f"{case} {args.n_samples}x{args.n_features} R={ranks}",
                script=Path(__file__).resolve(),
                ranks=ranks,
                repeats=args.repeats,
                run_peer=run_peer,
                worker_argv=[str(a) for a in argv],
            )
            ours = np.asarray(row["mlmpi_runs"][-1]["result"])
            for run in row["mlmpi_runs"]:
                run.pop("result", None)
            row["difference"] = _difference(case, ours, _result(case, fitted["model"]))
            row["nnz_per_row"] = nnz_per_row
            row["speed"] = _driver.speed_phrase(row["mlmpi_s"], row["peer_s"])
            rows.append(row)
        del X, y
    _driver.report(
        "sparse",
        rows,
        vars(args) | {"metric": "fit seconds"},
        out=args.out,
        extra_columns=[
            ("comm frac", "mlmpi_comm_fraction"),
            ("max RSS MB", "mlmpi_peak_rss_mb_max"),
            ("diff", "difference"),
        ],
    )
    for row in rows:
        runs = row["mlmpi_runs"][-1]
        print(
            f"{row['case']}: {row['speed']}; peak RSS per rank (MB) "
            f"{runs['peak_rss_mb_per_rank']}, local non-zeros {runs['local_nnz_per_rank']}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument(
        "--rank-counts",
        type=int,
        nargs="+",
        default=None,
        help="mlmpi rank counts, each against scikit-learn (default: 1 and --ranks)",
    )
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=100_000)
    parser.add_argument(
        "--nnz-per-row",
        type=int,
        default=50,
        help="mean words per row (repeated words merge, so slightly fewer non-zeros)",
    )
    parser.add_argument("--n-components", type=int, default=100)
    parser.add_argument("--n-classes", type=int, default=10)
    parser.add_argument("--fits", type=int, default=1, help="timed fits per mlmpi job (median)")
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
