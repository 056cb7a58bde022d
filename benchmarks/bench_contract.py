"""Per-call cost of the collective contract (the agreement at the entry of every
collective call), in alternating blocks in one job.

For a small ``KMeans.score``, ``KNeighborsClassifier.predict``, the metric
``accuracy_score`` and a raw ``comms.allreduce`` it times the public call
(agreement + body), its body alone (the undecorated function inside the
call's context: no agreement) and the agreement alone; medians of the
blocks. From ``mlmpi.comms.profile`` it counts, per agreeing call, the
contract's collectives and the bytes each rank sends in them (the issue's
bound: at most 2 collectives and 64 bytes), and gives the size of the full
descriptor, which the ranks exchange only when their digests differ.

Usage::

    mpiexec -n 2 python benchmarks/bench_contract.py [--calls 300] [--blocks 5] \\
        [--out benchmarks/results/contract.json]
    python benchmarks/bench_contract.py                 # 1 rank: no agreement at all
"""

import argparse
import inspect
import json
import os
import pickle
import statistics
import time

import numpy as np

import mlmpi
from mlmpi._contract import CallDetails, input_schema, parameter_facts
from mlmpi.comms import ReduceOp, profile
from mlmpi.comms._agreement import agree_on_call
from mlmpi.comms._calls import Arguments, Call
from mlmpi.comms._method import in_collective_method
from mlmpi.metrics import accuracy_score


def _per_call(fn, calls, comms):
    comms.barrier()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def _cases(comms, X, y):
    """``{name: (public, body, call)}``: the call, its body without the
    agreement, and the descriptor the ranks agree on."""
    km = mlmpi.KMeans(8, n_init=1, random_state=0).fit(X)
    knn = mlmpi.KNeighborsClassifier(5).fit(X, y)
    ones = np.ones(8)

    def method(estimator, name, *args):
        signature = inspect.signature(getattr(type(estimator), name).__wrapped__)
        arguments = tuple((p, "data") for p in list(signature.parameters)[1:] if p not in ("self",))
        details = CallDetails(parameter_facts(estimator), arguments, input_schema(args[0]))
        return (
            lambda: getattr(estimator, name)(*args),
            lambda: getattr(type(estimator), name).__wrapped__(estimator, *args),
            Call(f"{type(estimator).__name__}.{name}", 1, details),
        )

    metric = CallDetails((), (("normalize", "True"),), None)
    raw = Arguments((("op", "sum"), ("root", None), ("shape", (8,)), ("dtype", "<f8")))
    return {
        "KMeans.score": method(km, "score", X),
        "KNeighborsClassifier.predict": method(knn, "predict", X[:20]),
        "accuracy_score": (
            lambda: accuracy_score(y, y),
            lambda: accuracy_score.__wrapped__(y, y),
            Call("accuracy_score", 1, metric),
        ),
        "Comms.allreduce": (
            lambda: comms.allreduce(ones),
            lambda: comms._allreduce(ones, ReduceOp.SUM),
            Call("Comms.allreduce", 1, raw),
        ),
    }


def _contract_traffic(public, comms):
    """Collectives and bytes this rank sent in the contract's agreement of one call."""
    with profile() as prof:
        public()
    agreements = [(op, nbytes) for op, nbytes, *_ in prof.events if "agree" in op]
    return len(agreements), sum(nbytes for _, nbytes in agreements)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--out", default=None, help="write the results as JSON (rank 0)")
    args = parser.parse_args()
    comms = mlmpi.get_comms()
    load = os.getloadavg()
    rng = np.random.default_rng(comms.rank)
    X = rng.normal(size=(200, 8))
    y = (X[:, 0] > 0).astype(int)
    rows = []
    for name, (public, body, call) in _cases(comms, X, y).items():
        times = {"public": [], "body": [], "agreement": []}
        for _ in range(args.blocks):
            times["public"].append(_per_call(public, args.calls, comms))
            with in_collective_method(name):  # as inside the call, without the agreement
                times["body"].append(_per_call(body, args.calls, comms))
            times["agreement"].append(
                _per_call(lambda call=call: agree_on_call(comms, call), args.calls, comms)
            )
        collectives, sent = _contract_traffic(public, comms)
        med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        rows.append(
            {
                "call": name,
                "ranks": comms.size,
                "public_us": round(med["public"], 1),
                "body_us": round(med["body"], 1),
                "agreement_us": round(med["agreement"], 1),
                "overhead_us": round(med["public"] - med["body"], 1),
                "contract_collectives": collectives,
                "contract_bytes_per_rank": sent,
                "descriptor_bytes_on_mismatch": len(pickle.dumps(call)),
            }
        )
    if comms.rank != 0:
        return
    print(
        f"{'call':30s} {'public us':>10s} {'body us':>9s} {'agree us':>9s} "
        f"{'overhead':>9s} {'colls':>6s} {'bytes':>6s} {'descr. B':>9s}"
    )
    for r in rows:
        print(
            f"{r['call']:30s} {r['public_us']:10.1f} {r['body_us']:9.1f} "
            f"{r['agreement_us']:9.1f} {r['overhead_us']:+9.1f} {r['contract_collectives']:6d} "
            f"{r['contract_bytes_per_rank']:6d} {r['descriptor_bytes_on_mismatch']:9d}"
        )
    after = os.getloadavg()[0]
    print(f"load average before {load[0]:.2f}, after {after:.2f} ({os.cpu_count()} cores)")
    if args.out:
        config = {"calls": args.calls, "blocks": args.blocks, "load": [load[0], after]}
        with open(args.out, "w") as f:
            json.dump({"config": config, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
