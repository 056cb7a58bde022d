"""
Exact DBSCAN without gathering the data
=======================================

Every rank generates only its own rows of the same global dataset, fits
mlmpi's :class:`~mlmpi.cluster.DBSCAN` collectively (nothing is gathered to
fit), and rank 0 compares the global labels with scikit-learn's fit of the
gathered data and draws the clusters.

Run it with::

    mpiexec -n 4 python examples/dbscan.py
    python examples/dbscan.py                 # one process, same answer
"""

import matplotlib
import numpy as np
from sklearn.cluster import DBSCAN as SKDBSCAN

from mlmpi import DBSCAN, get_comms
from mlmpi.datasets import make_blobs

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X, _ = make_blobs(
    20_000, 2, centers=12, cluster_std=0.6, center_box=(-15.0, 15.0), random_state=0, comms=comms
)

model = DBSCAN(eps=0.15, min_samples=8).fit(X)  # collective
n_core = comms.allreduce(np.asarray(model.core_sample_indices_.size))

# Gather labels and data on every rank for the comparison (small dataset).
labels = comms.allgatherv(model.labels_)
X_all = comms.allgatherv(X)
rows = comms.allgather(np.asarray(X.shape[0]))

if comms.rank == 0:
    reference = SKDBSCAN(eps=0.15, min_samples=8).fit(X_all)
    print(f"ranks: {comms.size}   rows per rank: {rows.tolist()}")
    print(f"mlmpi        clusters {labels.max() + 1}  noise {(labels == -1).sum()}  core {n_core}")
    print(
        f"scikit-learn clusters {reference.labels_.max() + 1}  noise "
        f"{(reference.labels_ == -1).sum()}  core {reference.core_sample_indices_.size}"
    )
    print(f"same labels as scikit-learn: {np.array_equal(labels, reference.labels_)}")
    import matplotlib.pyplot as plt

    noise = labels == -1
    fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
    ax.scatter(*X_all[noise].T, c="lightgrey", s=1, label="noise")
    ax.scatter(*X_all[~noise].T, c=labels[~noise], s=1, cmap="tab20")
    ax.set(title=f"mlmpi DBSCAN on {comms.size} rank(s): {labels.max() + 1} clusters")
    ax.legend(loc="best", markerscale=8)
