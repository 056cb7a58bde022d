"""Per-row draws (mlmpi.random) are the same at any number of ranks, with
unequal and empty shards: the shuffled order, the exact subsets and both
bootstraps, each against the same draws made on one rank."""

import numpy as np
from shards import tested_layouts

from mlmpi import get_comms
from mlmpi.comms.self import SelfComms
from mlmpi.random._order import shuffled_positions
from mlmpi.random._tree import LEAF, WeightedBootstrap, bootstrap_counts, subset_parts
from mlmpi.utils.validation import RowLayout

COMMS = get_comms()
N_ROWS = 3 * LEAF + 123  # leaves cut by the ranks' boundaries


def _each_layout():
    for name, counts in tested_layouts(N_ROWS, COMMS.size).items():
        yield name, RowLayout(tuple(counts), COMMS.rank)


def _alone():
    return RowLayout((N_ROWS,), 0)


def _mine(layout, values):
    return values[layout.offset : layout.offset + layout.n_local]


def case_shuffled_order_is_the_same_at_any_rank_count():
    groups = np.arange(N_ROWS) * 7 % 3
    reference = shuffled_positions(5, 1, _alone(), SelfComms())
    by_group = shuffled_positions(5, 1, _alone(), SelfComms(), groups, 3)
    assert np.array_equal(np.sort(reference), np.arange(N_ROWS))
    for g in range(3):
        assert np.array_equal(np.sort(by_group[groups == g]), np.arange((groups == g).sum()))
    for name, layout in _each_layout():
        mine = shuffled_positions(5, 1, layout, COMMS)
        assert np.array_equal(mine, _mine(layout, reference)), name
        grouped = shuffled_positions(5, 1, layout, COMMS, _mine(layout, groups), 3)
        assert np.array_equal(grouped, _mine(layout, by_group)), name


def case_subsets_and_bootstraps_are_the_same_at_any_rank_count():
    sizes = (LEAF + 7, 501)
    parts = subset_parts(2, 3, N_ROWS, sizes, 0, N_ROWS)
    counts = bootstrap_counts(2, 4, N_ROWS, N_ROWS // 2, 0, N_ROWS)
    weights = np.random.RandomState(0).exponential(size=N_ROWS)
    weights[LEAF : 2 * LEAF] = 0.0  # a leaf never drawn
    weighted = WeightedBootstrap(weights, _alone(), SelfComms()).counts(2, 5, N_ROWS)
    assert weighted[LEAF : 2 * LEAF].sum() == 0 and weighted.sum() == N_ROWS
    for name, layout in _each_layout():
        start, stop = layout.offset, layout.offset + layout.n_local
        assert np.array_equal(subset_parts(2, 3, N_ROWS, sizes, start, stop), parts[start:stop])
        mine = bootstrap_counts(2, 4, N_ROWS, N_ROWS // 2, start, stop)
        assert np.array_equal(mine, counts[start:stop]), name
        draws = WeightedBootstrap(_mine(layout, weights), layout, COMMS).counts(2, 5, N_ROWS)
        assert np.array_equal(draws, weighted[start:stop]), name
