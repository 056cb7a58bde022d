"""
Naive Bayes, whole and in batches
=================================

Every rank takes only its own rows of the digits dataset.
:class:`~mlmpi.naive_bayes.GaussianNB` and
:class:`~mlmpi.naive_bayes.MultinomialNB` fit collectively (one allreduce of
per-class sums); a second MultinomialNB learns the same data in three
``partial_fit`` batches. Rank 0 prints the largest difference from
scikit-learn's fit of all the rows and draws the per-class means.

Run it with::

    mpiexec -n 2 python examples/naive_bayes.py
    python examples/naive_bayes.py            # one process, same answer
"""

import matplotlib
import numpy as np
import sklearn.naive_bayes as sk
from sklearn.datasets import load_digits

from mlmpi import GaussianNB, MultinomialNB, get_comms
from mlmpi.datasets import shard

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X_all, y_all = load_digits(return_X_y=True)
X, y = shard(X_all, comms), shard(y_all, comms)  # this rank's rows only

results = {}
gaussian = GaussianNB()
for name, model, reference in (
    ("GaussianNB", gaussian, sk.GaussianNB()),
    ("MultinomialNB", MultinomialNB(alpha=0.5), sk.MultinomialNB(alpha=0.5)),
):
    model.fit(X, y)  # collective
    reference.fit(X_all, y_all)
    attribute = "theta_" if name == "GaussianNB" else "feature_log_prob_"
    difference = np.abs(getattr(model, attribute) - getattr(reference, attribute)).max()
    results[name] = (model.score(X, y), reference.score(X_all, y_all), difference)

online = MultinomialNB(alpha=0.5)
for batch in np.array_split(np.arange(X.shape[0]), 3):  # each rank's rows in three batches
    online.partial_fit(X[batch], y[batch], classes=np.arange(10))  # collective
whole = sk.MultinomialNB(alpha=0.5).fit(X_all, y_all)
difference = np.abs(online.feature_log_prob_ - whole.feature_log_prob_).max()
results["MultinomialNB.partial_fit"] = (online.score(X, y), results["MultinomialNB"][1], difference)

if comms.rank == 0:
    print(f"ranks: {comms.size}")
    for name, (score, ref_score, difference) in results.items():
        print(
            f"{name:26s} accuracy {score:.4f}  scikit-learn {ref_score:.4f}  "
            f"max difference {difference:.2e}"
        )
    import matplotlib.pyplot as plt

    means = gaussian.theta_  # replicated: the same on every rank
    fig, axes = plt.subplots(1, 10, figsize=(8, 1.2), layout="constrained")
    for digit, ax in enumerate(axes):
        ax.imshow(means[digit].reshape(8, 8), cmap="gray_r")
        ax.set_axis_off()
        ax.set_title(str(digit))
    fig.suptitle("GaussianNB.theta_: the global per-class means")
