"""mlmpi TSNE on R ranks vs scikit-learn's TSNE (R threads): time and quality.

    python benchmarks/bench_tsne.py --data digits --ranks 2 \
        --out benchmarks/results/tsne_digits.json
    python benchmarks/bench_tsne.py --data mnist-like --n-samples 20000 --ranks 2 \\
        --repeats 1 --out benchmarks/results/tsne_mnist_like.json
    python benchmarks/bench_tsne.py --quick

Both fit ``TSNE(perplexity=30, random_state=0)`` with scikit-learn's
defaults (Barnes-Hut, ``init='pca'``, 1,000 iterations) on the same rows:

- ``digits``: scikit-learn's handwritten digits, 1,797 images of 8 x 8 pixels;
- ``mnist-like``: ``--n-samples`` images of 28 x 28 pixels (784 features, 10
  classes) made offline from the digits: each an 8 x 8 digit enlarged to
  28 x 28, shifted by up to two pixels, with pixel noise (a fixed seed).

scikit-learn is timed in this process with its threads limited to R; mlmpi
under mpiexec, rank 0 saving the gathered embedding. Each side first fits
:data:`WARM_UP_ROWS` rows (per rank) untimed, so that no timed fit pays for
the first call's imports and kernel loading (mlmpi's worker is a new process
for each repeat; scikit-learn's first fit in this process took 7.4 s against
5.8 s for the next two on the digits). The driver scores both
embeddings the same way: trustworthiness (10 neighbours,
``sklearn.manifold.trustworthiness``; on at most ``--quality-rows`` rows
drawn with a fixed seed, the pairwise distances of more not fitting in
memory) and the 5-fold accuracy of a 10-nearest-neighbour classifier on the
embedding (all rows), plus the KL divergence each reports. UMAP has its own
benchmark against umap-learn, `bench_umap.py`.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402

PARAMS = {"perplexity": 30.0, "random_state": 0}
#: Rows of each side's warm-up fit (per rank for mlmpi), before the timed fits.
WARM_UP_ROWS = 200


def _mnist_like(n_samples):
    """``n_samples`` 28 x 28 images grown from the digits (the same at every call)."""
    from scipy.ndimage import shift, zoom
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    big = np.stack([zoom(image.reshape(8, 8), 3.0, order=1) for image in images])  # 24 x 24
    big = np.pad(big, ((0, 0), (2, 2), (2, 2)))  # 28 x 28
    rng = np.random.default_rng(0)
    source = rng.integers(0, len(images), n_samples)
    moves = rng.integers(-2, 3, size=(n_samples, 2))
    X = np.empty((n_samples, 784))
    for k, (i, move) in enumerate(zip(source, moves)):
        X[k] = shift(big[i], move, order=0).ravel()
    X += rng.normal(scale=1.0, size=X.shape)
    return np.clip(X, 0.0, 16.0) / 16.0, labels[source]


def _data(args):
    from sklearn.datasets import load_digits

    if args.data == "digits":
        return load_digits(return_X_y=True)
    return _mnist_like(args.n_samples)


def worker(args):
    from mlmpi import get_comms
    from mlmpi.comms import profile
    from mlmpi.datasets import shard
    from mlmpi.manifold import TSNE

    comms = get_comms()
    X_all, _ = _data(args)
    X = shard(X_all, comms)
    del X_all
    TSNE(**PARAMS, max_iter=250).fit(X[:WARM_UP_ROWS])  # loads the compiled kernels
    comms.barrier()
    start = time.perf_counter()
    with profile() as prof:
        model = TSNE(**PARAMS).fit(X)
    seconds = float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max"))
    comm = float(comms.allreduce(np.asarray(prof.total_seconds), op="max"))
    embedding = comms.allgatherv(np.ascontiguousarray(model.embedding_))
    if comms.rank == 0:
        np.save(args.embedding, embedding)
    metrics = {"seconds": seconds, "comm_fraction": comm / seconds}
    metrics["kl_divergence"] = float(model.kl_divergence_)
    _driver.worker_report(args.report, metrics, comms)


def _quality(X, y, embedding, rows):
    from sklearn.manifold import trustworthiness
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    if X.shape[0] > rows:
        taken = np.sort(np.random.default_rng(1).choice(X.shape[0], rows, replace=False))
        X_q, embedding_q = X[taken], embedding[taken]
    else:
        X_q, embedding_q = X, embedding
    trust = trustworthiness(X_q, embedding_q, n_neighbors=10)
    knn = cross_val_score(KNeighborsClassifier(n_neighbors=10), embedding, y, cv=5).mean()
    return {"trustworthiness": float(trust), "knn_accuracy": float(knn)}


def driver(args):
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    X, y = _data(args)
    embeddings = {}
    with threadpool_limits(limits=args.ranks):
        TSNE(**PARAMS, max_iter=250).fit(X[: args.ranks * WARM_UP_ROWS])

    def timed():
        with threadpool_limits(limits=args.ranks):
            start = time.perf_counter()
            model = TSNE(**PARAMS).fit(X)
            elapsed = time.perf_counter() - start
        embeddings["scikit-learn"] = model.embedding_
        return {"seconds": elapsed, "kl_divergence": float(model.kl_divergence_)}

    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "embedding.npy"
        row = _driver.compare(
            f"tsne {args.data} {X.shape[0]}x{X.shape[1]} R={args.ranks}",
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
    row["peer_kl_divergence"] = row["peer_runs"][-1]["kl_divergence"]
    _driver.report(
        "tsne",
        [row],
        vars(args) | {"metric": "fit seconds", "params": PARAMS},
        out=args.out,
        extra_columns=[
            ("comm frac", "mlmpi_comm_fraction"),
            ("trust", "mlmpi_trustworthiness"),
            ("peer trust", "peer_trustworthiness"),
            ("knn acc", "mlmpi_knn_accuracy"),
            ("peer knn acc", "peer_knn_accuracy"),
            ("KL", "mlmpi_kl_divergence"),
            ("peer KL", "peer_kl_divergence"),
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
