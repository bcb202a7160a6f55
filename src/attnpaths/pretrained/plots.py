"""Figures of the chapter on the pretrained transformer. Every function returns the
:class:`matplotlib.figure.Figure` it drew and computes nothing beyond the means and intervals it shows
(:func:`attnpaths.statistics.mean_interval`); the numbers come from :mod:`attnpaths.pretrained.study_theory`."""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..experiments.plots import GP_COLOR, finish_axes
from ..plot_style import BLACK, BLUE, GREEN, GREY, ORANGE, palette_cycle
from ..statistics import mean_interval

plt = require("matplotlib.pyplot", "plots")

COLORS = {"theory": BLUE, "gp": GP_COLOR, "readout": BLACK, "gradient": ORANGE, "entropy": GREEN, "random": GREY}
"""The colours of the predictors and rankings, the theory blue, its GP limit red, MiniLM's own readout black."""
LABELS = {"theory": "theory (finite width)", "gp": "GP limit", "readout": "ridge on MiniLM's embedding"}


@palette_cycle
def plot_accuracies(sizes, curves, per_split: dict, *, confidence: float = 0.95):
    """(a) Test accuracy against the number of training snippets ``P``: the theory and its GP limit, mean over
    draws of the training snippets. (b) Each resampled split's test accuracy of the theory, the GP limit and the
    readout of MiniLM's embedding, with their mean and its ``confidence`` interval.

    Args:
        sizes: ``[n_P]``; curves: ``[n_P, draws, 2]`` (:func:`~.study_theory.learning_curves`);
        per_split: ``{"theory", "gp", "readout": [S]}`` accuracies.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.4), layout="constrained")
    curves = np.asarray(curves, dtype=np.float64)
    for index, name in enumerate(("theory", "gp")):
        left.plot(sizes, 100 * curves[:, :, index].mean(axis=1), "o-", color=COLORS[name], label=LABELS[name])
    finish_axes(left, "training snippets P", "test accuracy (%)", "(a) learning curves", log_x=True, fontsize=8)
    for x, name in enumerate(("theory", "gp", "readout")):
        values = 100 * np.asarray(per_split[name], dtype=np.float64)
        right.plot(np.full(values.size, x), values, "o", color=COLORS[name], alpha=0.45)
        if values.size >= 2:
            interval = mean_interval(values, confidence)
            error = [[interval["mean"] - interval["low"]], [interval["high"] - interval["mean"]]]
            right.errorbar(x + 0.18, interval["mean"], yerr=error, fmt="s", color=COLORS[name], capsize=4)
    right.set_xticks(range(3), [LABELS[n] for n in ("theory", "gp", "readout")], fontsize=8, rotation=12)
    right.set_xlim(-0.5, 2.6)
    right.set_ylabel("test accuracy (%)")
    right.set_title(f"(b) resampled splits, mean and {100 * confidence:g} % interval", fontsize=10)
    return fig


def plot_head_weights(layer_scores, layer: int, U):
    """(a) The theory's head scores of every layer (each layer's theory solved alone at one temperature, on the
    same inputs), the chosen layer framed. (b) The order parameter ``U`` of the chosen layer over its heads.

    Args:
        layer_scores: ``[L, H]``; layer: the chosen layer (0-based); U: ``[H, H]``.
    """
    scores, U = np.asarray(layer_scores, dtype=np.float64), np.asarray(U, dtype=np.float64)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 3.8), layout="constrained", width_ratios=(1.5, 1))
    image = left.imshow(scores, cmap="viridis", aspect="auto")
    left.add_patch(plt.Rectangle((-0.5, layer - 0.5), scores.shape[1], 1, fill=False, edgecolor="white", lw=2.5))
    left.set_xticks(range(scores.shape[1]), [str(h + 1) for h in range(scores.shape[1])])
    left.set_yticks(range(scores.shape[0]), [f"layer {l + 1}" for l in range(scores.shape[0])])
    left.set_xlabel("head")
    left.set_title("(a) head scores of each layer's theory", fontsize=10)
    fig.colorbar(image, ax=left, shrink=0.85, label="head score")
    limit = np.abs(U).max()
    image = right.imshow(U, cmap="RdBu", vmin=-limit, vmax=limit)
    ticks = [str(h + 1) for h in range(U.shape[0])]
    right.set_xticks(range(U.shape[0]), ticks, fontsize=7)
    right.set_yticks(range(U.shape[0]), ticks, fontsize=7)
    right.set_xlabel("head")
    right.set_ylabel("head")
    right.set_title(f"(b) order parameter U of layer {layer + 1}", fontsize=10)
    fig.colorbar(image, ax=right, shrink=0.85)
    return fig


@palette_cycle
def plot_pruning(scores: dict, costs, steps, curves: dict, *, cost_label: str):
    """(a) The rank of each head's score under each ranking against the rank of what pruning that head alone costs
    (every head of the model).
    (b) Test accuracy of the readout after pruning ``k`` heads along each ranking.

    Args:
        scores: ``{ranking: [L, H]}``; costs: ``[L, H]``; steps: ``[n_k]`` heads pruned;
        curves: ``{ranking: [n_k]}`` accuracies (names beginning ``"random"`` drawn grey, one label).
        cost_label: the cost in words (the x label of (a)).
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.5), layout="constrained")

    def share_rank(values):  # rank as a share of the heads, the scale of Spearman's correlation
        values = np.asarray(values, dtype=np.float64).ravel()
        return (np.argsort(np.argsort(values)) + 0.5) / values.size

    cost = share_rank(costs)
    for name, value in scores.items():
        left.plot(cost, share_rank(value), "o", ms=3.5, color=COLORS[name], alpha=0.7, label=name)
    finish_axes(
        left,
        f"rank of the {cost_label} (share of heads)",
        "rank of the head's score (share of heads)",
        "(a) ranks of scores and costs",
        fontsize=8,
    )
    random_label = "random orders"
    for name, curve in curves.items():
        if name.startswith("random"):
            right.plot(steps, 100 * np.asarray(curve), "x--", color=COLORS["random"], label=random_label, lw=1)
            random_label = None
        else:
            right.plot(steps, 100 * np.asarray(curve), "o-", color=COLORS[name], label=name)
    finish_axes(right, "heads pruned", "test accuracy (%)", "(b) pruning along each ranking", fontsize=8)
    return fig
