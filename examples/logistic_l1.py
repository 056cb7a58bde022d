"""
Sparse (L1) and elastic-net logistic regression
===============================================

Every rank takes only its own rows of the breast-cancer dataset (scaled).
mlmpi's distributed proximal gradient fits the same model as scikit-learn's
saga on all the rows; rank 0 prints both, with the features they keep, and
draws the two coefficient vectors.

Run it with::

    mpiexec -n 2 python examples/logistic_l1.py
    python examples/logistic_l1.py            # one process, same answer
"""

import warnings

import matplotlib
import numpy as np
import sklearn.linear_model as sk
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from mlmpi import LogisticRegression, get_comms
from mlmpi.datasets import shard

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X_all, y_all = load_breast_cancer(return_X_y=True)
X_all = StandardScaler().fit_transform(X_all)
X, y = shard(X_all, comms), shard(y_all, comms)  # this rank's rows only

lines, coefficients = [], {}
for l1_ratio in (1.0, 0.5):
    params = {"C": 0.1, "l1_ratio": l1_ratio, "solver": "saga", "tol": 1e-8, "max_iter": 10_000}
    model = LogisticRegression(**params).fit(X, y)  # collective
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = sk.LogisticRegression(**params).fit(X_all, y_all)
    difference = np.abs(model.coef_ - reference.coef_).max()
    coefficients[l1_ratio] = model.coef_[0], reference.coef_[0]
    lines.append(
        f"l1_ratio {l1_ratio}: mlmpi ({model.solver_}, {model.n_iter_[0]} iterations) keeps "
        f"{np.count_nonzero(model.coef_)} of {X.shape[1]} features, accuracy "
        f"{model.score(X, y):.4f}; scikit-learn saga keeps "
        f"{np.count_nonzero(reference.coef_)}, accuracy {reference.score(X_all, y_all):.4f}; "
        f"max coefficient difference {difference:.1e}"
    )

if comms.rank == 0:
    print(f"ranks: {comms.size}")
    print("\n".join(lines))
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 3), sharey=True, layout="constrained")
    for ax, (l1_ratio, (ours, theirs)) in zip(axes, coefficients.items()):
        ax.bar(np.arange(ours.size) - 0.2, ours, width=0.4, label="mlmpi")
        ax.bar(np.arange(ours.size) + 0.2, theirs, width=0.4, label="scikit-learn saga")
        ax.set(title=f"l1_ratio={l1_ratio}", xlabel="feature")
    axes[0].set_ylabel("coefficient")
    axes[0].legend(loc="best")
