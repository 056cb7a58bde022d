"""mlmpi HistGradientBoostingClassifier on R ranks vs scikit-learn's (R threads),
XGBoost ``hist`` and LightGBM (R threads): fit time, accuracy, log-loss, and
whether the peers' distributed models change with the number of workers.

    python benchmarks/bench_hgb.py --ranks 2 --repeats 3 --out benchmarks/results/hgb.json
    python benchmarks/bench_hgb.py --ranks 2 --repeats 1 --size 0.01   # smoke

Every estimator fits the same synthetic data (scikit-learn's
``make_classification``, ``--n-samples`` training rows of ``--n-features``
features and ``--n-test`` held-out rows) with the same shape of model:
``--max-iter`` iterations of trees of at most 31 leaves and 20 rows per leaf,
learning rate 0.1, 255 bins, no early stopping. Two tasks: binary and
``--n-classes`` classes. mlmpi's ranks each take their rows of the data; the
peers are timed by this driver process while no MPI rank is alive, in
alternation with the mlmpi jobs (``benchmarks/_driver.py``).

Reported per task: fit seconds (medians), the ratio mlmpi / scikit-learn,
held-out accuracy and log-loss of every estimator, the fraction of held-out
labels on which mlmpi and scikit-learn agree, and the fractions of mlmpi's
fit spent inside collectives and, of that, waiting for slower ranks (the
slowest rank's).

The worker count: XGBoost (its ``RabitTracker`` and ``CommunicatorContext``)
and LightGBM (``tree_learner="data"`` over local sockets) are also trained
with their own collective launchers on ``--ranks`` processes of this machine,
each process holding its block of the training rows (the first
``--dist-samples`` of them), and their held-out labels are compared with the
same library's one-worker model on the same rows. mlmpi's model is the same
at every rank count by construction (tests/mpi_cases/hgb_cases.py).
"""

import argparse
import multiprocessing
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _driver

LEAVES, MIN_LEAF, LEARNING_RATE, BINS = 31, 20, 0.1, 255


def _data(args, n_classes):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        args.n_samples + args.n_test,
        args.n_features,
        n_informative=args.n_features // 2,
        n_classes=n_classes,
        random_state=0,
    )
    n = args.n_samples
    return X[:n], y[:n], X[n:], y[n:]


def _hgb_params(args):
    return {"max_iter": args.max_iter, "early_stopping": False, "random_state": 0}


def _proba_metrics(proba, y_test):
    from sklearn.metrics import log_loss

    return {
        "accuracy": float(np.mean(proba.argmax(axis=1) == y_test)),
        "log_loss": float(log_loss(y_test, proba, labels=np.arange(proba.shape[1]))),
    }


# -- mlmpi (the worker, under mpiexec) ----------------------------------------------------


def worker(args):
    from mlmpi import HistGradientBoostingClassifier, get_comms
    from mlmpi.datasets import shard
    from mlmpi.metrics import accuracy_score, log_loss

    comms = get_comms()
    X, y, X_test, y_test = _data(args, args.task_classes)
    X, y = shard(X, comms), shard(y, comms)
    X_test, y_test = shard(X_test, comms), shard(y_test, comms)
    HistGradientBoostingClassifier(max_iter=2).fit(X[:2000], y[:2000])  # compile, warm caches
    model, metrics, _ = _driver.timed_collective(
        lambda: HistGradientBoostingClassifier(**_hgb_params(args)).fit(X, y), comms
    )
    proba = model.predict_proba(X_test)
    labels = model.predict(X_test)
    _driver.worker_report(
        args.report,
        metrics
        | {
            "accuracy": accuracy_score(y_test, labels),
            "log_loss": log_loss(y_test, proba, labels=model.classes_),
            "n_iter": model.n_iter_,
            "labels": comms.allgatherv(np.ascontiguousarray(labels)).tolist(),
        },
        comms,
    )


# -- the peers, timed by the driver ----------------------------------------------------


def _sklearn(args, X, y, X_test, y_test):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=args.ranks, user_api="openmp"):
        start = time.perf_counter()
        model = HistGradientBoostingClassifier(**_hgb_params(args)).fit(X, y)
        seconds = time.perf_counter() - start
        proba = model.predict_proba(X_test)
    return {"seconds": seconds, "labels": proba.argmax(axis=1), **_proba_metrics(proba, y_test)}


def _xgboost_params(args, n_classes):
    params = {
        "tree_method": "hist",
        "max_bin": BINS + 1,
        "grow_policy": "lossguide",
        "max_leaves": LEAVES,
        "max_depth": 0,
        "min_child_weight": 1e-3,
        "eta": LEARNING_RATE,
        "lambda": 0.0,
        "nthread": args.ranks,
    }
    if n_classes > 2:
        return params | {"objective": "multi:softprob", "num_class": n_classes}
    return params | {"objective": "binary:logistic"}


