"""mlmpi on one GPU against the device's own peaks, scikit-learn and a hand-written GPU peer.

One command on a GPU machine (one process, one GPU, CuPy arrays)::

    python benchmarks/bench_gpu.py --out benchmarks/results/gpu.json

Cases (the sizes of issue 9; ``--scale`` divides every row count):

- KMeans 10M×64, k=256 and 1M×32, k=16, float32: seconds per Lloyd iteration
  (a fit from a fixed init with ``tol=0``, divided by ``n_iter_``; it includes
  the final E-step and inertia);
- kNN: 1M×64 index, 100k queries, k=10 (skipped while ``mlmpi.neighbors`` is missing);
- PCA 10M×128 float32, 16 components: ``covariance_eigh`` and ``randomized``;
- LinearRegression 10M×128 float32;
- LogisticRegression 1M×128 float32, 10 classes (L-BFGS).

For each: achieved GFLOP/s and GB/s from the FLOPs and bytes the algorithm
must move at least (the accounting functions below), and the floor
``max(FLOPs / peak FLOP/s, bytes / peak B/s)`` from peaks MEASURED in the same
run (a large FP32 GEMM, a large device-to-device copy); ``x_floor`` is time ÷
floor. In the same run: scikit-learn on all the host's cores (``speedup``) and
a PyTorch implementation a user would write by hand (``vs_peer`` = mlmpi ÷
peer, lower is better).

The data are drawn on the host (NumPy, fixed seeds) and copied to the device,
so that ``--cpu`` times mlmpi's CPU path on the same data: run under
``mpiexec -n 2``, each rank fits its half of the rows as NumPy arrays (the
KMeans and kNN cases; ``benchmarks/gpu_check.sh`` runs it on the GPU
machine's host, and its summary gives the GPU's speed-up over it).

Without a GPU it exits with a message. ``--dry-run`` runs every step with tiny
sizes on NumPy and CPU PyTorch, to check the script itself (numbers meaningless).
Results print as a table; ``--out PATH`` also writes them as JSON, after each
case, so a run stopped at its time limit keeps the cases it finished.
"""

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

# -- accounting: the least work each case must do (unit-tested on the CPU) ----


def kmeans_iteration_cost(n, d, k, itemsize):
    """One Lloyd iteration: the distance GEMM (2·n·k·d FLOPs), one read of X."""
    return 2 * n * k * d, n * d * itemsize


def knn_cost(n_index, n_queries, d, itemsize):
    """Brute-force kNN: every query against every index row, both read once."""
    return 2 * n_index * n_queries * d, (n_index + n_queries) * d * itemsize


def gram_cost(n, d, itemsize):
    """``XᵀX`` as a GEMM (covariance PCA, normal equations), one read of X."""
    return 2 * n * d * d, n * d * itemsize


def randomized_svd_cost(n, d, n_components, n_oversamples, n_iter, itemsize):
    """Halko's range finder: ``2·n_iter + 2`` passes over X, each a GEMM with
    ``n_components + n_oversamples`` columns."""
    passes = 2 * n_iter + 2
    width = n_components + n_oversamples
    return 2 * n * d * width * passes, n * d * itemsize * passes


def logistic_cost(n, d, n_classes, n_evaluations, itemsize):
    """Per loss/gradient evaluation: ``X·W`` and ``Xᵀ·G`` (2 GEMMs), two reads of X."""
    return 4 * n * d * n_classes * n_evaluations, 2 * n * d * itemsize * n_evaluations


def floor_seconds(flops, nbytes, peaks):
    """The hardware floor: the slower of compute and memory at the measured peaks."""
    return max(flops / peaks["flops_per_s"], nbytes / peaks["bytes_per_s"])


def summarize(seconds, flops, nbytes, peaks):
    """Achieved rates, the floor and time ÷ floor of one timed run."""
    floor = floor_seconds(flops, nbytes, peaks)
    return {
        "seconds": seconds,
        "gflops": flops / seconds / 1e9,
        "gbps": nbytes / seconds / 1e9,
        "floor_s": floor,
        "x_floor": seconds / floor,
    }


# -- the device (CuPy on a GPU; NumPy and CPU torch for --dry-run) -------------


