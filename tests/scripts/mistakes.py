"""User mistakes that end an MPI job: some ranks call a collective (a collective
method, or a raw comms collective outside any) the others never make. The
collective contract must end the job within seconds with the same clear
message on every rank, and a non-zero exit code.

Run as ``mpiexec -n N python mistakes.py MISTAKE [dnn]``; the last rank is the
odd one out. Each rank prints ``start <time>`` just before the mistake.
"""

import pickle
import sys
import time

import numpy as np

import mlmpi

comms = mlmpi.get_comms()
last = comms.rank == comms.size - 1
rng = np.random.default_rng(comms.rank)
X = rng.normal(size=(40, 3))
y = (X[:, 0] > 0).astype(int)


def score_on_rank_0():
    # ``if rank == 0: print(model.score(X))``: the other ranks end the program.
    model = mlmpi.KMeans(2, n_init=1, random_state=0).fit(X)
    if comms.rank == 0:
        print(model.score(X), flush=True)


def skipped_fit():
    # The last rank never fits and ends; the others fit.
    if not last:
        mlmpi.LogisticRegression().fit(X, y)


def uneven_partial_fit():
    # The last rank has one more chunk; the others end after their loop.
    pca = mlmpi.PCA(n_components=2)
    for chunk in np.array_split(X, 3 if last else 2):
        pca.partial_fit(chunk)
    pca.transform(X)


def uneven_predict():
    # The last rank predicts one more chunk; the others end after their loop.
    model = mlmpi.KNeighborsClassifier(n_neighbors=3).fit(X, y)
    for chunk in np.array_split(X, 3 if last else 2):
        model.predict(chunk)


def raw_allreduce():
    # Every rank reduces once; then ``if rank == 0: comms.allreduce(x)`` outside
    # any estimator: the other ranks end while rank 0 waits in its second one.
    comms.allreduce(X.sum(axis=0))
    if comms.rank == 0:
        comms.allreduce(X.sum(axis=0))


def raw_bcast():
    # Only the root broadcasts: it may return alone (a small message is sent
    # eagerly), so the mistake is caught when the ranks end.
    if comms.rank == 0:
        comms.bcast(X)


def raw_barrier():
    if comms.rank == 0:
        comms.barrier()


def _train(n_batches, then):
    import torch

    from mlmpi.dnn import DistributedOptimizer, allreduce_metrics

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), model.named_parameters()
    )
    data = torch.as_tensor(X, dtype=torch.float32)
    for batch in torch.chunk(data, n_batches):
        optimizer.zero_grad()
        loss = model(batch).pow(2).mean()
        loss.backward()
        optimizer.step()
    if then == "metrics":
        allreduce_metrics({"loss": loss.item()})


def uneven_batches_then_metrics():
    # No DistributedSampler, no join: the last rank has one more batch.
    _train(4 if last else 3, "metrics")


def uneven_batches_then_end():
    _train(4 if last else 3, "end")


def as_sklearn_on_rank_0():
    # Rank 0 holds no rows of a neighbours' index and gathers it alone
    # (``if rank == 0: pickle.dumps(model.as_sklearn())``); the others end the program.
    rows = slice(0 if comms.rank == 0 else None)
    model = mlmpi.KNeighborsClassifier(n_neighbors=3).fit(X[rows], y[rows])
    if comms.rank == 0:
        print(len(pickle.dumps(model.as_sklearn())), flush=True)


MISTAKES = {
    f.__name__: f
    for f in (
        score_on_rank_0,
        skipped_fit,
        uneven_partial_fit,
        uneven_predict,
        raw_allreduce,
        raw_bcast,
        raw_barrier,
        uneven_batches_then_metrics,
        uneven_batches_then_end,
        as_sklearn_on_rank_0,
    )
}

if "dnn" in sys.argv[1:]:
    import mlmpi.dnn
print(f"rank {comms.rank}: start {time.time():.3f}", flush=True)
MISTAKES[sys.argv[1]]()
print(f"rank {comms.rank}: done", flush=True)
