"""The documentation builds with no warnings: API pages, gallery and benchmark plot.

One Sphinx build in a subprocess (``python -m sphinx -W --keep-going``), which
also runs every example once in a single process.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("sphinx", "numpydoc", "sphinx_gallery", "matplotlib", "pydata_sphinx_theme", "torch")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the docs need {missing} (python -m pip install -e '.[test]')")
    html = tmp_path_factory.mktemp("docs") / "html"
    outside = ("MLMPI_COMMS", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")
    env = {key: value for key, value in os.environ.items() if key not in outside}
    env["MPLBACKEND"] = "Agg"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    done = subprocess.run(
        command + [str(ROOT / "docs"), str(html), "-d", str(html.parent / "doctrees")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-20000:]
    return html


def test_the_build_writes_no_warning(built):
    assert (built / "index.html").exists()


def test_every_example_is_a_gallery_page_with_a_figure(built):
    for example in sorted((ROOT / "examples").glob("*.py")):
        page = built / "auto_examples" / f"{example.stem}.html"
        assert page.exists(), example.name
        assert (built / "_images" / f"sphx_glr_{example.stem}_001.png").exists(), example.name


def test_every_public_name_has_an_api_page(built):
    sys.path.insert(0, str(ROOT / "docs" / "_scripts"))
    try:
        from api_pages import MODULES, public_names
    finally:
        sys.path.remove(str(ROOT / "docs" / "_scripts"))
    import mlmpi

    modules = {name for name, _ in MODULES}
    every_subpackage = {f"mlmpi.{name}" for name in mlmpi._SUBMODULES - {"cli"}}
    assert every_subpackage <= modules, every_subpackage - modules
    for module in modules:
        for name in public_names(module):
            assert (built / "api" / "generated" / f"{module}.{name}.html").exists(), name
    for name, module in mlmpi._PUBLIC.items():
        page = built / "api" / "generated" / f"{module}.{name}.html"
        assert page.exists(), name
        if hasattr(getattr(mlmpi, name), "fit"):  # inherited from an mlmpi base or not
            assert f'id="{module}.{name}.fit"' in page.read_text(), name


def test_the_benchmark_plot_is_drawn(built):
    assert (built / "_images" / "plot_benchmarks.png").exists()
    assert "plot_benchmarks.png" in (built / "performance.html").read_text()


def test_the_readme_names_the_two_commands_and_its_links_exist():
    readme = (ROOT / "README.md").read_text()
    assert 'python -m pip install -e ".[test]"' in readme
    assert "\npython -m pytest\n" in readme
    assert "python -m sphinx -W docs docs/_build/html" in readme
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    local = [link for link in links if "://" not in link]
    assert "docs/differences.rst" in local
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing
