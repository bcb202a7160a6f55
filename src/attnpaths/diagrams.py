"""Diagrams of the architecture: which attention paths a stack of multi-head layers has."""

from __future__ import annotations

from ._optional import require
from .paths import all_paths
from .plot_style import CATEGORICAL, palette_cycle

plt = require("matplotlib.pyplot", "plots")


@palette_cycle
def plot_path_diagram(heads, ax=None):
    """Input tokens -> one head per layer -> readout, one coloured line per attention path.

    Args:
        heads: heads per layer, e.g. ``[2, 2]`` (a path picks one head per layer, (eq-path-features)).
        ax: axes to draw on (a new figure of 6.9 x 2.8 inches when ``None``).
    Returns:
        the figure drawn on.
    """
    heads = [int(h) for h in heads]
    if not heads or min(heads) < 1:
        raise ValueError(f"heads must list at least one layer, each with at least 1 head, got {heads}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.9, 2.8))
    else:
        fig = ax.figure
    colors = CATEGORICAL
    layers, paths, tallest = len(heads), all_paths(heads), max(heads)
    x_positions = list(range(layers + 2))  # input, layers..., readout

    def head_y(layer, head):
        return (heads[layer] - 1) / 2 - head

    for layer, count in enumerate(heads):
        for head in range(count):
            ax.add_patch(
                plt.Rectangle(
                    (layer + 1 - 0.18, head_y(layer, head) - 0.22),
                    0.36,
                    0.44,
                    facecolor="white",
                    edgecolor="black",
                    zorder=3,
                )
            )
            ax.text(layer + 1, head_y(layer, head), f"head {head + 1}", ha="center", va="center", fontsize=7, zorder=4)
    for number, path in enumerate(paths):
        offset = (number - (len(paths) - 1) / 2) * 0.04  # parallel lines where paths share a head
        ys = [offset] + [head_y(layer, head) + offset for layer, head in enumerate(path)] + [offset]
        label = "path (" + ", ".join(str(h + 1) for h in path) + ")"
        ax.plot(x_positions, ys, color=colors[number % len(colors)], lw=1.6, label=label, zorder=2)
    bottom = -0.45 - (tallest - 1) / 2
    ax.text(0, bottom, "input tokens\n$x$", ha="center", va="top", fontsize=8)
    for layer in range(layers):
        ax.text(layer + 1, bottom, f"attention\nlayer {layer + 1}", ha="center", va="top", fontsize=8)
    ax.text(layers + 1, bottom, "readout\n$f(x)$", ha="center", va="top", fontsize=8)
    ax.set_xlim(-0.5, layers + 1.5)
    ax.set_ylim(-(tallest - 1) / 2 - 0.9, (tallest - 1) / 2 + 0.4)
    ax.axis("off")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=len(paths), fontsize=7, frameon=False)
    fig.tight_layout()
    return fig