class Device:
    """Array namespace, synchronization and torch device of the run.

    ``mode``: ``"gpu"`` (CuPy), ``"dry-run"`` (NumPy, one process) or ``"cpu"``
    (NumPy under the comms of ``mpiexec``: each rank holds its part of the rows).
    """

    def __init__(self, mode):
        self.mode = mode
        self.comms = None
        if mode != "gpu":
            self.xp, self.torch_device = np, "cpu"
            self.name = f"CPU ({platform.processor() or 'host'})"
            if mode == "dry-run":
                self.name += ", dry run"
            else:
                from mlmpi import get_comms

                self.comms = get_comms()
                self.name += f", mlmpi on NumPy at {self.comms.size} ranks"
            return
        reason = gpu_unavailable_reason()
        if reason is not None:
            sys.exit(
                f"bench_gpu.py needs CuPy and a CUDA GPU: {reason}. "
                "(Use --dry-run to check the script on a CPU.)"
            )
        import cupy

        self.xp = cupy
        self.name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
        self.torch_device = "cuda"

    def sync(self):
        if self.comms is not None:
            self.comms.barrier()
        if self.mode == "gpu":
            self.xp.cuda.Device().synchronize()
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()

    def rows(self, host):
        """The run's copy of host rows: on the device, or this rank's part of them."""
        if self.comms is not None:
            from mlmpi.datasets import shard

            return shard(host, self.comms)
        return self.xp.asarray(host)

    def host(self, x):
        return x if self.xp is np else self.xp.asnumpy(x)

    def time(self, fn, repeats, warm_up=True):
        """Median seconds of ``repeats`` runs (after one untimed run if ``warm_up``);
        the last result."""
        if warm_up:
            fn()
            self.sync()
        runs, result = [], None
        for _ in range(repeats):
            self.sync()
            start = time.perf_counter()
            result = fn()
            self.sync()
            runs.append(time.perf_counter() - start)
        return statistics.median(runs), result


def gpu_unavailable_reason():
    """Why this process cannot benchmark a GPU, or None."""
    try:
        import cupy
    except ImportError as exc:
        return f"CuPy does not import ({exc})"
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return "no CUDA device is visible"
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        return f"CUDA reports no usable device ({exc})"
    return None


