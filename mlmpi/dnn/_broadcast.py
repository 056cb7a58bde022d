"""Broadcasts of parameters and optimizer state, names in sorted order."""

from typing import NamedTuple

import torch

from .._contract import collective_function
from ..comms import resolve_comms
from ..utils.validation import agree_on_errors
from ._tensors import as_array, describe, from_array


class _Slot(NamedTuple):
    """Where a tensor of root's optimizer state goes (sent instead of the tensor)."""

    path: str
    shape: tuple
    dtype: torch.dtype
    on_cpu: bool


def _named(tensors):
    if hasattr(tensors, "items"):
        tensors = tensors.items()
    named = sorted(tensors, key=lambda item: item[0])
    names = [name for name, _ in named]
    if len(set(names)) != len(names):
        raise ValueError("Parameter names must be unique.")
    return named


def bcast_tensors(named, root, comms):
    """Overwrite every ``(name, tensor)`` of ``named`` (sorted by name, the same
    names, shapes and dtypes on every rank) with ``root``'s values: one
    broadcast per (device, dtype). This function is collective."""
    groups = {}
    for _, tensor in named:
        groups.setdefault((tensor.device, tensor.dtype), []).append(tensor)
    for (_, dtype), tensors in groups.items():
        flat = torch.cat([t.detach().reshape(-1) for t in tensors])
        received = from_array(comms.bcast(as_array(flat), root=root), dtype)
        offset = 0
        with torch.no_grad():
            for tensor in tensors:
                tensor.copy_(received[offset : offset + tensor.numel()].view_as(tensor))
                offset += tensor.numel()


@collective_function(data=("params",))
def broadcast_parameters(params, root=0, comms=None):
    """Copy ``root``'s parameters (or any tensors) to every rank, in place.

    Parameters
    ----------
    params : dict or iterable of (str, torch.Tensor)
        ``model.state_dict()`` (parameters and buffers) or
        ``model.named_parameters()``. Iterated in sorted name order, so the
        order is the same on every rank whatever the dict order.
    root : int, default=0
        The rank whose values everyone gets.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Raises
    ------
    ValueError
        On every rank, when names, shapes or dtypes differ from ``root``'s.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import torch
    >>> from mlmpi.dnn import broadcast_parameters
    >>> model = torch.nn.Linear(2, 1)
    >>> broadcast_parameters(model.state_dict(), root=0)  # every rank starts from rank 0's
    """
    comms = resolve_comms(comms)
    named = _named(params)
    layout = [(name,) + describe(t) for name, t in named]
    root_layout = comms.bcast_object(layout if comms.rank == root else None, root=root)

    def check():
        if layout != root_layout:
            diff = next(
                (mine, theirs)
                for mine, theirs in zip(
                    layout + [None] * len(root_layout), root_layout + [None] * len(layout)
                )
                if mine != theirs
            )
            raise ValueError(
                f"broadcast_parameters: rank {comms.rank} has {diff[0]} where root rank {root} "
                f"has {diff[1]} (name, shape, dtype); every rank must hold the same model."
            )

    agree_on_errors(comms, check)
    bcast_tensors(named, root, comms)


@collective_function(data=("optimizer",))
def broadcast_optimizer_state(optimizer, root=0, comms=None):
    """Copy ``root``'s optimizer state (tensors and scalars: step counts, lr,
    momentum buffers...) to every rank.

    Ranks whose optimizer has not stepped yet (no state) get ``root``'s.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer or DistributedOptimizer
        The optimizer whose state is copied, in place.
    root : int, default=0
        The rank whose state everyone gets.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms`.

    Notes
    -----
    This function is collective.

    Examples
    --------
    >>> import torch
    >>> from mlmpi.dnn import broadcast_optimizer_state
    >>> sgd = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
    >>> broadcast_optimizer_state(sgd, root=0)
    >>> sgd.param_groups[0]["momentum"]
    0.9
    """
    comms = resolve_comms(comms)
    state = optimizer.state_dict()
    tensors = {}

    def strip(value, path):
        if isinstance(value, torch.Tensor):
            tensors[path] = value
            return _Slot(path, tuple(value.shape), value.dtype, value.device.type == "cpu")
        if isinstance(value, dict):
            return {k: strip(v, f"{path}.{k}") for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(strip(v, f"{path}.{i}") for i, v in enumerate(value))
        return value

    skeleton = comms.bcast_object(strip(state, "") if comms.rank == root else None, root=root)
    device = next((p.device for g in optimizer.param_groups for p in g["params"]), None)

    def fill(value):
        if isinstance(value, _Slot):
            tensor = torch.empty(
                value.shape, dtype=value.dtype, device="cpu" if value.on_cpu else device
            )
            tensors[value.path] = tensor
            return tensor
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(fill(v) for v in value)
        return value

    if comms.rank != root:
        tensors.clear()
        state = fill(skeleton)
    bcast_tensors(_named(tensors), root, comms)
    if comms.rank != root:
        optimizer.load_state_dict(state)
