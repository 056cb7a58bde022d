"""
A whole job on files: Parquet in, predictions out
=================================================

An upstream job (here: pandas in one process) leaves a table in a
partitioned Parquet directory. Every rank then reads only its own row
groups with :func:`mlmpi.io.read_parquet`, scales the numeric columns and
one-hot encodes the categorical one (the categories are the union over the
ranks), fits mlmpi's :class:`~mlmpi.ensemble.RandomForestClassifier`,
scores the held-out rows with :mod:`mlmpi.metrics`, and writes its
predictions back next to the input with :func:`mlmpi.io.write_parquet`: one
file per rank, in global row order. Rank 0 reads the predictions back with
pandas and compares with scikit-learn fitted on the whole table.

Run it with::

    mpiexec -n 4 python examples/parquet_job.py
    python examples/parquet_job.py          # one process, the same forest
"""

import os
import tempfile

import matplotlib
import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier as SKRandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder as SKOneHotEncoder
from sklearn.preprocessing import StandardScaler as SKStandardScaler

from mlmpi import RandomForestClassifier, get_comms
from mlmpi.io import read_parquet, write_parquet
from mlmpi.metrics import accuracy_score
from mlmpi.preprocessing import OneHotEncoder, StandardScaler

matplotlib.use("Agg")  # no display needed; the gallery collects the figure

comms = get_comms()
NUMERIC = [f"x{i}" for i in range(8)]

# %%
# The input: a table written by pandas, partitioned by ``split``
# --------------------------------------------------------------
workdir = comms.bcast_object(tempfile.mkdtemp() if comms.rank == 0 else None)
table_dir = os.path.join(workdir, "table")
if comms.rank == 0:
    X, y = make_classification(6_000, 8, n_informative=5, n_classes=3, random_state=0)
    table = pd.DataFrame(X, columns=NUMERIC)
    table["region"] = pd.Categorical(np.where(X[:, 0] > 0.5, "north", "south"))
    table["label"] = y
    table["split"] = np.where(np.arange(6_000) % 5 == 0, "test", "train")
    table.to_parquet(table_dir, partition_cols=["split"], row_group_size=500)
comms.barrier()

# %%
# Every rank reads its own rows, then fits collectively
# -----------------------------------------------------
# ``frame`` holds this rank's rows only; ``split`` comes back as a
# categorical column from the directory names.
frame = read_parquet(table_dir)
train, test = frame[frame["split"] == "train"], frame[frame["split"] == "test"]

scaler = StandardScaler().set_output(transform="pandas")
encoder = OneHotEncoder(sparse_output=False).set_output(transform="pandas")


def features(rows, fit):
    numeric = scaler.fit_transform(rows[NUMERIC]) if fit else scaler.transform(rows[NUMERIC])
    region = rows[["region"]]
    categorical = encoder.fit_transform(region) if fit else encoder.transform(region)
    return pd.concat([numeric, categorical], axis=1)  # keeps this rank's row index


X_train, X_test = features(train, fit=True), features(test, fit=False)
forest = RandomForestClassifier(n_estimators=30, max_depth=8, random_state=0)
forest.fit(X_train, train["label"])  # collective
predicted = forest.predict(X_test)  # local
accuracy = accuracy_score(test["label"], predicted)  # collective: all ranks' test rows

# %%
# The predictions go back next to the input
# -----------------------------------------
predictions = pd.DataFrame(
    {"row": test.index, "label": test["label"].to_numpy(), "predicted": predicted}
)
write_parquet(predictions, os.path.join(workdir, "predictions"))  # one file per rank
rows = comms.allgather_object(len(frame))

if comms.rank == 0:
    written = pd.read_parquet(os.path.join(workdir, "predictions"))
    whole = pd.read_parquet(table_dir)
    train_all, test_all = whole[whole["split"] == "train"], whole[whole["split"] == "test"]
    reference = make_pipeline(
        make_column_transformer(
            (SKStandardScaler(), NUMERIC), (SKOneHotEncoder(sparse_output=False), ["region"])
        ),
        SKRandomForestClassifier(n_estimators=30, max_depth=8, random_state=0),
    ).fit(train_all, train_all["label"])
    print(f"ranks: {comms.size}   rows read per rank: {rows}")
    print(f"mlmpi        accuracy {accuracy:.4f}  categories {encoder.categories_[0].tolist()}")
    print(f"scikit-learn accuracy {reference.score(test_all, test_all['label']):.4f}")
    from_file = float((written["label"] == written["predicted"]).mean())
    parts = len(os.listdir(os.path.join(workdir, "predictions")))
    print(
        f"predictions file: {len(written)} rows, {parts} parts, in row order: "
        f"{bool(written['row'].is_monotonic_increasing)}, accuracy {from_file:.4f}"
    )
    import shutil

    import matplotlib.pyplot as plt

    shutil.rmtree(workdir)
    confusion = pd.crosstab(written["label"], written["predicted"])
    fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
    ax.imshow(confusion.to_numpy(), cmap="Blues")
    for (i, j), count in np.ndenumerate(confusion.to_numpy()):
        ax.text(j, i, str(count), ha="center", va="center")
    ax.set(
        xticks=range(confusion.shape[1]),
        yticks=range(confusion.shape[0]),
        xlabel="predicted (from the written Parquet files)",
        ylabel="label",
        title=f"mlmpi forest on {comms.size} rank(s): held-out rows",
    )
