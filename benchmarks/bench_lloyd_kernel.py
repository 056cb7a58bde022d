"""One Lloyd step of the CPU k-means kernel on one core, by each way to the
block distances (SIMD lanes across centres, BLAS GEMM), against the step's
floor: measures the crossover ``GEMM_MIN_CENTRE_VALUES`` of
``mlmpi.kernels.cpu.kmeans``.

    python benchmarks/bench_lloyd_kernel.py --n-samples 500000 --n-features 32 \\
        --n-clusters 8 16 32 64 128 256 --dtype float32
    python benchmarks/bench_lloyd_kernel.py --n-samples 10000 --n-features 1024 \\
        --n-clusters 64 128 256 512

CPU time (``time.process_time``, best of ``--repeats``) of ``lloyd_step``
from no labels (every row assigned and added to its centre's exact sums: a
fit's first step, the dearest) with one numba and one BLAS thread, so that
other processes on a shared machine inflate it less than wall time. The floor printed is
max(compute, memory) for one step on one core:
``2·n·k·d / peak_flops`` and ``n·d·itemsize / bandwidth``, with peak and
bandwidth measured here (a 1024³ GEMM's rate, a NumPy sum over 256 MB).
"""

import argparse
import functools
import multiprocessing
import os
import time

import numba
import numpy as np
from mlmpi.kernels.cpu import kmeans
from threadpoolctl import threadpool_limits

from mlmpi.utils._exact import limb_exponents, limb_scales


def _best(run, repeats):
    run()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def _probes(dtype):
    """The two measurements, as (run, work): a 1024×1024×1024 GEMM and its
    FLOPs, a sum over 256 MB and its bytes."""
    a = np.ones((1024, 1024), dtype=dtype)
    big = np.ones(1 << 26, dtype=np.float32)
    return (lambda: a @ a, 2 * 1024**3), (big.sum, big.nbytes)


def measured_peak_and_bandwidth(dtype, repeats=3):
    """(FLOP/s of a 1024×1024×1024 GEMM, bytes/s of a sum over 256 MB), one core."""
    return tuple(work / _best(run, repeats) for run, work in _probes(dtype))


def _rates_at_a_barrier(dtype, barrier, repeats, results):
    with threadpool_limits(limits=1):
        rates = []
        for run, work in _probes(dtype):
            barrier.wait()
            rates.append(work / _best(run, repeats))
        results.put(tuple(rates))


def concurrent_peak_and_bandwidth(dtype, processes, repeats=5):
    """(FLOP/s, bytes/s) that ``processes`` one-core processes get together when
    they measure :func:`measured_peak_and_bandwidth`'s GEMM and sum at the same
    moment (each measurement starts at a barrier): what that many one-core ranks
    share, where cores may share a memory bus or a clock. Run it while no rank
    is alive."""
    if processes == 1:
        with threadpool_limits(limits=1):
            return measured_peak_and_bandwidth(dtype, repeats)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [
        context.Process(target=_rates_at_a_barrier, args=(dtype, barrier, repeats, results))
        for _ in range(processes)
    ]
    for w in workers:
        w.start()
    rates = [results.get(timeout=300) for _ in workers]
    for w in workers:
        w.join()
    return sum(r[0] for r in rates), sum(r[1] for r in rates)


def _every_row_moves(X, weight, centers, scales, labels, sums, weights, stats):
    """One step from no labels: every row is assigned and added to its centre's
    sums (the first step of a fit; later ones move only the rows that change)."""
    labels.fill(-1)
    kmeans.lloyd_step(X, weight, centers, scales, labels, sums, weights, stats)


def floor_seconds(n, d, k, itemsize, peak, bandwidth):
    """One Lloyd step's floor: max(2·n·k·d / peak, n·d·itemsize / bandwidth)."""
    return max(2.0 * n * k * d / peak, n * d * itemsize / bandwidth)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=500_000)
    parser.add_argument("--n-features", type=int, default=32)
    parser.add_argument("--n-clusters", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256])
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    numba.set_num_threads(1)
    dtype = np.dtype(args.dtype)
    n, d = args.n_samples, args.n_features
    X = np.random.default_rng(0).normal(size=(n, d)).astype(dtype)
    weight = np.ones(n, dtype=dtype)
    largest = np.append(np.abs(X).max(axis=0), 1.0).astype(np.float64)
    scales = limb_scales(limb_exponents(largest))
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    with threadpool_limits(limits=1):
        peak, bandwidth = measured_peak_and_bandwidth(dtype)
        print(f"one core: GEMM {peak / 1e9:.1f} GFLOP/s, sum {bandwidth / 1e9:.1f} GB/s")
        print(f"{'k':>6}{'lanes ms':>10}{'GEMM ms':>10}{'floor ms':>10}{'best/floor':>12}")
        default = kmeans.GEMM_MIN_CENTRE_VALUES
        try:
            for k in args.n_clusters:
                centers = X[:: n // k][:k].copy()
                buffers = (
                    np.full(n, -1, np.int32),
                    np.zeros((2, k, d), np.int64),
                    np.zeros((2, k), np.int64),
                    np.zeros(1, np.int64),
                )
                step = functools.partial(_every_row_moves, X, weight, centers, scales, *buffers)
                times = []
                for crossover in (k * d + 1, k * d):  # lanes, then GEMM
                    kmeans.GEMM_MIN_CENTRE_VALUES = crossover
                    times.append(_best(step, args.repeats))
                floor = floor_seconds(n, d, k, dtype.itemsize, peak, bandwidth)
                print(
                    f"{k:>6}{times[0] * 1e3:>10.2f}{times[1] * 1e3:>10.2f}{floor * 1e3:>10.2f}"
                    f"{min(times) / floor:>12.2f}"
                )
        finally:
            kmeans.GEMM_MIN_CENTRE_VALUES = default
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
