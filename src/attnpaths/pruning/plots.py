"""Figures of the pruning chapter. Every function returns the :class:`matplotlib.figure.Figure` it drew and
computes nothing beyond the means and confidence intervals it shows (:func:`~.sweep.mean_interval`, over
training seeds); the numbers come from :mod:`attnpaths.pruning.sweep`."""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt

from .sweep import RANKING_NAMES, mean_interval

COLORS = {"theory": "tab:blue", "michel": "tab:orange", "entropy": "tab:green", "norm": "tab:purple", "random": "0.35"}
MARKERS = {"theory": "o", "michel": "s", "entropy": "^", "norm": "D", "random": "x"}


def plot_pruning_curves(curves: dict, *, confidence: float = 0.95):
    """Test accuracy (%) after pruning ``k`` heads along each ranking: mean over training seeds and its
    confidence band, one panel per model.

    Args:
        curves: ``{model label: {ranking: [S, K + 1]}}`` (:meth:`~.sweep.PruningSweep.curves_by_ranking`).
        confidence: of the two-sided Student-t band over seeds.
    """
    fig, axes = plt.subplots(1, len(curves), figsize=(4.6 * len(curves), 3.4), layout="constrained", squeeze=False,
                             sharey=True)
    for ax, (model, by_ranking) in zip(axes[0], curves.items()):
        for name, values in by_ranking.items():
            values = 100 * np.asarray(values, dtype=float)
            k = np.arange(values.shape[1])
            interval = mean_interval(values, confidence)
            ax.fill_between(k, interval["low"], interval["high"], color=COLORS[name], alpha=0.15, linewidth=0)
            ax.plot(k, interval["mean"], color=COLORS[name], marker=MARKERS[name], markersize=4, linewidth=1.3,
                    linestyle="--" if name == "random" else "-", label=RANKING_NAMES[name])
        ax.set_xticks(k)
        ax.set_xlabel("heads pruned")
        ax.set_title(f"{model} ({values.shape[0]} training seeds)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("test accuracy (%)")
    axes[0, -1].legend(fontsize=7, loc="lower left")
    return fig


def plot_auc(auc: dict, *, confidence: float = 0.95):
    """Area under each ranking's pruning curve (eq-pruning-auc), in %: every training seed (dots, a seed's
    values joined by a faint line) and the mean with its confidence interval (bar), one panel per model.

    Args:
        auc: ``{model label: {ranking: [S]}}`` (:meth:`~.sweep.PruningSweep.auc`).
    """
    fig, axes = plt.subplots(1, len(auc), figsize=(4.6 * len(auc), 3.2), layout="constrained", squeeze=False,
                             sharey=True)
    for ax, (model, by_ranking) in zip(axes[0], auc.items()):
        names = list(by_ranking)
        values = 100 * np.stack([np.asarray(by_ranking[n], dtype=float) for n in names])  # [rankings, S]
        x = np.arange(len(names))
        ax.plot(x + 0.12, values, color="0.8", linewidth=0.6, zorder=1)
        for i, name in enumerate(names):
            interval = mean_interval(values[i], confidence)
            ax.scatter(np.full(values.shape[1], i) + 0.12, values[i], s=9, color=COLORS[name], alpha=0.6, zorder=2)
            ax.errorbar(i - 0.12, interval["mean"], yerr=[[interval["mean"] - interval["low"]],
                                                        [interval["high"] - interval["mean"]]],
                        color=COLORS[name], marker=MARKERS[name], capsize=3, markersize=5, zorder=3)
        ax.set_xticks(x, [RANKING_NAMES[n].replace(" (", "\n(") for n in names], fontsize=7, rotation=20)
        ax.set_title(model, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_ylabel("area under the pruning curve (%)")
    return fig


def plot_temperature_scan(temperatures, theory_auc: dict, reference_auc: dict, *, confidence: float = 0.95):
    """Area under the pruning curve of the theory's ranking at each temperature (mean and confidence interval
    over seeds), with the other rankings' means as horizontal lines; one panel per model.

    Args:
        temperatures: ``[n_T]``.
        theory_auc: ``{model label: [S, n_T]}``; reference_auc: ``{model label: {ranking: [S]}}``.
    """
    temperatures = np.asarray(temperatures, dtype=float)
    fig, axes = plt.subplots(1, len(theory_auc), figsize=(4.6 * len(theory_auc), 3.0), layout="constrained",
                             squeeze=False, sharey=True)
    for ax, (model, values) in zip(axes[0], theory_auc.items()):
        interval = mean_interval(100 * np.asarray(values, dtype=float), confidence)
        ax.errorbar(temperatures, interval["mean"], yerr=[interval["mean"] - interval["low"],
                                                          interval["high"] - interval["mean"]],
                    color=COLORS["theory"], marker=MARKERS["theory"], capsize=3, label=RANKING_NAMES["theory"])
        for name, reference in reference_auc[model].items():
            ax.axhline(100 * np.mean(reference), color=COLORS[name], linestyle="--" if name == "random" else ":",
                       linewidth=1.2, label=RANKING_NAMES[name])
        ax.set_xscale("log")
        ax.set_xticks(temperatures, [f"{T:g}" for T in temperatures])
        ax.minorticks_off()
        ax.set_xlabel("temperature $T$ of the theory")
        ax.set_title(model, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("area under the pruning curve (%)")
    axes[0, -1].legend(fontsize=6.5, loc="lower right")
    return fig
