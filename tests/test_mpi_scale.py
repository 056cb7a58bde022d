"""Rank-invariance at scale: every ``tests/mpi_cases`` case at 8 ranks (and the
cheap modules at 16), more ranks than a CI machine's cores (oversubscribed,
with MPICH's progress loop throttled so that ranks sharing a core advance).

Marked ``scale`` and left out of the default run (``addopts`` in
pyproject.toml); run them with ``python -m pytest -m scale`` (about an hour
on 2 cores). The cases' layouts are the same as at 1-4 ranks: even shards,
unequal ones and one with an empty rank 0. A module that runs only at
particular rank counts (``RANKS``) runs at 8 only if it runs at more than
one rank, and not at all if its ``RANKS`` is empty (the GPU cases).
"""

import pytest
from _mpi import OVERSUBSCRIBED_ENV, case_params

#: Modules whose 16-rank job takes about as long as their 8-rank one.
SIXTEEN = {"comms_cases", "comms_p2p_cases", "quantiles_cases", "metrics_cases", "dbscan_cases"}


def _scale_ranks(module, ranks):
    if not ranks or max(ranks) < 2:
        return ()
    return (8, 16) if module in SIXTEEN else (8,)


@pytest.mark.parametrize(
    "module, case, nranks",
    list(case_params(_scale_ranks, marks=(pytest.mark.scale,))),
)
def test_mpi_case_at_scale(mpi_cases, module, case, nranks):
    mpi_cases.check(module, case, nranks, env=OVERSUBSCRIBED_ENV, timeout=3600)
