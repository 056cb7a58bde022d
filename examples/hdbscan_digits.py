"""
HDBSCAN on image embeddings
===========================

Each rank holds its shard of the 1,797 8x8 digit images (shipped with
scikit-learn, no download). mlmpi's :class:`~mlmpi.decomposition.PCA` embeds
them in 12 dimensions and :class:`~mlmpi.cluster.HDBSCAN` clusters the
embeddings, both collectively: the minimum spanning tree is built across the
ranks, and each rank receives the labels and membership strengths of its own
images. Rank 0 compares the labels with scikit-learn's HDBSCAN on the
gathered embeddings and with the true digits, and draws the clusters in the
first two components.

Run it with::

    mpiexec -n 4 python examples/hdbscan_digits.py
    python examples/hdbscan_digits.py              # one process, same answer
"""

import matplotlib
import numpy as np
from sklearn.cluster import HDBSCAN as SKHDBSCAN
from sklearn.datasets import load_digits

from mlmpi import HDBSCAN, PCA, get_comms
from mlmpi.datasets import shard
from mlmpi.metrics import adjusted_rand_score

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
images, digits = load_digits(return_X_y=True)
X, y = shard(images, comms), shard(digits, comms)

embedding = PCA(n_components=12, random_state=0).fit_transform(X)  # collective
model = HDBSCAN(min_cluster_size=20, min_samples=5, copy=True).fit(embedding)  # collective
labels = model.labels_  # this rank's images
clustered = labels >= 0
agreement = adjusted_rand_score(y[clustered], labels[clustered])  # collective

n_clusters = int(comms.allreduce(np.asarray(labels.max(initial=-1)), op="max")) + 1
noise = int(comms.allreduce(np.asarray((labels == -1).sum())))

# Gather the small embedding on every rank for the comparison and the figure.
all_labels = comms.allgatherv(labels)
all_embedding = comms.allgatherv(embedding)
all_strengths = comms.allgatherv(model.probabilities_)

if comms.rank == 0:
    reference = SKHDBSCAN(min_cluster_size=20, min_samples=5, copy=True).fit(all_embedding)
    print(f"ranks: {comms.size}   images: {all_labels.size}")
    print(f"clusters: {n_clusters}   noise: {noise} ({noise / all_labels.size:.0%})")
    print(f"adjusted Rand index with the digits (clustered images): {agreement:.3f}")
    print(f"same labels as scikit-learn: {np.array_equal(all_labels, reference.labels_)}")
    print(f"same membership strengths: {np.array_equal(all_strengths, reference.probabilities_)}")
    import matplotlib.pyplot as plt

    noisy = all_labels == -1
    fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
    ax.scatter(*all_embedding[noisy, :2].T, c="lightgrey", s=4, label="noise")
    ax.scatter(
        *all_embedding[~noisy, :2].T,
        c=all_labels[~noisy],
        s=4 + 12 * all_strengths[~noisy],
        cmap="tab20",
    )
    ax.set(
        title=f"mlmpi HDBSCAN on {comms.size} rank(s): {n_clusters} clusters",
        xlabel="first component",
        ylabel="second component",
    )
    ax.legend(loc="best", markerscale=3)
