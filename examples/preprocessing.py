"""
Scalers and imputers fitted on global statistics
================================================

Every rank takes only its own rows of the wine dataset, with a tenth of the
values knocked out. :class:`~mlmpi.impute.SimpleImputer` fills them with the
exact global median, :class:`~mlmpi.preprocessing.StandardScaler` merges the
ranks' moments, and :class:`~mlmpi.preprocessing.QuantileTransformer` finds
exact global quantiles, so each fitted attribute equals scikit-learn's on all
the rows. ``transform`` is local. Rank 0 prints the largest differences and
draws one feature before and after the quantile transform.

Run it with::

    mpiexec -n 2 python examples/preprocessing.py
    python examples/preprocessing.py          # one process, same answer
"""

import matplotlib
import numpy as np
import sklearn.impute
import sklearn.preprocessing
from sklearn.datasets import load_wine

from mlmpi import get_comms
from mlmpi.datasets import shard
from mlmpi.impute import SimpleImputer
from mlmpi.preprocessing import QuantileTransformer, StandardScaler

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
X_all, _ = load_wine(return_X_y=True)
X_all[np.random.default_rng(0).random(X_all.shape) < 0.1] = np.nan
X = shard(X_all, comms)  # this rank's rows only

lines = []
steps = (
    (
        SimpleImputer(strategy="median"),
        sklearn.impute.SimpleImputer(strategy="median"),
        "statistics_",
    ),
    (StandardScaler(), sklearn.preprocessing.StandardScaler(), "scale_"),
    (
        QuantileTransformer(n_quantiles=100, output_distribution="normal"),
        sklearn.preprocessing.QuantileTransformer(n_quantiles=100, output_distribution="normal"),
        "quantiles_",
    ),
)
X_step, X_ref = X, X_all
for model, reference, attribute in steps:
    X_step = model.fit(X_step).transform(X_step)  # fit: collective; transform: local
    X_ref = reference.fit(X_ref).transform(X_ref)
    difference = np.abs(getattr(model, attribute) - getattr(reference, attribute)).max()
    lines.append(f"{type(model).__name__:<20} {attribute:<12} max difference {difference:.1e}")
before = comms.allgatherv(shard(X_all, comms)[:, 0])  # collective: the global column
after = comms.allgatherv(X_step[:, 0])

if comms.rank == 0:
    print(f"ranks: {comms.size}")
    print("\n".join(lines))
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7, 3), layout="constrained")
    axes[0].hist(before[~np.isnan(before)], bins=30)
    axes[0].set(title="alcohol, raw (NaN left out)")
    axes[1].hist(after, bins=30)
    axes[1].set(title="imputed, scaled, quantile-normal")
