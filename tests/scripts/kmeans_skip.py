"""Rank 1 never calls KMeans.fit: with MLMPI_TIMEOUT set, rank 0's first
collective of fit times out and aborts the job with a message naming it."""

import time

from mlmpi import KMeans, get_comms
from mlmpi.datasets import make_blobs

comms = get_comms()  # collective: every rank makes the comms
X, _ = make_blobs(500, 3, centers=3, random_state=0, comms=comms)
if comms.rank == 1:
    time.sleep(60)
else:
    KMeans(3, n_init=1, random_state=0).fit(X)
print(f"rank {comms.rank}: done", flush=True)
