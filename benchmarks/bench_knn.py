"""mlmpi.NearestNeighbors on R ranks vs scikit-learn's brute force and faiss-cpu.

    python benchmarks/bench_knn.py --ranks 2 --n-index 1000000 --n-features 64 \\
        --n-queries 20000 --k 10 --repeats 3

Both sides search the same global index (``mlmpi.datasets.make_blobs``,
float32) for the same queries (blobs around the same centres). mlmpi's index
is sharded over the ranks and each rank queries its share of the queries
(the ring solver). The peers run in this process while no rank is alive:
scikit-learn ``NearestNeighbors(algorithm='brute', n_jobs=--peer-threads)``
and, when ``faiss`` is importable (``pip install mlmpi[bench]``), faiss-cpu
``IndexFlatL2`` with the same threads. Reported: seconds for all queries,
queries per second, mlmpi's fraction of time in communication, and whether
mlmpi's neighbours equal scikit-learn's. With scikit-learn-intelex installed
(the ``bench`` extra), its ``NearestNeighbors`` with the same parameters and
threads is timed in the same alternation, with whether it fell back to
scikit-learn, the fraction of its neighbours equal to scikit-learn's and the
largest difference of their distances.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402


def _centers(args):
    return np.random.RandomState(0).uniform(-10, 10, size=(args.n_centers, args.n_features))


def _data(args, comms):
    """This rank's index rows and query rows (all of them with a SelfComms)."""
    from mlmpi.datasets import make_blobs

    common = dict(centers=_centers(args), cluster_std=4.0, dtype=np.dtype(args.dtype), comms=comms)
    X, _ = make_blobs(args.n_index, args.n_features, random_state=1, **common)
    Q, _ = make_blobs(args.n_queries, args.n_features, random_state=2, **common)
    return X, Q


