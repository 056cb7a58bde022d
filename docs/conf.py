"""Sphinx configuration of the mlmpi documentation.

Build with ``python -m sphinx -W docs docs/_build/html`` (``pip install -e ".[docs]"``).
The API pages under ``docs/api/`` are written here, at every build, from the
public names each module exports, the scale and cost-model tables under
``docs/_generated/`` from ``benchmarks/results/``, and the gallery runs
``examples/*.py`` in this process (one rank: single-process comms).
"""

import os
import sys
from pathlib import Path

import mlmpi

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_scripts"))

from api_pages import write_api_pages  # noqa: E402
from scale_tables import write_scale_tables  # noqa: E402

# The gallery runs every example as one process, whatever launched the build.
os.environ["MLMPI_COMMS"] = "self"
# The examples are small: one BLAS/numba thread builds faster than threads that
# compete with the rest of a busy CI machine.
os.environ.setdefault("MLMPI_NUM_THREADS", "1")

project = "mlmpi"
author = "the mlmpi developers"
copyright = "2026, the mlmpi developers"
release = version = mlmpi.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints"]
root_doc = "index"

write_api_pages(HERE / "api")
write_scale_tables(HERE / "_generated")  # included by performance.rst
autosummary_generate = False  # api_pages writes the object pages
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/.*\.py$",  # run every example, not only plot_*.py
    "plot_gallery": True,
    "abort_on_example_error": True,
    "download_all_examples": False,
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
}

plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 90)]


html_theme = "pydata_sphinx_theme"
html_title = f"mlmpi {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
templates_path = ["_templates"]
# Top-level pages (getting started, the collective model, ...) have no children,
# so the theme's section navigation would be empty: they show the site's instead.
html_sidebars = {"*": ["site-nav.html"]}
html_static_path = ["_static"]
html_css_files = ["mlmpi.css"]  # code blocks and long literals wrap at the page width
