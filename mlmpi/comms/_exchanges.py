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
        with self._collective("sendrecv", x):
            rows = agreed_pairs(self, x, dest, source)
            wait, _ = self._isendrecv(x, int(dest), int(source), rows)
            return wait()

    def isendrecv(self, x, dest, source):
        """Start a :meth:`sendrecv` and return a :class:`Request`; ``wait()``
        gives the received array.

        The ranks first agree on the layout (one small allgather), then the
        transfer runs in the background. ``x`` must not be modified until
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

        Returns
        -------
        request : Request
            ``request.wait()`` gives ``source``'s ``x``.
        """
        x = self._checked("isendrecv", array_arguments, x, False)
        with self._collective("isendrecv", x):
            rows = agreed_pairs(self, x, dest, source)
            wait, test = self._isendrecv(x, int(dest), int(source), rows)

        def finish():
            with self._collective("isendrecv.wait"):
                return wait()

        return Request(finish, test)

    def alltoallv(self, x, counts):
        """Send ``counts[r]`` consecutive rows of ``x`` to rank ``r`` (in rank
        order); return the rows received, concatenated in source-rank order.

        Bad counts or mismatched layouts raise the same ValueError on every
        rank.

        This method is collective.

        Parameters
        ----------
        x : array
            The rows to send, grouped by destination; every rank must pass
            arrays with the same trailing shape and dtype.
        counts : sequence of int
            One non-negative entry per rank, summing to ``len(x)``.

        Returns
        -------
        received : array
            The rows sent to this rank, in source-rank order.
        """
        x = self._checked("alltoallv", array_arguments, x, False)
        with self._collective("alltoallv", x):
            send, recv = alltoallv_counts(self, x, counts)
            return self._alltoallv(x, send, recv)
