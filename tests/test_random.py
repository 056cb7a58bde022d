"""The random-draw policy, and statistical checks of the per-row draws on fixed seeds.

The per-row draws are draws from scikit-learn's distributions, not its
numbers: these tests check the distributions (exact sizes, the bootstrap's
moments, uniformity by chi-square), with thresholds that a correct sampler
fails on these fixed seeds with probability below 1e-3.
"""

import numpy as np
import pytest
from scipy import stats

from mlmpi.comms.self import SelfComms
from mlmpi.random import REPLAY_LIMIT, draws, draws_for, get_draws, set_draws
from mlmpi.random._order import shuffled_positions
from mlmpi.random._tree import LEAF, WeightedBootstrap, bootstrap_counts, subset_parts
from mlmpi.utils.validation import RowLayout


@pytest.fixture
def program_policy():
    yield
    set_draws(None)


def test_auto_replays_scikit_learn_up_to_the_limit(monkeypatch):
    monkeypatch.delenv("MLMPI_RANDOM_DRAWS", raising=False)
    assert get_draws() == "auto"
    assert draws_for(REPLAY_LIMIT) == "scikit-learn"
    assert draws_for(REPLAY_LIMIT + 1) == "per-row"


def test_a_block_overrides_the_program_and_the_environment(monkeypatch, program_policy):
    monkeypatch.setenv("MLMPI_RANDOM_DRAWS", "per-row")
    assert draws_for(10) == "per-row"
    set_draws("scikit-learn")
    assert draws_for(10 * REPLAY_LIMIT) == "scikit-learn"
    with draws("per-row"):
        assert get_draws() == "per-row"
    assert get_draws() == "scikit-learn"


@pytest.mark.parametrize("policy", ["sklearn", "PER_ROW", ""])
def test_an_unknown_policy_is_refused(policy, monkeypatch):
    with pytest.raises(ValueError, match="is not a random-draw policy"):
        set_draws(policy)
    monkeypatch.setenv("MLMPI_RANDOM_DRAWS", policy + "x")
    with pytest.raises(ValueError, match="MLMPI_RANDOM_DRAWS"):
        get_draws()


N = 5 * LEAF + 17


def test_bootstrap_multiplicities_have_the_multinomial_moments():
    means, variances = [], []
    for seed in range(8):
        counts = bootstrap_counts(seed, 0, N, N, 0, N)
        assert counts.sum() == N and counts.min() >= 0
        means.append(counts.mean())
        variances.append(counts.var())
    # each count is Binomial(N, 1/N): variance 1 - 1/N; the sample variance of
    # N such counts has a standard error of about sqrt(2 / N)
    assert np.allclose(means, 1.0)
    assert abs(np.mean(variances) - (1 - 1 / N)) < 4 * np.sqrt(2 / N / 8)


def test_a_weighted_bootstrap_draws_in_proportion_to_the_weights():
    weights = np.where(np.arange(N) % 2 == 0, 1.0, 3.0)
    weights[:LEAF] = 0.0
    bootstrap = WeightedBootstrap(weights, RowLayout((N,), 0), SelfComms())
    counts = sum(bootstrap.counts(seed, 0, N) for seed in range(4))
    assert counts[:LEAF].sum() == 0
    drawn = [counts[LEAF:][0::2].sum(), counts[LEAF:][1::2].sum()]
    light, heavy = weights[LEAF:][0::2].sum(), weights[LEAF:][1::2].sum()
    expected = np.array([light, heavy]) / (light + heavy) * sum(drawn)
    assert stats.chisquare(drawn, expected).pvalue > 1e-3


def test_a_subset_has_its_exact_size_and_is_uniform():
    hits = np.zeros(N)
    for seed in range(20):
        parts = subset_parts(seed, 0, N, (1000, 3000), 0, N)
        assert np.bincount(parts + 1, minlength=3)[1:].tolist() == [1000, 3000]
        hits += parts == 0
    # how often each of 40 blocks of rows is chosen: uniform
    per_block = hits[: N // 40 * 40].reshape(40, -1).sum(axis=1)
    assert stats.chisquare(per_block).pvalue > 1e-3


def test_the_shuffled_order_is_a_uniform_permutation():
    n, seeds = 20, 1000
    first = np.zeros(n)
    for seed in range(seeds):
        positions = shuffled_positions(seed, 0, RowLayout((n,), 0), SelfComms())
        assert np.array_equal(np.sort(positions), np.arange(n))
        first[np.argmin(positions)] += 1
    assert stats.chisquare(first).pvalue > 1e-3


def test_positions_within_groups_count_from_zero_in_each_group():
    groups = np.arange(1000) % 3
    positions = shuffled_positions(1, 0, RowLayout((1000,), 0), SelfComms(), groups, 3)
    for g in range(3):
        assert np.array_equal(np.sort(positions[groups == g]), np.arange((groups == g).sum()))
