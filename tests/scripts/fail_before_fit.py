"""One rank fails in its own data loading, after ``import mlmpi`` and before
any MPI call, while the others load their data for ``SECONDS`` and then fit
(``fit``) or exit without ever using MPI (``nompi``). The whole job must end
within seconds, whatever the others are doing.

Run as ``mpiexec -n N python fail_before_fit.py fit|nompi SECONDS``.
"""

import os
import sys
import time

import numpy as np

import mlmpi

rank = int(os.environ.get("PMI_RANK", 0))
if rank == 1:
    np.load("/nonexistent/shard-1.npy")  # FileNotFoundError
time.sleep(float(sys.argv[2]))
print(f"rank {rank}: loaded", flush=True)
if sys.argv[1] == "fit":
    X = np.random.default_rng(rank).normal(size=(50, 2))
    mlmpi.KMeans(2, random_state=0).fit(X)
    print(f"rank {rank}: fit returned", flush=True)
