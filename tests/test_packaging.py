"""Every package of the source tree is in pyproject.toml's package list, so a
regular (non-editable) install or a wheel carries all of mlmpi, not only the
editable install the tests run from."""

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def _packages_on_disk():
    found = set()
    for top, name in (("mlmpi", "mlmpi"), ("kernels", "mlmpi.kernels")):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *parts)))
    return found


def test_every_package_is_listed():
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    on_disk = _packages_on_disk()
    assert on_disk - listed == set(), "packages missing from pyproject.toml's list"
    assert listed - on_disk == set(), "pyproject.toml lists packages that do not exist"
