"""The kernel registry: every kernel family is declared once, here, with the
module that implements it on each device; solvers ask :func:`kernels_for`
for the implementation that fits their array.

A declaration names up to three modules per layout (dense rows, CSR rows):

- ``cpu``: NumPy/numba (``kernels/cpu``), or a tuple of such modules;
- ``gpu``: CuPy (``kernels/gpu``), or a tuple of such modules;
- ``shared``: one implementation written against the API NumPy and CuPy
  (SciPy and ``cupyx.scipy.sparse``) share, serving both devices
  (``kernels/shared``), or a tuple of such modules; a device module, where
  declared, takes precedence name by name, so a family can share part of
  its kernels.

A family that declares no sparse layout takes CSR rows in its dense
modules. Modules are imported at the first lookup (the GPU ones import CuPy).
"""

from dataclasses import dataclass
from functools import cache
from importlib import import_module

from .._array import is_device_array, is_sparse


def _names(slot):
    return (slot,) if isinstance(slot, str) else slot or ()


@dataclass(frozen=True)
class _Layout:
    cpu: str | tuple | None = None
    gpu: str | tuple | None = None
    shared: str | tuple | None = None

    def modules(self, device=None):
        """The modules for ``device`` (device-specific first); None: every module."""
        devices = ("cpu", "gpu") if device is None else (device,)
        return sum((_names(getattr(self, d)) for d in devices), ()) + _names(self.shared)


_FAMILIES = {}


def declare(family, *, dense, sparse=None):
    """Declare kernel ``family``: a :class:`_Layout` for dense rows and, if CSR rows
    have their own implementation, one for them."""
    if family in _FAMILIES:
        raise ValueError(f"kernel family {family!r} is declared twice")
    _FAMILIES[family] = {"dense": dense, "sparse": sparse or dense}


# The two-limb sums (shared.limbs) serve both k-means and the exact column statistics.
declare(
    "kmeans",
    dense=_Layout(cpu="cpu.kmeans", gpu="gpu.kmeans", shared="shared.limbs"),
    sparse=_Layout(cpu="cpu.kmeans_sparse", gpu="gpu.kmeans_sparse", shared="shared.limbs"),
)
declare(
    "knn",
    dense=_Layout(cpu="cpu.knn", gpu="gpu.knn", shared="shared.knn"),
    sparse=_Layout(cpu="cpu.knn_sparse"),
)
# Column sums, minima and maxima in stages that fill a GPU (shared.columns) serve the
# families that reduce tall arrays' columns.
declare(
    "decomposition",
    dense=_Layout(cpu="cpu.decomposition", shared=("shared.decomposition", "shared.columns")),
    sparse=_Layout(shared=("shared.decomposition", "shared.columns")),
)
declare("linear", dense=_Layout(cpu="cpu.linear", shared="shared.linear"))
# The Gram matrix it works on is small and replicated, always on the host.
declare("coordinate_descent", dense=_Layout(cpu="cpu.coordinate_descent"))
# k-d trees and the union-find run on the host (the brute-force path uses "knn").
declare("dbscan", dense=_Layout(cpu="cpu.dbscan"))
# Prim's steps and the medoid sums of HDBSCAN run on the host.
declare("hdbscan", dense=_Layout(cpu="cpu.hdbscan"))
declare("metrics", dense=_Layout(shared="shared.metrics"))
# Gaussian mixtures: log-densities and responsibility-weighted sums, BLAS on either device.
declare("mixture", dense=_Layout(shared=("shared.mixture", "shared.columns")))
# Exact quantiles bucket the host copy of the data (CuPy input is moved there).
declare("quantiles", dense=_Layout(cpu="cpu.quantiles"))
# Binned histograms and tree traversal run on the host (CuPy input is binned there).
# The search of a value's bin among its cell's thresholds (cpu.cells) serves both
# tree families' binning.
declare(
    "forest",
    dense=_Layout(cpu=("cpu.forest", "cpu.forest_subtrees", "cpu.forest_scans", "cpu.cells")),
)
# Histogram gradient boosting: binning, histograms, partitions and predictions on the
# rows' device; the split search on a node's (small) histograms, on the host.
declare("hgb", dense=_Layout(cpu=("cpu.hgb", "cpu.cells"), gpu="gpu.hgb"))
declare("hgb_split", dense=_Layout(cpu="cpu.hgb_split"))
# Kernel SVMs: kernel rows and the SMO's local selection and gradient steps, on the host.
declare("svm", dense=_Layout(cpu="cpu.svm"))
# t-SNE: perplexities, the Barnes-Hut tree over the gathered embedding and the
# gradients of a rank's rows, on the host.
declare("tsne", dense=_Layout(cpu="cpu.tsne"))
# UMAP: the fuzzy graph's rows, the spectral start's products and the layout's
# epochs of a rank's rows against the gathered embedding, on the host.
declare("umap", dense=_Layout(cpu="cpu.umap"))
# Exact sums of float64 values (integer buckets per exponent, host only), and the
# column extrema and moment limbs of sums on fixed-point grids (either device).
declare(
    "exact",
    dense=_Layout(cpu="cpu.exact", gpu="gpu.exact", shared=("shared.limbs", "shared.columns")),
)


