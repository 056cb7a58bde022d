"""
Scale, split, search, score
===========================

Every rank keeps only its own rows of the breast-cancer data. The split
(:func:`~mlmpi.model_selection.train_test_split`), the scaler, the 5-fold
:class:`~mlmpi.model_selection.GridSearchCV` over C and the test score all
use every rank's rows, so the result is the same at any number of ranks; rank
0 prints it next to scikit-learn's run of the same workflow on all the rows
and draws the cross-validated accuracy of each C.

Run it with::

    mpiexec -n 2 python examples/workflow.py
    python examples/workflow.py               # one process, same answer
"""

import matplotlib
import numpy as np
import sklearn.linear_model
import sklearn.model_selection
import sklearn.pipeline
import sklearn.preprocessing
from sklearn.datasets import load_breast_cancer

from mlmpi import LogisticRegression, get_comms
from mlmpi.datasets import shard
from mlmpi.model_selection import GridSearchCV, train_test_split
from mlmpi.pipeline import make_pipeline
from mlmpi.preprocessing import StandardScaler

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X_all, y_all = load_breast_cancer(return_X_y=True)
X, y = shard(X_all, comms), shard(y_all, comms)  # this rank's rows only

# scikit-learn's split of all the rows, in its order: the rows move between
# the ranks, each rank holding one block of each part.
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, stratify=y, random_state=0
)
grid = {"logisticregression__C": [0.01, 0.1, 1.0, 10.0]}
search = GridSearchCV(make_pipeline(StandardScaler(), LogisticRegression()), grid, cv=5)
search.fit(X_train, y_train)  # every candidate and fold: collective
accuracy = search.score(X_test, y_test)  # accuracy over every rank's test rows

rows = comms.allgather(np.asarray(X.shape[0]))
if comms.rank == 0:
    # scikit-learn on all the rows, for comparison: the same split, the same folds
    sk_split = sklearn.model_selection.train_test_split(
        X_all, y_all, test_size=0.25, stratify=y_all, random_state=0
    )
    sk_search = sklearn.model_selection.GridSearchCV(
        sklearn.pipeline.make_pipeline(
            sklearn.preprocessing.StandardScaler(), sklearn.linear_model.LogisticRegression()
        ),
        grid,
        cv=5,
    ).fit(sk_split[0], sk_split[2])
    sk_accuracy = sk_search.score(sk_split[1], sk_split[3])
    print(f"ranks: {comms.size}   rows per rank: {rows.tolist()}")
    for name, fitted, score in (
        ("mlmpi", search, accuracy),
        ("scikit-learn", sk_search, sk_accuracy),
    ):
        print(
            f"{name:<12} best C {fitted.best_params_['logisticregression__C']:<6g} "
            f"cv accuracy {fitted.best_score_:.4f}  test accuracy {score:.4f}"
        )
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
    for name, fitted, marker in (("mlmpi", search, "o"), ("scikit-learn", sk_search, "x")):
        results = fitted.cv_results_
        ax.errorbar(
            results["param_logisticregression__C"].astype(float),
            results["mean_test_score"],
            yerr=results["std_test_score"],
            marker=marker,
            capsize=3,
            label=name,
        )
    ax.set(xscale="log", xlabel="C", ylabel="5-fold accuracy", title="GridSearchCV over C")
    ax.legend(loc="best")
