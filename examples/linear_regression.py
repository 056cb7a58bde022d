"""
Linear regression, Ridge and Lasso
==================================

Every rank takes only its own rows of the diabetes dataset.
:class:`~mlmpi.linear_model.LinearRegression` and
:class:`~mlmpi.linear_model.Ridge` solve the normal equations of the global
data (one allreduce of the centred Gram matrix);
:class:`~mlmpi.linear_model.Lasso` runs coordinate descent on that Gram
matrix. ``score`` is the R² of every rank's rows. Rank 0 prints the largest
difference from scikit-learn's coefficients on all the rows and draws them.

Run it with::

    mpiexec -n 2 python examples/linear_regression.py
    python examples/linear_regression.py      # one process, same answer
"""

import matplotlib
import numpy as np
import sklearn.linear_model as sk
from sklearn.datasets import load_diabetes

from mlmpi import Lasso, LinearRegression, Ridge, get_comms
from mlmpi.datasets import shard

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X_all, y_all = load_diabetes(return_X_y=True)
X, y = shard(X_all, comms), shard(y_all, comms)  # this rank's rows only

lines, coefficients = [], {}
for model, reference in (
    (LinearRegression(), sk.LinearRegression()),
    (Ridge(alpha=0.1), sk.Ridge(alpha=0.1)),
    (Lasso(alpha=0.1), sk.Lasso(alpha=0.1)),
):
    model.fit(X, y)  # collective
    r2 = model.score(X, y)  # collective: R² of the global data
    reference.fit(X_all, y_all)
    difference = np.abs(model.coef_ - reference.coef_).max() / np.abs(reference.coef_).max()
    name = type(model).__name__
    coefficients[name] = model.coef_
    lines.append(
        f"{name:<16} solver {model.solver_:<18} R2 {r2:.4f}  "
        f"scikit-learn {reference.score(X_all, y_all):.4f}  "
        f"relative coefficient difference {difference:.1e}"
    )

if comms.rank == 0:
    print(f"ranks: {comms.size}")
    print("\n".join(lines))
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    features = np.arange(X_all.shape[1])
    for shift, (name, coef) in zip((-0.25, 0.0, 0.25), coefficients.items()):
        ax.bar(features + shift, coef, width=0.25, label=name)
    ax.set(xlabel="feature", ylabel="coefficient", title="Diabetes: coefficients of the global fit")
    ax.legend(loc="best")
