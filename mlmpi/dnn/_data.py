"""Sharding a dataset over ranks."""

import torch.utils.data

from ..comms import resolve_comms


class DistributedSampler(torch.utils.data.DistributedSampler):
    """Sampler of this rank's share of a dataset (PyTorch's, with an mlmpi comms).

    Every rank draws the same permutation of the whole dataset per epoch
    (seeded by ``seed + epoch``: call :meth:`set_epoch` at the start of
    each epoch) and takes every ``size``-th index from its rank on. Without
    ``drop_last`` the permutation is padded with its first indices so that
    every rank gets the same number; with it, the tail is dropped.

    Parameters
    ----------
    dataset : Dataset
        Anything with ``len()``.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    shuffle : bool, default=True
        Draw a new permutation per epoch (else the dataset's order).
    seed : int, default=0
        Seed of the permutations; the same on every rank.
    drop_last : bool, default=False
        Drop the tail instead of padding.

    Examples
    --------
    >>> from mlmpi.dnn import DistributedSampler
    >>> sampler = DistributedSampler(range(5), shuffle=False)
    >>> list(sampler)  # one process: every index
    [0, 1, 2, 3, 4]
    """

    def __init__(self, dataset, *, comms=None, shuffle=True, seed=0, drop_last=False):
        comms = resolve_comms(comms)
        super().__init__(
            dataset,
            num_replicas=comms.size,
            rank=comms.rank,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
        )
