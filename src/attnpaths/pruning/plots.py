"""Figures and tables of the pruning chapter. Every function returns the :class:`matplotlib.figure.Figure` it drew and
computes nothing beyond the means and confidence intervals it shows (:func:`attnpaths.statistics.mean_interval`, over
training seeds); the numbers come from :mod:`attnpaths.pruning.sweep`."""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..plot_style import BLACK, BLUE, GREEN, GREY, ORANGE, PURPLE, SKY_BLUE, VERMILLION, YELLOW, palette_cycle
from ..statistics import mean_interval
from .sweep import RANKING_NAMES
from .theory_scores import THEORY_SCORES

plt = require("matplotlib.pyplot", "plots")

COLORS = {
    "theory": BLUE,
    **dict.fromkeys(THEORY_SCORES[1:], SKY_BLUE),
    "michel": ORANGE,
    "michel_iterative": VERMILLION,
    "fisher": PURPLE,
    "entropy": GREEN,
    "norm": YELLOW,
    **dict.fromkeys(("shapley", "greedy", "random"), GREY),
    "best": BLACK,
}
"""Colours of the rankings, from the book's palette (attnpaths.plot_style). Every pair a pruning-curve figure
draws together differs: the paper's score, one of the other theory scores (sky blue; the one the validation
images choose), one practical score and the gradient importance, the random expectation and the best subset.
Figures with every ranking put each on its own labelled row or give it its own marker."""
MARKERS = {
    **dict.fromkeys(THEORY_SCORES, "o"),
    **dict.fromkeys(("michel", "michel_iterative", "fisher"), "s"),
    "entropy": "^",
    "norm": "D",
    **dict.fromkeys(("shapley", "greedy"), "v"),
    "random": "x",
    "best": "*",
}


def _style(name: str) -> dict:
    return {"color": COLORS[name], "marker": MARKERS[name]}


def _error(interval) -> list:
    """``[mean - low, high - mean]`` of a :func:`attnpaths.statistics.mean_interval`, the error bars of its mean."""
    return [interval["mean"] - interval["low"], interval["high"] - interval["mean"]]


def _panels(n: int, width: float, height: float):
    """``(figure, axes [1, n])``: one panel per model, ``width`` inches each, sharing the y axis."""
    return plt.subplots(1, n, figsize=(width * n, height), layout="constrained", squeeze=False, sharey=True)


