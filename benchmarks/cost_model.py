"""Cost model of one iteration per estimator on R ranks, checked against
measured ``bench_kmeans.py`` results (``--out`` JSON files, e.g. at 1, 2 and
4 ranks), with a plot when matplotlib is installed.

    python benchmarks/bench_kmeans.py --ranks 1 --out /tmp/km1.json ...  (and 2, 4)
    python benchmarks/cost_model.py /tmp/km1.json /tmp/km2.json /tmp/km4.json \\
        --plot benchmarks/results/kmeans_cost_model.png

Per rank and iteration (n global rows, d features, R ranks of one core):

KMeans (Lloyd), k centres:
    compute  2·n·k·d / (R·peak)                 FLOPs of the distance GEMM
    memory   n·d·itemsize / (R·bandwidth)       X read once per block (the
                                                block stays in cache for the
                                                argmin and the sums)
    sent     8·(k·d + k + 1) bytes, one allreduce of the packed sums,
             weights and changed count: latency·⌈log2 R⌉ + 2·(R-1)/R·bytes/link
    model    max(compute, memory) + allreduce

kNN (ring), q queries per rank, n index rows, k neighbours:
    compute  2·q·n·d / peak                     every query against every row
    memory   n·d·itemsize / bandwidth · ⌈q / batch⌉
    sent     (R-1)/R · n·d·itemsize bytes        each index block goes round the ring

``peak`` and ``bandwidth`` come from the results (measured on one core by
the benchmark's driver); ``--latency`` and ``--link`` describe the MPI
transport (defaults: shared memory on one node).
"""

import argparse
import json
import math
from pathlib import Path


def kmeans_model(n, d, k, ranks, itemsize, peak, bandwidth, latency, link):
    """Seconds per Lloyd iteration per rank: a dict of the terms and their total."""
    compute = 2.0 * n * k * d / (ranks * peak)
    memory = n * d * itemsize / (ranks * bandwidth)
    sent = 8.0 * (k * d + k + 1)
    allreduce = 0.0
    if ranks > 1:
        allreduce = latency * math.ceil(math.log2(ranks)) + 2.0 * (ranks - 1) / ranks * sent / link
    return {
        "compute": compute,
        "memory": memory,
        "sent_bytes": sent,
        "allreduce": allreduce,
        "model": max(compute, memory) + allreduce,
    }


def knn_model(n_queries, n_index, d, ranks, itemsize, peak, bandwidth, link, batch=1024):
    """Seconds of one kneighbors call per rank (ring over the index shards)."""
    compute = 2.0 * n_queries * n_index * d / peak
    memory = n_index * d * itemsize / bandwidth * math.ceil(n_queries / batch)
    sent = (ranks - 1) / ranks * n_index * d * itemsize
    return {
        "compute": compute,
        "memory": memory,
        "sent_bytes": sent,
        "model": max(compute, memory) + sent / link,
    }


def _kmeans_rows(paths, latency, link):
    rows = []
    for path in paths:
        result = json.loads(Path(path).read_text())
        config = result["config"]
        itemsize = 4 if config["dtype"] == "float32" else 8
        for row in result["rows"]:
            if "peak_gflops_per_core" not in row:
                raise SystemExit(f"{path}: no measured peak (rerun bench_kmeans.py)")
            model = kmeans_model(
                config["n_samples"],
                config["n_features"],
                config["n_clusters"],
                config["ranks"],
                itemsize,
                row["peak_gflops_per_core"] * 1e9,
                row["bandwidth_gbs_per_core"] * 1e9,
                latency,
                link,
            )
            rows.append(
                {
                    "ranks": config["ranks"],
                    "k": config["n_clusters"],
                    "measured": row["mlmpi_s"],
                    "peer": row["peer_s"],
                    "comm_fraction": row.get("mlmpi_comm_fraction"),
                    **model,
                }
            )
    return sorted(rows, key=lambda r: (r["k"], r["ranks"]))


def _plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for k in sorted({r["k"] for r in rows}):
        mine = [r for r in rows if r["k"] == k]
        ranks = [r["ranks"] for r in mine]
        ax.plot(ranks, [r["measured"] * 1e3 for r in mine], "o-", label=f"measured k={k}")
        ax.plot(ranks, [r["model"] * 1e3 for r in mine], "s--", label=f"model k={k}")
    ax.set_xlabel("ranks")
    ax.set_ylabel("ms per Lloyd iteration")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="bench_kmeans.py --out JSON files")
    parser.add_argument("--latency", type=float, default=5e-6, help="seconds per allreduce step")
    parser.add_argument("--link", type=float, default=5e9, help="bytes/s between ranks")
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args()
    rows = _kmeans_rows(args.results, args.latency, args.link)
    print(
        f"{'k':>5}{'ranks':>6}{'compute ms':>12}{'memory ms':>11}{'allreduce ms':>14}"
        f"{'sent B':>9}{'model ms':>10}{'measured ms':>13}{'meas/model':>12}"
    )
    for r in rows:
        print(
            f"{r['k']:>5}{r['ranks']:>6}{r['compute'] * 1e3:>12.3f}{r['memory'] * 1e3:>11.3f}"
            f"{r['allreduce'] * 1e3:>14.4f}{r['sent_bytes']:>9.0f}{r['model'] * 1e3:>10.3f}"
            f"{r['measured'] * 1e3:>13.3f}{r['measured'] / r['model']:>12.2f}"
        )
    if args.plot:
        _plot(rows, args.plot)


if __name__ == "__main__":
    main()
