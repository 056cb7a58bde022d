"""Kernels written once against the API NumPy and CuPy (SciPy and
``cupyx.scipy.sparse``) share: the same code serves both devices."""
