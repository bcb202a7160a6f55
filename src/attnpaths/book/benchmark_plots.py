"""The reproducibility chapter's figure of the solver benchmark: how the cost of a Newton iteration grows with
the number of training examples and with the number of paths (``growth`` of the ``solver`` record, written by
:mod:`attnpaths.benchmarks.solver`). It draws what the record holds and computes only the fitted lines."""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt

SERIES = {"examples": ("P", "training examples P", "4-path network, N = {width}, T = {temperature:g}"),
          "paths": ("paths", "paths n", "2 layers of random heads, P = {num_train}, T = {temperature:g}")}


def _power_law(sizes, ms, exponent, grid):
    """The line ``ms ~ size^exponent`` through the geometric mean of the points, on ``grid``."""
    anchor = np.exp(np.mean(np.log(ms)) - exponent * np.mean(np.log(sizes)))
    return anchor * grid**exponent


def _two_terms(fit: dict, grid):
    """``a size^p + b size^q (+ c)`` of :func:`attnpaths.benchmarks.solver.fit_two_terms`, on ``grid``."""
    (p, q), coefficients = fit["exponents"], fit["coefficients"]
    return coefficients[0] * grid**p + coefficients[1] * grid**q + (coefficients[2] if fit["constant"] else 0.0)


def plot_solver_growth(growth: dict):
    """Time per Newton iteration (ms, log-log) against ``P`` and against the number of paths, one panel each:
    the measured points, the least-squares power law (its exponent in the legend) and the two-term cost model
    ``a s^p + b s^q (+ c)`` with the expected exponents (``growth[series]["two_terms"]``).

    Args:
        growth: the ``report["growth"]`` of the ``solver`` benchmark record.

    Returns:
        the figure.
    """
    fig, axes = plt.subplots(1, len(SERIES), figsize=(9.0, 3.6), layout="constrained")
    for ax, (name, (key, xlabel, title)) in zip(axes, SERIES.items()):
        series = growth[name]
        sizes = np.array([row[key] for row in series["rows"]], dtype=float)
        ms = np.array([row["ms_per_iteration"] for row in series["rows"]])
        grid = np.geomspace(sizes.min(), sizes.max(), 100)
        fitted, two = series["exponent_per_iteration"], series["two_terms"]
        ax.loglog(sizes, ms, "o", color="black", label="measured", zorder=3)
        ax.loglog(grid, _power_law(sizes, ms, fitted, grid), color="tab:blue", linestyle="--",
                  label=f"power law, exponent {fitted:.2f}")
        p, q = two["exponents"]
        constant = " + c" if two["constant"] else ""
        ax.loglog(grid, _two_terms(two, grid), color="tab:orange",
                  label=f"a s$^{{{p:g}}}$ + b s$^{{{q:g}}}${constant}")
        ax.set_xticks(sizes, [f"{s:g}" for s in sizes], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time per Newton iteration (ms)")
        ax.set_title(title.format(width=series["width"], temperature=series["temperature"],
                                  num_train=series["rows"][0]["num_train"]), fontsize=10)
        ax.legend(fontsize=8)
    return fig
