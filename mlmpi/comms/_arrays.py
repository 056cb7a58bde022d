"""The comms' collectives of arrays (reductions, broadcasts, gathers)."""

import numpy as np

from .._array import get_namespace, is_device_array
from ._checks import (
    agreed_rows,
    array_arguments,
    as_array,
    reduce_scatter_arguments,
    reduction_arguments,
    root_arguments,
)
from ._types import Request


def _device_namespace(on_device):
    if on_device:
        import cupy

        return cupy
    return np


class ArrayCollectives:
    """The public array collectives of :class:`~mlmpi.comms.Comms`, built on
    its primitives (``_allreduce`` ...) and its record of collectives."""

    def allreduce(self, x, op="sum", out=None):
        """Element-wise reduction of ``x`` over all ranks, result on every rank.

        Reusing one ``out`` avoids allocating and faulting in a new result
        every call.

        This method is collective.

        Parameters
        ----------
        x : array
            NumPy or CuPy array (a scalar is a 0-d array), the same shape
            and dtype on every rank.
        op : {'sum', 'prod', 'min', 'max'} or ReduceOp, default='sum'
            The reduction.
        out : array, default=None
            A caller-owned, C-contiguous array of ``x``'s shape, dtype and
            array type that receives the result; it may be ``x`` itself (in
            place).

        Returns
        -------
        result : array
            The reduction (``out`` when given), of ``x``'s array type.
        """
        x, op = self._checked("allreduce", reduction_arguments, x, op, out)
        with self._collective("allreduce", x) as call:
            if out is None:
                return call.done(self._allreduce(x, op))
            self._allreduce_into(x, out, op)
            return call.done(out)

    def reduce(self, x, op="sum", root=0):
        """Element-wise reduction to ``root``; other ranks get ``None``.

        This method is collective.

        Parameters
        ----------
        x : array
            NumPy or CuPy array, the same shape and dtype on every rank.
        op : {'sum', 'prod', 'min', 'max'} or ReduceOp, default='sum'
            The reduction.
        root : int, default=0
            The rank that receives the result.

        Returns
        -------
        result : array or None
            The reduction on ``root``, None elsewhere.
        """
        x, op = self._checked("reduce", reduction_arguments, x, op, None, root, self.size)
        with self._collective("reduce", x) as call:
            return call.done(self._reduce(x, op, root))

    def reduce_scatter(self, x, counts, op="sum"):
        """Element-wise reduction of ``x`` whose blocks of rows go to the ranks:
        rank ``r`` gets the reduction of rows ``sum(counts[:r])`` to
        ``sum(counts[:r + 1])``.

        Each rank receives only its block, so the traffic per rank is about
        ``len(x) / size`` rows (LightGBM's data-parallel histograms).

        This method is collective.

        Parameters
        ----------
        x : array
            NumPy or CuPy array of at least one dimension, the same shape and
            dtype on every rank.
        counts : sequence of int
            Rows of the block of each rank (non-negative, summing to
            ``len(x)``), the same on every rank.
        op : {'sum', 'prod', 'min', 'max'} or ReduceOp, default='sum'
            The reduction.

        Returns
        -------
        block : array
            This rank's reduced block, of shape ``(counts[rank],) + x.shape[1:]``
            and ``x``'s array type.

        Examples
        --------
        >>> import numpy as np
        >>> from mlmpi import get_comms
        >>> get_comms().reduce_scatter(np.arange(6.0).reshape(3, 2), [3])
        array([[0., 1.],
               [2., 3.],
               [4., 5.]])
        """
        x, counts, op = self._checked(
            "reduce_scatter", reduce_scatter_arguments, x, counts, op, self.size
        )
        with self._collective("reduce_scatter", x) as call:
            return call.done(self._reduce_scatter(x, counts, op))

    def bcast(self, x, root=0):
        """Copy of ``root``'s array on every rank.

        A non-root rank gets a CuPy array when it passes one, or passes
        ``None`` and ``root`` sent one.

        This method is collective.

        Parameters
        ----------
        x : array or None
            The array on ``root``. Non-root ranks may pass ``None`` (or any
            placeholder): shape and dtype come from ``root``.
        root : int, default=0
            The rank that sends.

        Returns
        -------
        result : array
            A new array equal to ``root``'s ``x``.
        """
        self._checked("bcast", root_arguments, root, self.size)
        if self.rank == root:
            x = as_array(x)
        with self._collective("bcast", x if self.rank == root else None) as call:
            if self.rank == root:
                out = get_namespace(x).array(x, copy=True, order="C")
                meta = (out.shape, out.dtype.str, is_device_array(out))
                self._bcast_object(meta, root)
            else:
                shape, dtype, root_on_device = self._bcast_object(None, root)
                xp = _device_namespace(is_device_array(x) or (x is None and root_on_device))
                out = xp.empty(shape, dtype=np.dtype(dtype))
            self._bcast_into(out, root)
            if self.rank != root:
                call.done(out)
            return out

    def allgather(self, x):
        """Concatenation along axis 0 of every rank's ``x`` (same shape on all ranks).

        This method is collective.

        Parameters
        ----------
        x : array
            This rank's array; the same shape and dtype on every rank.

        Returns
        -------
        result : array
            Of ``size * len(x)`` rows in rank order; a 0-d ``x`` gives a 1-d
            result of length ``size``.
        """
        x = self._checked("allgather", array_arguments, x, True)
        with self._collective("allgather", x) as call:
            return call.done(self._allgather(x))

    def allgatherv(self, x):
        """Concatenation along axis 0 of every rank's ``x``, of any number of rows.

        The number of rows may differ between ranks (including zero), the
        other dimensions and the dtype may not (ValueError on every rank
        otherwise).

        This method is collective.

        Parameters
        ----------
        x : array
            This rank's rows (at least one dimension).

        Returns
        -------
        result : array
            Every rank's rows, in rank order.
        """
        x = self._checked("allgatherv", array_arguments, x, False)
        with self._collective("allgatherv", x) as call:
            return call.done(self._allgatherv(x, agreed_rows(self, x)))

    def iallreduce(self, x, op="sum", out=None):
        """Start an allreduce and return a :class:`Request`; ``wait()`` gives the result.

        The profile records the start (``iallreduce``, with the bytes) and
        the wait (``iallreduce.wait``) separately: their sum is the time this
        rank was blocked.

        This method is collective.

        Parameters
        ----------
        x : array
            As in :meth:`allreduce`; it must not be modified until the
            request completes.
        op : {'sum', 'prod', 'min', 'max'} or ReduceOp, default='sum'
            The reduction.
        out : array, default=None
            As in :meth:`allreduce` (``x`` itself for in place): the result
            is written there and ``wait()`` returns ``out``; it must not be
            read before then.

        Returns
        -------
        request : Request
            ``request.wait()`` gives the reduction.
        """
        x, op = self._checked("iallreduce", reduction_arguments, x, op, out)
        with self._collective("iallreduce", x):
            if out is None:
                wait, test = self._iallreduce(x, op)
            else:
                wait, test = self._iallreduce_into(x, out, op)

        def finish():
            with self._collective("iallreduce.wait") as call:
                return call.done(wait())

        return Request(finish, test)
