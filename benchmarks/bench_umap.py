"""mlmpi UMAP on R ranks vs umap-learn (R threads): time and quality.

    python benchmarks/bench_umap.py --data digits --ranks 2 \
        --out benchmarks/results/umap_digits.json
    python benchmarks/bench_umap.py --data mnist-like --n-samples 70000 --ranks 2 \\
        --repeats 1 --out benchmarks/results/umap_mnist_like_70k.json
    python benchmarks/bench_umap.py --quick

Both fit ``UMAP()`` with umap-learn's defaults (15 neighbours, the spectral
start, 500 epochs up to 10,000 rows and 200 above) on the same rows, the data
of ``bench_tsne.py``: scikit-learn's digits, or ``--n-samples`` MNIST-like
28 x 28 images grown offline from them.

umap-learn runs in this process with ``n_jobs=R``, numba and BLAS limited to
R threads and no seed: its fastest setting (a seed forces one thread). It is
warmed up first on :data:`WARM_UP_ROWS` rows, so its timed fit does not
compile (at 4,096 rows and more umap-learn takes its NN-descent, whose first
fit on the 70,000-row set took 53 s against 32 s for the next ones: a warm-up
on 500 rows compiled only its exact search). mlmpi runs
under mpiexec, first fitting :data:`WARM_UP_ROWS` rows per rank untimed in
the same way (its kernels are compiled ahead and cached, so its warm-up
only loads them) with ``random_state=0`` (its result does not depend on the
threads or ranks), rank 0 saving the gathered embedding. The driver scores
both embeddings the same way: trustworthiness (10 neighbours, on at most
``--quality-rows`` rows) and the 5-fold accuracy of a 10-nearest-neighbour
classifier on the embedding.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: umap-learn's warm-up fit: more rows than its 4,096-row switch to NN-descent.
WARM_UP_ROWS = 5000

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402
from bench_tsne import _data, _quality  # noqa: E402


def worker(args):
    from mlmpi import get_comms
    from mlmpi.comms import profile
    from mlmpi.datasets import shard
    from mlmpi.manifold import UMAP

    comms = get_comms()
    X_all, _ = _data(args)
    X = shard(X_all, comms)
    del X_all
    UMAP(random_state=0).fit(X[:WARM_UP_ROWS])  # loads the compiled kernels
    comms.barrier()
    start = time.perf_counter()
    with profile() as prof:
        model = UMAP(random_state=0).fit(X)
    seconds = float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max"))
    comm = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    embedding = comms.allgatherv(np.ascontiguousarray(model.embedding_))
    if comms.rank == 0:
        np.save(args.embedding, embedding)
    _driver.worker_report(args.report, {"seconds": seconds, "comm_fraction": comm / seconds}, comms)


def driver(args):
    import numba
    import umap
    from threadpoolctl import threadpool_limits

    X, y = _data(args)
    embeddings = {}
    numba.set_num_threads(args.ranks)
    with threadpool_limits(limits=args.ranks):
        umap.UMAP(n_jobs=args.ranks).fit(X[:WARM_UP_ROWS])

    def timed():
        with threadpool_limits(limits=args.ranks):
            start = time.perf_counter()
            embedding = umap.UMAP(n_jobs=args.ranks).fit_transform(X)
            elapsed = time.perf_counter() - start
        embeddings["umap-learn"] = embedding
        return {"seconds": elapsed}

    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "embedding.npy"
        row = _driver.compare(
            f"umap {args.data} {X.shape[0]}x{X.shape[1]} R={args.ranks}",
            script=Path(__file__).resolve(),
            ranks=args.ranks,
            repeats=args.repeats,
            run_peer=timed,
            worker_argv=[
                "--data",
                args.data,
                "--n-samples",
                str(args.n_samples),
                "--embedding",
                str(saved),
            ],
            timeout=7200,
        )
        embeddings["mlmpi"] = np.load(saved)
    for name, embedding in embeddings.items():
        for key, value in _quality(X, y, embedding, args.quality_rows).items():
            row[f"{'mlmpi' if name == 'mlmpi' else 'peer'}_{key}"] = value
    _driver.report(
        "umap",
        [row],
        vars(args) | {"metric": "fit seconds", "peer": f"umap-learn {umap.__version__}"},
        out=args.out,
        peer="umap-learn",
        extra_columns=[
            ("comm frac", "mlmpi_comm_fraction"),
            ("trust", "mlmpi_trustworthiness"),
            ("peer trust", "peer_trustworthiness"),
            ("knn acc", "mlmpi_knn_accuracy"),
            ("peer knn acc", "peer_knn_accuracy"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=("digits", "mnist-like"), default="digits")
    parser.add_argument("--n-samples", type=int, default=70_000, help="mnist-like only")
    parser.add_argument("--quality-rows", type=int, default=10_000)
    parser.add_argument("--embedding", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="mnist-like, 2,000 rows, one repeat")
    if "--quick" in sys.argv:
        sys.argv += ["--data", "mnist-like", "--n-samples", "2000", "--repeats", "1"]
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
