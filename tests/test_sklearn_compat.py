"""scikit-learn's private names come through mlmpi/_sklearn_compat.py only,
and the installed scikit-learn is inside the range pyproject.toml supports."""

import ast
import re
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
COMPAT = ROOT / "mlmpi" / "_sklearn_compat.py"


def _is_private(dotted):
    return any(part.startswith("_") for part in dotted.split("."))


def private_sklearn_imports(path):
    """``line: statement`` of each import of a private scikit-learn name in ``path``
    (a name or a module starting with an underscore, at any depth of the code)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sklearn":
            names = [alias.name for alias in node.names]
            if _is_private(node.module) or any(_is_private(name) for name in names):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sklearn" and _is_private(alias.name):
                    found.append(f"{node.lineno}: import {alias.name}")
    return found


def test_no_private_sklearn_import_outside_the_compat_module():
    sources = sorted((ROOT / "mlmpi").rglob("*.py")) + sorted((ROOT / "kernels").rglob("*.py"))
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in sources
        if path != COMPAT and (found := private_sklearn_imports(path))
    }
    assert not offenders, (
        f"import scikit-learn's private names from mlmpi._sklearn_compat instead: {offenders}"
    )
    assert private_sklearn_imports(COMPAT)  # the scan does see private imports


def test_compat_module_exports_what_it_imports():
    from mlmpi import _sklearn_compat

    body = ast.parse(COMPAT.read_text()).body
    imported = {
        alias.asname or alias.name
        for node in body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    bridges = {node.name for node in body if isinstance(node, ast.FunctionDef)}
    assert set(_sklearn_compat.__all__) == imported | bridges


def test_installed_sklearn_is_in_the_supported_range():
    pyproject = (ROOT / "pyproject.toml").read_text()
    requirement = Requirement(re.search(r'"(scikit-learn[^"]*)"', pyproject).group(1))
    bounds = {spec.operator for spec in requirement.specifier}
    assert {">=", "<"} <= bounds, f"scikit-learn needs a floor and a cap: {requirement}"
    assert requirement.specifier.contains(version("scikit-learn")), requirement
