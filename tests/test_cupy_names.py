"""Every CuPy/cupyx name that ``mlmpi/`` and ``kernels/`` use exists in real CuPy.

CI has no GPU: the device path runs on a CPU stand-in for CuPy
(``tests/mpi_cases/_fake_cupy.py``), which cannot tell when a name does not
exist in real CuPy. This test reads the code with ``ast`` and checks each
name against ``tests/data/cupy_api_names.txt``, the public names of a real
CuPy (regenerate it with ``python benchmarks/cupy_api_names.py``).

The uses found:

* attribute chains rooted at a name bound to a CuPy/cupyx module: ``import
  cupy``, ``import cupy as cp``, ``import cupyx.scipy.sparse``, ``from cupyx.scipy
  import sparse as device_sparse``, ``from cupy.cuda import nccl`` (the imported
  name itself is a use too), ``sys.modules.get("cupy")``,
  ``importlib.import_module("cupy")``, and a parameter or variable named
  ``cupy``/``cupyx`` (``set_device_math(cupy)``);
* ``xp.<name>`` (also ``self.xp.<name>``): ``xp`` is the array namespace,
  ``numpy`` or ``cupy``, so its names must exist in CuPy too; likewise
  ``self._nccl.<method>`` of ``NCCLComms``' ``NcclCommunicator``;
* calls of the helpers that return a CuPy module (found by reading their
  ``return`` statements: ``get_namespace``, ``sparse_namespace``, ...), as in
  ``get_namespace(X).empty`` or ``sparse = _sparse_module(xp)``.

Names of arrays (``X.argmax``) are not checked, only the modules' names.
"""

import ast
import functools
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("mlmpi", "kernels")
NAMES_FILE = ROOT / "tests" / "data" / "cupy_api_names.txt"

#: Top-level packages whose modules are checked.
CUPY_PACKAGES = ("cupy", "cupyx")

#: Names that mean a CuPy module when nothing in scope binds them otherwise:
#: ``xp`` is the array namespace (NumPy or CuPy), and a parameter or variable
#: named ``cupy`` holds the module (``set_device_math(cupy)``,
#: ``cupy = sys.modules.get("cupy")``).
#: ``communicator(nccl, ...)`` takes ``cupy.cuda.nccl`` as ``nccl`` likewise.
CONVENTIONAL = {"xp": "cupy", "cupy": "cupy", "cupyx": "cupyx", "nccl": "cupy.cuda.nccl"}

#: Attributes that hold a CuPy module or object: ``self.xp`` (the array
#: namespace) and ``NCCLComms._nccl`` (a ``cupy.cuda.nccl.NcclCommunicator``).
CONVENTIONAL_ATTRS = {"xp": "cupy", "_nccl": "cupy.cuda.nccl.NcclCommunicator"}

#: Names used that the list lacks on purpose: qualified name (the shortest
#: missing prefix, as the failure reports it) -> reason. A use guarded by
#: ``hasattr`` or reached only when ``xp`` is NumPy belongs here; a name that
#: is really missing gets ``# TODO missing in CuPy 14.2`` until the code is fixed.
ALLOWED = {}


def known_names():
    """The qualified names of ``tests/data/cupy_api_names.txt`` (``#`` lines are comments)."""
    names = set()
    for line in NAMES_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.add(line)
    return names


def _is_cupy(module):
    return module is not None and module.split(".")[0] in CUPY_PACKAGES


def _chain(node):
    """``(base, [attr, ...])`` of ``a.b.c`` (base: the innermost non-attribute node)."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return node, attrs[::-1]


def _dotted(node):
    """``"a.b.c"`` for a chain of names, else None."""
    base, attrs = _chain(node)
    if isinstance(base, ast.Name):
        return ".".join([base.id, *attrs])
    return None


def _module_literal(node):
    """The CuPy module named by ``sys.modules.get("cupy")``, ``sys.modules["cupy"]``
    or ``importlib.import_module("cupy")``, else None."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = _dotted(node.func) or ""
        if func.endswith("import_module") or func == "sys.modules.get":
            name = node.args[0].value
            return name if isinstance(name, str) and _is_cupy(name) else None
    if isinstance(node, ast.Subscript) and _dotted(node.value) == "sys.modules":
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_cupy(key.value):
            return key.value
    return None


