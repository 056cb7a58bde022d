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


FOREST_EXAMPLE = EXAMPLE.parent / "random_forest.py"


def test_random_forest_example_at_two_ranks():
    returncode, output, timed_out = run_mpi(2, [sys.executable, FOREST_EXAMPLE], timeout=300)
    assert not timed_out and returncode == 0, output
    assert "ranks: 2 " in output
    found = dict(re.findall(r"^(mlmpi|scikit-learn)\s+accuracy (\S+)", output, re.MULTILINE))
    assert set(found) == {"mlmpi", "scikit-learn"}, output
    assert float(found["mlmpi"]) >= float(found["scikit-learn"]) - 0.01