def measure_peaks(device, gemm_n, copy_bytes, repeats):
    """FP32 GEMM FLOP/s and device-to-device copy bytes/s (read + write) of this device."""
    xp = device.xp
    a = xp.ones((gemm_n, gemm_n), dtype=xp.float32)
    b = xp.ones((gemm_n, gemm_n), dtype=xp.float32)
    out = xp.empty((gemm_n, gemm_n), dtype=xp.float32)
    gemm_s, _ = device.time(lambda: xp.matmul(a, b, out=out), repeats)
    src = xp.ones(copy_bytes // 4, dtype=xp.float32)
    dst = xp.empty_like(src)
    copy_s, _ = device.time(lambda: dst.__setitem__(Ellipsis, src), repeats)
    return {
        "flops_per_s": 2 * gemm_n**3 / gemm_s,
        "bytes_per_s": 2 * src.nbytes / copy_s,
        "gemm_n": gemm_n,
        "copy_bytes": src.nbytes,
    }


# -- the cases ----------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def _host_data(n, d, seed):
    return np.random.default_rng(seed).standard_normal((n, d), dtype=np.float32)


def _data(device, n, d, seed=0):
    """float32 standard normal ``(n, d)`` drawn on the host, where the benchmark runs."""
    return device.rows(_host_data(n, d, seed))


def _torch(device, x):
    import torch

    return torch.as_tensor(x, device=device.torch_device)


def _cpu_row(seconds, unit, **extra):
    """A ``--cpu`` result: mlmpi's CPU path alone, timed once."""
    return {"seconds": seconds, "unit": unit, **extra}


def case_kmeans(device, args, n, d, k, max_iter):
    import mlmpi

    host = _host_data(n, d, 0)
    X, centers = device.rows(host), device.xp.asarray(host[:k])
    estimator = lambda: mlmpi.KMeans(k, init=centers, n_init=1, max_iter=max_iter, tol=0.0)  # noqa: E731
    if device.mode == "cpu":
        estimator().fit(X[: 4 * k])  # compiles the kernels, untimed
    seconds, fitted = device.time(
        lambda: estimator().fit(X), args.repeats, warm_up=device.mode != "cpu"
    )
    per_iter = seconds / fitted.n_iter_
    if device.mode == "cpu":
        return _cpu_row(per_iter, "s/iteration", n_iter=int(fitted.n_iter_))

    import torch
    from sklearn.cluster import KMeans as SKKMeans

    sk_s, sk = _time_host(
        lambda: SKKMeans(k, init=host[:k], n_init=1, max_iter=max_iter, tol=0.0).fit(host),
        args.host_repeats,
    )
    Xt, Ct = _torch(device, X), _torch(device, centers)

    def torch_lloyd():
        c = Ct.clone()
        for _ in range(max_iter):
            labels = torch.argmin(torch.cdist(Xt, c), dim=1)
            sums = torch.zeros_like(c).index_add_(0, labels, Xt)
            counts = torch.bincount(labels, minlength=k).clamp_min(1).to(Xt.dtype)
            c = sums / counts[:, None]
        return c

    peer_s, _ = device.time(torch_lloyd, args.repeats)
    flops, nbytes = kmeans_iteration_cost(n, d, k, 4)
    return {
        **summarize(per_iter, flops, nbytes, args.peaks),
        "unit": "s/iteration",
        "n_iter": int(fitted.n_iter_),
        "sklearn_s": sk_s / sk.n_iter_,
        "peer": "torch cdist/argmin/index_add Lloyd loop",
        "peer_s": peer_s / max_iter,
        "target_x_floor": 2.0 if (d, k) == (64, 256) else None,
        "target_speedup": 50.0,
    }


def case_knn(device, args, n_index, n_queries, d, k):
    from mlmpi.neighbors import NearestNeighbors

    index_host, queries_host = _host_data(n_index, d, 0), _host_data(n_queries, d, 1)
    index, queries = device.rows(index_host), device.rows(queries_host)
    search = lambda i, q: NearestNeighbors(n_neighbors=k).fit(i).kneighbors(q)  # noqa: E731
    if device.mode == "cpu":
        search(index[:1000], queries[:100])  # compiles the kernels, untimed
    seconds, _ = device.time(
        lambda: search(index, queries), args.repeats, warm_up=device.mode != "cpu"
    )
    if device.mode == "cpu":
        return _cpu_row(seconds, "s (fit + kneighbors)")

    import torch
    from sklearn.neighbors import NearestNeighbors as SKNearestNeighbors

    sk_s, _ = _time_host(
        lambda: (
            SKNearestNeighbors(n_neighbors=k, algorithm="brute", n_jobs=-1)
            .fit(index_host)
            .kneighbors(queries_host)
        ),
        args.host_repeats,
    )
    It, Qt = _torch(device, index), _torch(device, queries)

    def torch_knn():
        parts = [torch.cdist(q, It).topk(k, dim=1, largest=False) for q in Qt.split(2048)]
        return torch.cat([p.values for p in parts]), torch.cat([p.indices for p in parts])

    peer_s, _ = device.time(torch_knn, args.repeats)
    flops, nbytes = knn_cost(n_index, n_queries, d, 4)
    return {
        **summarize(seconds, flops, nbytes, args.peaks),
        "unit": "s (fit + kneighbors)",
        "sklearn_s": sk_s,
        "peer": "torch cdist + topk per 2048 queries",
        "peer_s": peer_s,
        "target_speedup": 50.0,
    }


def case_pca(device, args, n, d, n_components, solver):
    import torch
    from sklearn.decomposition import PCA as SKPCA

    import mlmpi.decomposition as dec

    X_host = _host_data(n, d, 0)
    X = device.rows(X_host)
    params = dict(n_components=n_components, svd_solver=solver, random_state=0)
    seconds, fitted = device.time(lambda: dec.PCA(**params).fit(X), args.repeats)
    sk_s, _ = _time_host(lambda: SKPCA(**params).fit(X_host), args.host_repeats)
    Xt = _torch(device, X)
    if solver == "covariance_eigh":
        flops, nbytes = gram_cost(n, d, 4)

        def peer():
            Xc = Xt - Xt.mean(dim=0)
            return torch.linalg.eigh(Xc.T @ Xc / (n - 1))

        peer_name = "torch centred XᵀX + eigh"
    else:
        n_iter = fitted.iterated_power
        if n_iter == "auto":  # scikit-learn's rule
            n_iter = 7 if n_components < 0.1 * min(n, d) else 4
        flops, nbytes = randomized_svd_cost(n, d, n_components, fitted.n_oversamples, n_iter, 4)

        def peer():
            return torch.svd_lowrank(
                Xt,
                q=n_components + fitted.n_oversamples,
                niter=n_iter,
                M=Xt.mean(dim=0, keepdim=True),
            )

        peer_name = "torch.svd_lowrank (centred)"
    peer_s, _ = device.time(peer, args.repeats)
    return {
        **summarize(seconds, flops, nbytes, args.peaks),
        "unit": "s (fit)",
        "sklearn_s": sk_s,
        "peer": peer_name,
        "peer_s": peer_s,
        "target_speedup": 10.0,
    }


def case_linear_regression(device, args, n, d):
    import torch
    from sklearn.linear_model import LinearRegression as SKLinearRegression

    import mlmpi.linear_model as lin

    X = _data(device, n, d)
    y = X @ device.xp.arange(1, d + 1, dtype=device.xp.float32) / d + _data(device, n, 1, 2)[:, 0]
    seconds, _ = device.time(lambda: lin.LinearRegression().fit(X, y), args.repeats)
    X_host, y_host = device.host(X), device.host(y)
    sk_s, _ = _time_host(lambda: SKLinearRegression().fit(X_host, y_host), args.host_repeats)
    Xt, yt = _torch(device, X), _torch(device, y)

    def peer():
        mean = Xt.mean(dim=0)
        return torch.linalg.lstsq(Xt - mean, (yt - yt.mean())[:, None]).solution

    peer_s, _ = device.time(peer, args.repeats)
    flops, nbytes = gram_cost(n, d, 4)
    return {
        **summarize(seconds, flops, nbytes, args.peaks),
        "unit": "s (fit)",
        "sklearn_s": sk_s,
        "peer": "torch.linalg.lstsq (centred)",
        "peer_s": peer_s,
        "target_speedup": 10.0,
    }


def case_logistic_regression(device, args, n, d, n_classes):
    import torch
    from sklearn.linear_model import LogisticRegression as SKLogisticRegression

    import mlmpi.linear_model as lin

    X = _data(device, n, d)
    W = _data(device, d, n_classes, 3)
    y = (X @ W + 2 * _data(device, n, n_classes, 4)).argmax(axis=1)
    params = dict(C=1.0, max_iter=100, tol=1e-4)
    seconds, fitted = device.time(lambda: lin.LogisticRegression(**params).fit(X, y), args.repeats)
    n_iter = int(fitted.n_iter_[0])
    X_host, y_host = device.host(X), device.host(y)
    sk_s, _ = _time_host(
        lambda: SKLogisticRegression(**params).fit(X_host, y_host), args.host_repeats
    )
    Xt, yt = _torch(device, X), _torch(device, y).long()

    def peer():
        coef = torch.zeros((d, n_classes), device=Xt.device, requires_grad=True)
        bias = torch.zeros(n_classes, device=Xt.device, requires_grad=True)
        optimizer = torch.optim.LBFGS([coef, bias], max_iter=n_iter, line_search_fn="strong_wolfe")

        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(Xt @ coef + bias, yt, reduction="sum")
            loss = loss + 0.5 * (coef * coef).sum()  # C = 1
            loss.backward()
            return loss

        optimizer.step(closure)
        return coef

    peer_s, _ = device.time(peer, args.repeats)
    flops, nbytes = logistic_cost(n, d, n_classes, n_iter, 4)
    return {
        **summarize(seconds, flops, nbytes, args.peaks),
        "unit": "s (fit)",
        "n_iter": n_iter,
        "sklearn_s": sk_s,
        "peer": f"torch LBFGS, {n_iter} iterations",
        "peer_s": peer_s,
        "target_speedup": 10.0,
    }


def _time_host(fn, repeats):
    """Median seconds of a host (scikit-learn) run, with all the host's cores."""
    runs, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), result


