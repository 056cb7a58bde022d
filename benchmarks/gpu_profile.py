"""Where a GPU fit spends its time: Python's profile of one fit, kernel by kernel.

Run with ``CUDA_LAUNCH_BLOCKING=1`` (``benchmarks/gpu_check.sh --profile``
does): every CUDA launch then returns when its kernel ends, so each CuPy
call's own time in the profile is the time of its kernels, and the lines
that cost the most GPU time rise to the top. One warm-up fit (CuPy compiles
its kernels), then one profiled fit per case; the top functions by own time
and by cumulative time are written as text.

    CUDA_LAUNCH_BLOCKING=1 python benchmarks/gpu_profile.py --out profile.txt

``--dry-run`` profiles the same fits on NumPy with tiny sizes (to check the
script on a CPU).
"""

import argparse
import cProfile
import io
import pstats
import time
from pathlib import Path

import numpy as np


def _cases(n_big, n_mid, n_queries):
    import mlmpi
    from mlmpi.decomposition import PCA
    from mlmpi.neighbors import NearestNeighbors

    def kmeans(X):
        centers = X[:256].copy()
        return lambda: mlmpi.KMeans(256, init=centers, n_init=1, max_iter=10, tol=0.0).fit(X)

    def pca(X):
        return lambda: PCA(16, svd_solver="covariance_eigh").fit(X)

    def knn(X, Q):
        return lambda: NearestNeighbors(n_neighbors=10).fit(X).kneighbors(Q)

    return [
        (f"KMeans {n_big}x64 k=256, 10 iterations", kmeans, [(n_big, 64, 0)]),
        (f"PCA {n_big}x128 covariance_eigh", pca, [(n_big, 128, 0)]),
        (f"kNN {n_mid}x64 index, {n_queries} queries", knn, [(n_mid, 64, 0), (n_queries, 64, 1)]),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="text file for the profiles")
    parser.add_argument("--top", type=int, default=25, help="functions listed per ordering")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.dry_run:
        xp, sizes = np, (2_000, 1_000, 100)
    else:
        import cupy as xp

        sizes = (10_000_000, 1_000_000, 20_000)
    report = io.StringIO()
    for name, make, shapes in _cases(*sizes):
        arrays = [
            xp.random.default_rng(seed).standard_normal((n, d), dtype=np.float32)
            for n, d, seed in shapes
        ]
        fit = make(*arrays)
        fit()  # warm-up: kernels compiled, memory pool filled
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.runcall(fit)
        seconds = time.perf_counter() - start
        report.write(f"==== {name}: {seconds:.3f} s profiled ====\n")
        for order in ("tottime", "cumulative"):
            stats = pstats.Stats(profile, stream=report)
            stats.sort_stats(order).print_stats(args.top)
        print(f"{name}: {seconds:.3f} s", flush=True)
        args.out.write_text(report.getvalue())


if __name__ == "__main__":
    main()