class KernelSet:
    """The kernels of one family for one device and layout: attribute ``name`` is
    the first public function ``name`` of its modules (device-specific first)."""

    def __init__(self, family, modules):
        self.family = family
        self._modules = tuple(import_module(f"{__package__}.{m}") for m in modules)

    def __getattr__(self, name):
        if not name.startswith("_"):
            for module in self._modules:
                if hasattr(module, name):
                    return getattr(module, name)
        raise AttributeError(f"kernel family {self.family!r} has no kernel {name!r}")

    def __repr__(self):
        names = ", ".join(m.__name__ for m in self._modules)
        return f"KernelSet({self.family!r}: {names})"


@cache
def _lookup(family, device, layout):
    try:
        modules = _FAMILIES[family][layout].modules(device)
    except KeyError:
        raise ValueError(f"unknown kernel family {family!r}") from None
    if not modules:
        raise NotImplementedError(f"kernel family {family!r} has no {device} implementation")
    return KernelSet(family, modules)


def kernels_for(family, X, device=None):
    """The kernels of ``family`` for ``X``'s device and layout.

    NumPy/SciPy input gets the cpu kernels, CuPy input the gpu ones; dense
    and CSR rows may have different kernels. Kernels compute into
    caller-owned buffers and never communicate.

    Parameters
    ----------
    family : str
        A declared family: ``"kmeans"``, ``"knn"``, ``"decomposition"``,
        ``"linear"``, ``"coordinate_descent"``, ``"dbscan"``, ``"hdbscan"``, ``"metrics"``,
        ``"forest"``, ``"hgb"``, ``"hgb_split"``, ``"exact"``, ``"mixture"``, ``"svm"``.
    X : array or sparse matrix
        The data the kernels will run on.
    device : {"cpu", "gpu"}, default=None
        None: ``X``'s device. ``"gpu"`` on NumPy input runs the device code on
        the host (the kernels written against the array API; the tests do).

    Returns
    -------
    KernelSet
        The family's kernels as attributes (``kernels_for("kmeans", X).lloyd_step``).

    Examples
    --------
    >>> import numpy as np
    >>> from mlmpi.kernels import kernels_for
    >>> kernels_for("kmeans", np.ones((4, 2)))
    KernelSet('kmeans': mlmpi.kernels.cpu.kmeans, mlmpi.kernels.shared.limbs)
    >>> kernels_for("kmeans", np.ones((4, 2)), device="gpu")  # device code, on the host
    KernelSet('kmeans': mlmpi.kernels.gpu.kmeans, mlmpi.kernels.shared.limbs)
    """
    if device is None:
        device = "gpu" if is_device_array(X) else "cpu"
    return _lookup(family, device, "sparse" if is_sparse(X) else "dense")
