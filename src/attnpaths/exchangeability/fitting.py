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


def loglog_slope_with_se(x, y, cov) -> tuple[float, float]:
    """Least-squares slope ``b`` of ``log y = a + b log x`` and its standard error from the covariance of ``y``.

    The slope is a fixed linear combination ``w^T log y`` (``w`` from ``x`` alone), so the delta method gives
    ``Var(b) = w^T C w`` with ``C = cov / (y y^T)``, the covariance of ``log y``; correlated estimates (e.g.
    errors measured on the same sequences at every ``x``) are accounted for.

    Args:
        x, y: ``[n]`` positive numbers, ``n >= 2`` with at least two distinct ``x``;
        cov: ``[n, n]`` covariance of the estimates ``y``.

    Returns:
        ``(slope, standard_error)``.
    """
    x = as_float64_array(x, "x")
    y = as_float64_array(y, "y")
    slope = loglog_slope(x, y)
    cov = as_float64_array(cov, "cov")
    if cov.shape != (x.size, x.size):
        raise ValueError(f"cov must have shape [{x.size}, {x.size}], got {cov.shape}")
    lx = np.log(x) - np.log(x).mean()
    w = lx / np.sum(lx**2)
    var = float(w @ (cov / np.outer(y, y)) @ w)
    return slope, float(np.sqrt(max(var, 0.0)))
