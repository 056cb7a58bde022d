"""
Data-parallel training of a small CNN
=====================================

Every rank loads the 1,797 8x8 digit images (shipped with scikit-learn, no
download), trains on its shard of each epoch
(:class:`~mlmpi.dnn.DistributedSampler`), and gradients are averaged through
mlmpi's comms (:class:`~mlmpi.dnn.DistributedOptimizer`). Each rank then
scores its share of the test set and the accuracies are averaged, weighted by
rows. Rank 0 draws the training loss per epoch.

Run it with::

    mpiexec -n 4 python examples/train_digits.py
"""

import argparse
import time

import matplotlib
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from mlmpi import get_comms
from mlmpi.datasets import shard
from mlmpi.dnn import (
    DistributedOptimizer,
    DistributedSampler,
    allreduce_metrics,
    broadcast_parameters,
    linear_warmup,
    progress,
    scale_lr,
)

matplotlib.use("Agg")  # no display needed; the gallery collects the figure


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def main():
    parser = argparse.ArgumentParser(description="Data-parallel training of a small CNN.")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.02, help="single-process learning rate")
    args = parser.parse_args()

    comms = get_comms()
    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)
    y = torch.tensor(y)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    train = TensorDataset(X_train, y_train)
    sampler = DistributedSampler(train, comms=comms, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)

    torch.manual_seed(0)
    model = make_model()
    broadcast_parameters(model.state_dict(), comms=comms)  # same start everywhere
    optimizer = DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=scale_lr(args.lr, comms), momentum=0.9),
        model.named_parameters(),
        comms=comms,
    )
    warmup = linear_warmup(optimizer, warmup_steps=len(loader), comms=comms)  # one epoch

    samples, start, losses = 0, time.perf_counter(), []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        bar = progress(loader, epoch=epoch, comms=comms)
        epoch_loss, epoch_rows = 0.0, 0
        for xb, yb in bar:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            warmup.step()
            samples += len(xb)
            epoch_loss, epoch_rows = epoch_loss + loss.item() * len(xb), epoch_rows + len(xb)
            bar.update(loss=loss.item(), samples=len(xb))
        bar.close()
        mean = epoch_loss / max(epoch_rows, 1)  # a rank without rows has weight 0
        losses.append(allreduce_metrics({"loss": mean}, weight=epoch_rows, comms=comms)["loss"])
    seconds = time.perf_counter() - start
    rate = float(comms.allreduce(torch.tensor(float(samples)).numpy())) / seconds

    model.eval()
    X_mine, y_mine = shard(X_test.numpy(), comms), shard(y_test.numpy(), comms)
    correct = 0.0  # a rank without test rows has weight 0 below
    if len(y_mine):
        with torch.no_grad():
            correct = (model(torch.from_numpy(X_mine)).argmax(1).numpy() == y_mine).mean()
    metrics = allreduce_metrics({"accuracy": correct}, weight=len(y_mine), comms=comms)
    if comms.rank == 0:
        print(
            f"ranks: {comms.size}  epochs: {args.epochs}  global batch: "
            f"{args.batch_size * comms.size}  train rows: {len(train)}"
        )
        print(f"test accuracy {metrics['accuracy']:.4f}  samples/s {rate:.0f}")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
        ax.plot(range(1, args.epochs + 1), losses, marker="o")
        ax.set(xlabel="epoch", ylabel="training loss (all ranks)", yscale="log")
        ax.set_title(f"{comms.size} rank(s), test accuracy {metrics['accuracy']:.3f}")


if __name__ == "__main__":
    main()
