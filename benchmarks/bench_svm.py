"""mlmpi kernel SVC on R ranks vs scikit-learn's SVC: fit time.

    python benchmarks/bench_svm.py --ranks 2 --repeats 3 --out benchmarks/results/svm.json
    python benchmarks/bench_svm.py --data digits --n-samples 20000 --ranks 2 \
        --out benchmarks/results/svm_digits.json
    python benchmarks/bench_svm.py --quick

SVC (rbf, C=1, gamma='scale', tol=1e-3) on ``--n-samples`` rows of
``--data``:

- ``blobs``: ``--n-features`` float64 columns of two overlapping blobs,
  generated per global row (``mlmpi.datasets.make_blobs``);
- ``digits``: a real set, scikit-learn's handwritten digits (1,797 images of
  8 x 8 pixels, 10 classes, one-vs-one), grown to ``--n-samples`` rows by
  shifting each copy by at most one pixel and adding pixel noise (a fixed
  seed), scaled to [0, 1].

Both are the same global data at every R.
scikit-learn runs with its defaults (shrinking, 200 MB cache), timed in its
own process; mlmpi (shrinking, ``cache_size`` MB per rank) under mpiexec;
``--no-shrinking`` turns shrinking off on both sides. Reported: fit seconds,
mlmpi's fraction of time in communication, seconds per SMO iteration, the
iterations of both (libsvm's path on both sides: the same), and the largest
dual-coefficient difference.

ThunderSVM is not timed: its one release on PyPI (0.3.12) is its CUDA 9.0
build (``libthundersvm.so`` needs ``libcusparse.so.9.0``), which does not
load without CUDA 9, and no CPU build is published.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402


def _digits(n_samples, comms):
    """This rank's rows of the grown digits set (every rank makes the same global set)."""
    from sklearn.datasets import load_digits

    from mlmpi.datasets import even_counts

    images, labels = load_digits(return_X_y=True)
    images = images.reshape(-1, 8, 8)
    rng = np.random.default_rng(0)
    source = np.arange(n_samples) % len(images)
    shifts = rng.integers(-1, 2, size=(n_samples, 2))
    shifts[: len(images)] = 0  # the real images come first, unchanged
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    rows = np.empty((n_samples, 64))
    for k, (i, (dy, dx)) in enumerate(zip(source, shifts)):
        rows[k] = padded[i, 1 + dy : 9 + dy, 1 + dx : 9 + dx].ravel()
    noise = rng.normal(scale=1.0, size=rows.shape)
    noise[: len(images)] = 0.0
    X = np.clip(rows + noise, 0.0, 16.0) / 16.0
    counts = even_counts(n_samples, comms.size)
    start = sum(counts[: comms.rank])
    stop = start + counts[comms.rank]
    return X[start:stop], labels[source[start:stop]]


def _data(args, comms):
    from mlmpi.datasets import make_blobs

    if args.data == "digits":
        return _digits(args.n_samples, comms)

    X, y = make_blobs(
        args.n_samples,
        args.n_features,
        centers=2,
        cluster_std=6.0,
        center_box=(-1.0, 1.0),
        random_state=0,
        comms=comms,
    )
    return X, y


def worker(args):
    from mlmpi import get_comms
    from mlmpi.comms import profile
    from mlmpi.svm import SVC

    comms = get_comms()
    X, y = _data(args, comms)
    comms.barrier()
    start = time.perf_counter()
    with profile() as prof:
        model = SVC(cache_size=args.cache_size, shrinking=not args.no_shrinking).fit(X, y)
    seconds = float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max"))
    comm = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    n_iter = int(model.n_iter_.sum())
    _driver.worker_report(
        args.report,
        {
            "seconds": seconds,
            "comm_fraction": comm / seconds,
            "n_iter": n_iter,
            "seconds_per_iter": seconds / max(n_iter, 1),
            "dual_coef": model.dual_coef_.tolist(),
            "support": model.support_.tolist(),
        },
        comms,
    )


def driver(args):
    from sklearn.svm import SVC
    from threadpoolctl import threadpool_limits

    from mlmpi.comms import SelfComms

    X, y = _data(args, SelfComms())
    n_features = X.shape[1]
    fitted = {}

    def timed():
        with threadpool_limits(limits=args.ranks):
            start = time.perf_counter()
            fitted["sk"] = SVC(shrinking=not args.no_shrinking).fit(X, y)
            elapsed = time.perf_counter() - start
        return {"seconds": elapsed, "n_iter": int(fitted["sk"].n_iter_.sum())}

    shrinking = "" if not args.no_shrinking else " no shrinking"
    row = _driver.compare(
        f"svc rbf {args.data} {args.n_samples}x{n_features}{shrinking} R={args.ranks}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=timed,
        worker_argv=[
            "--n-samples",
            str(args.n_samples),
            "--n-features",
            str(args.n_features),
            "--data",
            args.data,
            "--cache-size",
            str(args.cache_size),
            *(["--no-shrinking"] if args.no_shrinking else []),
        ],
    )
    last = row["mlmpi_runs"][-1]
    ours, support = np.asarray(last.pop("dual_coef")), np.asarray(last.pop("support"))
    for run in row["mlmpi_runs"]:
        run.pop("dual_coef", None)
        run.pop("support", None)
    reference = fitted["sk"]
    row["same_support"] = bool(np.array_equal(support, reference.support_))
    if ours.shape == reference.dual_coef_.shape:
        row["dual_coef_max_diff"] = float(np.abs(ours - reference.dual_coef_).max())
    row["peer_n_iter"] = row["peer_runs"][-1]["n_iter"]
    _driver.report(
        "svm",
        [row],
        vars(args) | {"metric": "fit seconds"},
        out=args.out,
        extra_columns=[
            ("comm frac", "mlmpi_comm_fraction"),
            ("s/iter", "mlmpi_seconds_per_iter"),
            ("n_iter", "mlmpi_n_iter"),
            ("peer n_iter", "peer_n_iter"),
            ("dual diff", "dual_coef_max_diff"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=50_000)
    parser.add_argument("--n-features", type=int, default=50, help="blobs only")
    parser.add_argument("--data", choices=("blobs", "digits"), default="blobs")
    parser.add_argument("--cache-size", type=float, default=200.0, help="MB per rank")
    parser.add_argument("--no-shrinking", action="store_true", help="both sides")
    parser.add_argument("--quick", action="store_true", help="2,000 rows, one repeat")
    if "--quick" in sys.argv:
        sys.argv += ["--n-samples", "2000", "--repeats", "1"]
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
