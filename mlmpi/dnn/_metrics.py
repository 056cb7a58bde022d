"""Metrics averaged over ranks, and the learning-rate rules of large-batch training."""

import numpy as np
import torch

from .._contract import collective_function
from ..comms import resolve_comms


@collective_function(data=("metrics", "weight"))
def allreduce_metrics(metrics, weight=1.0, comms=None):
    """Average a dict of scalar metrics over ranks (one allreduce).

    Parameters
    ----------
    metrics : dict of str to float or 0-d tensor
        The same keys on every rank.
    weight : float, default=1.0
        This rank's weight, e.g. its number of samples (a rank with no
        samples passes 0); the result is ``sum(w_r * m_r) / sum(w_r)``.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    averaged : dict of str to float
        Identical on every rank (NaN for every key when all weights are 0).

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> from mlmpi.dnn import allreduce_metrics
    >>> allreduce_metrics({"loss": 0.5, "accuracy": 0.75}, weight=32)
    {'accuracy': 0.75, 'loss': 0.5}
    """
    comms = resolve_comms(comms)
    names = sorted(metrics)
    values = [float(metrics[name]) * weight if weight else 0.0 for name in names]
    total = comms.allreduce(np.asarray(values + [float(weight)], dtype=np.float64))
    if total[-1] == 0:
        return dict.fromkeys(names, float("nan"))
    return {name: float(value / total[-1]) for name, value in zip(names, total[:-1])}


def scale_lr(lr, comms=None):
    """``lr`` times the number of ranks (the linear scaling rule of Goyal et al., 2017).

    Only reads ``comms.size`` (no communication).

    Parameters
    ----------
    lr : float
        The single-process learning rate.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    lr : float

    Examples
    --------
    >>> from mlmpi.dnn import scale_lr
    >>> scale_lr(0.1)  # one process
    0.1
    """
    return lr * resolve_comms(comms).size


def linear_warmup(optimizer, warmup_steps, *, start_factor=None, comms=None):
    """Scheduler ramping the learning rate linearly up to its set value (Goyal et al.).

    Parameters
    ----------
    optimizer : torch.optim.Optimizer or DistributedOptimizer
        Its learning rate (e.g. :func:`scale_lr`'s) is reached after
        ``warmup_steps`` calls of the scheduler's ``step()``, and kept.
    warmup_steps : int
        Steps of the ramp (0: no warm-up).
    start_factor : float, default=None
        Factor of the first step; None means ``1 / comms.size``, i.e. the
        single-process learning rate.
    comms : Comms, default=None
        Only read for ``start_factor=None``.

    Returns
    -------
    scheduler : torch.optim.lr_scheduler.LambdaLR

    Examples
    --------
    >>> import torch
    >>> from mlmpi.dnn import linear_warmup
    >>> sgd = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    >>> scheduler = linear_warmup(sgd, warmup_steps=4, start_factor=0.25)
    >>> scheduler.get_last_lr()
    [0.025]
    """
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps!r}.")
    if start_factor is None:
        start_factor = 1.0 / resolve_comms(comms).size
    optimizer = getattr(optimizer, "optimizer", optimizer)

    def factor(step):
        if step >= warmup_steps:
            return 1.0
        return start_factor + (1.0 - start_factor) * step / warmup_steps

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
