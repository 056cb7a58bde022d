"""Model quality with per-row draws: the forest and boosting fitted by mlmpi
above the replay limit (per-row bootstraps, splits and subsamples) against
scikit-learn's on the same rows, over several seeds.

The driver writes one classification problem (``--n-train`` training rows,
``--n-test`` held-out rows), then for each seed fits scikit-learn's
RandomForestClassifier and HistGradientBoostingClassifier (early stopping
on) in this process, and mlmpi's under ``mpiexec -n --ranks`` (each rank
reads its own rows of the ``.npy`` files; the fits make per-row draws, as
``auto`` does above a million rows, forced for smaller smoke runs). Both
score the held-out rows: accuracy and log-loss. Per-row draws are draws
from scikit-learn's distributions, not its numbers: the means over the
seeds should agree within two standard errors (of the difference of the
means), which the table checks.

    python benchmarks/bench_draws_quality.py --out benchmarks/results/draws_quality.json
    python benchmarks/bench_draws_quality.py --n-train 20000 --seeds 2     # smoke run

``--models`` fits some of the models, ``--first-seed`` starts the seeds
further on (more seeds, independent of an earlier run), and ``--columns``
fits some of the columns:

- ``per-row``: mlmpi with per-row draws;
- ``replayed``: mlmpi with scikit-learn's draws (the same trees otherwise:
  what the draws change; for boosting, scikit-learn's model bit for bit);
- ``scikit-learn``: scikit-learn's own fit;
- ``uniform-split`` (boosting only): scikit-learn fitted on a stratified
  validation split drawn apart from it (NumPy's generator seeded with the
  seed, a uniform choice of scikit-learn's per-class counts; ``X_val`` and
  ``y_val`` passed to ``fit``): a uniform split that is neither
  scikit-learn's nor mlmpi's, to tell the draws' distribution from the
  particular numbers of either.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver  # noqa: E402

#: Column keys (``--columns``), their titles, and mlmpi's draw policy for its columns.
COLUMNS = {
    "per-row": "mlmpi per-row",
    "replayed": "mlmpi scikit-learn's draws",
    "scikit-learn": "scikit-learn",
    "uniform-split": "scikit-learn, uniform split",
}
POLICIES = {"per-row": "per-row", "replayed": "scikit-learn"}
MODELS = {
    "RandomForestClassifier": {"n_estimators": 10, "max_depth": 8},
    "HistGradientBoostingClassifier": {"max_iter": 30, "early_stopping": True},
}


def _scores(model, X_test, y_test):
    from sklearn.metrics import accuracy_score, log_loss

    proba = np.asarray(model.predict_proba(X_test))
    return {
        "accuracy": float(accuracy_score(y_test, model.classes_[proba.argmax(axis=1)])),
        "log_loss": float(log_loss(y_test, proba, labels=model.classes_)),
    }


def worker(args):
    import mlmpi
    from mlmpi import get_comms
    from mlmpi.io import load_npy
    from mlmpi.random import draws

    comms = get_comms()
    data = Path(args.data)
    X, y = load_npy(data / "X.npy"), load_npy(data / "y.npy")
    X_test, y_test = np.load(data / "X_test.npy"), np.load(data / "y_test.npy")
    metrics = {}
    for name in args.models:
        params = MODELS[name]
        for policy in (POLICIES[c] for c in args.columns if c in POLICIES):
            model = getattr(mlmpi, name)(**params, random_state=args.seed)
            start = time.perf_counter()
            with draws(policy):
                model.fit(X, y)
            seconds = time.perf_counter() - start
            assert model.random_draws_ == policy
            metrics[f"{name}|{policy}"] = {**_scores(model, X_test, y_test), "seconds": seconds}
    _driver.worker_report(args.report, metrics, comms)


def _summary(values):
    values = np.asarray(values)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def _gap(ours, theirs):
    """|difference of the means| over two standard errors of the difference."""
    two_se = 2 * np.hypot(ours[1], theirs[1])
    return abs(ours[0] - theirs[0]) / two_se if two_se else float("inf")


def _uniform_split(y, seed, validation_fraction=0.1):
    """Training and validation rows of a stratified split drawn apart from
    scikit-learn's and mlmpi's: per class, scikit-learn's validation count
    (``_approximate_mode``, as its split takes it) chosen uniformly by NumPy's
    generator seeded with ``seed``; both in row order."""
    from mlmpi._sklearn_compat import _approximate_mode, _validate_shuffle_split

    counts = np.bincount(y)
    n_train, n_test = _validate_shuffle_split(y.shape[0], validation_fraction, None)
    rng = np.random.RandomState(seed)  # breaks ties between classes' shares
    n_train_i = _approximate_mode(counts, n_train, rng)
    n_test_i = _approximate_mode(counts - n_train_i, n_test, rng)
    generator = np.random.default_rng(seed)
    validation = np.zeros(y.shape[0], dtype=bool)
    for label, size in enumerate(n_test_i):
        validation[generator.choice(np.flatnonzero(y == label), size, replace=False)] = True
    return np.flatnonzero(~validation), np.flatnonzero(validation)


def _scikit_learn_fits(name, column, seed, X, y, X_test, y_test):
    """scikit-learn's fit of ``column`` (``scikit-learn`` or ``uniform-split``)."""
    import sklearn.ensemble as sk

    model = getattr(sk, name)(**MODELS[name], random_state=seed)
    start = time.perf_counter()
    if column == "scikit-learn":
        model.fit(X, y)
    else:
        train, validation = _uniform_split(y, seed)
        model.fit(X[train], y[train], X_val=X[validation], y_val=y[validation])
    seconds = time.perf_counter() - start
    return {**_scores(model, X_test, y_test), "seconds": seconds}