_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _own_nodes(scope):
    """The nodes of ``scope`` outside its nested functions and classes."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _NESTED):
            todo.extend(ast.iter_child_nodes(node))


class _File:
    """The CuPy uses of one file: ``uses`` is ``[(line, qualified name)]``."""

    def __init__(self, path, tree, helpers):
        self.path = path
        self.helpers = helpers  # function name -> CuPy module it returns
        self.uses = []
        self.returns = {}  # this file's functions that return a CuPy module
        self._bindings = {}  # id(scope) -> {name: module}
        self._walk(tree, [])

    # -- resolution ---------------------------------------------------------
    def _lookup(self, name, chain):
        for scope in reversed(chain):
            bindings = self._bindings[id(scope)]
            if name in bindings:
                return bindings[name]  # None: a parameter that shadows
        return CONVENTIONAL.get(name)

    def _module_of(self, node, chain):
        """The CuPy module that the expression ``node`` is, else None."""
        literal = _module_literal(node)
        if literal is not None:
            return literal
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            return self.helpers.get(name)
        base, attrs = _chain(node)
        if isinstance(base, ast.Name):
            root = self._lookup(base.id, chain)
            if root is not None and base.id != "xp":
                # a module only where the import named it (``import cupyx.scipy.sparse``)
                dotted = ".".join([root, *attrs])
                if not attrs or dotted in self._imported:
                    return dotted
        return None

    # -- walk ---------------------------------------------------------------
    def _bind(self, scope, chain):
        bindings = self._bindings[id(scope)] = {}
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = scope.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if arg.arg not in CONVENTIONAL:
                    bindings[arg.arg] = None  # shadows an outer binding
        nodes = sorted(
            _own_nodes(scope), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))
        )
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if not _is_cupy(alias.name):
                        continue
                    self.uses.append((node.lineno, alias.name))
                    self._imported.add(alias.name)
                    if alias.asname:
                        bindings[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        bindings[top] = top
            elif isinstance(node, ast.ImportFrom) and not node.level and _is_cupy(node.module):
                for alias in node.names:
                    qualified = f"{node.module}.{alias.name}"
                    self.uses.append((node.lineno, qualified))
                    self._imported.add(qualified)
                    bindings[alias.asname or alias.name] = qualified
        for node in nodes:  # after the imports: ``sparse = _sparse_module(xp)``
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    module = self._module_of(node.value, [*chain, scope])
                    if module is not None:
                        bindings[target.id] = module
                        self._imported.add(module)
            elif isinstance(node, ast.Return) and node.value is not None and chain:
                if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    module = self._module_of(node.value, [*chain, scope])
                    if module is not None:
                        self.returns[scope.name] = module

    def _walk(self, scope, chain):
        if not chain:
            self._imported = set()
        self._bind(scope, chain)
        chain = [*chain, scope]
        inner = set()
        for node in _own_nodes(scope):
            if isinstance(node, _SCOPES):
                self._walk(node, chain)
            elif isinstance(node, ast.Attribute):
                if isinstance(node.value, ast.Attribute):
                    inner.add(id(node.value))
        for node in _own_nodes(scope):
            if isinstance(node, ast.Attribute) and id(node) not in inner:
                self._use(node, chain)

    def _use(self, node, chain):
        base, attrs = _chain(node)
        root = None
        if isinstance(base, ast.Name):
            root = self._lookup(base.id, chain)
        elif isinstance(base, ast.Call) or isinstance(base, ast.Subscript):
            root = self._module_of(base, chain)
        if root is None:  # self.xp.zeros, self._nccl.allReduce
            for i, attr in enumerate(attrs[:-1]):
                if attr in CONVENTIONAL_ATTRS:
                    root, attrs = CONVENTIONAL_ATTRS[attr], attrs[i + 1 :]
                    break
        if root is not None and attrs:
            self.uses.append((node.lineno, ".".join([root, *attrs])))


def _files():
    for top in SCANNED:
        yield from sorted((ROOT / top).rglob("*.py"))


@functools.cache
def scan():
    """``{qualified name: ["path:line", ...]}`` of the CuPy names used in mlmpi."""
    trees = {path: ast.parse(path.read_text(), filename=str(path)) for path in _files()}
    helpers = {}
    for _ in range(3):  # helpers that return what other helpers return
        found = {}
        for path, tree in trees.items():
            found.update(_File(path, tree, helpers).returns)
        if found == helpers:
            break
        helpers = found
    uses = defaultdict(list)
    for path, tree in trees.items():
        for line, name in _File(path, tree, helpers).uses:
            uses[name].append(f"{path.relative_to(ROOT)}:{line}")
    return dict(uses), helpers


def _missing(name, known):
    """The shortest prefix of ``name`` (below its package) that ``known`` lacks, else None."""
    parts = name.split(".")
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        if prefix not in known:
            return prefix
    return None


def test_cupy_names_exist():
    known = known_names()
    uses, _ = scan()
    missing = defaultdict(list)
    for name, places in uses.items():
        prefix = _missing(name, known)
        if prefix is not None and prefix not in ALLOWED:
            missing[prefix].extend(places)
    report = [
        f"{where}: {name}" for name, places in sorted(missing.items()) for where in sorted(places)
    ]
    assert not report, (
        "names used in mlmpi that CuPy lacks (tests/data/cupy_api_names.txt):\n" + "\n".join(report)
    )


def test_allowlist_is_needed():
    """Every allowlist entry is still used and still missing from the list."""
    known = known_names()
    uses, _ = scan()
    used = {_missing(name, known) for name in uses}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"allowlist entries no longer needed: {stale}"


def test_scanner_finds_known_uses():
    """The scan sees the uses the code is known to have (it cannot pass by finding none)."""
    uses, helpers = scan()
    assert len(uses) >= 80, sorted(uses)
    expected = {
        "cupy.cuda.runtime.getDeviceCount",  # import cupy (mlmpi/cli.py, comms/nccl.py)
        "cupyx.scatter_add",  # import cupyx (kernels/gpu)
        "cupy.uint64",  # import cupy as cp (kernels/gpu/kmeans_sparse.py)
        "cupy.cuda.nccl.NCCL_FLOAT32",  # from cupy.cuda import nccl
        "cupy.cuda.nccl.NcclCommunicator",  # communicator(nccl, ...)
        "cupy.cuda.nccl.NcclCommunicator.allReduce",  # self._nccl.allReduce
        "cupyx.scipy.sparse.csr_matrix",  # import cupyx.scipy.sparse, from ... import sparse
        "cupy.linalg.qr",  # xp.linalg.qr
        "cupy.get_default_memory_pool",  # cupy = sys.modules.get("cupy")
        "cupy._core._routines_linalg.set_compute_type",  # from cupy._core import ...
        "cupy.empty",  # get_namespace(X).empty
    }
    assert expected <= set(uses), sorted(expected - set(uses))
    assert helpers.get("get_namespace") == "cupy"
    assert helpers.get("sparse_namespace") == "cupyx.scipy.sparse"


def test_names_list_is_real_cupy():
    """The list came from an import of CuPy (its header says which) and holds the
    names the checks rely on."""
    header = NAMES_FILE.read_text().splitlines()[0]
    assert header.startswith("# Public API names of CuPy "), header
    known = known_names()
    for name in (
        "cupy.argpartition",
        "cupy.ndarray.argmax",
        "cupy.random.Generator.random",
        "cupyx.scipy.sparse.csr_matrix.tocsc",
        "cupy.cuda.runtime.getDeviceCount",
    ):
        assert name in known, name
    assert "cupy.not_a_cupy_name" not in known


def test_scanner_flags_a_missing_name(tmp_path):
    """A made-up name reached each way is reported as missing."""
    source = (
        "import cupy as cp\n"
        "from cupyx.scipy import sparse as device_sparse\n"
        "def f(xp, X):\n"
        "    cp.no_such_function(1)\n"
        "    device_sparse.no_such_matrix\n"
        "    return xp.no_such_ufunc(X)\n"
    )
    tree = ast.parse(source)
    uses = {name for _, name in _File(tmp_path / "m.py", tree, {}).uses}
    known = known_names()
    assert {_missing(name, known) for name in uses} - {None} == {
        "cupy.no_such_function",
        "cupyx.scipy.sparse.no_such_matrix",
        "cupy.no_such_ufunc",
    }