def _rows(n):
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def cases(args):
    """``(name, function, arguments)`` of every case, row counts divided by ``--scale``."""
    big, mid, queries = 10_000_000 // args.scale, 1_000_000 // args.scale, 100_000 // args.scale
    r = _rows
    return [
        (f"KMeans {r(big)}×64 k=256 float32", case_kmeans, (big, 64, 256, args.kmeans_iter)),
        (f"KMeans {r(mid)}×32 k=16 float32", case_kmeans, (mid, 32, 16, args.kmeans_iter)),
        (f"kNN {r(mid)}×64 index, {r(queries)} queries, k=10", case_knn, (mid, queries, 64, 10)),
        (f"PCA {r(big)}×128 covariance_eigh", case_pca, (big, 128, 16, "covariance_eigh")),
        (f"PCA {r(big)}×128 randomized", case_pca, (big, 128, 16, "randomized")),
        (f"LinearRegression {r(big)}×128", case_linear_regression, (big, 128)),
        (f"LogisticRegression {r(mid)}×128, 10 classes", case_logistic_regression, (mid, 128, 10)),
    ]


def finish(row):
    """Speed-ups, ratio to the peer and whether the issue's targets are met."""
    if "skipped" in row:
        return row
    row["speedup"] = row["sklearn_s"] / row["seconds"]
    row["vs_peer"] = row["seconds"] / row["peer_s"]
    met = row["speedup"] >= row["target_speedup"] and row["vs_peer"] <= 1.0
    if row.get("target_x_floor") is not None:
        met = met and row["x_floor"] <= row["target_x_floor"]
    row["targets_met"] = bool(met)
    return row


