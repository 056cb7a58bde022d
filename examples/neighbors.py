"""
k-nearest neighbours with a distributed index
=============================================

Every rank keeps its own rows of the digits training set as its part of the
index (nothing is gathered) and its own test rows as queries.
:class:`~mlmpi.neighbors.KNeighborsClassifier` passes blocks of the index
round the ring of ranks, so every query finds its neighbours among all the
ranks' rows, ties going to the smaller global row. Neighbour indices are
global. Rank 0 prints whether the neighbour distances and predictions equal
scikit-learn's (the digits have many equal distances, which scikit-learn
does not order by row), and draws the global confusion matrix
(:func:`mlmpi.metrics.confusion_matrix`, collective).

Run it with::

    mpiexec -n 2 python examples/neighbors.py
    python examples/neighbors.py              # one process, same answer
"""

import matplotlib
import numpy as np
import sklearn.neighbors as sk
from sklearn.datasets import load_digits

from mlmpi import KNeighborsClassifier, get_comms
from mlmpi.datasets import shard
from mlmpi.metrics import confusion_matrix

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X_all, y_all = load_digits(return_X_y=True)
X_train, y_train, X_test, y_test = X_all[:1400], y_all[:1400], X_all[1400:], y_all[1400:]
X, y = shard(X_train, comms), shard(y_train, comms)  # this rank's part of the index
queries, truth = shard(X_test, comms), shard(y_test, comms)  # and its queries

model = KNeighborsClassifier(n_neighbors=5).fit(X, y)  # collective
distances, neighbours = model.kneighbors(queries)  # collective; indices are global rows
predicted = model.predict(queries)  # collective (labels come from their ranks)
accuracy = model.score(queries, truth)  # collective: global accuracy
matrix = confusion_matrix(truth, predicted)  # collective: every rank's rows
distances, predicted = comms.allgatherv(distances), comms.allgatherv(predicted)

if comms.rank == 0:
    reference = sk.KNeighborsClassifier(n_neighbors=5).fit(X_train, y_train)
    print(f"ranks: {comms.size}")
    print(
        f"accuracy {accuracy:.4f}  scikit-learn {reference.score(X_test, y_test):.4f}  "
        f"same neighbour distances: {np.allclose(distances, reference.kneighbors(X_test)[0])}  "
        f"same predictions: {np.array_equal(predicted, reference.predict(X_test))}"
    )
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 4), layout="constrained")
    ax.imshow(matrix, cmap="Blues")
    ax.set(xlabel="predicted digit", ylabel="true digit", title="Global confusion matrix")
    ax.set_xticks(range(10))
    ax.set_yticks(range(10))
