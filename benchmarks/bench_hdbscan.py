"""mlmpi.HDBSCAN on R ranks vs scikit-learn's HDBSCAN and the hdbscan package.

    python benchmarks/bench_hdbscan.py --ranks 2 --n-samples 50000 --repeats 1

All three cluster the same global data (``mlmpi.datasets.make_blobs``, each
rank generating only its rows) with the same ``min_cluster_size`` and
``min_samples``. scikit-learn runs its default ``algorithm='auto'`` (a k-d
tree for the core distances, then Prim's algorithm over every pair) with
``n_jobs`` equal to the number of ranks; the hdbscan package, when it is
importable (``pip install 'mlmpi[bench]'``), runs its default Borůvka
k-d tree with ``core_dist_n_jobs`` equal to the number of ranks. Reported:
fit seconds, clusters and noise points found, and whether the labels and
probabilities equal scikit-learn's (checksums of the global arrays).
"""

import argparse
import statistics
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
        cluster_std=2.0,
        center_box=(-20.0, 20.0),
        random_state=0,
        comms=comms,
    )
    return X


def _summary(labels, probabilities):
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    return {
        "clusters": int(labels.max() + 1),
        "noise": int((labels == -1).sum()),
        "checksum": zlib.crc32(labels.tobytes()),
        "probability_checksum": zlib.crc32(
            np.ascontiguousarray(probabilities, dtype=np.float64).tobytes()
        ),
    }


def _params(args):
    return {"min_cluster_size": args.min_cluster_size, "min_samples": args.min_samples}


def worker(args):
    from mlmpi import HDBSCAN, get_comms
    from mlmpi.comms import profile

    comms = get_comms()
    X = _data(args, comms)
    HDBSCAN(**_params(args), copy=True).fit(X[:200])  # load the compiled kernels
    comms.barrier()
    with profile() as prof:
        start = time.perf_counter()
        model = HDBSCAN(**_params(args), copy=True).fit(X)
        elapsed = time.perf_counter() - start
    seconds = float(comms.allreduce(np.asarray(elapsed), op="max"))
    comm = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    labels = comms.allgatherv(model.labels_)
    probabilities = comms.allgatherv(model.probabilities_)
    _driver.worker_report(
        args.report,
        {"seconds": seconds, "comm_fraction": comm / seconds, **_summary(labels, probabilities)},
        comms,
    )


def driver(args):
    from sklearn.cluster import HDBSCAN as SkHDBSCAN

    from mlmpi.comms import SelfComms

    X = _data(args, SelfComms())
    try:
        import hdbscan
    except ImportError:
        hdbscan = None
        print("hdbscan is not importable (pip install 'mlmpi[bench]'): timing scikit-learn only")

    def run_peer():
        start = time.perf_counter()
        model = SkHDBSCAN(**_params(args), n_jobs=args.ranks, copy=True).fit(X)
        result = {
            "seconds": time.perf_counter() - start,
            **_summary(model.labels_, model.probabilities_),
        }
        if hdbscan is not None:
            start = time.perf_counter()
            package = hdbscan.HDBSCAN(**_params(args), core_dist_n_jobs=args.ranks).fit(X)
            result["hdbscan_s"] = time.perf_counter() - start
            result["hdbscan_checksum"] = _summary(package.labels_, package.probabilities_)[
                "checksum"
            ]
        return result

    argv = [
        "--n-samples",
        args.n_samples,
        "--n-features",
        args.n_features,
        "--centers",
        args.centers,
        "--min-cluster-size",
        args.min_cluster_size,
        "--min-samples",
        args.min_samples,
    ]
    row = _driver.compare(
        f"{args.n_samples}x{args.n_features} R={args.ranks}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=run_peer,
        worker_argv=[str(a) for a in argv],
    )
    ours, theirs = row["mlmpi_runs"][0], row["peer_runs"][0]
    row["same_labels"] = ours["checksum"] == theirs["checksum"]
    row["same_probabilities"] = ours["probability_checksum"] == theirs["probability_checksum"]
    row["peer_clusters"] = theirs["clusters"]
    if hdbscan is not None:
        row["hdbscan_s"] = statistics.median(r["hdbscan_s"] for r in row["peer_runs"])
        row["hdbscan_ratio"] = row["mlmpi_s"] / row["hdbscan_s"]
        row["hdbscan_same_labels"] = theirs["hdbscan_checksum"] == theirs["checksum"]
    _driver.report(
        "hdbscan",
        [row],
        vars(args) | {"metric": "seconds per fit"},
        out=args.out,
        extra_columns=[
            ("hdbscan s", "hdbscan_s"),
            ("vs hdbscan", "hdbscan_ratio"),
            ("comm frac", "mlmpi_comm_fraction"),
            ("clusters", "mlmpi_clusters"),
            ("peer clusters", "peer_clusters"),
            ("same labels", "same_labels"),
            ("same probs", "same_probabilities"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=50_000)
    parser.add_argument("--n-features", type=int, default=10)
    parser.add_argument("--centers", type=int, default=10)
    parser.add_argument("--min-cluster-size", type=int, default=25)
    parser.add_argument("--min-samples", type=int, default=10)
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
