"""
UMAP, then HDBSCAN, on the digits
=================================

Each rank holds its shard of the 1,797 8x8 digit images (shipped with
scikit-learn, no download). mlmpi's :class:`~mlmpi.manifold.UMAP` embeds
them in two dimensions, collectively: each rank moves its own images, and
the embedding has the same bits at any number of ranks. mlmpi's
:class:`~mlmpi.cluster.HDBSCAN` then clusters the embedding, new images go
into it with ``transform``, and rank 0 compares the embedding with one
process's, scores it (trustworthiness, agreement of the clusters with the
digits) and draws it.

Run it with::

    mpiexec -n 4 python examples/umap_hdbscan_digits.py
    python examples/umap_hdbscan_digits.py              # one process, same embedding
"""

import matplotlib
import numpy as np
from sklearn.datasets import load_digits
from sklearn.manifold import trustworthiness

from mlmpi import HDBSCAN, UMAP, get_comms
from mlmpi.comms import SelfComms
from mlmpi.datasets import shard
from mlmpi.metrics import adjusted_rand_score

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
images, digits = load_digits(return_X_y=True)
fitted, new = images[:1500], images[1500:]  # embed 1,500 images, then add the rest
X, y = shard(fitted, comms), shard(digits[:1500], comms)

reducer = UMAP(n_neighbors=15, min_dist=0.0, random_state=0)
embedding = reducer.fit_transform(X)  # collective
labels = HDBSCAN(min_cluster_size=30, copy=True).fit(embedding).labels_  # collective
clustered = labels >= 0
agreement = adjusted_rand_score(y[clustered], labels[clustered])  # collective
n_clusters = int(comms.allreduce(np.asarray(labels.max(initial=-1)), op="max")) + 1
new_embedding = reducer.transform(shard(new, comms))  # collective

# Gather the small embeddings for the comparison and the figure.
all_embedding = comms.allgatherv(embedding)
all_labels = comms.allgatherv(labels)
all_new = comms.allgatherv(new_embedding)

if comms.rank == 0:
    alone = reducer  # one process: the fit above
    if comms.size > 1:
        alone = UMAP(n_neighbors=15, min_dist=0.0, random_state=0, comms=SelfComms()).fit(fitted)
    print(f"ranks: {comms.size}   images: {all_labels.size} fitted, {all_new.shape[0]} new")
    print(f"same embedding as one process: {np.array_equal(all_embedding, alone.embedding_)}")
    alone_new = alone.transform(new) if comms.size > 1 else all_new
    print(f"same new rows as one process: {np.array_equal(all_new, alone_new)}")
    trust = trustworthiness(fitted, all_embedding, n_neighbors=10)
    print(f"trustworthiness (10 neighbours): {trust:.4f}")
    print(f"clusters: {n_clusters}   noise: {int((all_labels == -1).sum())}")
    print(f"adjusted Rand index with the digits (clustered images): {agreement:.3f}")
    import matplotlib.pyplot as plt

    noisy = all_labels == -1
    fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
    ax.scatter(*all_embedding[noisy].T, c="lightgrey", s=4, label="noise")
    ax.scatter(*all_embedding[~noisy].T, c=all_labels[~noisy], s=4, cmap="tab10")
    ax.scatter(*all_new.T, c="black", marker="x", s=10, label="new (transform)")
    ax.set(title=f"mlmpi UMAP and HDBSCAN on {comms.size} rank(s): {n_clusters} clusters")
    ax.legend(loc="best", markerscale=2)
