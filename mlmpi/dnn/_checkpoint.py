"""Checkpoints written by rank 0, restored on every rank."""

import os
import tempfile

import torch

from .._contract import collective_function
from ..comms import resolve_comms
from ._broadcast import broadcast_optimizer_state, broadcast_parameters


@collective_function(data=("model", "optimizer", "extra"))
def save_checkpoint(path, model, optimizer, epoch, *, comms=None, **extra):
    """Write the model, the optimizer state, ``epoch`` and ``extra`` to ``path``.

    Only rank 0 writes, to a temporary file in the same directory renamed
    over ``path`` (a crash never leaves a half-written checkpoint). Every
    rank then waits for the rename, so any rank may read it next.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (on rank 0).
    model : torch.nn.Module
        Its ``state_dict()`` is saved.
    optimizer : torch.optim.Optimizer or DistributedOptimizer
        Its ``state_dict()`` is saved.
    epoch : int
        The epoch just finished.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.
    **extra
        Picklable values stored beside them (returned by :func:`load_checkpoint`).

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import os, tempfile
    >>> import torch
    >>> from mlmpi.dnn import load_checkpoint, save_checkpoint
    >>> model = torch.nn.Linear(2, 1)
    >>> sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
    >>> save_checkpoint(path, model, sgd, epoch=3, best_loss=0.25)
    >>> load_checkpoint(path, model, sgd)
    {'epoch': 3, 'best_loss': 0.25}
    """
    comms = resolve_comms(comms)
    error = None
    if comms.rank == 0:
        try:
            directory = os.path.dirname(os.path.abspath(path))
            handle, tmp = tempfile.mkstemp(prefix=".ckpt-", dir=directory)
            try:
                with os.fdopen(handle, "wb") as f:
                    torch.save(
                        {
                            "model": model.state_dict(),
                            "optimizer": optimizer.state_dict(),
                            "epoch": epoch,
                            "extra": extra,
                        },
                        f,
                    )
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except Exception as exc:  # every rank raises it, below
            error = (type(exc), str(exc))
    _raise_agreed(comms.bcast_object(error), "save_checkpoint")


@collective_function(data=("model", "optimizer"))
def load_checkpoint(path, model, optimizer=None, *, comms=None):
    """Restore a :func:`save_checkpoint` file on every rank.

    Rank 0 reads ``path``; the model's state (parameters and buffers) and
    the optimizer's go to every rank by broadcast, so only rank 0 needs to
    see the file. Training on afterwards gives bitwise the parameters of a
    run that never stopped (same data order, e.g. ``set_epoch``).

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save_checkpoint` (read on rank 0).
    model : torch.nn.Module
        Receives the saved state, on every rank.
    optimizer : torch.optim.Optimizer or DistributedOptimizer, default=None
        Receives the saved optimizer state, on every rank; None skips it.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Returns
    -------
    info : dict
        ``{"epoch": epoch, **extra}``, identical on every rank.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import os, tempfile
    >>> import torch
    >>> from mlmpi.dnn import load_checkpoint, save_checkpoint
    >>> path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
    >>> model = torch.nn.Linear(2, 1)
    >>> save_checkpoint(path, model, torch.optim.SGD(model.parameters(), lr=0.1), epoch=1)
    >>> restored = torch.nn.Linear(2, 1)
    >>> load_checkpoint(path, restored)
    {'epoch': 1}
    >>> torch.equal(restored.weight, model.weight)
    True
    """
    comms = resolve_comms(comms)
    error, info = None, None
    if comms.rank == 0:
        try:
            checkpoint = torch.load(path, map_location="cpu", weights_only=False)
            model.load_state_dict(checkpoint["model"])
            if optimizer is not None:
                optimizer.load_state_dict(checkpoint["optimizer"])
            info = {"epoch": checkpoint["epoch"], **checkpoint["extra"]}
        except Exception as exc:  # every rank raises it, below
            error = (type(exc), str(exc))
    error, info = comms.bcast_object((error, info))
    _raise_agreed(error, "load_checkpoint")
    broadcast_parameters(model.state_dict(), root=0, comms=comms)
    if optimizer is not None:
        broadcast_optimizer_state(optimizer, root=0, comms=comms)
    return info


def _raise_agreed(error, where):
    if error is not None:
        kind, message = error
        try:
            exc = kind(f"{where} failed on rank 0: {message}")
        except Exception:
            exc = RuntimeError(f"{where} failed on rank 0: {kind.__name__}: {message}")
        raise exc
