"""Figures of the depth chapter: a coded network's heads and paths, the class separation of every path, and ``U``
heat maps with many paths.

Accuracy vs ``N`` is drawn by :mod:`attnpaths.experiments.plots`. Every function returns the
:class:`matplotlib.figure.Figure` it drew and computes nothing that is not plotted.
"""

from __future__ import annotations

import numpy as np

from ...experiments import plots as layer_plots
from ...experiments.plots import figure_and_axes
from ...paths import all_paths
from ...plot_style import CATEGORICAL, GREEN, GREY, palette_cycle
from ..plots import draw_head
from .networks import CodedHMCNetwork

GOOD_COLOR = GREEN
OTHER_COLOR = GREY


@palette_cycle
def plot_coded_network(network: CodedHMCNetwork, *, ax=None):
    """The heads of each layer (``code: name``) and every path through them, the good path in green.

    Args:
        network: the coded network; ax: axes to draw on (a new figure when ``None``).
    """
    fig, ax = figure_and_axes(ax, (6.4, 2.9))
    L, tallest = len(network.layers), max(network.heads)

    def ypos(layer, head):
        return (network.heads[layer] - 1) / 2 - head

    for layer, specs in enumerate(network.layers):
        for head, spec in enumerate(specs):
            text = f"{spec.code}\n" + spec.name.replace(", ", ",\n")
            draw_head(ax, layer + 1, ypos(layer, head), text, size=(0.72, 0.6))
        ax.text(layer + 1, -(tallest - 1) / 2 - 0.55, f"layer {layer + 1}", ha="center", va="top", fontsize=8)
    paths = all_paths(network.heads)
    for k, (path, name) in enumerate(zip(paths, network.path_names)):
        good = name == network.good_path
        offset = (k - (len(paths) - 1) / 2) * 0.025
        xs = [0.3] + [layer + 1 for layer in range(L)] + [L + 0.7]
        ys = [offset] + [ypos(layer, h) + offset for layer, h in enumerate(path)] + [offset]
        ax.plot(
            xs,
            ys,
            color=GOOD_COLOR if good else OTHER_COLOR,
            linewidth=2.4 if good else 0.8,
            zorder=2.5 if good else 2,
            label=f"good path {name}" if good else None,
        )
    ax.text(0.15, 0, "input x", ha="right", va="center", fontsize=8)
    ax.text(L + 0.85, 0, "last-token\nreadout", ha="left", va="center", fontsize=8)
    ax.set_xlim(-0.6, L + 1.8)
    ax.set_ylim(-(tallest - 1) / 2 - 0.95, (tallest - 1) / 2 + 0.45)
    ax.axis("off")
    ax.legend(fontsize=7, loc="upper right", frameon=False)
    ax.set_title(f"{network.label}: {len(paths)} attention paths", fontsize=9)
    return fig


@palette_cycle
def plot_path_separation(names, separations: dict, *, good=None, ax=None):
    """Class separation of every path's features (one group of bars per path, one bar per variant).

    Args:
        names: path names, in the order of the arrays.
        separations: ``{variant label: [n_paths] separations}``.
        good: the good path's name (its label is drawn in green).
    """
    fig, ax = figure_and_axes(ax, (6.4, 2.8))
    names = list(names)
    k = np.arange(len(names))
    width = 0.8 / max(len(separations), 1)
    for m, (label, values) in enumerate(separations.items()):
        ax.bar(
            k + (m - (len(separations) - 1) / 2) * width,
            np.asarray(values),
            width=width,
            color=CATEGORICAL[m % len(CATEGORICAL)],
            label=label,
        )
    ax.axhline(0, color="k", linewidth=0.6)
    ax.set_xticks(k, names)
    for tick, name in zip(ax.get_xticklabels(), names):
        if name == good:
            tick.set_color(GOOD_COLOR)
            tick.set_fontweight("bold")
    ax.set_xlabel("path")
    ax.set_ylabel("class separation (pooled sd)")
    ax.set_title(r"path features along $v_+ + v_-$: separation of the two classes", fontsize=9)
    ax.legend(fontsize=7)
    return fig


@palette_cycle
def plot_order_parameters(matrices, titles, names, *, limits=None):
    """``U`` heat maps (:func:`attnpaths.experiments.plots.plot_order_parameters`, not annotated) whose column
    labels stand upright, so that the names of many paths stay readable."""
    fig = layer_plots.plot_order_parameters(matrices, titles, names, limits=limits, annotate=False)
    for ax in fig.axes:
        if ax.get_label() != "<colorbar>":
            ax.tick_params(axis="x", labelrotation=90)
            ax.tick_params(labelsize=7)
    return fig
