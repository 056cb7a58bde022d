"""
Notebooks on MPI engines
========================

In Jupyter, mlmpi runs on ipyparallel's MPI engines: ``n`` engines that are
the ranks of one ``mpiexec -n n`` job. A ``%%px`` cell runs on every engine,
so it may call collective methods. This example starts 2 engines from Python
with :func:`mlmpi.notebook.start_mpi_engines`, fits
:class:`~mlmpi.cluster.KMeans` on each engine's rows, pulls the model into
the notebook and compares it with scikit-learn's fit of all the rows. The
download link below gives it as a notebook; the text shows the ``%%px``
magic cells that the code stands for (the gallery cannot run magics). The
rules and what happens on errors are on :doc:`/notebooks`.

Run it with ``pip install -e ".[notebook]"`` and::

    python examples/notebook_engines.py     # one process: it starts the engines
"""

# %%
# Start the engines
# -----------------
# Starting the controller and the 2 engines takes a few seconds. A lower
# ``MLMPI_TIMEOUT`` than the default 300 s suits interactive work: a
# collective that one engine never joins then ends the engines after 60 s
# instead of holding them for 5 minutes.

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans as SKKMeans

from mlmpi.datasets import make_blobs
from mlmpi.notebook import start_mpi_engines

engines = start_mpi_engines(2, env={"MLMPI_TIMEOUT": "60"})
view = engines.client[:]  # every engine: every rank
view.block = True  # wait for each call's result, as a %%px cell does

# %%
# Fit on every engine
# -------------------
# The notebook process sends the initial centres to every engine. Each engine
# then generates only its own rows of the same global dataset and joins the
# collective ``fit``. In a notebook, ``view.activate()`` registers the magics
# and the code of ``FIT`` is a cell of its own::
#
#     %%px
#     from mlmpi import KMeans, get_comms
#     from mlmpi.datasets import make_blobs
#
#     comms = get_comms()  # the 2 engines
#     X, _ = make_blobs(3000, 2, centers=4, cluster_std=1.5, random_state=0)
#     km = KMeans(n_clusters=4, init=init, n_init=1).fit(X)
#
# Here ``view.execute`` runs it on every engine.

# The notebook process is not a rank: make_blobs gives it every row.
X_all, _ = make_blobs(3000, 2, centers=4, cluster_std=1.5, random_state=0)
init = X_all[:4]
view.push({"init": init})

FIT = """
from mlmpi import KMeans, get_comms
from mlmpi.datasets import make_blobs

comms = get_comms()  # the 2 engines
X, _ = make_blobs(3000, 2, centers=4, cluster_std=1.5, random_state=0)  # this engine's rows
km = KMeans(n_clusters=4, init=init, n_init=1).fit(X)  # collective: on every engine
"""
view.execute(FIT)  # returns when every engine has run it

# %%
# Pull the results
# ----------------
# ``view.pull`` returns one value per engine, in engine order; the engines of
# ``start_mpi_engines`` are numbered by rank. ``cluster_centers_`` is
# replicated: the same on every engine. ``labels_`` is local: each engine's
# rows, so the rank order of the parts is the global row order.

ranks = view.pull("comms.rank")
centres = view.pull("km.cluster_centers_")[0]
labels = np.concatenate(view.pull("km.labels_"))
rows = [len(part) for part in view.pull("X")]

ref = SKKMeans(n_clusters=4, init=init, n_init=1).fit(X_all)
print(f"ranks: {len(ranks)}   engines by rank: {ranks}   rows per engine: {rows}")
difference = np.abs(centres - ref.cluster_centers_).max()
print(f"max centre difference from scikit-learn: {difference:.1e}")
print(f"same labels as scikit-learn: {np.array_equal(labels, ref.labels_)}")

fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
ax.scatter(*X_all.T, c=labels, s=3, cmap="tab10")
ax.scatter(*centres.T, c="black", marker="x", s=60, label="centres (2 engines)")
ax.set(xlabel="feature 0", ylabel="feature 1", title="mlmpi KMeans on 2 MPI engines")
ax.legend(loc="best")
plt.show()

# %%
# Local work on one engine
# ------------------------
# A cell for rank 0 only::
#
#     %%px --targets 0
#     first = km.predict(X[:5])
#
# Local methods are fine there: ``predict`` needs only the fitted model. A
# collective call there would wait for the other rank until
# ``MLMPI_TIMEOUT`` ends the engines.

rank0 = engines.client[0]
rank0.execute("first = km.predict(X[:5])", block=True)
print(f"rank 0 predicts its first 5 rows: {rank0.pull('first', block=True).tolist()}")

# %%
# Stop the engines
# ----------------
# ``stop`` ends the engines and the controller, even an engine stuck in a
# collective. The engines also end when the notebook's kernel exits or is
# killed.

engines.stop()