def _class_columns(proba, n_classes):
    """A peer's predicted probabilities as one column per class (a binary
    booster predicts the positive class only)."""
    return proba if n_classes > 2 else np.c_[1 - proba, proba]


def _xgb_proba(booster, X_test, n_classes):
    import xgboost

    return _class_columns(booster.predict(xgboost.DMatrix(X_test)), n_classes)


def _timed(train, proba_of, y_test):
    """Seconds of ``train()`` and the held-out metrics of what it trained."""
    start = time.perf_counter()
    booster = train()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, **_proba_metrics(proba_of(booster), y_test)}


def _xgboost(args, X, y, X_test, y_test, n_classes):
    import xgboost

    params = _xgboost_params(args, n_classes)
    return _timed(
        lambda: xgboost.train(params, xgboost.DMatrix(X, label=y), args.max_iter),
        lambda booster: _xgb_proba(booster, X_test, n_classes),
        y_test,
    )


def _lightgbm_params(args, n_classes):
    params = {
        "boosting_type": "gbdt",
        "num_leaves": LEAVES,
        "min_data_in_leaf": MIN_LEAF,
        "learning_rate": LEARNING_RATE,
        "max_bin": BINS,
        "num_threads": args.ranks,
        "deterministic": True,
        "verbose": -1,
    }
    if n_classes > 2:
        return params | {"objective": "multiclass", "num_class": n_classes}
    return params | {"objective": "binary"}


def _lgb_proba(booster, X_test, n_classes):
    return _class_columns(booster.predict(X_test), n_classes)


def _lightgbm(args, X, y, X_test, y_test, n_classes):
    import lightgbm

    params = _lightgbm_params(args, n_classes)
    return _timed(
        lambda: lightgbm.train(params, lightgbm.Dataset(X, label=y), args.max_iter),
        lambda booster: _lgb_proba(booster, X_test, n_classes),
        y_test,
    )


