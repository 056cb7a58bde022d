"""The comms' exchanges between pairs of ranks, in which every rank takes part."""

from ._checks import agreed_pairs, alltoallv_counts, array_arguments
from ._types import Request


class Exchanges:
    """The public point-to-point exchanges of :class:`~mlmpi.comms.Comms`."""

    def sendrecv(self, x, dest, source):
        """Send ``x`` to rank ``dest`` and return the array received from rank ``source``.

        Every rank calls it at the same time with its own ``dest`` and
        ``source`` (a ring: ``dest=(rank + 1) % size``, ``source=(rank - 1) % size``);
        the rank that sends to ``r`` must be the one ``r`` receives from.
        The number of rows may differ between ranks (including zero); the
        trailing shape and the dtype may not. Mismatched pairs or layouts
        raise the same ValueError on every rank.

        This method is collective.

        Parameters
        ----------
        x : array
            The rows to send (at least one dimension).
        dest : int
            The rank that receives ``x``.
        source : int
            The rank whose array this rank receives.

        Returns
        -------
        received : array
            ``source``'s ``x``.
        """
        x = self._checked("sendrecv", array_arguments, x, False)
        with self._collective("sendrecv", x) as call:
            rows = agreed_pairs(self, x, dest, source)
            wait, _ = self._isendrecv(x, int(dest), int(source), rows)
            return call.done(wait())

    def isendrecv(self, x, dest, source, *, recv_rows=None):
        """Start a :meth:`sendrecv` and return a :class:`Request`; ``wait()``
        gives the received array.

        The ranks first agree on the layout (one small allgather; none with
        ``recv_rows``), then the transfer runs in the background. ``x`` must not be modified until
        the request completes. The profile records the start
        (``isendrecv``) and the wait (``isendrecv.wait``).

        This method is collective.

        Parameters
        ----------
        x : array
            The rows to send (at least one dimension).
        dest : int
            The rank that receives ``x``.
        source : int
            The rank whose array this rank receives.
        recv_rows : int, default=None
            The rows ``source`` sends, when every rank knows what it receives
            (a ring over shards whose sizes every rank holds): the ranks then
            skip the agreement, and the exchange is point-to-point only. The
            pairs and layouts are the caller's promise; a wrong one hangs or
            fails in MPI.

        Returns
        -------
        request : Request
            ``request.wait()`` gives ``source``'s ``x``.
        """
        x = self._checked("isendrecv", array_arguments, x, False)
        with self._collective("isendrecv", x):
            if recv_rows is None:
                recv_rows = agreed_pairs(self, x, dest, source)
            wait, test = self._isendrecv(x, int(dest), int(source), int(recv_rows))

        def finish():
            with self._collective("isendrecv.wait") as call:
                return call.done(wait())

        return Request(finish, test)

    def alltoallv(self, x, counts, *, return_counts=False):
        """Send ``counts[r]`` consecutive rows of ``x`` to rank ``r`` (in rank
        order); return the rows received, concatenated in source-rank order.

        Bad counts or mismatched layouts raise the same ValueError on every
        rank. Besides the rows, each rank sends and receives one integer per
        rank (the counts) and takes part in one allreduce of four integers
        (the agreement on the layout).

        This method is collective.

        Parameters
        ----------
        x : array
            The rows to send, grouped by destination; every rank must pass
            arrays with the same trailing shape and dtype.
        counts : sequence of int
            One non-negative entry per rank, summing to ``len(x)``.
        return_counts : bool, default=False
            Also return how many rows came from each rank.

        Returns
        -------
        received : array
            The rows sent to this rank, in source-rank order.
        received_counts : list of int
            Rows received from each rank (only with ``return_counts=True``).
        """
        x = self._checked("alltoallv", array_arguments, x, False)
        with self._collective("alltoallv", x) as call:
            send, recv = alltoallv_counts(self, x, counts)
            received = call.done(self._alltoallv(x, send, recv))
            return (received, recv) if return_counts else received
