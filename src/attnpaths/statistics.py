"""Statistics shared by several chapters: least-squares slopes on log-log axes (convergence rates) and a
permutation test of rank correlation.

* :func:`loglog_slope`, :func:`loglog_slope_with_se`: the slope of ``log y = a + b log x`` (and its standard
  error from the covariance of ``y``);
* :func:`spearman_permutation_test`: Spearman's rank correlation with its exact permutation p-value;
* :func:`mean_interval`: a mean over replicates and its Student-t confidence interval.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ._validation import as_float64_array, probability


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


def spearman_permutation_test(a, b) -> dict:
    """Spearman rank correlation of ``a`` and ``b`` and its exact one-sided permutation p-value
    ``P(rho_perm >= rho)`` over all ``n!`` pairings (``n <= 9``).

    ``rho`` is ``scipy.stats.spearmanr``; the p-value is ``scipy.stats.permutation_test`` with
    ``permutation_type="pairings"`` and ``n_resamples = n!`` (every pairing: exact). Its test statistic is
    the sum of products of the centred average ranks (``scipy.stats.rankdata``), ``rho`` times a
    normalisation that no pairing changes: it orders the pairings as ``rho`` does, and it is exact in floating
    point (the centred ranks are multiples of 1/2), so pairings with the same ``rho`` tie exactly.

    Args:
        a, b: ``[n]`` values (``3 <= n <= 9``).

    Returns:
        ``{"rho", "p_value", "n"}``; ``rho = 0`` and ``p_value = 1`` when ``a`` or ``b`` is constant.
    """
    a, b = as_float64_array(a, "a").ravel(), as_float64_array(b, "b").ravel()
    if a.shape != b.shape or a.size < 3:
        raise ValueError(f"a and b must hold the same number (>= 3) of values, got {a.size} and {b.size}")
    if a.size > 9:
        raise ValueError(f"the exact permutation test enumerates n! pairings: n must be <= 9, got {a.size}")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return {"rho": 0.0, "p_value": 1.0, "n": int(a.size)}
    ra, rb = (stats.rankdata(v, method="average") - 1 for v in (a, b))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    test = stats.permutation_test(
        (ra,),
        lambda x, axis: np.sum(x * rb, axis=axis),
        permutation_type="pairings",
        alternative="greater",
        n_resamples=math.factorial(a.size),
        vectorized=True,
    )
    return {"rho": float(stats.spearmanr(a, b).statistic), "p_value": float(test.pvalue), "n": int(a.size)}


def mean_interval(values, confidence: float = 0.95, axis: int = 0) -> dict:
    """Mean over ``axis`` and its two-sided Student-t confidence interval (``n - 1`` degrees of freedom).

    Returns:
        ``{"mean", "low", "high", "sd", "n"}`` (arrays over the remaining axes).
    """
    values = np.asarray(values, dtype=np.float64)
    probability(confidence, "confidence", open_interval=True)
    n = values.shape[axis]
    if n < 2:
        raise ValueError(f"values must hold at least 2 replicates along axis {axis}, got {n}")
    mean, sd = values.mean(axis=axis), values.std(axis=axis, ddof=1)
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "low": mean - half, "high": mean + half, "sd": sd, "n": int(n)}
