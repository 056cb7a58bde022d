"""Distributed helpers shared by the estimators."""

from .stats import (
    global_bin_thresholds,
    global_median,
    global_percentiles,
    global_quantiles,
)

__all__ = ["global_bin_thresholds", "global_median", "global_percentiles", "global_quantiles"]
