"""UMAP's layout: stochastic gradient epochs on the fuzzy graph's edges, with
each rank moving its own rows.

umap-learn moves the rows one edge at a time, in one sequence over all
edges, moving both ends of each edge. Here an epoch is two passes, each
after every rank gathers the embedding (one allgatherv of ``n ·
n_components`` float32): every gradient of a pass is taken at the gathered
positions, so the two rows of an edge pull each other alike; the first
pass pulls along the edges due this epoch and pushes away from their
negative samples, the second pulls along them again (the graph holds each
edge in both directions, and umap-learn pulls each row once for each)
(``mlmpi.kernels.cpu.umap.layout_epoch``). Negative samples come from a
counter-based generator addressed by (seed, epoch, row, edge, draw), each
edge keeps umap-learn's schedule, and a row reads nothing but the gathered
embedding and its own edges: the embedding has the same bits at any number
of ranks.
"""

import numpy as np
from scipy.optimize import curve_fit

from ..kernels import kernels_for


def find_ab_params(spread, min_dist):
    """The curve ``1 / (1 + a d^(2b))`` nearest to the offset exponential of
    ``spread`` and ``min_dist`` (umap-learn's least-squares fit). Replicated."""

    def curve(x, a, b):
        return 1.0 / (1.0 + a * x ** (2 * b))

    xv = np.linspace(0, spread * 3, 300)
    yv = np.zeros(xv.shape)
    yv[xv < min_dist] = 1.0
    yv[xv >= min_dist] = np.exp(-(xv[xv >= min_dist] - min_dist) / spread)
    params, _ = curve_fit(curve, xv, yv)
    return float(params[0]), float(params[1])


def pruned(graph, n_epochs, comms):
    """The edges whose weight is at least the largest (of every rank) over
    ``n_epochs``: those that umap-learn samples at least once. Collective."""
    local = graph.values.max(initial=0.0)
    largest = np.float32(comms.allreduce(np.array([local], dtype=np.float64), op="max")[0])
    return graph.kept(graph.values >= largest / np.float32(n_epochs)), largest


class EdgeSchedule:
    """umap-learn's sampling schedule of this rank's edges: an edge of weight
    ``w`` is due every ``largest / w`` epochs, its negative samples
    ``negative_sample_rate`` times as often."""

    def __init__(self, weights, largest, n_epochs, negative_sample_rate):
        samples = np.float32(n_epochs) * (weights.astype(np.float32) / np.float32(largest))
        self.per_sample = float(n_epochs) / samples.astype(np.float64)
        self.next_sample = self.per_sample.copy()
        self.per_negative = self.per_sample / negative_sample_rate
        self.next_negative = self.per_negative.copy()


def optimize_layout(
    head,
    graph,
    *,
    tail,
    first_row,
    n_epochs,
    largest,
    a,
    b,
    gamma,
    initial_alpha,
    negative_sample_rate,
    seed,
    comms,
):
    """Move this rank's rows ``head`` (float32, in place) for ``n_epochs`` epochs.

    ``graph`` holds the rows' edges (``graph.indices`` index the tail rows).
    ``tail=None`` (``fit``): the rows move against the embedding itself, in
    two passes an epoch, each after gathering it (two allgathers an epoch:
    collective); otherwise against the fixed embedding of every fitted row
    (``transform``, one pass an epoch: local).
    """
    kernels = kernels_for("umap", head)
    schedule = EdgeSchedule(graph.values, largest, n_epochs, negative_sample_rate)
    due = np.zeros(graph.indices.shape[0], dtype=np.bool_)
    self_edges = tail is None
    passes = (False, True) if self_edges else (False,)
    powers = kernels.power_table(b)
    alpha = initial_alpha
    for epoch in range(n_epochs):
        for second_pull in passes:
            snapshot = np.asarray(comms.allgatherv(head)) if self_edges else tail
            kernels.layout_epoch(
                head,
                snapshot,
                first_row,
                self_edges,
                graph.indptr,
                graph.indices,
                schedule.per_sample,
                schedule.next_sample,
                schedule.per_negative,
                schedule.next_negative,
                due,
                second_pull,
                epoch,
                alpha,
                a,
                b,
                gamma,
                np.uint64(seed),
                *powers,
            )
        alpha = initial_alpha * (1.0 - epoch / n_epochs)
    return head
