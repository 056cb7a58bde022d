"""mlmpi.DBSCAN on R ranks vs scikit-learn's DBSCAN with n_jobs=R.

    python benchmarks/bench_dbscan.py --ranks 2 --n-samples 200000 --repeats 3

Both sides cluster the same global data (``mlmpi.datasets.make_blobs`` in
2-D: dense blobs, each rank generating only its rows) with the same ``eps``
and ``min_samples``; scikit-learn runs its default ``algorithm='auto'`` (a
k-d tree here) with ``n_jobs`` equal to the number of ranks. Reported: fit
seconds, clusters and noise points found, and whether the labels are
identical (a checksum of the global labels on both sides). With
scikit-learn-intelex installed (the ``bench`` extra), its DBSCAN with the same
parameters and ``n_jobs=R`` (R oneDAL threads) is timed in the same
alternation, with whether it fell back to scikit-learn, whether its labels
are identical to scikit-learn's and their adjusted Rand index.
"""

import argparse
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402


def _data(args, comms):
    from mlmpi.datasets import make_blobs

    X, _ = make_blobs(
        args.n_samples,
        args.n_features,
        centers=args.centers,
        cluster_std=1.0,
        center_box=(-20.0, 20.0),
        random_state=0,
        comms=comms,
    )
    return X


def _summary(labels):
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    return {
        "clusters": int(labels.max() + 1),
        "noise": int((labels == -1).sum()),
        "checksum": zlib.crc32(labels.tobytes()),
    }


def worker(args):
    from mlmpi import DBSCAN, get_comms

    comms = get_comms()
    X = _data(args, comms)
    DBSCAN(eps=args.eps, min_samples=args.min_samples).fit(X[:1000])  # load the compiled kernels
    fits = []
    for _ in range(args.fits):
        comms.barrier()
        start = time.perf_counter()
        model = DBSCAN(eps=args.eps, min_samples=args.min_samples).fit(X)
        fits.append(float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max")))
    labels = comms.allgatherv(model.labels_)
    _driver.worker_report(
        args.report, {"seconds": float(np.median(fits)), **_summary(labels)}, comms
    )


def driver(args):
    from sklearn.cluster import DBSCAN as SkDBSCAN
    from sklearn.metrics import adjusted_rand_score

    from mlmpi.comms import SelfComms

    X = _data(args, SelfComms())
    fitted = {}

    def timed(cls):
        start = time.perf_counter()
        model = fitted[cls] = cls(eps=args.eps, min_samples=args.min_samples, n_jobs=args.ranks)
        model.fit(X)
        return {"seconds": time.perf_counter() - start, **_summary(model.labels_)}

    others = {}
    if _driver.sklearnex_threads(args.ranks):
        from sklearnex.cluster import DBSCAN as SXDBSCAN

        others["sklearnex"] = lambda: _driver.sklearnex_run(lambda: timed(SXDBSCAN))

    argv = [
        "--n-samples",
        args.n_samples,
        "--n-features",
        args.n_features,
        "--centers",
        args.centers,
        "--eps",
        args.eps,
        "--min-samples",
        args.min_samples,
        "--fits",
        args.fits,
    ]
    row = _driver.compare(
        f"{args.n_samples}x{args.n_features} eps={args.eps} R={args.ranks}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=lambda: timed(SkDBSCAN),
        worker_argv=[str(a) for a in argv],
        others=others,
    )
    row["same_labels"] = row["mlmpi_runs"][0]["checksum"] == row["peer_runs"][0]["checksum"]
    row["peer_clusters"] = row["peer_runs"][0]["clusters"]
    if others:
        sx = row["sklearnex_runs"][0]
        row["sklearnex_same_labels"] = sx["checksum"] == row["peer_runs"][0]["checksum"]
        row["sklearnex_clusters"] = sx["clusters"]
        row["sklearnex_ari"] = adjusted_rand_score(
            fitted[SkDBSCAN].labels_, fitted[SXDBSCAN].labels_
        )
    _driver.report(
        "dbscan",
        [row],
        vars(args) | {"metric": "seconds per fit"},
        out=args.out,
        extra_columns=[
            ("sklearnex s", "sklearnex_s"),
            ("ratio sklearnex", "ratio_sklearnex"),
            ("clusters", "mlmpi_clusters"),
            ("peer clusters", "peer_clusters"),
            ("noise", "mlmpi_noise"),
            ("same labels", "same_labels"),
            ("sx fallback", "sklearnex_fallback"),
            ("sx clusters", "sklearnex_clusters"),
            ("sx same", "sklearnex_same_labels"),
            ("sx ARI", "sklearnex_ari"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=200_000)
    parser.add_argument("--n-features", type=int, default=2)
    parser.add_argument("--centers", type=int, default=20)
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--min-samples", type=int, default=10)
    parser.add_argument("--fits", type=int, default=1, help="timed fits per mlmpi job (median)")
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
