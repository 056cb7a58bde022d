"""Write the public API names of the importable CuPy, one fully qualified name a line.

The list is ``tests/data/cupy_api_names.txt``, which ``tests/test_cupy_names.py``
checks the CuPy/cupyx names used in ``mlmpi/`` and ``kernels/`` against (CI
has no GPU and its CPU stand-in for CuPy cannot tell a name real CuPy lacks).
Regenerate it where CuPy imports (a GPU machine, or a throwaway target with
the CUDA library wheels on ``LD_LIBRARY_PATH``)::

    python benchmarks/cupy_api_names.py > tests/data/cupy_api_names.txt

The names: every public attribute of ``cupy``, ``cupyx`` and their public
submodules, under the path the code reaches them by (``cupy.cuda.runtime.…``
although that module lives in ``cupy_backends``), the public members of the
classes they define (``cupy.ndarray.argmax``, ``cupy.random.Generator.random``,
``cupyx.scipy.sparse.csr_matrix.tocsc``), the lazily loaded names
(``cupy.random.Generator``, ``cupyx.scipy.<submodule>``) and the private
modules in ``EXTRA_MODULES`` that mlmpi reaches into on purpose.
"""

import argparse
import importlib
import importlib.metadata
import inspect
import pkgutil
import sys
import types
import warnings

ROOTS = ("cupy", "cupyx")

#: Names that modules load only on first access (module ``__getattr__``), by
#: module; public submodules that must be imported (``cupy.cuda.nccl``) are
#: found by ``pkgutil`` and imported.
LAZY = {
    "cupy.random": ("Generator",),
    "cupy.cuda": ("cublas", "cusolver", "cusparse", "curand"),
    "cupyx": ("lapack", "cusparse"),
}

#: Private modules mlmpi uses on purpose (``mlmpi/_array.py``: TF32 switch).
EXTRA_MODULES = ("cupy._core._routines_linalg",)

#: Dunder names of a module worth listing (``cupy.__version__``).
MODULE_DUNDERS = ("__version__",)

#: Dunder members of classes not worth listing (every class has them).
BORING_DUNDERS = frozenset(
    {
        "__annotations__",
        "__dict__",
        "__doc__",
        "__module__",
        "__pyx_vtable__",
        "__qualname__",
        "__reduce_cython__",
        "__setstate_cython__",
        "__weakref__",
    }
)

#: Packages whose modules and classes count as CuPy's own.
OWN = ("cupy", "cupyx", "cupy_backends")

MAX_DEPTH = 6

#: Submodules and lazy names that would not load here ("path: error").
SKIPPED = []


def _own(name):
    return name is not None and name.split(".")[0] in OWN


def _public(name):
    return not name.startswith("_")


def _lazy_names(path, module):
    names = list(LAZY.get(path, ()))
    names += list(getattr(module, "_submodules", ()) or ())  # cupyx.scipy
    if hasattr(module, "__path__"):  # a package: its public submodules
        for info in pkgutil.iter_modules(module.__path__):
            if _public(info.name):
                try:
                    importlib.import_module(f"{module.__name__}.{info.name}")
                except Exception as exc:  # needs a library or package this machine lacks
                    SKIPPED.append(f"{module.__name__}.{info.name}: {exc!r}"[:200])
                    continue
                names.append(info.name)
    return names


def _module_names(module, path):
    names = {n for n in dir(module) if _public(n)}
    names |= {n for n in MODULE_DUNDERS if hasattr(module, n)}
    for name in _lazy_names(path, module):
        try:
            getattr(module, name)
        except Exception as exc:  # not built in, or needs a library this machine lacks
            SKIPPED.append(f"{path}.{name}: {exc!r}"[:200])
            continue
        names.add(name)
    return sorted(names)


def _class_members(cls):
    names = set()
    for name in dir(cls):
        if _public(name):
            names.add(name)
    for base in inspect.getmro(cls):
        if not _own(getattr(base, "__module__", None)):
            continue  # object, Exception ...: members every class has
        for name in vars(base):
            if name.startswith("__") and name.endswith("__") and name not in BORING_DUNDERS:
                names.add(name)  # protocols: __dlpack__, __cuda_array_interface__
    return sorted(names)


def _is_submodule(value, name, parent):
    """``parent.name`` is a submodule to walk: a true submodule, or a package's
    alias of a ``cupy_backends`` module (``cupy.cuda.runtime``), not a module
    that ``parent`` merely imports (``numpy``, ``cupy.cuda.compiler.device``)."""
    if not isinstance(value, types.ModuleType):
        return False
    real = value.__name__
    if real == f"{parent.__name__}.{name}":
        return True
    return (
        hasattr(parent, "__path__")
        and real.startswith("cupy_backends.")
        and real.endswith(f".{name}")
    )


def collect():
    """Sorted fully qualified public names of the importable CuPy."""
    warnings.simplefilter("ignore")
    out = set()
    seen_classes = set()

    def walk_class(cls, path):
        key = (id(cls), path)
        if key in seen_classes:
            return
        seen_classes.add(key)
        for name in _class_members(cls):
            out.add(f"{path}.{name}")

    def walk_module(module, path, stack):
        out.add(path)
        for name in _module_names(module, path):
            qualified = f"{path}.{name}"
            out.add(qualified)
            try:
                value = getattr(module, name)
            except Exception:
                continue
            if _is_submodule(value, name, module):
                if id(value) not in stack and len(stack) < MAX_DEPTH:
                    walk_module(value, qualified, stack | {id(value)})
            elif inspect.isclass(value) and _own(getattr(value, "__module__", None)):
                walk_class(value, qualified)

    for root in ROOTS:
        module = importlib.import_module(root)
        walk_module(module, root, frozenset({id(module)}))
    for path in EXTRA_MODULES:
        module = importlib.import_module(path)
        parts = path.split(".")
        for i in range(1, len(parts)):
            out.add(".".join(parts[: i + 1]))
        walk_module(module, path, frozenset({id(module)}))
    return sorted(out)


def _distribution():
    try:
        dists = importlib.metadata.packages_distributions().get("cupy", [])
    except Exception:
        dists = []
    for dist in dists:
        try:
            return f"{dist} {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown distribution"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    args = parser.parse_args(argv)
    names = collect()
    import cupy

    header = [
        f"# Public API names of CuPy {cupy.__version__} ({_distribution()}),",
        "# written by benchmarks/cupy_api_names.py; read by tests/test_cupy_names.py.",
        "# Lines starting with '#' are comments.",
    ]
    text = "\n".join(header + names) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    for line in sorted(set(SKIPPED)):
        print(f"skipped {line}", file=sys.stderr)
    print(f"{len(names)} names", file=sys.stderr)


if __name__ == "__main__":
    main()
