"""The kernel registry: one declaration per family, looked up by device and layout."""

import importlib
import inspect
import os
import pkgutil

import numpy as np
import pytest
import scipy.sparse as sp
from mlmpi.kernels import _registry, kernels_for


def test_lookup_by_device_and_layout():
    X = np.ones((3, 2))
    assert kernels_for("kmeans", X).lloyd_step.__module__ == "mlmpi.kernels.cpu.kmeans"
    sparse = kernels_for("kmeans", sp.csr_matrix(X)).lloyd_step
    assert sparse.__module__ == "mlmpi.kernels.cpu.kmeans_sparse"
    assert (
        kernels_for("kmeans", X, device="gpu").lloyd_step.__module__ == "mlmpi.kernels.gpu.kmeans"
    )
    # a shared implementation serves both devices, dense and CSR rows
    for device in ("cpu", "gpu"):
        for data in (X, sp.csr_matrix(X)):
            moments = kernels_for("decomposition", data, device).add_moments
            assert moments.__module__ == "mlmpi.kernels.shared.decomposition"
    # device modules take precedence name by name over the shared one
    cpu, gpu = kernels_for("knn", X, "cpu"), kernels_for("knn", X, "gpu")
    assert cpu.update_topk.__module__ == "mlmpi.kernels.cpu.knn"
    assert gpu.update_topk.__module__ == "mlmpi.kernels.gpu.knn"
    assert cpu.radius_pairs is gpu.radius_pairs
    assert kernels_for("kmeans", X) is kernels_for("kmeans", X.T)


def test_errors_name_the_family():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="unknown kernel family 'nope'"):
        kernels_for("nope", X)
    with pytest.raises(AttributeError, match="'kmeans' has no kernel 'nope'"):
        _ = kernels_for("kmeans", X).nope
    with pytest.raises(AttributeError):
        _ = kernels_for("kmeans", X)._fused_block
    with pytest.raises(NotImplementedError, match="no gpu implementation"):
        kernels_for("coordinate_descent", X, device="gpu")
    with pytest.raises(ValueError, match="declared twice"):
        _registry.declare("kmeans", dense=_registry._Layout(cpu="cpu.kmeans"))


def test_every_kernel_module_is_declared_and_is_no_shim():
    """Every kernel module belongs to a family and defines kernels of its own; what
    it imports from other kernel modules comes from its own family."""
    on_disk = set()
    for package in ("cpu", "gpu", "shared"):
        path = importlib.import_module(f"mlmpi.kernels.{package}").__path__
        on_disk |= {f"{package}.{info.name}" for info in pkgutil.iter_modules(path)}
    declared = set()
    for layouts in _registry._FAMILIES.values():
        for layout in layouts.values():
            family = set(layout.modules())
            declared |= family
            names = {f"mlmpi.kernels.{m}" for m in family}
            for name in names:
                if name == "mlmpi.kernels.gpu.kmeans_sparse":
                    continue  # imports CuPy
                members = vars(importlib.import_module(name)).values()
                functions = [v for v in members if inspect.isfunction(v)]
                compiled = [  # numba's, by their Python functions
                    v.py_func for v in members if inspect.isfunction(getattr(v, "py_func", None))
                ]
                assert any(f.__module__ == name for f in functions + compiled), name
                for f in functions:
                    assert f.__module__ in names or not f.__module__.startswith("mlmpi.kernels"), (
                        name,
                        f.__name__,
                    )
    assert declared == on_disk


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("shape", [(20_000, 32), (7, 3), (0, 4), (1000, 1)])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_cpu_column_sums_equal_numpys_bit_for_bit(dtype, shape, layout):
    rng = np.random.default_rng(0)
    X = (rng.standard_normal(shape) * rng.uniform(1, 1e4, shape[1])).astype(dtype)
    X = {"C": X, "F": np.asfortranarray(X), "strided": X[::2]}[layout]
    sums = kernels_for("decomposition", X).column_sums(X, np.zeros(X.shape[1]))
    np.testing.assert_array_equal(sums, X.sum(axis=0, dtype=np.float64))
    csr = sp.csr_array(X.astype(np.float64))
    assert (
        kernels_for("decomposition", csr).column_sums
        is not kernels_for("decomposition", X).column_sums
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(20_003, 32), (1001, 7), (5, 3), (0, 4), (3, 2)])
def test_cpu_column_moments_add_in_row_order(dtype, shape):
    """C-ordered rows of several features: sums are NumPy's column sums bit for
    bit, squares the float64 squares added row after row (whatever number of
    rows the kernel takes per pass)."""
    rng = np.random.default_rng(1)
    X = (rng.standard_normal(shape) * rng.uniform(1, 1e4, shape[1])).astype(dtype)
    sums, squares = np.zeros(shape[1]), np.zeros(shape[1])
    kernels_for("decomposition", X).column_moments(X, sums, squares)
    expected_sums, expected_squares = np.zeros(shape[1]), np.zeros(shape[1])
    for row in X.astype(np.float64):
        expected_sums += row
        expected_squares += row * row
    np.testing.assert_array_equal(sums, expected_sums)
    np.testing.assert_array_equal(squares, expected_squares)
    np.testing.assert_array_equal(sums, X.sum(axis=0, dtype=np.float64))


def _numba_dispatchers():
    """Every cached numba function of the package's modules (those that import)."""
    import mlmpi.kernels  # binds mlmpi too

    found = {}
    packages = [(mlmpi.__path__, "mlmpi."), (mlmpi.kernels.__path__, "mlmpi.kernels.")]
    infos = [info for path, prefix in packages for info in pkgutil.walk_packages(path, prefix)]
    for info in infos:
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # CuPy's modules
            continue
        for value in vars(module).values():
            values = value if isinstance(value, tuple) else (value,)
            for v in values:
                cache = getattr(getattr(v, "_cache", None), "_cache_file", None)
                if cache is not None:
                    found[id(v)] = (v, cache)
    return found.values()


def test_cached_kernels_have_cache_files_of_their_own():
    """numba files a cached function's machine code under an index named after
    its qualified name and keyed by signature and closure values. Two functions
    of one name (closures made in a loop) would share an index that processes
    update without a lock, so one's code could be filed under the other's key."""
    owners = {}
    for dispatcher, cache in _numba_dispatchers():
        path = os.path.join(cache._cache_path, cache._index_name)
        assert path not in owners, (dispatcher.py_func, owners.get(path))
        owners[path] = dispatcher.py_func
    assert len(owners) > 50  # the search found the kernels
