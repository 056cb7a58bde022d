"""mlmpi.KMeans on R ranks vs scikit-learn's KMeans with R threads.

    python benchmarks/bench_kmeans.py --ranks 2 --n-samples 1000000 \\
        --n-features 32 --n-clusters 16 --max-iter 20 --repeats 3

Both sides cluster the same global data (``mlmpi.datasets.make_blobs``:
blobs overlapping into one cloud, so that Lloyd runs all ``max_iter`` iterations
with ``tol=0``) from the same initial centres. Reported: seconds per Lloyd
iteration (fit time / n_iter_), the fit time, mlmpi's fraction of time
in communication (``mlmpi.comms.profile``), mlmpi's marginal cost of one
iteration (the difference between fits of ``max_iter`` and ``max_iter // 2``
iterations, divided by the difference: a fit's once-per-fit work -- the
validation pass, the centring copy, the last E-step and the inertia -- left
out), and the floor of one iteration on R ranks of one core each
(``benchmarks/bench_lloyd_kernel.py``):

    floor = max(2·n·k·d / peak_R, n·d·itemsize / bandwidth_R)

with ``peak_R`` the FLOP/s of R one-thread 1024³ GEMMs and ``bandwidth_R``
the bytes/s of R NumPy sums over 256 MB each, R processes measuring at the
same moment, summed: what R one-core ranks get together (cores that share
a memory bus get less than R times one core's bandwidth). The driver
measures them before the timings, while no rank is alive. The load average
is printed before and after the runs ("busy cores": the cores other
processes kept busy just before them). With scikit-learn-intelex installed
(the ``bench`` extra), its KMeans with the same parameters on R oneDAL
threads is timed in the same alternation: its seconds per iteration, whether
it fell back to scikit-learn, its inertia's relative difference to
scikit-learn's and the fraction of labels equal to scikit-learn's.
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
from bench_lloyd_kernel import concurrent_peak_and_bandwidth, floor_seconds

# Blob centres this close together make one big Gaussian cloud, on which
# Lloyd keeps moving the centres: every run does all max_iter iterations.
_BOX = 0.2


def _data(args, comms):
    from mlmpi.datasets import make_blobs

    X, _ = make_blobs(
        args.n_samples,
        args.n_features,
        centers=args.n_clusters,
        cluster_std=1.0,
        center_box=(-_BOX, _BOX),
        random_state=0,
        dtype=np.dtype(args.dtype),
        comms=comms,
    )
    return X


def _init(args):
    rng = np.random.RandomState(1)
    return rng.uniform(-_BOX, _BOX, size=(args.n_clusters, args.n_features)).astype(args.dtype)


def _params(args):
    return dict(
        n_clusters=args.n_clusters,
        init=_init(args),
        n_init=1,
        max_iter=args.max_iter,
        tol=0.0,
        algorithm="lloyd",
    )


def worker(args):
    from mlmpi import KMeans, get_comms
    from mlmpi.comms import profile

    comms = get_comms()
    X = _data(args, comms)
    KMeans(**{**_params(args), "max_iter": 2}).fit(X)  # load the compiled kernels
    fits, comm_seconds, half_fits = [], [], []
    half = {**_params(args), "max_iter": args.max_iter // 2}
    for _ in range(args.fits):
        comms.barrier()
        start = time.perf_counter()
        with profile() as prof:
            km = KMeans(**_params(args)).fit(X)
        elapsed = float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max"))
        fits.append(elapsed)
        comm_seconds.append(float(comms.allreduce(np.asarray(prof.total_seconds), op="max")))
        comms.barrier()
        start = time.perf_counter()
        km_half = KMeans(**half).fit(X)
        half_fits.append(float(comms.allreduce(np.asarray(time.perf_counter() - start), op="max")))
    best = int(np.argsort(fits)[len(fits) // 2])
    marginal = (statistics.median(fits) - statistics.median(half_fits)) / (
        km.n_iter_ - km_half.n_iter_
    )
    _driver.worker_report(
        args.report,
        {
            "seconds": fits[best] / km.n_iter_,
            "fit_s": fits[best],
            "comm_fraction": comm_seconds[best] / fits[best],
            "n_iter": km.n_iter_,
            "inertia": km.inertia_,
            "marginal_s": marginal,
        },
        comms,
    )


def driver(args):
    from sklearn.cluster import KMeans as SKKMeans
    from threadpoolctl import threadpool_limits

    from mlmpi.comms import SelfComms

    X = _data(args, SelfComms())
    rates = {p: concurrent_peak_and_bandwidth(X.dtype, p) for p in {1, args.ranks}}
    (peak, bandwidth), (peak_r, bandwidth_r) = rates[1], rates[args.ranks]
    print(
        f"one core: GEMM {peak / 1e9:.1f} GFLOP/s, sum {bandwidth / 1e9:.1f} GB/s; "
        f"{args.ranks} at once: {peak_r / 1e9:.1f} GFLOP/s, {bandwidth_r / 1e9:.1f} GB/s"
    )
    floor = floor_seconds(
        args.n_samples, args.n_features, args.n_clusters, X.itemsize, peak_r, bandwidth_r
    )

    fitted = {}

    def timed(cls, name):
        with threadpool_limits(limits=args.ranks):
            start = time.perf_counter()
            km = fitted[name] = cls(**_params(args)).fit(X)
            elapsed = time.perf_counter() - start
        return {
            "seconds": elapsed / km.n_iter_,
            "fit_s": elapsed,
            "n_iter": km.n_iter_,
            "inertia": km.inertia_,
        }

    others = {}
    if _driver.sklearnex_threads(args.ranks):
        from sklearnex.cluster import KMeans as SXKMeans

        others["sklearnex"] = lambda: _driver.sklearnex_run(lambda: timed(SXKMeans, "sklearnex"))
    load_before = os.getloadavg()
    argv = [
        "--n-samples",
        args.n_samples,
        "--n-features",
        args.n_features,
        "--n-clusters",
        args.n_clusters,
        "--max-iter",
        args.max_iter,
        "--dtype",
        args.dtype,
        "--fits",
        args.fits,
    ]
    row = _driver.compare(
        f"{args.n_samples}x{args.n_features} k={args.n_clusters} {args.dtype} R={args.ranks}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=lambda: timed(SKKMeans, "scikit-learn"),
        worker_argv=[str(a) for a in argv],
        others=others,
    )
    print(f"load average (1, 5, 15 min) before: {load_before}, after: {os.getloadavg()}")
    row["floor_s"] = floor
    row["vs_floor"] = row["mlmpi_s"] / floor
    row["marginal_vs_floor"] = row["mlmpi_marginal_s"] / floor
    row["peak_gflops_per_core"] = peak / 1e9
    row["bandwidth_gbs_per_core"] = bandwidth / 1e9
    row["peak_gflops_ranks"] = peak_r / 1e9
    row["bandwidth_gbs_ranks"] = bandwidth_r / 1e9
    row["peer_n_iter"] = statistics.median(r["n_iter"] for r in row["peer_runs"])
    row["inertia_rel_diff"] = (
        abs(row["mlmpi_runs"][0]["inertia"] - row["peer_runs"][0]["inertia"])
        / (row["peer_runs"][0]["inertia"])
    )
    if others:
        sx, sk = fitted["sklearnex"], fitted["scikit-learn"]
        row["sklearnex_n_iter"] = sx.n_iter_
        row["sklearnex_inertia_rel_diff"] = abs(sx.inertia_ - sk.inertia_) / sk.inertia_
        row["sklearnex_same_labels"] = float(np.mean(sx.labels_ == sk.labels_))
    _driver.report(
        "kmeans",
        [row],
        vars(args) | {"metric": "seconds per Lloyd iteration"},
        out=args.out,
        extra_columns=[
            ("sklearnex s", "sklearnex_s"),
            ("ratio sklearnex", "ratio_sklearnex"),
            ("comm frac", "mlmpi_comm_fraction"),
            ("floor s", "floor_s"),
            ("mlmpi/floor", "vs_floor"),
            ("step/floor", "marginal_vs_floor"),
            ("n_iter", "mlmpi_n_iter"),
            ("peer n_iter", "peer_n_iter"),
            ("inertia diff", "inertia_rel_diff"),
            ("sx fallback", "sklearnex_fallback"),
            ("sx n_iter", "sklearnex_n_iter"),
            ("sx inertia", "sklearnex_inertia_rel_diff"),
            ("sx labels", "sklearnex_same_labels"),
            ("busy cores", "load_before"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=32)
    parser.add_argument("--n-clusters", type=int, default=16)
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--fits", type=int, default=3, help="timed fits per mlmpi job (median)")
    _driver.run_main(parser, driver=driver, worker=worker)


if __name__ == "__main__":
    main()
