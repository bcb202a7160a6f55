"""The figures that every task draws, following the authors' plotting conventions: accuracy in %
vs ``N`` on a log axis (theory blue ``x`` joined by a line, samples black dots on top, GP red horizontal
lines), ``U`` heat maps in ``RdBu`` with limits ``+-max|U|`` and path-labelled axes, PC overlaps as paired bars
(finite width blue, GP orange).

Every function returns the :class:`matplotlib.figure.Figure` it drew (or draws on the ``ax`` it is given) and
computes nothing that is not plotted. A task passes its own styles (GP line styles, path colours).
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..plot_style import BLUE, GREY, ORANGE, VERMILLION, palette_cycle

plt = require("matplotlib.pyplot", "plots")

THEORY_COLOR = BLUE
GP_COLOR = VERMILLION
FW_BAR_COLOR = BLUE
GP_BAR_COLOR = ORANGE


def figure_and_axes(ax, figsize):
    """``(figure, ax)``: a new figure of size ``figsize`` when ``ax`` is None, else ``ax`` and its figure."""
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        return fig, ax
    return ax.figure, ax


def finish_axes(ax, xlabel: str, ylabel: str, title: str, *, log_x: bool = False, **legend) -> None:
    """Label the axes of a figure of this package, title it (font size 10), make ``x`` logarithmic if ``log_x``
    and draw the legend with the options ``legend``."""
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(**legend)


@palette_cycle
def plot_accuracy(
    widths,
    theory,
    *,
    gp=None,
    band=None,
    gp_band=None,
    sampled=None,
    title="Classification accuracy",
    theory_label="all paths, theory",
    sampled_label="all paths, sampled",
    theory_style="solid",
    gp_styles=None,
    extra=None,
    ax=None,
):
    """Accuracy (%) vs ``N``.

    Args:
        widths, theory: the theory curve (fractions in [0, 1]).
        gp: ``{key: accuracy}`` GP lines, drawn with ``gp_styles[key] = (linestyle, label)`` (default: solid,
            labelled by the key).
        band: ``(low, high)`` arrays over widths: the spread of the theory over independent data sets.
        gp_band: ``{key: (low, high)}`` the same for GP lines.
        sampled: ``(widths, accuracy, mc_sd)`` posterior-sample points (black dots with Monte-Carlo error bars).
        extra: list of ``(accuracy, label, color, linestyle)`` further theory-like curves (ablations).
    """
    fig, ax = figure_and_axes(ax, (5.2, 3.4))
    styles = gp_styles or {}
    widths = np.asarray(widths)
    if band is not None:
        ax.fill_between(
            widths,
            100 * np.asarray(band[0]),
            100 * np.asarray(band[1]),
            color=THEORY_COLOR,
            alpha=0.18,
            linewidth=0,
            label="theory, spread over data sets",
        )
    for accuracy, label, color, linestyle in [(theory, theory_label, THEORY_COLOR, theory_style), *(extra or [])]:
        ax.plot(
            widths,
            100 * np.asarray(accuracy),
            color=color,
            marker="x",
            linestyle=linestyle,
            linewidth=1,
            markersize=5,
            label=label,
        )
    for key, value in (gp or {}).items():
        linestyle, label = styles.get(key, ("solid", key))
        ax.axhline(100 * value, color=GP_COLOR, linestyle=linestyle, linewidth=1, label=label)
        if gp_band and key in gp_band:
            low, high = gp_band[key]
            ax.axhspan(100 * low, 100 * high, color=GP_COLOR, alpha=0.08, linewidth=0)
    if sampled is not None:
        w, acc, err = (np.asarray(v) for v in sampled)
        ax.errorbar(
            w, 100 * acc, yerr=100 * err, fmt="o", color="k", markersize=4, capsize=2, zorder=10, label=sampled_label
        )
    finish_axes(ax, "N", "A (%)", title, log_x=True, fontsize=6.5, loc="upper right")
    return fig


def label_ticks(ax, names, colors=None):
    """Path names on both axes of a ``U`` heat map, each coloured by ``colors[name]`` (default black)."""
    colors = colors or {}
    ticks = range(len(names))
    ax.set_xticks(ticks, names)
    ax.set_yticks(ticks, names)
    for tick, name in [*zip(ax.get_xticklabels(), names), *zip(ax.get_yticklabels(), names)]:
        tick.set_color(colors.get(name, "k"))


@palette_cycle
def plot_order_parameters(matrices, titles, names, *, limits=None, annotate: bool = True, colors=None):
    """One ``U`` heat map per matrix (``RdBu``), path-labelled axes.

    Args:
        limits: colour limit ``+-v`` per panel (default ``max|U|`` of each panel).
        annotate: write each entry's value in its cell.
        colors: ``{path name: colour}`` of the tick labels (default black).
    """
    matrices = [np.asarray(U) for U in matrices]
    fig, axes = plt.subplots(1, len(matrices), figsize=(2.6 * len(matrices), 2.6), layout="constrained", squeeze=False)
    limits = [np.abs(U).max() for U in matrices] if limits is None else list(limits)
    for ax, U, title, vmax in zip(axes[0], matrices, titles, limits):
        image = ax.imshow(U, cmap="RdBu", vmin=-vmax, vmax=vmax)
        label_ticks(ax, names, colors)
        ax.set_title(title, fontsize=9)
        if annotate:
            for (i, j), value in np.ndenumerate(U):
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6.5,
                    color="white" if abs(value) > 0.6 * vmax else "k",
                )
        fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


@palette_cycle
def plot_pc_overlap(finite_width, gp, *, width=10, ax=None):
    """Paired bars: overlap of the kernel PCs with the labels, finite width (blue) vs GP (orange) (Fig. 2d)."""
    fig, ax = figure_and_axes(ax, (5.2, 3.0))
    k = np.arange(1, len(finite_width) + 1)
    ax.bar(k - 0.175, finite_width, width=0.35, color=FW_BAR_COLOR, label=f"N = {width}")
    ax.bar(k + 0.175, gp, width=0.35, color=GP_BAR_COLOR, label="GP limit")
    finish_axes(ax, "PC rank", "Overlap", "overlap of kernel PCs with task labels", fontsize=7)
    return fig


@palette_cycle
def plot_head_scores_and_drops(scores, drops, labels, *, drops_label="accuracy lost (points)"):
    """The theory's head scores (eq-head-score) beside a measured effect of pruning each head alone: paired bars
    per head (left), and the effect against the score (right).

    Args:
        scores: ``[n_heads]`` head scores (largest 1), in the order of ``labels``.
        drops: ``[n_heads]`` the measured effect of pruning each head (e.g. test accuracy lost, in points).
        labels: ``[n_heads]`` head labels (``"(l)h"``).
    """
    scores, drops = np.asarray(scores, dtype=float), np.asarray(drops, dtype=float)
    if scores.shape != drops.shape or scores.shape != (len(labels),):
        raise ValueError(
            f"scores, drops and labels must have one entry per head, got {scores.shape}, "
            f"{drops.shape} and {len(labels)}"
        )
    fig, (bars, scatter) = plt.subplots(1, 2, figsize=(8.0, 2.8), layout="constrained")
    fig.get_layout_engine().set(wspace=0.12)  # room for the twin axis' label between the panels
    at = np.arange(len(labels))
    bars.bar(at - 0.2, scores, width=0.4, color=THEORY_COLOR, label="head score (theory)")
    bars.set_ylabel("head score")
    twin = bars.twinx()
    twin.bar(at + 0.2, drops, width=0.4, color=GREY, label=drops_label)
    twin.set_ylabel(drops_label, fontsize=8)
    bars.set_xticks(at, labels, fontsize=8)
    bars.set_xlabel("head (layer) index")
    handles = bars.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    fig.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="outside upper center", ncols=2)
    scatter.scatter(scores, drops, color="k", s=18)
    for x, y, label in zip(scores, drops, labels):
        scatter.annotate(label, (x, y), fontsize=7, xytext=(3, 2), textcoords="offset points")
    scatter.set_xlabel("head score (theory)")
    scatter.set_ylabel(drops_label, fontsize=8)
    return fig
