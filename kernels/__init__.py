"""Compute kernels (installed as ``mlmpi.kernels``).

Kernels do pure local compute into caller-owned buffers and never
communicate. ``cpu`` holds NumPy/numba kernels, ``gpu`` the CuPy ones, with
identical IN/OUT signatures.
"""
