"""Every public object has a numpydoc docstring with Examples, and every
module's doctests pass (single process: the default comms outside MPI).

The public API is read from what the package exports: ``mlmpi._PUBLIC``,
``mlmpi._SUBMODULES`` and each of those modules' ``__all__``, so a new
export is checked without editing this file.
"""

import doctest
import enum
import functools
import importlib
import inspect
import io
import os
import pkgutil
import subprocess
import sys
import tempfile
import warnings

import pytest
from sklearn.base import BaseEstimator

import mlmpi

# numpydoc.validate codes for what Sphinx (numpydoc, ``-W``) warns about or
# what a reader of the API reference needs: a docstring, a summary, sections
# known and in order, every parameter documented and no stale ones, a Returns
# section where the function returns something.
_CHECKS = {"GL08", "GL06", "GL07", "SS01", "PR01", "PR02", "RT01", "YD01"}


def _public_modules():
    return ["mlmpi"] + [f"mlmpi.{name}" for name in sorted(mlmpi._SUBMODULES)]


def _exported(module_name):
    if module_name == "mlmpi":
        return sorted(mlmpi._PUBLIC)
    module = importlib.import_module(module_name)
    assert hasattr(module, "__all__"), f"{module_name} declares no __all__"
    return list(module.__all__)


def _public_objects():
    """(dotted path, object) for every exported class and function, once each."""
    seen, found = set(), []
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in _exported(module_name):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            found.append((f"{module_name}.{name}", obj))
    return found


def _own_methods(cls):
    """Public methods and properties defined by mlmpi (not inherited from
    scikit-learn, torch or the standard library)."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("mlmpi"):
            continue
        member = vars(owner)[name]
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member) or isinstance(member, property):
            yield name, member


def _api():
    params, seen = [], set()
    for path, obj in _public_objects():
        params.append(pytest.param(path, obj, True, id=path))
        if inspect.isclass(obj):
            for name, member in _own_methods(obj):
                if id(member) not in seen:  # a method inherited by several classes once
                    seen.add(id(member))
                    params.append(
                        pytest.param(f"{path}.{name}", member, False, id=f"{path}.{name}")
                    )
    return params


def _is_enum(obj):
    return inspect.isclass(obj) and issubclass(obj, enum.Enum)


def _enters_the_contract(obj):
    """Decorated with the collective contract (``mlmpi._contract.collective``)."""
    return getattr(obj, "collective", False) is True


def _has_parameters(obj):
    if isinstance(obj, property) or _is_enum(obj):
        return False
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    return any(name != "self" for name in signature.parameters)


_SPHINX_ROLES = ("func", "class", "meth", "mod", "attr", "data", "obj", "exc", "ref", "math")
_SPHINX_DIRECTIVES = ("seealso", "only", "autosummary", "versionadded", "versionchanged")


@functools.cache
def _register_sphinx_markup():
    """Sphinx's roles and directives as no-ops, so plain docutils can parse what
    numpydoc renders (a docutils warning is a ``sphinx-build -W`` failure)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives, roles

    class Ignored(Directive):
        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec = {"noindex": directives.flag}

        def run(self):
            return []

    for name in _SPHINX_ROLES:
        roles.register_generic_role(name, nodes.literal)
    for name in _SPHINX_DIRECTIVES:
        directives.register_directive(name, Ignored)


def _rst_problems(docstring):
    """docutils' warnings about the reStructuredText numpydoc makes of ``docstring``."""
    import docutils.core
    from numpydoc.docscrape_sphinx import SphinxDocString

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpydoc warns on unknown sections
        rst = str(SphinxDocString(docstring, config={}))
    _register_sphinx_markup()
    stream = io.StringIO()
    settings = {"warning_stream": stream, "report_level": 2, "halt_level": 5}
    docutils.core.publish_doctree(rst, settings_overrides=settings)
    return stream.getvalue()


def _validate(path, obj):
    """numpydoc's validation codes for ``path`` (a class is checked against its
    constructor's signature), ignoring the Enum constructor's parameters."""
    from numpydoc.validate import validate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        errors = validate(path)["errors"]
    checks = _CHECKS - {"PR01", "PR02"} if _is_enum(obj) else _CHECKS
    return [f"{code} {message}" for code, message in errors if code in checks]


@pytest.mark.parametrize("path, obj, needs_examples", _api())
def test_public_docstring(path, obj, needs_examples):
    pytest.importorskip("numpydoc", reason="the test extra installs numpydoc")
    from numpydoc.docscrape import NumpyDocString

    docstring = inspect.getdoc(obj.fget if isinstance(obj, property) else obj)
    assert docstring, f"{path} has no docstring"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpydoc warns on unknown sections
        parsed = NumpyDocString(docstring)
    assert "".join(parsed["Summary"]).strip(), f"{path}: empty summary"
    if _has_parameters(obj):
        assert parsed["Parameters"], f"{path}: no Parameters section"
    if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
        assert parsed["Attributes"], f"{path}: no Attributes section (the fitted attributes)"
    if needs_examples:
        assert "".join(parsed["Examples"]).strip(), f"{path}: no Examples section"
        assert ">>>" in "".join(parsed["Examples"]), f"{path}: Examples without code"
    if _enters_the_contract(obj):
        assert "is collective" in docstring, f"{path} communicates; its docstring must say so"
    rst_problems = _rst_problems(docstring)
    assert not rst_problems, f"{path} renders with reStructuredText problems:\n{rst_problems}"
    if not isinstance(obj, property):
        errors = _validate(path, obj)
        assert not errors, f"{path}:\n" + "\n".join(errors)


@pytest.mark.parametrize("module_name", _public_modules())
def test_module_docstring(module_name):
    pytest.importorskip("numpydoc", reason="the test extra installs numpydoc")
    docstring = inspect.getdoc(importlib.import_module(module_name))
    assert docstring, f"{module_name} has no docstring"
    rst_problems = _rst_problems(docstring)
    assert not rst_problems, (
        f"{module_name} renders with reStructuredText problems:\n{rst_problems}"
    )


def _package_modules():
    """Every module of the package, private ones included (their doctests run too)."""
    names = ["mlmpi", "mlmpi.kernels"]
    for package in (mlmpi, importlib.import_module("mlmpi.kernels")):
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            if not info.name.endswith("__main__"):
                names.append(info.name)
    return sorted(set(names))


# Their examples touch process-wide MPI state (MPIComms initialises MPI; ``mlmpi info``
# imports mpi4py with initialisation switched off), so each runs in a fresh process and
# leaves this one as the other tests expect it.
_FRESH_PROCESS = {"mlmpi.cli", "mlmpi.comms.mpi"}
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("module_name", _package_modules())
def test_doctests(module_name, tmp_path, monkeypatch):
    # The examples write their files under tempfile.mkdtemp(), as a user's would:
    # here in the test's own directory, which pytest removes, not in /tmp.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    if module_name in _FRESH_PROCESS:
        code = (
            "import doctest, importlib, sys\n"
            f"module = importlib.import_module({module_name!r})\n"
            f"sys.exit(1 if doctest.testmod(module, optionflags={_FLAGS}).failed else 0)\n"
        )
        launcher = ("MLMPI_COMMS", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")
        env = {k: v for k, v in os.environ.items() if k not in launcher}
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name not in ("cupy", "cupyx"):
            raise
        pytest.skip(f"{module_name} needs CuPy")
    result = doctest.testmod(module, optionflags=_FLAGS)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {module_name} (see stdout)"
