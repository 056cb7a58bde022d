"""Device kernels: written against the arrays' namespace (CuPy on a GPU; the CPU
tests run them on NumPy arrays), same IN/OUT signatures as ``kernels/cpu``."""
