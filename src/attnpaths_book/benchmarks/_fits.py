"""Fits of how a benchmark's cost grows with the size of the problem: a power law, and a cost model of two
expected power laws (plus a constant) with the size where one overtakes the other."""

from __future__ import annotations

import numpy as np


def fit_exponent(sizes, seconds) -> float:
    """Least-squares slope of ``log(seconds)`` against ``log(sizes)`` (the exponent ``a`` of ``t ~ size^a``)."""
    sizes, seconds = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    if sizes.shape != seconds.shape or sizes.size < 2 or np.any(sizes <= 0) or np.any(seconds <= 0):
        raise ValueError(
            f"sizes and seconds must be positive arrays of the same length >= 2, got {sizes} and {seconds}"
        )
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def fit_two_terms(sizes, seconds, exponents: tuple[float, float], constant: bool = True) -> dict:
    """Non-negative least squares of ``t = a size^p + b size^q (+ c)`` (``(p, q) = exponents``, ``p > q``; ``c``
    the cost that does not grow, operations on small arrays), in relative error (each equation divided by its
    ``t``).

    Returns:
        ``{"coefficients": [a, b(, c)], "crossover": size where a size^p = b size^q (None when a or b is 0),
        "crossover_within_sizes": whether it lies between the smallest and the largest size,
        "share_of_the_higher_term": [a size^p / t_fit per size]}``.
    """
    from scipy.optimize import nnls

    sizes, seconds = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    p, q = exponents
    if not p > q:
        raise ValueError(f"exponents must be (p, q) with p > q, got {exponents}")
    columns = [sizes**p, sizes**q] + ([np.ones_like(sizes)] if constant else [])
    coefficients, _ = nnls(np.stack(columns, axis=1) / seconds[:, None], np.ones_like(seconds))
    a, b = coefficients[:2]
    crossover = float((b / a) ** (1.0 / (p - q))) if a > 0 and b > 0 else None
    fitted = np.stack(columns, axis=1) @ coefficients
    share = np.where(fitted > 0, a * sizes**p / np.where(fitted > 0, fitted, 1.0), 0.0)
    within = crossover is not None and bool(sizes.min() <= crossover <= sizes.max())
    return {
        "exponents": [p, q],
        "constant": constant,
        "coefficients": [float(c) for c in coefficients],
        "crossover": crossover,
        "crossover_within_sizes": within,
        "share_of_the_higher_term": [float(x) for x in share],
    }


def growth_fits(sizes, times, exponents: tuple[float, float], per: str) -> dict:
    """How ``times`` grow with ``sizes``: the power-law exponent over all sizes and between the largest two
    (``exponent_per_<per>``, ``exponent_per_<per>_largest_two``), the ``expected_exponents`` and their two-term
    model (``two_terms``, :func:`fit_two_terms` with a constant where there are more than three sizes)."""
    return {
        f"exponent_per_{per}": fit_exponent(sizes, times),
        f"exponent_per_{per}_largest_two": fit_exponent(sizes[-2:], times[-2:]),
        "expected_exponents": list(exponents),
        "two_terms": fit_two_terms(sizes, times, exponents, constant=len(sizes) > 3),
    }


def largest_two_text(fit: dict, per: str) -> str:
    """The exponent of :func:`growth_fits` between the largest two sizes, the terms and the crossover, in words."""
    two = fit["two_terms"]
    where = "none in the fit" if two["crossover"] is None else f"{two['crossover']:.3g}"
    return (
        f"{fit[f'exponent_per_{per}_largest_two']:.2f} between the largest two (terms {two['exponents']}, "
        f"crossover at {where})"
    )
