"""A rank that ends or fails before the others' first collective call, even
before it imports mlmpi. The job must end within seconds with one clear
message, never wait in ``MPI_Init``.

Run as ``mpiexec -n N python [-m mlmpi] early_end.py MODE``; the last rank is
the odd one out. Modes:

- ``before_any_comms``: the last rank imports mlmpi and ends without touching
  a comms; the others fit a StandardScaler (their first collective call).
- ``raise_before_import``: the last rank raises before ``import mlmpi`` (run
  with ``python -m mlmpi``, which imports mlmpi first).
- ``exit_before_import``: the last rank ends before ``import mlmpi`` (also
  with ``python -m mlmpi``); the others fit.
"""

import os
import sys
import time

mode = sys.argv[1]
rank, size = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])
last = rank == size - 1
print(f"rank {rank}: start {time.time():.3f}", flush=True)
if last and mode == "raise_before_import":
    raise RuntimeError(f"rank {rank} fails before importing mlmpi")
if last and mode == "exit_before_import":
    sys.exit(0)

import numpy as np  # noqa: E402

import mlmpi.preprocessing  # noqa: E402

if not last:
    X = np.random.default_rng(rank).normal(size=(20, 3))
    mlmpi.preprocessing.StandardScaler().fit(X)
print(f"rank {rank}: done", flush=True)
