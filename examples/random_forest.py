"""
A random forest on global histograms
====================================

Every rank takes only its own rows of the same global dataset and fits
mlmpi's :class:`~mlmpi.ensemble.RandomForestClassifier` collectively: each
tree level's splits come from histograms summed over the ranks, so the forest
does not depend on the number of ranks. Prediction is local. Rank 0 prints the
held-out accuracy next to scikit-learn's forest of the same size fitted on all
the rows, the top of the first tree (a scikit-learn ``DecisionTreeClassifier``
of ``estimators_``), and draws the feature importances of both.

Run it with::

    mpiexec -n 2 python examples/random_forest.py
    python examples/random_forest.py          # one process, the same forest
"""

import matplotlib
import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier as SKRandomForestClassifier
from sklearn.tree import export_text

from mlmpi import RandomForestClassifier, get_comms
from mlmpi.datasets import shard

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X, y = make_classification(12_000, 20, n_informative=10, n_classes=3, random_state=0)
X_train, y_train, X_test, y_test = X[:10_000], y[:10_000], X[10_000:], y[10_000:]

forest = RandomForestClassifier(n_estimators=30, max_depth=10, random_state=0)
forest.fit(shard(X_train, comms), shard(y_train, comms))  # collective
accuracy = forest.score(shard(X_test, comms), shard(y_test, comms))  # collective: global accuracy
rows = comms.allgather(np.asarray(shard(X_train, comms).shape[0]))

if comms.rank == 0:
    reference = SKRandomForestClassifier(n_estimators=30, max_depth=10, random_state=0)
    reference.fit(X_train, y_train)
    top = np.argsort(forest.feature_importances_)[::-1][:3]
    print(f"ranks: {comms.size}   rows per rank: {rows.tolist()}")
    print(f"mlmpi        accuracy {accuracy:.4f}  nodes {forest.forest_.feature.shape[0]}")
    print(f"scikit-learn accuracy {reference.score(X_test, y_test):.4f}")
    print(f"most important features: {top.tolist()}")
    print(export_text(forest.estimators_[0], max_depth=1))
    import matplotlib.pyplot as plt

    features = np.arange(X.shape[1])
    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    ax.bar(features - 0.2, forest.feature_importances_, width=0.4, label="mlmpi")
    ax.bar(features + 0.2, reference.feature_importances_, width=0.4, label="scikit-learn")
    ax.set(xlabel="feature", ylabel="importance", title="Impurity-based feature importances")
    ax.legend(loc="best")
