"""The comms' collectives of Python objects, the barrier, splits and row offsets."""

import numpy as np

from ._checks import color_arguments, root_arguments
from ._record import Pickled


class ObjectCollectives:
    """The public object collectives and helpers of :class:`~mlmpi.comms.Comms`."""

    def bcast_object(self, obj, root=0):
        """Picklable ``obj`` from ``root`` on every rank.

        This method is collective.

        Parameters
        ----------
        obj : object
            The object on ``root`` (ignored elsewhere).
        root : int, default=0
            The rank that sends.

        Returns
        -------
        obj : object
            ``root``'s object.
        """
        self._checked("bcast_object", root_arguments, root, self.size)
        with self._collective("bcast_object", Pickled(obj) if self.rank == root else None) as c:
            result = self._bcast_object(obj, root)
            if self.rank != root:
                c.done(Pickled(result))
            return result

    def allgather_object(self, obj):
        """List of every rank's picklable ``obj``, in rank order.

        This method is collective.

        Parameters
        ----------
        obj : object
            This rank's object.

        Returns
        -------
        objects : list
            One object per rank.
        """
        self._checked("allgather_object", lambda: (None, ()))
        with self._collective("allgather_object", Pickled(obj)) as call:
            result = self._allgather_object(obj)
            call.done(Pickled(result))
            return result

    def barrier(self):
        """Wait until every rank has entered the barrier.

        This method is collective.
        """
        self._checked("barrier", lambda: (None, ()))
        with self._collective("barrier"):
            self._barrier()

    def split(self, color, key=0):
        """Sub-communicators of the ranks sharing ``color``.

        The result has this comms' backend and settings.

        This method is collective.

        Parameters
        ----------
        color : int or None
            Ranks with the same non-negative color form one sub-communicator;
            ranks passing None take part but get None.
        key : int, default=0
            Order of the ranks in their sub-communicator (then by rank).

        Returns
        -------
        comms : Comms or None
        """
        color = self._checked("split", color_arguments, color)
        with self._collective("split"):
            return self._split(color, key)

    def exclusive_scan_rows(self, n_rows):
        """Global index of this rank's first row, and the global row count.

        This method is collective.

        Parameters
        ----------
        n_rows : int
            Rows on this rank.

        Returns
        -------
        offset : int
            Rows on the ranks before this one.
        total : int
            Rows on all ranks.
        """
        counts = self.allgather(np.asarray(n_rows, dtype=np.int64))
        return int(counts[: self.rank].sum()), int(counts.sum())
