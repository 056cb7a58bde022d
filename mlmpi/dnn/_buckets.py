"""Fusion buckets: gradients packed into flat buffers that each bucket owns.

Parameters go into buckets in reverse registration order (PyTorch DDP's
rule: the last layers' gradients are ready first in backward), a new bucket
when the current one would exceed the cap or the device/dtype changes. The
layout depends only on the model, so it is the same on every rank.
"""

import torch

from ..utils._offsets import group_starts
from ._tensors import as_array, from_array

COMPRESSIONS = {None: None, "fp16": torch.float16, "bf16": torch.bfloat16}


class Bucket:
    """Gradients of some parameters, packed into one flat buffer and reduced together.

    Parameters
    ----------
    index : int
        Position in launch order (0 is launched first).
    named : list of (str, torch.nn.Parameter)
        Same device and dtype.
    wire_dtype : torch.dtype or None
        Compression: the dtype the gradients travel in (None: their own).
    """

    def __init__(self, index, named, wire_dtype):
        first = named[0][1]
        self.index = index
        self.names = [name for name, _ in named]
        self.params = [p for _, p in named]
        self.dtype = first.dtype
        self.wire_dtype = wire_dtype or first.dtype
        sizes = [p.numel() for p in self.params]
        self.offsets = group_starts(sizes).tolist()
        self.flat = torch.zeros(self.offsets[-1], dtype=self.wire_dtype, device=first.device)
        self._views = [
            self.flat[a:b].view(p.shape)
            for a, b, p in zip(self.offsets, self.offsets[1:], self.params)
        ]
        self.packed = [False] * len(self.params)
        self.n_packed = 0
        self.request = None
        self._sum = None  # bf16: the float32 sum, between start and finish

    @property
    def nbytes(self):
        return self.flat.numel() * self.flat.element_size()

    @property
    def full(self):
        return self.n_packed == len(self.params)

    def layout(self):
        """What must be identical on every rank: names, shapes, dtypes, wire dtype."""
        return [
            (name, tuple(p.shape), str(p.dtype)) for name, p in zip(self.names, self.params)
        ] + [str(self.wire_dtype)]

    def pack(self, i, grad):
        """Copy parameter ``i``'s gradient (None: zeros) into the buffer."""
        if self.packed[i]:
            raise RuntimeError(
                f"The gradient of {self.names[i]!r} was computed again before step(): call "
                "step() (or synchronize()) after each backward, or use no_sync() / "
                "backward_passes_per_step for gradient accumulation."
            )
        if grad is None:
            self._views[i].zero_()
        else:
            self._views[i].copy_(grad)
        self.packed[i] = True
        self.n_packed += 1

    def pack_missing(self):
        """Pack every parameter whose hook did not fire (unused: zeros)."""
        for i, p in enumerate(self.params):
            if not self.packed[i]:
                self.pack(i, p.grad)

    def zero(self):
        """All zeros (a joined rank's contribution)."""
        self.flat.zero_()
        self.packed = [True] * len(self.params)
        self.n_packed = len(self.params)

    def start(self, comms):
        """Start the sum over ranks (in place; float16/32/64 non-blocking)."""
        if self.wire_dtype == torch.bfloat16:
            # No bfloat16 sum in MPI or NumPy: gather the 16-bit words, sum in float32.
            words = comms.allgather(as_array(self.flat))
            gathered = from_array(words, torch.bfloat16).view(comms.size, -1)
            self._sum = gathered.float().sum(0)
            self.request = None
        else:
            array = as_array(self.flat)
            self.request = comms.iallreduce(array, out=array)

    def poke(self):
        """Let MPI progress an in-flight reduction (never blocks)."""
        if self.request is not None:
            self.request.test()

    def finish(self, divisor):
        """Wait for the sum, write sum/divisor into every parameter's ``.grad``, reset."""
        if self.request is not None:
            self.request.wait()
            self.request = None
            total = self.flat
        else:
            total = self._sum
            self._sum = None
        total = total.to(self.dtype)  # no copy without compression
        if divisor != 1:
            total.div_(divisor)
        with torch.no_grad():
            for a, b, p in zip(self.offsets, self.offsets[1:], self.params):
                grad = total[a:b].view(p.shape)
                if p.grad is None:
                    p.grad = grad.clone()
                else:
                    p.grad.copy_(grad)
        self.packed = [False] * len(self.params)
        self.n_packed = 0


def make_buckets(named, cap_bytes, wire_dtype):
    """Buckets of ``named`` parameters (registration order) in reverse order."""
    buckets, current, size = [], [], 0
    for name, p in reversed(named):
        nbytes = p.numel() * p.element_size()
        if current and (
            size + nbytes > cap_bytes
            or (p.device, p.dtype) != (current[0][1].device, current[0][1].dtype)
        ):
            buckets.append(Bucket(len(buckets), current, wire_dtype))
            current, size = [], 0
        current.append((name, p))
        size += nbytes
    if current:
        buckets.append(Bucket(len(buckets), current, wire_dtype))
    return buckets
