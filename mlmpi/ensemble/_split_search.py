"""Split search spread over the ranks, for every tree learner.

A tree learner scores the candidate splits of *items*: the features of a
node (boosting, :mod:`._hgb_grower`) or the (node, feature) pairs of a level
(the forests, :mod:`._grow`). Instead of reducing every histogram to every
rank, or to one rank that decides alone, the ranks share the items out in
contiguous blocks, one per rank (:class:`Blocks`), as LightGBM's
data-parallel learner does:

1. every rank builds the local histograms of all items, ``(n_items, ...)``,
   as sums that do not depend on the order of the rows (integers), so that
   the reduction gives the same bits at any number of ranks;
2. :meth:`Blocks.reduce` (one reduce-scatter) leaves each rank the global
   histograms of its block only;
3. each rank finds the best split of every item of its block (a kernel): a
   row of a few numbers per item;
4. :meth:`Blocks.gather` (one allgather) gives every rank the rows of every
   item, in item order, and every rank picks the same winner per node by the
   learner's rule (the largest gain; ties to the item scikit-learn's scan
   meets first).

Nothing waits on one rank, and the traffic per node is the histograms' size
divided among the ranks plus a few numbers per item, whatever the number of
rows.
"""

import numpy as np


class Blocks:
    """Contiguous blocks of ``n_items`` items, one per rank (sizes differ by at
    most one, the larger first).

    Parameters
    ----------
    n_items : int
    comms : Comms

    Attributes
    ----------
    counts : list of int
        Items of each rank's block.
    start, stop : int
        This rank's block is items ``start`` to ``stop - 1`` (empty when there
        are more ranks than items).
    """

    def __init__(self, n_items, comms):
        base, extra = divmod(int(n_items), comms.size)
        self.counts = [base + (r < extra) for r in range(comms.size)]
        self.start = int(sum(self.counts[: comms.rank]))
        self.stop = self.start + self.counts[comms.rank]
        self.comms = comms

    @property
    def owned(self):
        """This rank's items, as a slice of the item axis."""
        return slice(self.start, self.stop)

    def reduce(self, local):
        """Global sums of this rank's block of the local histograms.

        Parameters
        ----------
        local : array of shape (n_items, ...)
            This rank's histograms of every item (NumPy or CuPy).

        Returns
        -------
        block : array of shape (stop - start, ...)
            Sums over every rank (``local`` itself at one rank), in ``local``'s dtype.

        Notes
        -----
        This method is collective (one reduce-scatter).
        """
        if self.comms.size == 1:
            return local
        return self.comms.reduce_scatter(local, self.counts)

    def gather(self, found):
        """Every rank's rows of its block, in item order.

        Parameters
        ----------
        found : ndarray of shape (stop - start, ...)
            This rank's results for the items of its block (host).

        Returns
        -------
        every : ndarray of shape (n_items, ...)
            Identical on every rank (``found`` itself at one rank).

        Notes
        -----
        This method is collective (one allgather of the blocks, each padded
        to the largest).
        """
        comms = self.comms
        width = self.counts[0]
        if comms.size == 1 or width == 0:
            return found
        padded = np.zeros((width,) + found.shape[1:], dtype=found.dtype)
        padded[: found.shape[0]] = found
        every = comms.allgather(padded).reshape((comms.size, width) + found.shape[1:])
        return np.concatenate([every[r, :count] for r, count in enumerate(self.counts)])
