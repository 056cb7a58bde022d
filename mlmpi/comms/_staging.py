"""Host staging of CuPy arrays for MPI libraries that are not CUDA-aware.

:class:`HostStaging` keeps one page-locked (pinned) host buffer per slot
(``"send"``, ``"recv"``) and reuses it call after call, growing it to the
next power of two when a message does not fit: the copies between device
and host run at full PCIe/NVLink-C2C speed, and no pinned allocation (a
slow driver call) is made per collective.
"""

import numpy as np

_MIN_BYTES = 1 << 12


def _pinned(nbytes):
    import cupyx

    return cupyx.empty_pinned(nbytes, dtype=np.uint8)


class HostStaging:
    """Reused host buffers, one per slot.

    Parameters
    ----------
    allocate : callable, default=None
        ``allocate(nbytes)`` returns a 1-d uint8 host array. None means
        pinned memory from ``cupyx.empty_pinned``.
    """

    def __init__(self, allocate=None):
        self._allocate = _pinned if allocate is None else allocate
        self._slots = {}

    def buffer(self, slot, size, dtype):
        """A 1-d host array of ``size`` elements of ``dtype`` in ``slot``'s buffer.

        The memory is the same as at the previous call for ``slot`` unless
        it had to grow: what a previous call returned is overwritten.
        """
        dtype = np.dtype(dtype)
        nbytes = size * dtype.itemsize
        held = self._slots.get(slot)
        if held is None or held.nbytes < nbytes:
            held = self._allocate(max(_MIN_BYTES, 1 << max(nbytes - 1, 0).bit_length()))
            self._slots[slot] = held
        return held[:nbytes].view(dtype)

    def download(self, slot, x):
        """``x`` (a CuPy array) flattened into ``slot``'s buffer; the copy has finished."""
        host = self.buffer(slot, x.size, x.dtype)
        if x.size:
            x.reshape(-1).get(out=host)  # synchronizes the current stream
        return host

    @staticmethod
    def upload(host, shape):
        """A new CuPy array of ``shape`` holding ``host``; the copy has finished
        (so ``host``'s buffer may be reused at once)."""
        import cupy

        out = cupy.empty(host.size, dtype=host.dtype)
        if host.size:
            out.set(host)
            cupy.cuda.get_current_stream().synchronize()
        return out.reshape(shape)
