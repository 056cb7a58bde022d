"""Every ``tests/mpi_cases/*_cases.py`` module under ``mpiexec``, one job per module and rank count.

A module says at which rank counts it runs with a literal ``RANKS = (...)``
(default: 1, 2, 3 and 4) and which optional packages it needs with
``REQUIRES = (...)`` (skipped without them). Both are read from the source,
so collecting does not import the cases. Runs of the same modules with a GPU
or another backend live in their own test files.
"""

import ast
import importlib.util

import pytest
from _mpi import HERE, RANK_COUNTS, case_names


def _literal(tree, name, default):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in node.targets
        ):
            return ast.literal_eval(node.value)
    return default


def _modules():
    for path in sorted((HERE / "mpi_cases").glob("*_cases.py")):
        tree = ast.parse(path.read_text())
        yield path.stem, _literal(tree, "RANKS", RANK_COUNTS), _literal(tree, "REQUIRES", ())


def _params():
    for module, ranks, requires in _modules():
        missing = [name for name in requires if importlib.util.find_spec(name) is None]
        marks = [pytest.mark.skip(reason=f"needs {', '.join(missing)}")] if missing else []
        for case in case_names(module):
            for nranks in ranks:
                yield pytest.param(
                    module, case, nranks, marks=marks, id=f"{module}-{case}-{nranks}"
                )


@pytest.mark.parametrize("module, case, nranks", list(_params()))
def test_mpi_case(mpi_cases, module, case, nranks):
    mpi_cases.check(module, case, nranks)
