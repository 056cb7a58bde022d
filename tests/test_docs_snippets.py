"""Every user-guide page opens with a script that runs as it is: the first
Python block of each ``docs/user_guide/*.rst``, and the getting-started page's
"Your own data" (which writes the files it reads), under ``mpiexec`` at 1 and
2 ranks. One job per rank count runs them all, each in a fresh namespace, in
a temporary directory."""

import json
import re
import sys
from pathlib import Path

import pytest
from _mpi import run_mpi

DOCS = Path(__file__).resolve().parents[1] / "docs"

DRIVER = """
import json, os, sys
from mlmpi import get_comms

snippets = json.loads(open(sys.argv[1]).read())
os.chdir(sys.argv[2])
for name, code in snippets.items():
    exec(compile(code, name, "exec"), {"__name__": "__main__"})
    if get_comms().rank == 0:
        print(f"ran {name}", flush=True)
"""


def python_blocks(text):
    """The ``.. code-block:: python`` blocks of a reStructuredText page, dedented, in order."""
    blocks = []
    for match in re.finditer(r"^\.\. code-block:: python\n\n((?:(?:   .*)?\n)+)", text, re.M):
        lines = match.group(1).rstrip().splitlines()
        blocks.append("\n".join(line[3:] for line in lines) + "\n")
    return blocks


def snippets():
    """``{page: script}``: each user-guide page's first Python block, then the
    getting-started page's "Your own data"."""
    found = {}
    for page in sorted((DOCS / "user_guide").glob("*.rst")):
        blocks = python_blocks(page.read_text())
        assert blocks, f"{page.name} does not open with a Python snippet"
        found[f"user_guide/{page.name}"] = blocks[0]
    started = (DOCS / "getting_started.rst").read_text()
    own_data = started[started.index("Your own data\n") :]
    found["getting_started.rst: Your own data"] = python_blocks(own_data)[0]
    return found


def test_every_user_guide_page_opens_with_a_snippet():
    for page in sorted((DOCS / "user_guide").glob("*.rst")):
        text = page.read_text()
        title_end = re.search(r"^=+\n", text, re.M).end()
        first = re.search(r"^\.\. code-block::", text, re.M)
        assert first is not None and not text[title_end : first.start()].strip(), (
            f"{page.name}: the first thing under the title must be the usage snippet"
        )


@pytest.mark.parametrize("nranks", [1, 2])
def test_user_guide_snippets_run(tmp_path, nranks):
    scripts = snippets()
    (tmp_path / "snippets.json").write_text(json.dumps(scripts))
    (tmp_path / "driver.py").write_text(DRIVER)
    returncode, output, timed_out = run_mpi(
        nranks,
        [sys.executable, tmp_path / "driver.py", tmp_path / "snippets.json", tmp_path],
        timeout=600,
        env={"MLMPI_NUM_THREADS": "1"},
    )
    assert not timed_out, output[-4000:]
    assert returncode == 0, output[-4000:]
    for name in scripts:
        assert f"ran {name}" in output, output[-4000:]
