"""examples/train_digits.py reaches 95% test accuracy at 1, 2 and 4 ranks."""

import re
import sys
from pathlib import Path

import pytest
from _mpi import run_mpi

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_digits.py"


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_train_digits(nranks):
    returncode, output, timed_out = run_mpi(nranks, [sys.executable, EXAMPLE], timeout=300)
    assert not timed_out and returncode == 0, output
    assert f"ranks: {nranks} " in output
    found = re.search(r"^test accuracy (\S+)  samples/s (\d+)$", output, re.M)
    assert found, output
    assert float(found.group(1)) >= 0.95
    assert int(found.group(2)) > 0