def _applies(name, column):
    return column != "uniform-split" or name == "HistGradientBoostingClassifier"


def driver(args):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        args.n_train + args.n_test,
        n_features=10,
        n_informative=6,
        n_classes=3,
        flip_y=0.05,
        random_state=0,
    )
    keys = [key for key in COLUMNS if key in args.columns]
    runs = {name: {COLUMNS[key]: [] for key in keys if _applies(name, key)} for name in args.models}
    X_train, y_train = X[: args.n_train], y[: args.n_train]
    X_test, y_test = X[args.n_train :], y[args.n_train :]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        np.save(data / "X.npy", X_train)
        np.save(data / "y.npy", y_train)
        np.save(data / "X_test.npy", X_test)
        np.save(data / "y_test.npy", y_test)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            mine = {}
            if any(key in POLICIES for key in keys):
                argv = ["--data", str(data), "--seed", str(seed), "--models", *args.models]
                argv += ["--columns", *keys]
                mine = _driver.run_worker(Path(__file__), args.ranks, argv, args.timeout)
            for name in args.models:
                for key in keys:
                    if key in POLICIES:
                        run = mine[f"{name}|{POLICIES[key]}"]
                    elif _applies(name, key):
                        run = _scikit_learn_fits(name, key, seed, X_train, y_train, X_test, y_test)
                    else:
                        continue
                    runs[name][COLUMNS[key]].append(run)
    rows = []
    print(
        f"\nbench_draws_quality: {args.n_train} training rows, {args.n_test} held out, "
        f"seeds {args.first_seed} to {args.first_seed + args.seeds - 1}, "
        f"mlmpi at {args.ranks} ranks"
    )
    titles = [COLUMNS[key] for key in keys]
    header = f"{'model':<32}{'metric':<10}" + "".join(f"{t:>30}" for t in titles)
    header += "".join(f"{'vs ' + key:>20}" for key in keys[1:])
    print(header)
    print("-" * len(header))
    for name in args.models:
        columns = list(runs[name])
        for metric in ("accuracy", "log_loss"):
            means = {c: _summary([r[metric] for r in runs[name][c]]) for c in columns}
            gaps = {other: _gap(means[columns[0]], means[other]) for other in columns[1:]}
            cells = "".join(
                f"{means[t][0]:>21.4f} ± {means[t][1]:.4f}" if t in means else f"{'':>30}"
                for t in titles
            )
            gap_cells = "".join(
                f"{gaps[t]:>20.2f}" if t in gaps else f"{'':>20}" for t in titles[1:]
            )
            print(f"{name:<32}{metric:<10}{cells}{gap_cells}")
            rows.append({"model": name, "metric": metric, **means, "gaps": gaps})
    print(
        "mean ± standard error over the seeds; the last columns: |difference of the means| "
        "over two standard errors of it (within two standard errors when at most 1), the "
        "first column against each other one. mlmpi with scikit-learn's draws grows the "
        "same trees otherwise (what the draws change); scikit-learn's forest splits on exact "
        "thresholds, mlmpi's on max_bins bins."
    )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        names = ("n_train", "n_test", "seeds", "first_seed", "ranks", "models", "columns")
        config = {k: getattr(args, k) for k in names}
        config["machine"] = _driver.machine()
        results = {"benchmark": "draws_quality", "config": config, "rows": rows, "runs": runs}
        args.out.write_text(json.dumps(results, indent=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-train", type=int, default=2_000_000)
    parser.add_argument("--n-test", type=int, default=200_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--columns", nargs="+", choices=list(COLUMNS), default=list(COLUMNS))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=3600)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    (worker if args.worker else driver)(args)


if __name__ == "__main__":
    main()
