"""
t-SNE, then HDBSCAN, on the digits
==================================

Each rank holds its shard of the 1,797 8x8 digit images (shipped with
scikit-learn, no download). mlmpi's :class:`~mlmpi.manifold.TSNE` embeds
them in two dimensions, collectively: each rank moves its own images, and
the embedding has the same bits at any number of ranks. mlmpi's
:class:`~mlmpi.cluster.HDBSCAN` then clusters the embedding, and rank 0
compares it with one process's embedding of all the images, scores it
(trustworthiness, agreement of the clusters with the digits) and draws it.

Run it with::

    mpiexec -n 4 python examples/tsne_hdbscan_digits.py
    python examples/tsne_hdbscan_digits.py              # one process, same embedding
"""

import matplotlib
import numpy as np
from sklearn.datasets import load_digits
from sklearn.manifold import trustworthiness

from mlmpi import HDBSCAN, TSNE, get_comms
from mlmpi.comms import SelfComms
from mlmpi.datasets import shard
from mlmpi.metrics import adjusted_rand_score

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
images, digits = load_digits(return_X_y=True)
X, y = shard(images, comms), shard(digits, comms)

embedding = TSNE(perplexity=30, random_state=0).fit_transform(X)  # collective
labels = HDBSCAN(min_cluster_size=30, copy=True).fit(embedding).labels_  # collective
clustered = labels >= 0
agreement = adjusted_rand_score(y[clustered], labels[clustered])  # collective
n_clusters = int(comms.allreduce(np.asarray(labels.max(initial=-1)), op="max")) + 1

# Gather the small embedding for the comparison and the figure.
all_embedding = comms.allgatherv(embedding)
all_labels = comms.allgatherv(labels)

if comms.rank == 0:
    alone = all_embedding  # one process: the fit above
    if comms.size > 1:
        alone = TSNE(perplexity=30, random_state=0, comms=SelfComms()).fit_transform(images)
    print(f"ranks: {comms.size}   images: {all_labels.size}")
    print(f"same embedding as one process: {np.array_equal(all_embedding, alone)}")
    trust = trustworthiness(images, all_embedding, n_neighbors=10)
    print(f"trustworthiness (10 neighbours): {trust:.4f}")
    print(f"clusters: {n_clusters}   noise: {int((all_labels == -1).sum())}")
    print(f"adjusted Rand index with the digits (clustered images): {agreement:.3f}")
    import matplotlib.pyplot as plt

    noisy = all_labels == -1
    fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
    ax.scatter(*all_embedding[noisy].T, c="lightgrey", s=4, label="noise")
    ax.scatter(*all_embedding[~noisy].T, c=all_labels[~noisy], s=4, cmap="tab10")
    ax.set(title=f"mlmpi t-SNE and HDBSCAN on {comms.size} rank(s): {n_clusters} clusters")
    ax.legend(loc="best", markerscale=3)
