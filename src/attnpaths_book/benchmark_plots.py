"""The reproducibility chapter's figures of how costs grow: the solver's time per Newton iteration against the
number of training examples and of paths (``growth`` of the ``solver`` record, :mod:`attnpaths_book.benchmarks.solver`)
and the sampler's time per sweep and ESS per second against the width and the number of training examples (the
``sampler_growth`` record, :mod:`attnpaths_book.benchmarks.sampler_growth`). They draw what the records hold and compute
only the fitted lines."""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.ticker import NullFormatter

from attnpaths.plot_style import BLUE, ORANGE, palette_cycle

SERIES = {
    "examples": ("P", "training examples P", "4-path network, N = {width}, T = {temperature:g}"),
    "paths": ("paths", "paths n", "2 layers of random heads, P = {num_train}, T = {temperature:g}"),
}


def _power_law(sizes, ms, exponent, grid):
    """The line ``ms ~ size^exponent`` through the geometric mean of the points, on ``grid``."""
    anchor = np.exp(np.mean(np.log(ms)) - exponent * np.mean(np.log(sizes)))
    return anchor * grid**exponent


def _two_terms(fit: dict, grid):
    """``a size^p + b size^q (+ c)`` of :func:`attnpaths_book.benchmarks._fits.fit_two_terms`, on ``grid``."""
    (p, q), coefficients = fit["exponents"], fit["coefficients"]
    return coefficients[0] * grid**p + coefficients[1] * grid**q + (coefficients[2] if fit["constant"] else 0.0)


def _growth_panel(ax, sizes, values, exponent: float, two_terms: dict | None, xlabel: str, ylabel: str, title: str):
    """One log-log panel: the measured points, the power law of exponent ``exponent`` through them and, given a
    fit of :func:`attnpaths_book.benchmarks._fits.fit_two_terms`, its cost model ``a s^p + b s^q (+ c)``."""
    sizes, values = np.asarray(sizes, dtype=float), np.asarray(values, dtype=float)
    grid = np.geomspace(sizes.min(), sizes.max(), 100)
    power_law = _power_law(sizes, values, exponent, grid)
    ax.loglog(sizes, values, "o", color="black", label="measured", zorder=3)
    ax.loglog(grid, power_law, color=BLUE, linestyle="--", label=f"power law, exponent {exponent:.2f}")
    if two_terms is not None:
        p, q = two_terms["exponents"]
        constant = " + c" if two_terms["constant"] else ""
        ax.loglog(grid, _two_terms(two_terms, grid), color=ORANGE, label=f"a s$^{{{p:g}}}$ + b s$^{{{q:g}}}${constant}")
    ax.set_xticks(sizes, [f"{s:g}" for s in sizes], minor=False)
    ax.set_xticks([], minor=True)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


@palette_cycle
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
        _growth_panel(
            ax,
            [row[key] for row in series["rows"]],
            [row["ms_per_iteration"] for row in series["rows"]],
            series["exponent_per_iteration"],
            series["two_terms"],
            xlabel,
            "time per Newton iteration (ms)",
            title.format(
                width=series["width"], temperature=series["temperature"], num_train=series["rows"][0]["num_train"]
            ),
        )
    return fig


SAMPLER_SERIES = {"width": ("width N", "P", "num_train"), "examples": ("training examples P", "N", "width")}
"""Per series of the ``sampler_growth`` record: the axis label, and the size held fixed (its symbol and row key)."""


@palette_cycle
def plot_sampler_growth(report: dict):
    """The exact sampler's time per sweep (ms, top row, with the two-term cost model) and the smallest ESS per
    second of the predictor over the test points (bottom row), log-log, against the width ``N`` (left) and the
    number of training examples ``P`` (right), each with its least-squares power law (for the ESS, over the points
    whose chains converged; the others are drawn as open circles).

    Args:
        report: the ``report`` of the ``sampler_growth`` benchmark record.

    Returns:
        the figure.
    """
    fig, axes = plt.subplots(2, len(SAMPLER_SERIES), figsize=(9.0, 6.6), layout="constrained")
    for column, (name, (xlabel, symbol, key)) in enumerate(SAMPLER_SERIES.items()):
        series = report["growth"][name]
        rows = series["rows"]
        title = f"4-path network, {symbol} = {rows[0][key]}, T = {report['temperature']:g}"
        _growth_panel(
            axes[0, column],
            series["sizes"],
            [row["ms_per_sweep"] for row in rows],
            series["exponent_per_sweep"],
            series["two_terms"],
            xlabel,
            "time per sweep (ms)",
            title,
        )
        ax = axes[1, column]
        trusted = [row["converged"] for row in rows]
        ess = [row["min_predictor_ess_per_s"] for row in rows]
        _growth_panel(
            ax,
            series["ess_sizes"],
            [e for e, ok in zip(ess, trusted) if ok],
            series["exponent_ess_per_s"],
            None,
            xlabel,
            "smallest ESS of f per second",
            title,
        )
        if not all(trusted):
            ax.loglog(
                [s for s, ok in zip(series["sizes"], trusted) if not ok],
                [e for e, ok in zip(ess, trusted) if not ok],
                "o",
                markerfacecolor="none",
                color="black",
                label="chains not converged",
            )
            ax.set_xticks(series["sizes"], [f"{s:g}" for s in series["sizes"]], minor=False)
            ax.xaxis.set_minor_formatter(NullFormatter())  # the sizes alone label the axis
            ax.legend(fontsize=8)
    return fig