def worker(args):
    from mlmpi import NearestNeighbors, get_comms
    from mlmpi.comms import profile

    comms = get_comms()
    X, Q = _data(args, comms)
    nn = NearestNeighbors(n_neighbors=args.k, batch_size=args.batch_size).fit(X)
    nn.kneighbors(Q[:8])  # load the compiled kernels
    searches, comm_seconds = [], []
    for _ in range(args.searches):
        comms.barrier()
        start = time.perf_counter()
        with profile() as prof:
            _, ind = nn.kneighbors(Q)
        searches.append(float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max")))
        comm_seconds.append(float(comms.allreduce(np.asarray(prof.total_seconds), op="max")))
    best = int(np.argsort(searches)[len(searches) // 2])
    _driver.worker_report(
        args.report,
        {
            "seconds": searches[best],
            "queries_per_s": args.n_queries / searches[best],
            "comm_fraction": comm_seconds[best] / searches[best],
            "first_indices": ind[: args.check].tolist(),  # rank 0 writes: the first queries
        },
        comms,
    )


def driver(args):
    from sklearn.neighbors import NearestNeighbors as SKNearestNeighbors
    from threadpoolctl import threadpool_limits

    from mlmpi.comms import SelfComms

    X, Q = _data(args, SelfComms())
    threads = args.peer_threads
    try:
        import faiss
    except ImportError:
        faiss = None
        print("faiss is not importable (pip install 'mlmpi[bench]'): timing scikit-learn only")

    def search(cls):
        with threadpool_limits(limits=threads):
            start = time.perf_counter()
            nn = cls(n_neighbors=args.k, algorithm="brute", n_jobs=threads).fit(X)
            dist, ind = nn.kneighbors(Q)
            elapsed = time.perf_counter() - start
        return {
            "seconds": elapsed,
            "queries_per_s": args.n_queries / elapsed,
            "first_indices": ind[: args.check].tolist(),
            "first_distances": dist[: args.check].tolist(),
        }

    def run_peer():
        result = search(SKNearestNeighbors)
        if faiss is not None:
            faiss.omp_set_num_threads(threads)
            start = time.perf_counter()
            index = faiss.IndexFlatL2(X.shape[1])
            index.add(np.ascontiguousarray(X, dtype=np.float32))
            index.search(np.ascontiguousarray(Q, dtype=np.float32), args.k)
            result["faiss_s"] = time.perf_counter() - start
        return result

    others = {}
    if _driver.sklearnex_threads(threads):
        from sklearnex.neighbors import NearestNeighbors as SXNearestNeighbors

        others["sklearnex"] = lambda: _driver.sklearnex_run(lambda: search(SXNearestNeighbors))
    argv = [
        "--n-index",
        args.n_index,
        "--n-features",
        args.n_features,
        "--n-queries",
        args.n_queries,
        "--k",
        args.k,
        "--n-centers",
        args.n_centers,
        "--dtype",
        args.dtype,
        "--searches",
        args.searches,
        "--check",
        args.check,
    ]
    if args.batch_size:
        argv += ["--batch-size", args.batch_size]
    row = _driver.compare(
        f"{args.n_index}x{args.n_features} q={args.n_queries} k={args.k} R={args.ranks}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=run_peer,
        worker_argv=[str(a) for a in argv],
        others=others,
    )
    row["peer_queries_per_s"] = statistics.median(r["queries_per_s"] for r in row["peer_runs"])
    # the first queries of rank 0 (the first rows of Q): the same neighbours as scikit-learn
    ours = np.asarray(row["mlmpi_runs"][0]["first_indices"])
    theirs = np.asarray(row["peer_runs"][0]["first_indices"])[: len(ours)]
    row["same_neighbours"] = float(np.mean(ours == theirs)) if len(ours) else float("nan")
    if faiss is not None:
        row["faiss_s"] = statistics.median(r["faiss_s"] for r in row["peer_runs"])
        row["faiss_ratio"] = row["mlmpi_s"] / row["faiss_s"]
    if others:
        sx, sk = row["sklearnex_runs"][0], row["peer_runs"][0]
        same = np.equal(sx["first_indices"], sk["first_indices"])
        row["sklearnex_same_neighbours"] = float(np.mean(same))
        distances = np.subtract(sx["first_distances"], sk["first_distances"])
        row["sklearnex_distance_diff"] = float(np.abs(distances).max())
    for r in row["mlmpi_runs"] + row["peer_runs"] + row.get("sklearnex_runs", []):
        r.pop("first_indices", None)
        r.pop("first_distances", None)
    _driver.report(
        "knn",
        [row],
        vars(args) | {"metric": "seconds for all queries"},
        out=args.out,
        extra_columns=[
            ("sklearnex s", "sklearnex_s"),
            ("ratio sklearnex", "ratio_sklearnex"),
            ("mlmpi q/s", "mlmpi_queries_per_s"),
            ("sklearn q/s", "peer_queries_per_s"),
            ("faiss s", "faiss_s"),
            ("vs faiss", "faiss_ratio"),
            ("comm frac", "mlmpi_comm_fraction"),
            ("same nbrs", "same_neighbours"),
            ("sx fallback", "sklearnex_fallback"),
            ("sx same nbrs", "sklearnex_same_neighbours"),
            ("sx dist diff", "sklearnex_distance_diff"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-index", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=64)
    parser.add_argument("--n-queries", type=int, default=20_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--n-centers", type=int, default=32)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--batch-size", type=int, default=None, help="mlmpi's batch_size")
    parser.add_argument(
        "--peer-threads",
        type=int,
        default=os.cpu_count(),
        help="scikit-learn's and sklearnex's n_jobs, faiss's threads (default: all cores)",
    )
    parser.add_argument(
        "--searches", type=int, default=3, help="timed searches per mlmpi job (median)"
    )
    parser.add_argument(
        "--check", type=int, default=200, help="queries whose neighbours are compared"
    )
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
