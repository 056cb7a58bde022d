"""Decomposition kernels for CuPy arrays and ``cupyx.scipy.sparse`` CSR
matrices; same functions and IN/OUT signatures as
``kernels/cpu/decomposition.py``, whose code is written against the NumPy
API that CuPy shares, so both devices run one implementation (blocks of
``_DEVICE_BLOCK_ROWS`` rows on the GPU)."""

from ..cpu.decomposition import (  # noqa: F401  (re-exported: the GPU kernels)
    add_moments,
    add_normal_product,
    add_squared_norms,
    column_sums,
    project,
)
