"""
KMeans on rows spread over ranks
================================

Every rank generates only its own rows of the same global dataset (200,000
x 16, 8 blobs), fits mlmpi's :class:`~mlmpi.cluster.KMeans` collectively, and
rank 0 prints the result next to scikit-learn's fit of the gathered data and
draws the first two features coloured by cluster.

Run it with::

    mpiexec -n 4 python examples/kmeans.py
    python examples/kmeans.py                 # one process, same answer
"""

import time

import matplotlib
import numpy as np
from sklearn.cluster import KMeans as SKKMeans
from sklearn.metrics import adjusted_rand_score

from mlmpi import KMeans, get_comms
from mlmpi.datasets import make_blobs

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X, y = make_blobs(200_000, 16, centers=8, cluster_std=3.0, random_state=0, comms=comms)

# The first fit in a process also loads the compiled (numba) kernels (~0.5 s),
# so the second fit is timed. Speed against scikit-learn is measured in
# benchmarks/, never while other MPI ranks are alive (they busy-poll).
KMeans(n_clusters=8, random_state=0).fit(X)
comms.barrier()
start = time.perf_counter()
km = KMeans(n_clusters=8, random_state=0).fit(X)  # collective
elapsed = time.perf_counter() - start

# Gather labels and data on every rank for the comparison (small dataset).
labels = comms.allgatherv(km.labels_)
truth = comms.allgatherv(y)
rows = comms.allgather(np.asarray(X.shape[0]))
X_all = comms.allgatherv(X)

if comms.rank == 0:
    ref = SKKMeans(n_clusters=8, random_state=0).fit(X_all)
    print(f"ranks: {comms.size}   rows per rank: {rows.tolist()}")
    print(
        f"mlmpi        inertia {km.inertia_:.6g}  n_iter {km.n_iter_:3d}  "
        f"time {elapsed:.3f} s  ARI {adjusted_rand_score(truth, labels):.4f}"
    )
    print(
        f"scikit-learn inertia {ref.inertia_:.6g}  n_iter {ref.n_iter_:3d}  "
        f"(on the gathered data)  ARI {adjusted_rand_score(truth, ref.labels_):.4f}"
    )
    import matplotlib.pyplot as plt

    every = slice(None, None, 40)  # 5,000 of the 200,000 points
    fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
    ax.scatter(X_all[every, 0], X_all[every, 1], c=labels[every], s=3, cmap="tab10")
    ax.scatter(*km.cluster_centers_[:, :2].T, c="black", marker="x", s=60, label="centres")
    ax.set(xlabel="feature 0", ylabel="feature 1", title=f"mlmpi KMeans on {comms.size} rank(s)")
    ax.legend(loc="best")
