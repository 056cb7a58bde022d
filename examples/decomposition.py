"""
PCA and TruncatedSVD
====================

Every rank takes only its own rows of the digits dataset.
:class:`~mlmpi.decomposition.PCA` fits the global covariance (one allreduce
of the moments, then an eigendecomposition that is the same on every rank);
:class:`~mlmpi.decomposition.TruncatedSVD` runs the randomized range finder
with one allreduce per power iteration. ``transform`` is local. Rank 0 prints
the largest difference from scikit-learn's components and draws the global
projection (gathered with ``allgatherv``).

Run it with::

    mpiexec -n 2 python examples/decomposition.py
    python examples/decomposition.py          # one process, same answer
"""

import matplotlib
import numpy as np
import sklearn.decomposition as sk
from sklearn.datasets import load_digits

from mlmpi import PCA, TruncatedSVD, get_comms
from mlmpi.datasets import shard

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X_all, y_all = load_digits(return_X_y=True)
X, y = shard(X_all, comms), shard(y_all, comms)  # this rank's rows only

lines = []
for model, reference in (
    (PCA(n_components=2, svd_solver="covariance_eigh"), sk.PCA(n_components=2)),
    (
        TruncatedSVD(n_components=2, n_iter=10, random_state=0),
        sk.TruncatedSVD(n_components=2, n_iter=10, random_state=0),
    ),
):
    model.fit(X)  # collective
    reference.fit(X_all)
    difference = np.abs(model.components_ - reference.components_).max()
    lines.append(
        f"{type(model).__name__:<13} explained variance ratio "
        f"{np.round(model.explained_variance_ratio_, 4).tolist()}  "
        f"max component difference {difference:.1e}"
    )
    if isinstance(model, PCA):
        projection = comms.allgatherv(model.transform(X))  # collective: every rank's rows
        labels = comms.allgatherv(y)

if comms.rank == 0:
    print(f"ranks: {comms.size}")
    print("\n".join(lines))
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
    points = ax.scatter(*projection.T, c=labels, s=4, cmap="tab10")
    fig.colorbar(points, ax=ax, label="digit")
    ax.set(xlabel="component 1", ylabel="component 2", title="Digits on two PCA components")
