"""Per-call cost of the collective contract (the call agreement at the entry
of every collective method), in alternating blocks in one job.

For a small ``KMeans.score`` and ``KNeighborsClassifier.predict`` it times
the public method (agreement + body) and its undecorated body alone
(``method.__wrapped__``, no agreement), and the agreement alone
(``agree_on_call`` with the method's descriptor); medians of the blocks.

Usage::

    mpiexec -n 2 python benchmarks/bench_contract.py [--calls 300] [--blocks 5]
    python benchmarks/bench_contract.py                 # 1 rank: no agreement at all
"""

import argparse
import os
import statistics
import time

import numpy as np

import mlmpi
from mlmpi._contract import Call, agree_on_call, input_schema, parameter_facts
from mlmpi.comms._method import in_collective_method


def _per_call(fn, calls, comms):
    comms.barrier()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=5)
    args = parser.parse_args()
    comms = mlmpi.get_comms()
    load = os.getloadavg()
    rng = np.random.default_rng(comms.rank)
    X = rng.normal(size=(200, 8))
    y = (X[:, 0] > 0).astype(int)
    km = mlmpi.KMeans(8, n_init=1, random_state=0).fit(X)
    knn = mlmpi.KNeighborsClassifier(5).fit(X, y)
    cases = {
        "KMeans.score": (lambda: km.score(X), lambda: type(km).score.__wrapped__(km, X), km),
        "KNeighborsClassifier.predict": (
            lambda: knn.predict(X[:20]),
            lambda: type(knn).predict.__wrapped__(knn, X[:20]),
            knn,
        ),
    }
    for name, (public, body, estimator) in cases.items():
        call = Call(name, 1, parameter_facts(estimator), (), input_schema(X))
        times = {"public": [], "body": [], "agreement": []}
        for _ in range(args.blocks):
            times["public"].append(_per_call(public, args.calls, comms))
            with in_collective_method(name):  # as inside the method, without the agreement
                times["body"].append(_per_call(body, args.calls, comms))
            times["agreement"].append(
                _per_call(lambda call=call: agree_on_call(comms, call), args.calls, comms)
            )
        if comms.rank == 0:
            med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
            print(
                f"{name:30s} ranks={comms.size}  public {med['public']:8.1f} us  "
                f"body {med['body']:8.1f} us  agreement alone {med['agreement']:6.1f} us  "
                f"overhead {med['public'] - med['body']:+7.1f} us/call"
            )
    if comms.rank == 0:
        print(
            f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f} "
            f"({os.cpu_count()} cores)"
        )


if __name__ == "__main__":
    main()
