"""No import cycle in mlmpi: every module's imports (those inside functions
too), read with ``ast``, form a graph without cycles, so each layer only
imports the layers below it (the comms below the collective contract below
the estimators)."""

import ast
from pathlib import Path

import mlmpi.kernels

import mlmpi

PACKAGES = {  # import name -> directory
    "mlmpi": Path(mlmpi.__file__).parent,
    "mlmpi.kernels": Path(mlmpi.kernels.__file__).parent,
}


def _modules():
    """``{module name: path}`` of every module of mlmpi (packages by their ``__init__``)."""
    found = {}
    for prefix, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


def _owner(name, modules):
    """The module that defines ``name`` (a module, or a name inside one)."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _imports(name, path, modules):
    """The mlmpi modules that ``name`` imports: ``from package import module``
    depends on the module, ``from module import name`` on the module."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {_owner(alias.name, modules) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found |= {_owner(f"{base}.{alias.name}", modules) for alias in node.names}
    return {module for module in found if module in modules and module != name}


def _cycle(graph):
    """A cycle of ``graph`` as a list of modules, or None."""
    state = {}  # module -> "open" while on the path, "done" after

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_in_mlmpi():
    modules = _modules()
    assert {"mlmpi._contract", "mlmpi.comms._agreement", "mlmpi.kernels"} <= set(modules)
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "mlmpi.comms" in graph["mlmpi._contract._decorator"]  # imports are found
    assert "mlmpi._contract._shards" in graph["mlmpi.utils.validation"]
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
