"""Cost model of KMeans (one Lloyd iteration) and kNN (one search) on R ranks,
checked against runs measured at 1, 2 and 4 ranks, with a plot.

    python benchmarks/cost_model.py --ranks 1 2 4 \\
        --out benchmarks/results/cost_model.json --plot benchmarks/results/cost_model.png

The driver measures the GEMM FLOP/s and memory bandwidth that P one-core
processes get together, measuring at the same moment, for each P used, while
no rank is alive (``bench_lloyd_kernel.concurrent_peak_and_bandwidth``: cores
that share a memory bus get less than P times one core's), then starts one
``mpiexec -n R`` job per rank count; each job measures its transport (latency
and bandwidth of an 8-byte and a 4 MiB ``allreduce`` and ring ``isendrecv``)
and times mlmpi's KMeans and NearestNeighbors on the same global data. With
more ranks than cores the ranks share cores: the model divides the work by
``P = min(R, cores)`` and says so (``oversubscribed``).

Per rank, n global rows, d features, R ranks on P cores, ``peak_P`` and
``bandwidth_P`` what P cores get together:

KMeans (Lloyd), k centres:
    compute  2·n·k·d / peak_P                   the distance GEMM
    memory   n·d·itemsize / bandwidth_P         X read once per iteration
    sent     8·(k·d + k + 1) bytes: one allreduce of the packed sums
    model    max(compute, memory) + allreduce(sent)

kNN (ring), q global queries, n index rows, k neighbours:
    compute  2·q·n·d / peak_P                   every query against every row
    memory   q·n·itemsize / bandwidth_P         the selection reads every distance once
             + n·d·itemsize·⌈q / (R·tile)⌉ / bandwidth_P   the index, once per query tile
    sent     (R-1)/R · n·d·itemsize bytes per rank (each index block goes round the ring),
             in ⌈n / (R·batch)⌉·(R-1) messages
    model    compute + memory + sent exposed (the ring overlaps it; counted in full
             as the bound)

``peak`` is a 1024³ GEMM's rate: the kNN's GEMM (inner dimension d) runs below
it, which the ratio measured/model shows.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402
from bench_lloyd_kernel import concurrent_peak_and_bandwidth  # noqa: E402

SMALL, LARGE = 8, 4 << 20  # bytes of the transport probes


def _median_seconds(fn, calls):
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _transport(comms):
    """Seconds of an allreduce and a ring sendrecv of SMALL and LARGE bytes."""
    if comms.size == 1:
        return {}
    right, left = (comms.rank + 1) % comms.size, (comms.rank - 1) % comms.size
    result = {}
    for nbytes, calls in ((SMALL, 200), (LARGE, 10)):
        x = np.ones(nbytes // 8)
        comms.barrier()
        result[f"allreduce_{nbytes}"] = _median_seconds(lambda: comms.allreduce(x), calls)
        comms.barrier()
        result[f"sendrecv_{nbytes}"] = _median_seconds(
            lambda: comms.isendrecv(x, dest=right, source=left).wait(), calls
        )
    # every rank's median, the slowest counts
    return {key: float(comms.allreduce(np.asarray(v), op="max")) for key, v in result.items()}


def worker(args):
    from mlmpi import KMeans, NearestNeighbors, get_comms
    from mlmpi.datasets import make_blobs

    comms = get_comms()
    transport = _transport(comms)

    # one overlapping cloud (as bench_kmeans.py): Lloyd runs every iteration
    X, _ = make_blobs(
        args.kmeans_n,
        args.kmeans_d,
        centers=args.kmeans_k,
        center_box=(-0.2, 0.2),
        random_state=0,
        dtype=np.float32,
        comms=comms,
    )
    box = np.random.RandomState(1).uniform(-0.2, 0.2, size=(args.kmeans_k, args.kmeans_d))
    init = box.astype(np.float32)

    def fit_seconds(max_iter):
        km = KMeans(n_clusters=args.kmeans_k, init=init, n_init=1, max_iter=max_iter, tol=0)
        comms.barrier()
        start = time.perf_counter()
        km.fit(X)
        return float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max")), km

    fit_seconds(2)  # load the compiled kernels
    # per iteration without the fixed cost of a fit (validation, contract, init)
    one, _ = fit_seconds(1)
    many, km = fit_seconds(args.kmeans_iter)
    kmeans_s = (many - one) / max(km.n_iter_ - 1, 1)

    common = dict(centers=32, cluster_std=4.0, dtype=np.float32, comms=comms)
    X, _ = make_blobs(args.knn_n, args.knn_d, random_state=1, **common)
    Q, _ = make_blobs(args.knn_q, args.knn_d, random_state=2, **common)
    # load the compiled kernels, a full distance tile included
    NearestNeighbors(n_neighbors=args.knn_k).fit(X[:2048]).kneighbors(Q[:512])
    nn = NearestNeighbors(n_neighbors=args.knn_k).fit(X)
    comms.barrier()
    start = time.perf_counter()
    nn.kneighbors(Q)
    knn_s = float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max"))
    _driver.worker_report(
        args.report,
        {
            "seconds": knn_s,
            "kmeans_iteration_s": kmeans_s,
            "knn_search_s": knn_s,
            "transport": transport,
        },
        comms,
    )


def _link(transport):
    """(latency s, bytes/s) of a ring sendrecv and of an allreduce, from the probes."""
    if not transport:
        return None
    out = {}
    for op in ("sendrecv", "allreduce"):
        small, large = transport[f"{op}_{SMALL}"], transport[f"{op}_{LARGE}"]
        out[op] = (small, (LARGE - SMALL) / max(large - small, 1e-9))
    return out


def kmeans_model(n, d, k, itemsize, peak, bandwidth, link):
    """Seconds per Lloyd iteration on ranks that get ``peak`` FLOP/s and
    ``bandwidth`` bytes/s together: a dict of the terms and their total."""
    compute = 2.0 * n * k * d / peak
    memory = n * d * itemsize / bandwidth
    sent = 8.0 * (k * d + k + 1)
    allreduce = 0.0
    if link is not None:
        latency, rate = link["allreduce"]
        allreduce = latency + sent / rate
    return {
        "compute": compute,
        "memory": memory,
        "sent_bytes": sent,
        "comm": allreduce,
        "model": max(compute, memory) + allreduce,
    }


def knn_model(q, n, d, ranks, itemsize, peak, bandwidth, link, batch, tile):
    """Seconds of one search (all ranks' queries) on ranks that get ``peak`` FLOP/s
    and ``bandwidth`` bytes/s together: a dict of the terms and their total."""
    compute = 2.0 * q * n * d / peak
    index_reads = math.ceil(q / ranks / tile)
    memory = (q * n * itemsize + n * d * itemsize * index_reads) / bandwidth
    sent = (ranks - 1) / ranks * n * d * itemsize
    comm = 0.0
    if link is not None:
        latency, rate = link["sendrecv"]
        comm = math.ceil(n / ranks / batch) * (ranks - 1) * latency + sent / rate
    return {
        "compute": compute,
        "memory": memory,
        "sent_bytes": sent,
        "comm": comm,
        "model": compute + memory + comm,
    }


def _plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, name, unit in zip(axes, ("kmeans", "knn"), ("ms per Lloyd iteration", "ms per search")):
        mine = [r for r in rows if r["estimator"] == name]
        ranks = [r["ranks"] for r in mine]
        ax.plot(ranks, [r["measured"] * 1e3 for r in mine], "o-", label="measured")
        ax.plot(ranks, [r["model"] * 1e3 for r in mine], "s--", label="model")
        for term, style in (("compute", ":"), ("memory", "-."), ("comm", ":")):
            ax.plot(ranks, [r[term] * 1e3 for r in mine], style, alpha=0.6, label=term)
        ax.set_title(name)
        ax.set_xlabel("ranks (more than the cores: oversubscribed)")
        ax.set_ylabel(unit)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


def driver(args):
    from mlmpi.kernels import kernels_for

    from mlmpi.neighbors._base import DEFAULT_BATCH

    cores = os.cpu_count() or 1
    load_before = os.getloadavg()[0]
    rates = {
        p: concurrent_peak_and_bandwidth(np.float32, p)
        for p in sorted({1} | {min(r, cores) for r in args.ranks})
    }
    for p, (peak, bandwidth) in rates.items():
        print(f"{p} core(s) at once: GEMM {peak / 1e9:.1f} GFLOP/s, sum {bandwidth / 1e9:.1f} GB/s")
    argv = [
        str(a)
        for pair in vars(args).items()
        if pair[0].startswith(("kmeans_", "knn_"))
        for a in (f"--{pair[0].replace('_', '-')}", pair[1])
    ]
    batch = DEFAULT_BATCH[False]
    rows = []
    for ranks in args.ranks:
        measured = _driver.run_worker(Path(__file__).resolve(), ranks, argv, timeout=600)
        link = _link(measured["transport"])
        cases = (
            (
                "kmeans",
                measured["kmeans_iteration_s"],
                kmeans_model(
                    args.kmeans_n,
                    args.kmeans_d,
                    args.kmeans_k,
                    4,
                    *rates[min(ranks, cores)],
                    link,
                ),
            ),
            (
                "knn",
                measured["knn_search_s"],
                knn_model(
                    args.knn_q,
                    args.knn_n,
                    args.knn_d,
                    ranks,
                    4,
                    *rates[min(ranks, cores)],
                    link,
                    batch,
                    kernels_for("knn", np.empty((1, 1))).query_rows(batch),
                ),
            ),
        )
        for name, seconds, model in cases:
            rows.append(
                {
                    "estimator": name,
                    "ranks": ranks,
                    "oversubscribed": ranks > cores,
                    "measured": seconds,
                    "transport": measured["transport"],
                    **model,
                }
            )
    load_after = os.getloadavg()[0]
    print(
        f"{'estimator':<10}{'ranks':>6}{'compute ms':>12}{'memory ms':>11}{'comm ms':>10}"
        f"{'sent B':>12}{'model ms':>10}{'measured ms':>13}{'meas/model':>12}"
    )
    for r in rows:
        note = "  (oversubscribed)" if r["oversubscribed"] else ""
        print(
            f"{r['estimator']:<10}{r['ranks']:>6}{r['compute'] * 1e3:>12.2f}"
            f"{r['memory'] * 1e3:>11.2f}{r['comm'] * 1e3:>10.3f}{r['sent_bytes']:>12.0f}"
            f"{r['model'] * 1e3:>10.2f}{r['measured'] * 1e3:>13.2f}"
            f"{r['measured'] / r['model']:>12.2f}{note}"
        )
    print(f"load average: {load_before:.2f} before, {load_after:.2f} after ({cores} cores)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(
                {
                    "config": {k: v for k, v in vars(args).items() if k not in ("out", "plot")},
                    "cores": cores,
                    "peak_gflops_per_core": rates[1][0] / 1e9,
                    "bandwidth_gbs_per_core": rates[1][1] / 1e9,
                    "at_once": {
                        p: {"peak_gflops": peak / 1e9, "bandwidth_gbs": bandwidth / 1e9}
                        for p, (peak, bandwidth) in rates.items()
                    },
                    "load_before": load_before,
                    "load_after": load_after,
                    "rows": rows,
                },
                indent=1,
                default=str,
            )
        )
        print(f"wrote {args.out}")
    if args.plot:
        _plot(rows, args.plot)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--kmeans-n", type=int, default=400_000)
    parser.add_argument("--kmeans-d", type=int, default=32)
    parser.add_argument("--kmeans-k", type=int, default=16)
    parser.add_argument("--kmeans-iter", type=int, default=10)
    parser.add_argument("--knn-n", type=int, default=200_000)
    parser.add_argument("--knn-d", type=int, default=64)
    parser.add_argument("--knn-q", type=int, default=2_000)
    parser.add_argument("--knn-k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON")
    parser.add_argument("--plot", type=Path, default=None, help="write the plot (PNG)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
    else:
        args.ranks = sorted(set(args.ranks))
        driver(args)


if __name__ == "__main__":
    main()
