"""Compute kernels (installed as ``mlmpi.kernels``).

Kernels do pure local compute into caller-owned buffers and never
communicate. ``cpu`` holds NumPy/numba kernels, ``gpu`` the CuPy ones, with
identical IN/OUT signatures, and ``shared`` the ones written once for both
devices. Solvers get them through the registry: ``kernels_for(family, X)``.
"""

from ._registry import kernels_for

__all__ = ["kernels_for"]
