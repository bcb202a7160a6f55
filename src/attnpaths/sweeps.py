"""Theory over a range of widths: order parameters, test accuracy, solver certificate and time per width."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from .theory import TheorySolution, classification_accuracy, solve


@dataclass(frozen=True)
class WidthPoint:
    """The theory at one width: the solution, its test predictions and accuracy, the solve time."""

    width: float
    solution: TheorySolution
    test_mean: np.ndarray
    test_variance: np.ndarray
    accuracy: float
    solve_seconds: float

    def summary(self) -> dict:
        """Plain numbers for a results file."""
        sol = self.solution
        return {
            "width": self.width,
            "accuracy": self.accuracy,
            "U": sol.U,
            "U_a": sol.U_a,
            "action": sol.action,
            "gradient_norm": sol.gradient_norm,
            "hessian_min_eigenvalue": sol.hessian_min_eigenvalue,
            "iterations": sol.iterations,
            "solve_seconds": self.solve_seconds,
        }


def width_sweep(
    features,
    y,
    features_test,
    y_test,
    *,
    heads,
    widths,
    temperature: float,
    variances=1.0,
    progress: bool = True,
    **solve_options,
) -> list[WidthPoint]:
    """Solve the theory (eq-action, eq-predictor) at every width and evaluate the mean predictor's test accuracy.

    Args:
        features: ``[P, N0, n_paths]`` training path features; ``y``: ``[P]``.
        features_test: ``[P_test, N0, n_paths]``; ``y_test``: ``[P_test]``.
        widths: iterable of widths (one number per network, used for every layer; ``inf`` = GP limit).
        progress: show a tqdm bar over widths.

    Returns:
        one :class:`WidthPoint` per width, in the given order.
    """
    widths = list(widths)
    if not widths:
        raise ValueError("widths must hold at least one width")
    y_test = np.asarray(y_test, dtype=np.float64)
    points = []
    for width in tqdm(widths, desc="widths", disable=not progress, leave=False):
        start = time.perf_counter()
        sol = solve(features, y, heads=heads, widths=width, temperature=temperature, variances=variances, **solve_options)
        seconds = time.perf_counter() - start
        mean, var = sol.predict(features_test)
        points.append(WidthPoint(float(width), sol, mean, var, classification_accuracy(mean, y_test), seconds))
    return points


def gp_accuracy(features, y, features_test, y_test, *, heads, temperature: float, variances=1.0) -> float:
    """Test accuracy of the GP-limit predictor (eq-gp)."""
    sol = solve(features, y, heads=heads, widths=math.inf, temperature=temperature, variances=variances)
    return classification_accuracy(sol.predict(features_test)[0], np.asarray(y_test, dtype=np.float64))
