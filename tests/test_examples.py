"""Every script in examples/ runs under ``mpiexec -n 2`` and agrees with scikit-learn
(``notebook_engines.py`` runs as one process: it starts 2 MPI engines itself).

Each example prints ``ranks: N`` and its comparison from rank 0; the checks
below read those lines. One process runs each of them too: the docs build's
gallery (tests/test_docs.py). The trainer's result at 1-3 ranks is compared
in tests/mpi_cases/dnn_cases.py.
"""

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from _mpi import run_mpi, run_python

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _lines(pattern, output, count):
    found = re.findall(pattern, output, re.MULTILINE)
    assert len(found) == count, output
    return found


def check_kmeans(output):
    lines = _lines(r"^(mlmpi|scikit-learn)\s+inertia (\S+).*ARI (\S+)$", output, 2)
    found = {name: (float(inertia), float(ari)) for name, inertia, ari in lines}
    (inertia, ari), (ref_inertia, ref_ari) = found["mlmpi"], found["scikit-learn"]
    assert inertia <= 1.01 * ref_inertia
    assert ari >= ref_ari - 0.01


def check_dbscan(output):
    assert "same labels as scikit-learn: True" in output, output


def check_hdbscan_digits(output):
    assert "same labels as scikit-learn: True" in output, output
    assert "same membership strengths: True" in output, output
    (agreement,) = _lines(
        r"^adjusted Rand index with the digits \(clustered images\): (\S+)$", output, 1
    )
    assert float(agreement) >= 0.85


def check_tsne_hdbscan_digits(output):
    assert "same embedding as one process: True" in output, output
    (trust,) = _lines(r"^trustworthiness \(10 neighbours\): (\S+)$", output, 1)
    assert float(trust) >= 0.98
    (agreement,) = _lines(
        r"^adjusted Rand index with the digits \(clustered images\): (\S+)$", output, 1
    )
    assert float(agreement) >= 0.8


def check_umap_hdbscan_digits(output):
    assert "same new rows as one process: True" in output, output
    check_tsne_hdbscan_digits(output)  # the same lines and thresholds


def check_workflow(output):
    found = dict(_lines(r"^(mlmpi|scikit-learn)\s+(best C .*)$", output, 2))
    assert found["mlmpi"] == found["scikit-learn"]


def check_naive_bayes(output):
    pattern = r"^(\S+)\s+accuracy (\S+)\s+scikit-learn (\S+)\s+max difference (\S+)$"
    for _, score, reference, difference in _lines(pattern, output, 3):
        assert float(score) == float(reference)
        assert float(difference) < 1e-10


def check_logistic_l1(output):
    pattern = (
        r"keeps (\d+) of \d+ features, accuracy (\S+); scikit-learn saga keeps "
        r"(\d+), accuracy (\S+); max coefficient difference (\S+)$"
    )
    for kept, score, reference_kept, reference_score, difference in _lines(pattern, output, 2):
        assert kept == reference_kept and score == reference_score
        assert float(difference) < 1e-4


def check_random_forest(output):
    found = dict(_lines(r"^(mlmpi|scikit-learn)\s+accuracy (\S+)", output, 2))
    assert float(found["mlmpi"]) >= float(found["scikit-learn"]) - 0.01


def check_gradient_boosting(output):
    lines = _lines(r"^(mlmpi|scikit-learn)\s+accuracy (\S+)\s+iterations (\d+)$", output, 2)
    found = {name: (float(accuracy), int(n_iter)) for name, accuracy, n_iter in lines}
    assert found["mlmpi"][1] == found["scikit-learn"][1]
    assert abs(found["mlmpi"][0] - found["scikit-learn"][0]) <= 0.001
    (agree,) = _lines(r"the same predicted label on (\S+)% of the test rows$", output, 1)
    assert float(agree) >= 99.9


def check_linear_regression(output):
    pattern = r"R2 (\S+)\s+scikit-learn (\S+)\s+relative coefficient difference (\S+)$"
    for r2, reference, difference in _lines(pattern, output, 3):
        assert r2 == reference
        assert float(difference) < 1e-8


def check_decomposition(output):
    for difference in _lines(r"max component difference (\S+)$", output, 2):
        assert float(difference) < 1e-6


def check_neighbors(output):
    (found,) = _lines(r"^accuracy (\S+)\s+scikit-learn (\S+)\s+(.*)$", output, 1)
    assert found[0] == found[1]
    assert found[2] == "same neighbour distances: True  same predictions: True", output


def check_preprocessing(output):
    for difference in _lines(r"max difference (\S+)$", output, 3):
        assert float(difference) < 1e-10


def check_parquet_job(output):
    found = dict(_lines(r"^(mlmpi|scikit-learn)\s+accuracy (\S+)", output, 2))
    assert float(found["mlmpi"]) >= float(found["scikit-learn"]) - 0.02
    pattern = r"^predictions file: (\d+) rows, (\d+) parts, in row order: (\w+), accuracy (\S+)$"
    ((rows, parts, ordered, accuracy),) = _lines(pattern, output, 1)
    assert (int(rows), int(parts), ordered) == (1200, 2, "True")
    assert accuracy == found["mlmpi"]


def check_notebook_engines(output):
    (difference,) = _lines(r"^max centre difference from scikit-learn: (\S+)$", output, 1)
    assert float(difference) < 1e-10
    assert "same labels as scikit-learn: True" in output, output


def check_train_digits(output):
    (accuracy, rate) = _lines(r"^test accuracy (\S+)  samples/s (\d+)$", output, 1)[0]
    assert float(accuracy) >= 0.95
    assert int(rate) > 0


CHECKS = {
    name.removeprefix("check_") + ".py": check
    for name, check in globals().items()
    if name.startswith("check_")
}
HAS_TORCH = importlib.util.find_spec("torch") is not None
NRANKS = 2
# Started as one process: it starts its own MPI job (2 ipyparallel engines).
ONE_PROCESS = {"notebook_engines.py"}


def test_every_example_has_a_check():
    assert sorted(path.name for path in EXAMPLES.glob("*.py")) == sorted(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example(name, tmp_path):
    if name == "train_digits.py" and not HAS_TORCH:
        pytest.skip("the trainer's example needs torch")
    if name in ONE_PROCESS:
        pytest.importorskip("ipyparallel", reason="the notebook extra installs ipyparallel")
        env = {"IPYTHONDIR": str(tmp_path)}  # ipyparallel's files, away from ~/.ipython
        returncode, output, timed_out = run_python([EXAMPLES / name], timeout=300, env=env)
    else:
        argv = [sys.executable, EXAMPLES / name]
        returncode, output, timed_out = run_mpi(NRANKS, argv, timeout=300)
    assert not timed_out and returncode == 0, output
    assert f"ranks: {NRANKS} " in output or f"ranks: {NRANKS}\n" in output, output
    CHECKS[name](output)
