"""NumPy/numba kernels."""
