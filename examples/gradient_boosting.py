"""
Gradient boosting that does not depend on the number of ranks
=============================================================

Every rank takes only its own rows of the same global dataset and fits
mlmpi's :class:`~mlmpi.ensemble.HistGradientBoostingClassifier`
collectively, with early stopping on: the validation rows, the bins and the
trees are those scikit-learn's estimator picks and grows on the concatenated
rows, at any number of ranks. Prediction is local. Rank 0 prints the held-out
accuracy and the number of iterations next to scikit-learn's, and draws both
validation curves (they are the same curve).

Run it with::

    mpiexec -n 2 python examples/gradient_boosting.py
    python examples/gradient_boosting.py          # one process, the same model
"""

import matplotlib
import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier as SKHistGradientBoostingClassifier

from mlmpi import HistGradientBoostingClassifier, get_comms
from mlmpi.datasets import shard

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X, y = make_classification(6_000, 10, n_informative=6, n_classes=3, random_state=0)
X[::13, 4] = np.nan  # missing values go where the gain is largest
X_train, y_train, X_test, y_test = X[:5_000], y[:5_000], X[5_000:], y[5_000:]
params = {
    "max_iter": 50,
    "learning_rate": 0.3,
    "early_stopping": True,
    "n_iter_no_change": 3,
    "random_state": 0,
}

model = HistGradientBoostingClassifier(**params)
model.fit(shard(X_train, comms), shard(y_train, comms))  # collective
accuracy = model.score(shard(X_test, comms), shard(y_test, comms))  # collective: global accuracy
rows = comms.allgather(np.asarray(shard(X_train, comms).shape[0]))

if comms.rank == 0:
    reference = SKHistGradientBoostingClassifier(**params).fit(X_train, y_train)
    agree = np.mean(model.predict(X_test) == reference.predict(X_test))
    print(f"ranks: {comms.size}   rows per rank: {rows.tolist()}")
    print(f"mlmpi        accuracy {accuracy:.4f}  iterations {model.n_iter_}")
    reference_accuracy = reference.score(X_test, y_test)
    print(f"scikit-learn accuracy {reference_accuracy:.4f}  iterations {reference.n_iter_}")
    print(f"the same predicted label on {agree:.2%} of the test rows")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    ax.plot(-model.validation_score_, label="mlmpi", linewidth=3)
    ax.plot(-reference.validation_score_, "--", label="scikit-learn", color="black")
    ax.set(xlabel="iteration", ylabel="validation log loss", title="Early stopping")
    ax.legend(loc="best")
