"""Metric kernels for CuPy arrays; the same functions and IN/OUT signatures as
``kernels/cpu/metrics.py``, whose code is written against the NumPy API that
CuPy shares."""

from ..cpu.metrics import (  # noqa: F401  (re-exported: the GPU kernels)
    add_cluster_distance_sums,
    add_weight_below,
)