CPU_CASES = (case_kmeans, case_knn)  # the cases ``--cpu`` times


def table(rows):
    head = (
        "| case | mlmpi s | unit | GFLOP/s | GB/s | × floor | scikit-learn s | speed-up "
        "| peer s | mlmpi ÷ peer | targets |"
    )
    lines = [head, "|" + " --- |" * 11]
    for name, row in rows:
        if "skipped" in row:
            lines.append(f"| {name} | skipped: {row['skipped']} |" + " |" * 9)
            continue
        if "x_floor" not in row:  # --cpu: mlmpi's CPU path alone
            lines.append(f"| {name} | {row['seconds']:.4g} | {row['unit']} |" + " |" * 8)
            continue
        lines.append(
            f"| {name} | {row['seconds']:.4g} | {row['unit']} | {row['gflops']:.1f} "
            f"| {row['gbps']:.1f} "
            f"| {row['x_floor']:.2f} | {row['sklearn_s']:.4g} | {row['speedup']:.1f}× "
            f"| {row['peer_s']:.4g} | {row['vs_peer']:.2f} "
            f"| {'met' if row['targets_met'] else 'missed'} |"
        )
    return "\n".join(lines)


def write(path, args, device, rows):
    """The results so far as JSON (rewritten after each case)."""
    result = {
        "device": device.name,
        "mode": device.mode,
        "ranks": 1 if device.comms is None else device.comms.size,
        "dry_run": args.dry_run,
        "peaks": args.peaks,
        "host_cores": os.cpu_count(),
        "scale": args.scale,
        "repeats": args.repeats,
        "host_repeats": args.host_repeats,
        "kmeans_iter": args.kmeans_iter,
        "rows": [{"case": name, **row} for name, row in rows],
    }
    path.write_text(json.dumps(result, indent=1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed runs per measurement (median)"
    )
    parser.add_argument(
        "--host-repeats", type=int, default=1, help="timed runs of each scikit-learn fit"
    )
    parser.add_argument("--scale", type=int, default=1, help="divide every row count by this")
    parser.add_argument("--kmeans-iter", type=int, default=10, help="Lloyd iterations timed")
    parser.add_argument("--only", default=None, help="run only the cases whose name contains this")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time mlmpi's CPU path on NumPy rows (KMeans and kNN; run under mpiexec)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="tiny sizes on NumPy and CPU torch: checks the script, not the GPU",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="also write the results as JSON here"
    )
    args = parser.parse_args(argv)
    if args.dry_run:
        args.scale, args.repeats, args.kmeans_iter = max(args.scale, 5000), 1, 2
    device = Device("cpu" if args.cpu else "dry-run" if args.dry_run else "gpu")
    lead = device.comms is None or device.comms.rank == 0
    args.peaks = None
    if device.mode != "cpu":
        gemm_n, copy_bytes = (256, 1 << 20) if args.dry_run else (8192, 1 << 30)
        args.peaks = measure_peaks(device, gemm_n, copy_bytes, args.repeats)
        print(
            f"device: {device.name}; measured FP32 GEMM "
            f"{args.peaks['flops_per_s'] / 1e12:.2f} TFLOP/s, "
            f"D2D copy {args.peaks['bytes_per_s'] / 1e9:.0f} GB/s; host cores: {os.cpu_count()}"
        )
    rows = []
    for name, run, case_args in cases(args):
        if args.only and args.only.lower() not in name.lower():
            continue
        if device.mode == "cpu" and run not in CPU_CASES:
            continue
        row = run(device, args, *case_args)
        rows.append((name, row if device.mode == "cpu" else finish(row)))
        if lead:
            print(f"{name}: done", flush=True)
            if args.out is not None:
                write(args.out, args, device, rows)
    if lead:
        print(f"{device.name}\n{table(rows)}")
    return rows


if __name__ == "__main__":
    main()
