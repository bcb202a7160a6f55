"""The figures of the learning curves (sec-learning-curves): accuracy against ``P`` with its spread over training
sets, and the structure of the order parameter ``U`` against ``P``.

Each function draws what it is given (means and standard errors are computed here from the per-set values, the
only computation) and returns the :class:`matplotlib.figure.Figure`. Colours: the colour-blind-safe Okabe-Ito
palette, with a line style per curve so that the figures also read in grey.
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from .._validation import as_float64_array
from ..plot_style import BLUE, GREEN, ORANGE, PURPLE, SKY_BLUE, VERMILLION, palette_cycle
from .plots import figure_and_axes

plt = require("matplotlib.pyplot", "plots")

#: Okabe and Ito's colour-blind-safe palette (:mod:`attnpaths.plot_style`) in this chapter's order, which is
#: blue, vermillion, bluish green, orange, reddish purple, sky blue.
OKABE_ITO = (BLUE, VERMILLION, GREEN, ORANGE, PURPLE, SKY_BLUE)
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")


def mean_and_se(values) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the first axis (``[n_sets, ...]``, ``n_sets >= 2``)."""
    values = as_float64_array(values, "values")
    if values.ndim < 1 or values.shape[0] < 2:
        raise ValueError(f"values must be [n_sets, ...] with n_sets >= 2, got shape {values.shape}")
    return values.mean(axis=0), values.std(axis=0, ddof=1) / np.sqrt(values.shape[0])


def _mark_dimension(ax, dimension: int) -> None:
    """A dotted vertical line at ``P = D`` (where the kernel's rank stops growing), labelled."""
    ax.axvline(dimension, color="0.4", linewidth=1, linestyle=(0, (1, 2)))
    ax.annotate(f"P = D = {dimension}", (dimension, 0.02), xycoords=("data", "axes fraction"),
                xytext=(4, 0), textcoords="offset points", fontsize=8, color="0.3")  # fmt: skip


@palette_cycle
def plot_learning_curves(sizes, accuracy: dict, *, dimension: int | None = None, ax=None):
    """Test accuracy (%) against the number of training examples ``P`` (log axis), one line per curve with a band of
    one standard error over the training sets.

    Args:
        sizes: ``[n_P]``; accuracy: ``{curve name: [n_sets, n_P]}`` in drawing order.
        dimension: ``D = N0 n_paths``, drawn as a vertical line (where the Gram route takes over and the kernel's
            rank stops growing), or None.
    """
    sizes = as_float64_array(sizes, "sizes")
    fig, ax = figure_and_axes(ax, (6.4, 4.0))
    for k, (name, values) in enumerate(accuracy.items()):
        mean, se = mean_and_se(values)
        color = OKABE_ITO[k % len(OKABE_ITO)]
        ax.plot(sizes, 100 * mean, LINE_STYLES[k % 4], marker=MARKERS[k % 6], color=color, label=name)
        ax.fill_between(sizes, 100 * (mean - se), 100 * (mean + se), color=color, alpha=0.2, linewidth=0)
    if dimension is not None:
        _mark_dimension(ax, dimension)
    ax.set_xscale("log")
    ax.set_xlabel("training examples P")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(frameon=False)
    return fig


@palette_cycle
def plot_path_structure(sizes, shares, correlations: dict, path_names):
    """Two panels against ``P`` (log axis), means with one standard error over the training sets: each path's
    share ``U_pp / tr U`` of the diagonal of ``U`` (left) and chosen correlations ``U_pq / sqrt(U_pp U_qq)``
    (right).

    Args:
        sizes: ``[n_P]``; shares: ``[n_sets, n_P, n_paths]``; correlations: ``{label: [n_sets, n_P]}``;
        path_names: ``[n_paths]``.
    """
    sizes = as_float64_array(sizes, "sizes")
    shares = as_float64_array(shares, "shares")
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.8), layout="constrained")
    for p, name in enumerate(path_names):
        mean, se = mean_and_se(shares[:, :, p])
        color = OKABE_ITO[p % len(OKABE_ITO)]
        left.errorbar(sizes, mean, yerr=se, fmt=LINE_STYLES[p % 4], marker=MARKERS[p % 6], color=color,
                      label=f"path {name}", capsize=2)  # fmt: skip
    for k, (label, values) in enumerate(correlations.items()):
        mean, se = mean_and_se(values)
        color = OKABE_ITO[(k + len(path_names)) % len(OKABE_ITO)]
        right.errorbar(sizes, mean, yerr=se, fmt=LINE_STYLES[k % 4], marker=MARKERS[k % 6], color=color, label=label,
                       capsize=2)  # fmt: skip
    right.axhline(0, color="0.6", linewidth=0.8)
    for ax, low, label in ((left, 0, "share of tr U"), (right, -1, "correlation in U")):
        ax.set_xscale("log")
        ax.set_ylim(low, 1)
        ax.set_xlabel("training examples P")
        ax.set_ylabel(label)
        ax.legend(frameon=False)
    return fig


@palette_cycle
def plot_tuned_curves(sizes, fixed, tuned, names, *, dimension: int, sampled=None):
    """Test accuracy (%) against ``P`` (log axis) at a fixed temperature (solid) and with the temperature tuned on
    validation (dashed), one colour per curve, with a band of one standard error over the training sets; the
    sampled networks' accuracies as markers of their curve's colour with a black edge and their Monte-Carlo error
    bars, side by side at each ``P``.

    Args:
        sizes: ``[n_P]``; fixed, tuned: ``[n_sets, n_curves, n_P]``; names: ``[n_curves]``.
        dimension: ``D``, drawn as a vertical line.
        sampled: ``{curve index: {P: [{"accuracy", "se"}, ...]}}``, one dict per sampled training set, or None.
    """
    sizes = as_float64_array(sizes, "sizes")
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    for k, name in enumerate(names):
        color = OKABE_ITO[k % len(OKABE_ITO)]
        for values, style, label in ((fixed, "-", "fixed T"), (tuned, "--", "tuned T")):
            mean, se = mean_and_se(np.asarray(values)[:, k])
            ax.plot(sizes, 100 * mean, style, marker=MARKERS[k % 6], color=color, label=f"{name}, {label}")
            ax.fill_between(sizes, 100 * (mean - se), 100 * (mean + se), color=color, alpha=0.15, linewidth=0)
    for k, by_size in (sampled or {}).items():
        first = True
        for size, runs in by_size.items():
            # side by side (and the curves apart), so that equal accuracies stay visible
            offsets = np.linspace(0.96, 1.04, len(runs)) * (1.0 + 0.05 * (k - 0.5))
            for offset, run in zip(offsets, runs):
                ax.errorbar(size * offset, 100 * run["accuracy"], yerr=100 * run["se"], fmt="o",
                            color=OKABE_ITO[k % len(OKABE_ITO)], markeredgecolor="black", ecolor="black",
                            markersize=4, capsize=2, label=f"{names[k]}, sampled networks" if first else None)  # fmt: skip
                first = False
    _mark_dimension(ax, dimension)
    ax.set_xscale("log")
    ax.set_xlabel("training examples P")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(frameon=False, fontsize=7, ncol=2)
    return fig
