"""Parquet reading: mlmpi.io.read_parquet under ``mpiexec -n R`` vs pandas.read_parquet.

The driver writes one Parquet file (float64 columns, row groups of
``--row-group-rows``), then alternates (``benchmarks/_driver.py``): pandas
reads the whole file in a fresh process (pyarrow's threads use every core),
and the mlmpi ranks each read their own rows, twice over: split as every
reader splits by default (balanced counts, so a row group that holds a cut
between two ranks is read by both), and cut at the row-group boundaries
nearest to the balanced cuts (``counts=``, so no row group is read twice):
the ratio of the two is what reading row-aligned costs. Reported per rank (the worst
rank): the read time, the peak resident memory of the process (``ru_maxrss``,
the interpreter and libraries included, as a user sees it) and the bytes it
read through system calls (``rchar`` of ``/proc/self/io``) against ``1/R`` of
the file. Both read from the page cache (the file was just written).

    python benchmarks/bench_io.py                                    # 10M x 20, 2 ranks
    python benchmarks/bench_io.py --n-rows 200000 --repeats 1        # smoke run
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _driver import compare, report, run_main, worker_report

SPLITS = ("balanced", "row-groups")  # the readers' default, and cuts at row-group boundaries


def _peak_rss():
    """Peak resident memory of this process so far, in bytes (Linux: kB units)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _bytes_read():
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def _write(path, args):
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [f"x{j}" for j in range(args.n_features)]
    schema = pa.schema([(name, pa.float64()) for name in names])
    rng = np.random.default_rng(0)
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, args.n_rows, args.row_group_rows):
            rows = min(args.row_group_rows, args.n_rows - start)
            block = rng.standard_normal((rows, args.n_features))
            writer.write_table(pa.table(dict(zip(names, block.T))), row_group_size=rows)


def _peer(args):
    """pandas.read_parquet of the whole file, in this fresh process."""
    import pandas as pd

    before = _bytes_read()
    start = time.perf_counter()
    frame = pd.read_parquet(args.data)
    seconds = time.perf_counter() - start
    Path(args.report).write_text(
        json.dumps(
            {
                "seconds": seconds,
                "peak_rss": _peak_rss(),
                "bytes_read": _bytes_read() - before,
                "rows": len(frame),
            }
        )
    )


def _row_group_counts(path, size):
    """Rows per rank with each balanced cut moved to the nearest row-group boundary."""
    import pyarrow.parquet as pq

    from mlmpi.datasets import even_counts

    meta = pq.ParquetFile(path).metadata
    bounds = np.cumsum([0] + [meta.row_group(g).num_rows for g in range(meta.num_row_groups)])
    cuts = np.cumsum(even_counts(int(bounds[-1]), size))[:-1]
    nearest = bounds[np.abs(bounds[None, :] - cuts[:, None]).argmin(axis=1)]
    return np.diff([0, *nearest, bounds[-1]]).tolist()


def _worker(args):
    import mlmpi
    from mlmpi.io import read_parquet

    comms = mlmpi.get_comms()
    counts = _row_group_counts(args.data, comms.size) if args.split == "row-groups" else None
    comms.allreduce(np.zeros(1))  # connections up before timing
    comms.barrier()
    before = _bytes_read()
    start = time.perf_counter()
    frame = read_parquet(args.data, counts=counts, comms=comms)
    comms.barrier()
    seconds = time.perf_counter() - start
    read = _bytes_read() - before
    facts = comms.allgather_object((seconds, _peak_rss(), read, len(frame)))
    size = os.path.getsize(args.data)
    worker_report(
        args.report,
        {
            "seconds": max(f[0] for f in facts),
            "peak_rss": max(f[1] for f in facts),
            "bytes_share": max(f[2] for f in facts) / (size / comms.size),
            "bytes_read": [f[2] for f in facts],
            "rows": [f[3] for f in facts],
        },
        comms,
    )


def _run_peer(args, data):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "peer.json"
        command = [sys.executable, __file__, "--peer", "--data", str(data), "--report", str(out)]
        subprocess.run(command, check=True, timeout=1800)
        return json.loads(out.read_text())


def _driver(args):
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmp:
        data = Path(tmp) / "rows.parquet"
        _write(data, args)
        size = os.path.getsize(data)
        rows = [
            compare(
                f"read {args.n_rows} x {args.n_features}, {split}",
                script=__file__,
                ranks=args.ranks,
                repeats=args.repeats,
                run_peer=lambda: _run_peer(args, data),
                worker_argv=["--data", str(data), "--split", split],
            )
            for split in SPLITS
        ]
    for row in rows:
        peer_rss = statistics.median(r["peak_rss"] for r in row["peer_runs"])
        row.update(
            peer_peak_rss=peer_rss,
            rss_ratio=row["mlmpi_peak_rss"] / peer_rss,
            mlmpi_peak_rss_mib=row["mlmpi_peak_rss"] / 2**20,
            file_bytes=size,
            balanced_over_row_groups=rows[0]["mlmpi_s"] / rows[1]["mlmpi_s"],
        )
    config = {
        k: getattr(args, k) for k in ("n_rows", "n_features", "row_group_rows", "ranks", "repeats")
    }
    config["file_mib"] = round(size / 2**20, 1)
    report(
        "io",
        rows,
        config,
        out=args.out,
        peer="pandas",
        extra_columns=[
            ("peak RSS MiB", "mlmpi_peak_rss_mib"),
            ("RSS ratio", "rss_ratio"),
            ("bytes/(1/R)", "mlmpi_bytes_share"),
        ],
    )
    for row in rows:
        print(f"{row['case']}: rows per rank {row['mlmpi_runs'][-1]['rows']}")
    print(
        "reading row-aligned (balanced) takes "
        f"{rows[0]['balanced_over_row_groups']:.2f}x the time of whole row groups per rank"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="(worker, peer) the Parquet file the driver wrote")
    parser.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--n-rows", type=int, default=10_000_000)
    parser.add_argument("--n-features", type=int, default=20)
    parser.add_argument("--row-group-rows", type=int, default=1 << 20)
    parser.add_argument("--tmpdir", default=None, help="where the file is written")
    parser.add_argument(
        "--split", choices=SPLITS, default=SPLITS[0], help="(worker) how the rows are split"
    )
    if "--peer" in sys.argv:
        parser.add_argument("--report")
        return _peer(parser.parse_args())
    run_main(parser, driver=_driver, worker=_worker)


if __name__ == "__main__":
    main()
