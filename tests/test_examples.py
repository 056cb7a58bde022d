"""The README's main job runs and agrees with scikit-learn."""

import re
import sys
from pathlib import Path

import pytest
from _mpi import run_mpi

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "kmeans.py"


@pytest.mark.parametrize("nranks", [1, 3])
def test_kmeans_example(nranks):
    returncode, output, timed_out = run_mpi(nranks, [sys.executable, EXAMPLE], timeout=180)
    assert not timed_out and returncode == 0, output
    assert f"ranks: {nranks} " in output
    lines = re.findall(r"^(mlmpi|scikit-learn)\s+inertia (\S+).*ARI (\S+)$", output, re.M)
    found = {name: (float(inertia), float(ari)) for name, inertia, ari in lines}
    assert set(found) == {"mlmpi", "scikit-learn"}, output
    (inertia, ari), (ref_inertia, ref_ari) = found["mlmpi"], found["scikit-learn"]
    assert inertia <= 1.01 * ref_inertia
    assert ari >= ref_ari - 0.01


WORKFLOW = EXAMPLE.parent / "workflow.py"


def test_workflow_example_equals_scikit_learn_at_2_ranks():
    returncode, output, timed_out = run_mpi(2, [sys.executable, WORKFLOW], timeout=300)
    assert not timed_out and returncode == 0, output
    assert "ranks: 2 " in output
    lines = re.findall(r"^(mlmpi|scikit-learn)\s+(best C .*)$", output, re.MULTILINE)
    found = dict(lines)
    assert set(found) == {"mlmpi", "scikit-learn"}, output
    assert found["mlmpi"] == found["scikit-learn"]


@pytest.mark.parametrize("nranks", [1, 2])
def test_dbscan_example_equals_sklearn(nranks):
    example = EXAMPLE.parent / "dbscan.py"
    returncode, output, timed_out = run_mpi(nranks, [sys.executable, example], timeout=180)
    assert not timed_out and returncode == 0, output
    assert f"ranks: {nranks} " in output
    assert "same labels as scikit-learn: True" in output, output


def _run_example(name, nranks=2):
    path = EXAMPLE.parent / name
    returncode, output, timed_out = run_mpi(nranks, [sys.executable, path], timeout=180)
    assert not timed_out and returncode == 0, output
    assert f"ranks: {nranks}" in output
    return output


def test_naive_bayes_example():
    output = _run_example("naive_bayes.py")
    lines = re.findall(
        r"^(\S+)\s+accuracy (\S+)\s+scikit-learn (\S+)\s+max difference (\S+)$",
        output,
        re.MULTILINE,
    )
    assert len(lines) == 3, output
    for _, score, reference, difference in lines:
        assert float(score) == float(reference)
        assert float(difference) < 1e-10


def test_logistic_l1_example():
    output = _run_example("logistic_l1.py")
    lines = re.findall(
        r"keeps (\d+) of \d+ features, accuracy (\S+); scikit-learn saga keeps "
        r"(\d+), accuracy (\S+); max coefficient difference (\S+)$",
        output,
        re.MULTILINE,
    )
    assert len(lines) == 2, output
    for kept, score, reference_kept, reference_score, difference in lines:
        assert kept == reference_kept and score == reference_score
        assert float(difference) < 1e-4


FOREST_EXAMPLE = EXAMPLE.parent / "random_forest.py"


def test_random_forest_example_at_two_ranks():
    returncode, output, timed_out = run_mpi(2, [sys.executable, FOREST_EXAMPLE], timeout=300)
    assert not timed_out and returncode == 0, output
    assert "ranks: 2 " in output
    found = dict(re.findall(r"^(mlmpi|scikit-learn)\s+accuracy (\S+)", output, re.MULTILINE))
    assert set(found) == {"mlmpi", "scikit-learn"}, output
    assert float(found["mlmpi"]) >= float(found["scikit-learn"]) - 0.01
