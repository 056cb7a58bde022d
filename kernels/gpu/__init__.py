"""CuPy kernels (raw kernels and numba.cuda); import only with a GPU."""
