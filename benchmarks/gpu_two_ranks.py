"""Two ranks on one GPU: the same fits over each comms backend, checked against the CPU.

Run under ``mpiexec -n 2`` (``benchmarks/gpu_check.sh`` does), once per
backend chosen by ``MLMPI_COMMS`` (``nccl``, or ``mpi`` with host staging).
Each rank takes its half of the same global data as a CuPy array; KMeans,
LinearRegression and PCA are fitted on the GPU and on the host (NumPy, same
ranks), and rank 0 writes one JSON line per fit: seconds, the largest
relative difference between the GPU and the CPU fitted attributes, and
whether it is within the GPU tolerance of ``docs/gpu.rst``.

``--dry-run`` uses the CPU stand-in for CuPy (``tests/mpi_cases/_fake_cupy.py``)
to check the script without a GPU (the times mean nothing then).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

TOLERANCE = 1e-4  # float32 on two devices: relative, on the fitted attributes


def _cupy(dry_run):
    if dry_run:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "mpi_cases"))
        import _fake_cupy

        _fake_cupy.install()
    import cupy

    return cupy


def _fits(n_samples, n_features):
    from sklearn.datasets import make_blobs

    from mlmpi import PCA, KMeans, LinearRegression

    # Clusters, not noise: on data without them many rows lie within float32
    # rounding of two centres, and the GPU's GEMM rounds otherwise than the CPU's.
    X, _ = make_blobs(n_samples, n_features, centers=8, cluster_std=2.0, random_state=0)
    X = X.astype(np.float32)
    rng = np.random.default_rng(0)
    y = (X @ rng.standard_normal(n_features) + 0.1).astype(np.float32)
    init = X[:8].copy()
    fits = [
        ("KMeans", lambda: KMeans(8, init=init, n_init=1, max_iter=20, tol=0), "cluster_centers_"),
        ("LinearRegression", LinearRegression, "coef_"),
        ("PCA", lambda: PCA(n_components=4, svd_solver="covariance_eigh"), "explained_variance_"),
    ]
    return X, y, fits


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-samples", type=int, default=2_000_000)
    parser.add_argument("--n-features", type=int, default=32)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.dry_run:
        args.n_samples = min(args.n_samples, 2_000)
    cupy = _cupy(args.dry_run)
    from mlmpi import get_comms
    from mlmpi.datasets import shard

    comms = get_comms()
    X, y, fits = _fits(args.n_samples, args.n_features)
    X_local, y_local = shard(X, comms), shard(y, comms)
    X_gpu, y_gpu = cupy.asarray(X_local), cupy.asarray(y_local)
    for name, make, attribute in fits:
        cpu = make().fit(X_local, y_local)  # y is ignored by the unsupervised fits
        make().fit(X_gpu, y_gpu)  # warm-up
        comms.barrier()
        start = time.perf_counter()
        gpu = make().fit(X_gpu, y_gpu)
        seconds = time.perf_counter() - start
        expected = np.asarray(getattr(cpu, attribute), dtype=np.float64)
        actual = cupy.asnumpy(getattr(gpu, attribute)).astype(np.float64)
        difference = float(np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), 1e-30))
        if comms.rank == 0:
            row = {
                "fit": name,
                "backend": comms.backend,
                "ranks": comms.size,
                "rows": args.n_samples,
                "features": args.n_features,
                "seconds": seconds,
                "max_relative_difference": difference,
                "within_tolerance": difference <= TOLERANCE,
                "dry_run": args.dry_run,
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
