"""Rank 1 raises in the middle of KMeans.fit (its kernel fails at the 3rd iteration).

The job must end (non-zero) instead of hanging rank 0 in its next collective.
"""

from mlmpi.kernels.cpu import kmeans as kernels

from mlmpi import KMeans, get_comms
from mlmpi.datasets import make_blobs

comms = get_comms()
X, _ = make_blobs(2000, 4, centers=5, cluster_std=3.0, random_state=0, comms=comms)

if comms.rank == 1:
    real_step = kernels.lloyd_step
    calls = [0]

    def failing_step(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("injected failure in the k-means kernel on rank 1")
        return real_step(*args, **kwargs)

    kernels.lloyd_step = failing_step

KMeans(5, init="random", n_init=1, tol=0.0, max_iter=50, random_state=0).fit(X)
print(f"rank {comms.rank}: fit returned", flush=True)
