"""``if rank == 0: print(model.score(X, y))``: a collective method called on
rank 0 only. With ``MLMPI_TIMEOUT`` set, rank 0's watchdog must abort the
job with a message naming the public method, and write the timeline.

Run as ``mpiexec -n N python collective_on_one_rank.py KMeans|PCA|LogisticRegression``.
"""

import sys
import time

import numpy as np

import mlmpi

comms = mlmpi.get_comms()
rng = np.random.default_rng(comms.rank)
X = rng.normal(size=(40, 3))
y = (X[:, 0] > 0).astype(int)
model = getattr(mlmpi, sys.argv[1])()
model.fit(X, y)
print(f"rank {comms.rank}: fitted", flush=True)
if comms.rank == 0:
    print(model.score(X, y), flush=True)
else:
    time.sleep(60)
print(f"rank {comms.rank}: done", flush=True)