# -- the peers' own distributed training (one process per worker, this machine) ---------


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _spawn(target, per_worker):
    """``target(*arguments, queue)`` in one spawned process per worker (the
    arguments of each in ``per_worker``); returns what worker 0 puts in ``queue``."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [context.Process(target=target, args=(*a, queue)) for a in per_worker]
    for process in processes:
        process.start()
    result = queue.get(timeout=3600)
    for process in processes:
        process.join()
    return result


def _blocks(n, workers):
    bounds = np.linspace(0, n, workers + 1).astype(int)
    return list(zip(bounds[:-1], bounds[1:]))


def _xgboost_worker(rank, tracker_args, path, block, params, rounds, n_classes, queue):
    import xgboost

    data = np.load(path)
    X, y, X_test = data["X"][block[0] : block[1]], data["y"][block[0] : block[1]], data["X_test"]
    with xgboost.collective.CommunicatorContext(**tracker_args):
        train = xgboost.DMatrix(X, label=y)
        test = xgboost.DMatrix(X_test)  # building a DMatrix is collective: every worker does
        booster = xgboost.train(params | {"nthread": 1}, train, rounds)
        proba = booster.predict(test)
    if rank == 0:
        queue.put(_class_columns(proba, n_classes))


def _xgboost_distributed(args, path, n_rows, n_classes):
    from xgboost.tracker import RabitTracker

    tracker = RabitTracker(host_ip="127.0.0.1", n_workers=args.ranks)
    tracker.start()
    tracker_args = tracker.worker_args()
    params = _xgboost_params(args, n_classes)
    proba = _spawn(
        _xgboost_worker,
        [
            (rank, tracker_args, path, block, params, args.max_iter, n_classes)
            for rank, block in enumerate(_blocks(n_rows, args.ranks))
        ],
    )
    tracker.wait_for()
    return proba


def _lightgbm_worker(rank, machines, port, path, block, params, rounds, n_classes, queue):
    import lightgbm

    data = np.load(path)
    X, y, X_test = data["X"][block[0] : block[1]], data["y"][block[0] : block[1]], data["X_test"]
    params = params | {
        "tree_learner": "data",
        "num_machines": len(machines.split(",")),
        "machines": machines,
        "local_listen_port": port,
        "num_threads": 1,
        "pre_partition": True,
    }
    booster = lightgbm.train(params, lightgbm.Dataset(X, label=y), rounds)
    if rank == 0:
        queue.put(_lgb_proba(booster, X_test, n_classes))


def _lightgbm_distributed(args, path, n_rows, n_classes):
    ports = _free_ports(args.ranks)
    machines = ",".join(f"127.0.0.1:{port}" for port in ports)
    params = _lightgbm_params(args, n_classes)
    return _spawn(
        _lightgbm_worker,
        [
            (rank, machines, port, path, block, params, args.max_iter, n_classes)
            for rank, (port, block) in enumerate(zip(ports, _blocks(n_rows, args.ranks)))
        ],
    )


def _worker_count_effect(args, X, y, X_test, n_classes):
    """Held-out labels that change between the one-worker model and the
    ``--ranks``-worker model of XGBoost and of LightGBM (same rows)."""
    import lightgbm
    import xgboost

    n = min(args.dist_samples, X.shape[0])
    one_worker = {
        "xgboost": _xgb_proba(
            xgboost.train(
                _xgboost_params(args, n_classes) | {"nthread": 1},
                xgboost.DMatrix(X[:n], label=y[:n]),
                args.max_iter,
            ),
            X_test,
            n_classes,
        ),
        "lightgbm": _lgb_proba(
            lightgbm.train(
                _lightgbm_params(args, n_classes) | {"num_threads": 1},
                lightgbm.Dataset(X[:n], label=y[:n]),
                args.max_iter,
            ),
            X_test,
            n_classes,
        ),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.npz"
        np.savez(path, X=X[:n], y=y[:n], X_test=X_test)
        workers = {
            "xgboost": _xgboost_distributed(args, path, n, n_classes),
            "lightgbm": _lightgbm_distributed(args, path, n, n_classes),
        }
    return {
        f"{name}_labels_changed": int(
            np.sum(one_worker[name].argmax(axis=1) != workers[name].argmax(axis=1))
        )
        for name in one_worker
    }


# -- the driver ---------------------------------------------------------------------------


def _task(args, n_classes):
    X, y, X_test, y_test = _data(args, n_classes)
    sklearn_runs = []

    def run_peer():
        sklearn_runs.append(_sklearn(args, X, y, X_test, y_test))
        return {"seconds": sklearn_runs[-1]["seconds"]}

    argv = [
        "--n-samples",
        args.n_samples,
        "--n-test",
        args.n_test,
        "--n-features",
        args.n_features,
        "--max-iter",
        args.max_iter,
        "--task-classes",
        n_classes,
    ]
    row = _driver.compare(
        f"{'binary' if n_classes == 2 else f'{n_classes} classes'} {args.n_samples}x"
        f"{args.n_features}",
        script=Path(__file__).resolve(),
        ranks=args.ranks,
        repeats=args.repeats,
        run_peer=run_peer,
        worker_argv=[str(a) for a in argv],
    )
    ours = np.asarray(row["mlmpi_runs"][-1].pop("labels"))
    for run in row["mlmpi_runs"][:-1]:
        run.pop("labels")
    reference = sklearn_runs[-1]
    row["agreement_with_sklearn"] = float(np.mean(ours == reference["labels"]))
    row["peer_accuracy"] = reference["accuracy"]
    row["peer_log_loss"] = reference["log_loss"]
    for peer_run in row["peer_runs"]:
        peer_run.pop("labels", None)
    for name, fit in (("xgboost", _xgboost), ("lightgbm", _lightgbm)):
        runs = [fit(args, X, y, X_test, y_test, n_classes) for _ in range(args.repeats)]
        row[f"{name}_s"] = statistics.median(r["seconds"] for r in runs)
        row[f"{name}_accuracy"] = runs[-1]["accuracy"]
        row[f"{name}_log_loss"] = runs[-1]["log_loss"]
    if not args.skip_workers:
        row |= _worker_count_effect(args, X, y, X_test, n_classes)
    return row


def driver(args):
    rows = [_task(args, 2), _task(args, args.n_classes)]
    _driver.report(
        "hgb",
        rows,
        vars(args) | {"metric": "fit seconds"},
        out=args.out,
        peer="scikit-learn",
        extra_columns=_driver.COLLECTIVE_COLUMNS
        + [
            ("accuracy", "mlmpi_accuracy"),
            ("sk accuracy", "peer_accuracy"),
            ("log loss", "mlmpi_log_loss"),
            ("sk log loss", "peer_log_loss"),
            ("agree w/ sk", "agreement_with_sklearn"),
            ("xgboost s", "xgboost_s"),
            ("xgb acc", "xgboost_accuracy"),
            ("xgb logloss", "xgboost_log_loss"),
            ("lightgbm s", "lightgbm_s"),
            ("lgbm acc", "lightgbm_accuracy"),
            ("lgbm logloss", "lightgbm_log_loss"),
            ("xgb changed", "xgboost_labels_changed"),
            ("lgbm changed", "lightgbm_labels_changed"),
        ],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-test", type=int, default=100_000)
    parser.add_argument("--n-features", type=int, default=30)
    parser.add_argument("--n-classes", type=int, default=5, help="classes of the second task")
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument(
        "--dist-samples",
        type=int,
        default=200_000,
        help="training rows of the peers' one- vs multi-worker comparison",
    )
    parser.add_argument("--skip-workers", action="store_true", help="no worker-count comparison")
    parser.add_argument("--task-classes", type=int, default=2, help=argparse.SUPPRESS)
    _driver.run_main(
        parser, driver=driver, worker=worker, sized=("n_samples", "n_test", "dist_samples")
    )


if __name__ == "__main__":
    main()