@palette_cycle
def plot_pruning_curves(curves: dict, *, confidence: float = 0.95):
    """Test accuracy (%) after pruning ``k`` heads along each ranking: mean over training seeds and its
    confidence band, one panel per model.

    Args:
        curves: ``{model label: {ranking: [S, K + 1]}}`` (:meth:`~.sweep.PruningSweep.curves_by_ranking`).
        confidence: of the two-sided Student-t band over seeds.
    """
    fig, axes = _panels(len(curves), 4.6, 3.4)
    for ax, (model, by_ranking) in zip(axes[0], curves.items()):
        for name, values in by_ranking.items():
            values = 100 * np.asarray(values, dtype=float)
            k = np.arange(values.shape[1])
            interval = mean_interval(values, confidence)
            ax.fill_between(k, interval["low"], interval["high"], color=COLORS[name], alpha=0.15, linewidth=0)
            line = "--" if name in ("random", "best") else "-"
            style = {"markersize": 4, "linewidth": 1.3, "linestyle": line, "label": RANKING_NAMES[name]}
            ax.plot(k, interval["mean"], **_style(name), **style)
        ax.set_xticks(k)
        ax.set_xlabel("heads pruned")
        ax.set_title(f"{model} ({values.shape[0]} training seeds)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("test accuracy (%)")
    axes[0, -1].legend(fontsize=7, loc="lower left")
    return fig


@palette_cycle
def plot_normalised_areas(normalised: dict, *, confidence: float = 0.95):
    """Normalised area of every ranking (eq-pruning-normalised: 0 the random expectation, 1 the ceiling): the
    mean over training seeds and its confidence interval, one panel per model, rankings top to bottom.

    Args:
        normalised: ``{model label: {ranking: [S]}}`` (:meth:`~.sweep.PruningSweep.normalised_auc`).
    """
    names = list(dict.fromkeys(n for by_ranking in normalised.values() for n in by_ranking))
    fig, axes = _panels(len(normalised), 4.4, 0.32 * len(names) + 1.2)
    y = np.arange(len(names))[::-1]
    for ax, (model, by_ranking) in zip(axes[0], normalised.items()):
        for yi, name in zip(y, names):
            if name not in by_ranking:
                continue
            interval = mean_interval(np.asarray(by_ranking[name], dtype=float), confidence)
            xerr = [[e] for e in _error(interval)]
            ax.errorbar(interval["mean"], yi, xerr=xerr, capsize=3, markersize=5, **_style(name))
        ax.axvline(0, color=COLORS["random"], linestyle="--", linewidth=1)
        ax.axvline(1, color=COLORS["best"], linestyle=":", linewidth=1)
        ax.set_xlabel("normalised area (0: random, 1: best subset)")
        ax.set_title(model, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(y, [RANKING_NAMES[n] for n in names], fontsize=7)
    return fig


@palette_cycle
def plot_sensitivity(values, normalised: dict, *, xlabel: str, confidence: float = 0.95):
    """Normalised area of theory rankings as a function of one setting of the theory (mean and confidence
    interval over seeds), one panel per model.

    Args:
        values: ``[n]`` the setting (temperatures or widths), on a log axis.
        normalised: ``{model label: {ranking: [S, n]}}`` (``nan`` where the theory did not certify a minimum).
        xlabel: the axis label.
    """
    values = np.asarray(values, dtype=float)
    fig, axes = _panels(len(normalised), 4.6, 3.0)
    for ax, (model, by_ranking) in zip(axes[0], normalised.items()):
        for name, v in by_ranking.items():
            v = np.asarray(v, dtype=float)
            keep = ~np.isnan(v).any(axis=0)
            interval = mean_interval(v[:, keep], confidence)
            label = RANKING_NAMES[name]
            ax.errorbar(values[keep], interval["mean"], yerr=_error(interval), capsize=3, label=label, **_style(name))
        ax.axhline(0, color=COLORS["random"], linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.set_xticks(values, [f"{x:g}" for x in values])
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
        ax.set_title(model, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("normalised area")
    axes[0, -1].legend(fontsize=6.5, loc="best")
    return fig


def auc_table(
    auc: dict, *, confidence: float = 0.95, scale: float = 100.0, digits: int = 1, seconds: dict | None = None
) -> str:
    """A Markdown table of the area under the pruning curve (eq-pruning-auc, in % with the default ``scale``) of
    every ranking (rows) for every model (columns): the mean over seeds and its two-sided Student-t confidence
    interval; with ``seconds``, beside each model's column the mean wall seconds per seed of each ranking.

    Args:
        auc: ``{model label: {ranking: [S]}}`` (or normalised areas, eq-pruning-normalised, with ``scale=1``).
        scale: factor applied before printing; digits: decimals printed.
        seconds: ``None`` or ``{model label: {ranking: [S]}}`` (the ``cost_seconds`` of
            :class:`~attnpaths.pruning.sweep.PruningSweep`; the ceiling ``"best"`` costs the subset table); a ranking
            without a cost gets an empty cell.
    """
    models = list(auc)
    rankings = list(dict.fromkeys(name for by_ranking in auc.values() for name in by_ranking))
    header = [f"{m} | {m}: s per seed" if seconds is not None else m for m in models]
    lines = ["| ranking | " + " | ".join(header) + " |", "|---|" + "---|" * (len(models) * (1 + (seconds is not None)))]
    for name in rankings:
        cells = []
        for model in models:
            if name not in auc[model]:
                cells.append("")
            else:
                interval = mean_interval(scale * np.asarray(auc[model][name], dtype=float), confidence)
                low, high = interval["low"], interval["high"]
                cells.append(f"{interval['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]")
            if seconds is not None:
                cost = seconds.get(model, {}).get("table" if name == "best" else name)
                cells.append("" if cost is None else f"{float(np.mean(cost)):.2g}")
        lines.append(f"| {RANKING_NAMES[name]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
