"""Least-squares slopes on log-log axes, used to read off convergence rates."""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array


def loglog_slope(x, y) -> float:
    """Slope ``b`` of the least-squares line ``log y = a + b log x``.

    Args:
        x, y: ``[n]`` positive numbers, ``n >= 2`` with at least two distinct ``x``.
    """
    x = as_float64_array(x, "x")
    y = as_float64_array(y, "y")
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise ValueError(f"x and y must be 1-D of the same length >= 2, got {x.shape} and {y.shape}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("x and y must be positive to take logarithms")
    if np.ptp(x) == 0:
        raise ValueError("x must hold at least two distinct values")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
