"""Split search spread over the ranks: each rank owns a block of features.

A tree node's split search needs the global histogram of every feature. Instead
of reducing every histogram to every rank (or to one rank that then decides
alone), the ranks reduce-scatter the histograms by feature, as LightGBM's
data-parallel learner does: rank ``r`` receives the global histograms of its
block of features only (:meth:`FeatureBlocks.reduce`), finds the best split
among them, and one small allgather of every rank's best candidate picks the
winner (:func:`pick_winners`). Nothing waits on one rank, and the traffic per
node is the histograms' size, whatever the number of rows.

The pattern is independent of what a histogram holds or how a split is scored:

1. every rank builds the local histograms of all features, shape
   ``(n_features, ...)``, in a dtype whose sums are exact (integers), so the
   reduction gives the same bits at any number of ranks;
2. :meth:`FeatureBlocks.reduce` returns this rank's block, ``(n_owned, ...)``;
3. every rank scores its features and proposes one candidate per node, a row
   of int64 whose first entry is the gain (a float64's bits,
   :func:`gain_bits`) and second a tie-break key (smaller wins);
4. :func:`pick_winners` returns, for each node, the candidate of largest gain,
   on a tie the one of smallest key: the first best in a serial scan of the
   features in key order, as with scikit-learn's strict ``>``.
"""

import numpy as np

NO_CANDIDATE_KEY = np.iinfo(np.int64).max


class FeatureBlocks:
    """Contiguous blocks of features, one per rank (sizes differ by at most one).

    Parameters
    ----------
    n_features : int
    size : int
        Number of ranks.
    rank : int
        This rank.

    Attributes
    ----------
    counts : list of int
        Features of each rank's block.
    start, stop : int
        This rank's block is features ``start`` to ``stop - 1`` (empty when
        there are more ranks than features).
    """

    def __init__(self, n_features, size, rank):
        base, extra = divmod(n_features, size)
        self.counts = [base + (r < extra) for r in range(size)]
        self.start = int(sum(self.counts[:rank]))
        self.stop = self.start + self.counts[rank]

    @property
    def owned(self):
        """This rank's features, as a slice of the feature axis."""
        return slice(self.start, self.stop)

    def reduce(self, local, comms):
        """Global sums of this rank's block of the local histograms.

        Parameters
        ----------
        local : array of shape (n_features, ...)
            This rank's histograms of every feature (exact dtype: int64).
        comms : Comms

        Returns
        -------
        block : array of shape (stop - start, ...)
            Sums over every rank, in ``local``'s namespace.

        Notes
        -----
        This method is collective (one reduce-scatter).
        """
        if comms.size == 1:
            return local.copy()
        return comms.reduce_scatter(local, self.counts)


def gain_bits(gain):
    """The bits of float64 ``gain`` as an int64, to travel in a candidate row."""
    return np.float64(gain).view(np.int64)


def no_candidate(width):
    """A candidate row that loses to every real one (a rank without features)."""
    row = np.zeros(width, dtype=np.int64)
    row[0] = gain_bits(-np.inf)
    row[1] = NO_CANDIDATE_KEY
    return row


def pick_winners(candidates, comms):
    """The winning candidate of each node over the ranks.

    Parameters
    ----------
    candidates : ndarray of shape (n_nodes, width), int64
        This rank's best candidate for each node: column 0 the gain's bits
        (:func:`gain_bits`), column 1 the tie-break key; the other columns
        travel with them.
    comms : Comms

    Returns
    -------
    winners : ndarray of shape (n_nodes, width), int64
        For each node, the row of largest gain, ties to the smallest key;
        identical on every rank.

    Notes
    -----
    This function is collective (one allgather of ``n_nodes * width`` int64
    per rank).
    """
    if comms.size == 1:
        return candidates
    every = comms.allgather(np.ascontiguousarray(candidates)[None])
    gains = every[:, :, 0].view(np.float64)
    keys = every[:, :, 1]
    best_gain = gains.max(axis=0)
    keys = np.where(gains == best_gain, keys, NO_CANDIDATE_KEY)
    ranks = keys.argmin(axis=0)
    return every[ranks, np.arange(candidates.shape[0])]
