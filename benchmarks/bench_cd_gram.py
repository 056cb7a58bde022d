"""The elastic-net coordinate descent on a Gram matrix: mlmpi's numba kernel
against the scikit-learn Cython solver it replaced (one process, one thread).

    python benchmarks/bench_cd_gram.py --n-features 100 500 --n-alphas 20 --repeats 5

Each case solves a Lasso path (``n_alphas`` log-spaced alphas, warm starts,
``tol=1e-4``, cyclic) on ``Q = XᵀX``, ``q = Xᵀy`` of a random problem, as
``ElasticNet``/``Lasso`` do on the allreduced statistics. Reported: the
median path time of each, their ratio, and the largest coefficient
difference (relative to the largest coefficient).
"""

import argparse
import os
import statistics
import time

import numpy as np


def _problem(n_features, n_samples=2000):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_samples, n_features))
    X[:, 1::2] += 0.5 * X[:, ::2][:, : n_features // 2]  # correlated features: more sweeps
    y = X @ (rng.normal(size=n_features) * (rng.random(n_features) < 0.2))
    y += rng.normal(size=n_samples)
    gram, xty = np.ascontiguousarray(X.T @ X), X.T @ y
    alpha_max = np.abs(xty).max()
    return gram, xty, float(y @ y), alpha_max * np.logspace(-0.1, -3, args.n_alphas)


def _path_mlmpi(gram, xty, y_norm2, alphas):
    from mlmpi.kernels import kernels_for

    kernels = kernels_for("coordinate_descent", gram)
    w, coefs = np.zeros(gram.shape[0]), []
    for alpha in alphas:
        kernels.enet_gram(w, alpha, 0.0, gram, xty, y_norm2, 1000, 1e-4, 0, False, False)
        coefs.append(w.copy())
    return np.array(coefs)


def _path_sklearn(gram, xty, y_norm2, alphas):
    from sklearn.linear_model._cd_fast import enet_coordinate_descent_gram

    rng = np.random.RandomState(0)
    y_norm = np.array([np.sqrt(y_norm2)])
    w, coefs = np.zeros(gram.shape[0]), []
    for alpha in alphas:
        w, *_ = enet_coordinate_descent_gram(
            w, alpha, 0.0, gram, xty, y_norm, 1000, 1e-4, rng, False, False, True
        )
        coefs.append(np.array(w))
    return np.array(coefs)


def _median_seconds(run, *problem):
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = run(*problem)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    from threadpoolctl import threadpool_limits

    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    print(f"{'n_features':>10}{'mlmpi s':>12}{'sklearn s':>12}{'ratio':>8}{'max coef diff':>15}")
    with threadpool_limits(limits=1):
        for d in args.n_features:
            problem = _problem(d)
            _path_mlmpi(*problem)  # compile (or load the cached kernel)
            ours, ours_coefs = _median_seconds(_path_mlmpi, *problem)
            ref, ref_coefs = _median_seconds(_path_sklearn, *problem)
            diff = np.abs(ours_coefs - ref_coefs).max() / np.abs(ref_coefs).max()
            print(f"{d:>10}{ours:>12.4g}{ref:>12.4g}{ours / ref:>8.3f}{diff:>15.3g}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-features", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--n-alphas", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    main()
