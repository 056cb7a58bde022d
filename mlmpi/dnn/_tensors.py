"""Torch tensors as the NumPy/CuPy arrays the comms layer takes (views, no copies)."""

import torch

# dtypes NumPy has no name for travel as raw 16-bit words (copies only, no arithmetic).
_WIRE_VIEWS = {torch.bfloat16: torch.float16}


def as_array(tensor):
    """NumPy (CPU) or CuPy (CUDA) view of the contiguous ``tensor``'s memory.

    A bfloat16 tensor is viewed as float16 words: fine for copies
    (broadcast, allgather), meaningless for arithmetic.
    """
    tensor = tensor.detach()
    view = _WIRE_VIEWS.get(tensor.dtype)
    if view is not None:
        tensor = tensor.view(view)
    if tensor.device.type == "cuda":
        import cupy

        return cupy.from_dlpack(tensor)
    return tensor.numpy()


def from_array(array, dtype):
    """Tensor view of a NumPy/CuPy ``array`` made by :func:`as_array` of a ``dtype`` tensor."""
    if type(array).__module__ == "numpy":
        tensor = torch.from_numpy(array)
    else:
        tensor = torch.from_dlpack(array)
    return tensor.view(dtype) if dtype in _WIRE_VIEWS else tensor


def describe(tensor):
    """``(shape, dtype name)`` of a tensor: what must match across ranks."""
    return tuple(tensor.shape), str(tensor.dtype).replace("torch.", "")
