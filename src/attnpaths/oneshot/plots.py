"""Figures of the one-shot chapter (Fig. 3 and its appendix) that the experiment layer's figures do not cover.

Accuracy vs ``N``, ``U`` heat maps and PC overlaps are drawn by :mod:`attnpaths.experiments.plots` (the authors'
plotting conventions). Every function returns the :class:`matplotlib.figure.Figure` it drew and computes
nothing that is not plotted: the numbers come from :mod:`attnpaths.oneshot.episodes`, :mod:`attnpaths.oneshot.temperature_grid` and :mod:`attnpaths.oneshot.pruning`.
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..experiments import plots as layer_plots
from ..plot_style import BLUE, GREEN, GREY, ORANGE, VERMILLION, palette_cycle
from .sequences import Sequences

plt = require("matplotlib.pyplot", "plots")

SCORE_COLOR = BLUE
DROP_COLOR = VERMILLION


def task_episodes(num_sequences: int, num_episodes: int = 3) -> list[int]:
    """Indices of the episodes that :func:`plot_task` shows from a class-sorted set: alternately the next
    episode of the first half (``y = +1``) and of the second half (``y = -1``)."""
    half = num_sequences // 2
    return [i // 2 + (half if i % 2 else 0) for i in range(min(int(num_episodes), num_sequences))]


def task_example(episodes: Sequences, *, num_episodes: int = 3) -> dict:
    """The data that :func:`plot_task` shows: ``{"episodes": indices, "images": [k, 3, S, S], "y": [k],
    "label_tokens": [k, 3], "x": [N0, T]}`` (``x``: the token features of the first episode shown)."""
    shown = task_episodes(len(episodes), num_episodes)
    return {
        "episodes": shown,
        "images": episodes.images[shown],
        "y": episodes.y[shown],
        "label_tokens": episodes.label_tokens[shown],
        "x": episodes.x[shown[0]],
    }


@palette_cycle
def plot_task(episodes: Sequences, *, num_episodes: int = 3, token_example: int = 0):
    """Fig. 3a from data: a few episodes (support A, support B, query; label tokens and target) and the token
    features ``x`` of one episode (rows: features; columns: the tokens, image by image).

    Args:
        episodes: class-sorted episodes (the episodes shown: :func:`task_episodes`).
    """
    picks = task_episodes(len(episodes), num_episodes)
    num_episodes = len(picks)
    fig = plt.figure(figsize=(10.5, 1.05 * num_episodes + 0.9), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=(1.0, 1.25))
    axes = left.subplots(num_episodes, 3, squeeze=False)
    names = ("support", "support", "query")
    for row, k in enumerate(picks):
        for col in range(3):
            ax = axes[row, col]
            ax.imshow(episodes.images[k, col], cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            ax.set(xticks=[], yticks=[])
            token = int(episodes.label_tokens[k, col])
            label = f"{names[col]}, label {token}" if token < 2 else f"query, y = {int(episodes.y[k]):+d}"
            ax.set_title(label, fontsize=7)
    left.suptitle("episodes: two labelled supports, one query", fontsize=9)
    ax = right.subplots()
    x = episodes.x[picks[token_example]].numpy()
    vmax = np.abs(x).max()
    image = ax.imshow(x, aspect="auto", cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
    tokens_per_image = x.shape[1] // 3
    for boundary in (tokens_per_image, 2 * tokens_per_image):
        ax.axvline(boundary - 0.5, color="k", linewidth=0.8)
    ax.set(xlabel="token (16 patches per image: support, support, query)", ylabel="feature")
    ax.set_title(f"token features x of the first episode ({x.shape[0]} x {x.shape[1]})", fontsize=9)
    right.colorbar(image, ax=ax, shrink=0.8)
    return fig


@palette_cycle
def plot_order_parameters(matrices, titles, names, *, limits=None):
    """``U`` heat maps side by side (Fig. 3c), symmetric colour scales ``+-limits`` (default ``max|U|`` of
    each panel), path-labelled axes (:func:`attnpaths.experiments.plots.plot_order_parameters` without numbers,
    small rotated tick labels)."""
    fig = layer_plots.plot_order_parameters(matrices, titles, names, annotate=False, limits=limits)
    fig.set_size_inches(3.3 * len(matrices), 3.1)
    for ax in fig.axes[: len(matrices)]:  # the image axes (their colour bars come after them)
        ax.tick_params(labelsize=6)
        ax.tick_params(axis="x", labelrotation=90)
    return fig


@palette_cycle
def plot_order_parameter_comparison(U_theory, U_sampled, U_gd, names, *, width):
    """Fig. 3c: the theory's and the sampled ``U`` at width ``width`` on one shared symmetric colour scale, and
    the gradient-descent model's path-weight overlaps on its own scale (:func:`plot_order_parameters`).

    Args:
        U_theory, U_sampled, U_gd: ``[n, n]`` in flat path order; names: ``n`` path names.
    """
    U_theory, U_sampled, U_gd = (np.asarray(U, dtype=float) for U in (U_theory, U_sampled, U_gd))
    common = float(max(np.abs(U_theory).max(), np.abs(U_sampled).max()))
    return plot_order_parameters(
        [U_theory, U_sampled, U_gd],
        [f"theory, N={width}", f"sampled, N={width}", "gradient descent"],
        names,
        limits=[common, common, float(np.abs(U_gd).max())],
    )


@palette_cycle
def plot_accuracy_vs_width(widths, theory, *, theory_test_rule, gp, gp_test_rule, sampled_widths, sampled, sampled_sd):
    """Fig. 3b: test accuracy vs ``N`` of the theory with the temperature chosen on the validation episodes
    (blue) and on the test episodes (grey dashed), the GP limit with both rules (red solid and dotted) and the
    posterior samples (black dots, Monte-Carlo sd bars) (:func:`attnpaths.experiments.plots.plot_accuracy`).

    Args:
        widths: ``[n_w]``; theory, theory_test_rule: ``[n_w]`` accuracies (fractions); gp, gp_test_rule: floats;
        sampled_widths, sampled, sampled_sd: ``[n_s]`` the sampled widths, accuracies and their sd.
    """
    return layer_plots.plot_accuracy(
        widths,
        theory,
        gp={"GP": gp, "GP_test": gp_test_rule},
        gp_styles={"GP": ("solid", "GP"), "GP_test": ("dotted", "GP, T chosen on test")},
        sampled=(sampled_widths, sampled, sampled_sd),
        extra=[(theory_test_rule, "RN, theory, T chosen on test", GREY, "--")],
        title="A vs N, in distribution",
        theory_label="RN, theory",
        sampled_label="RN, sampled",
    )


@palette_cycle
def plot_ood_accuracy(widths, theory, *, gp, gd_model):
    """Accuracy vs ``N`` on the out-of-distribution digit episodes (sec-oneshot-digits): the theory (blue), the
    GP limit (red) and the gradient-descent model (green dashed).

    Args:
        widths, theory: ``[n_w]`` (fractions); gp, gd_model: floats.
    """
    fig = layer_plots.plot_accuracy(
        widths,
        theory,
        gp={"GP": gp},
        gp_styles={"GP": ("solid", "GP")},
        title="A vs N, ood (digits 0 vs 1)",
        theory_label="RN, theory",
    )
    fig.axes[0].axhline(100 * gd_model, color=GREEN, linestyle="--", linewidth=1, label="GD model")
    fig.axes[0].legend(fontsize=6.5, loc="lower right")
    return fig


@palette_cycle
def plot_head_scores_and_drops(labels, scores, drops, *, base_accuracy=None):
    """Fig. 3e: head scores (blue bars, left axis) and the accuracy drop when the head alone is pruned
    (red bars, right axis, in %), heads sorted by ascending score.

    Args:
        labels: head labels ``"(l)h"``; scores, drops: same length (drops as fractions).
    """
    scores, drops = np.asarray(scores, dtype=float), np.asarray(drops, dtype=float)
    order = np.argsort(scores, kind="stable")
    fig, ax = plt.subplots(figsize=(5.2, 3.0), layout="constrained")
    k = np.arange(len(order))
    ax.bar(k - 0.2, scores[order], width=0.4, color=SCORE_COLOR, label="head score")
    ax.set_ylabel("Score", color=SCORE_COLOR)
    ax.set_xticks(k, [labels[i] for i in order])
    ax.set_xlabel("head \"(layer) index\", in ascending score")
    twin = ax.twinx()
    twin.bar(k + 0.2, 100 * drops[order], width=0.4, color=DROP_COLOR, label="drop when pruned")
    twin.set_ylabel("Drop (%)", color=DROP_COLOR)
    twin.axhline(0, color="k", linewidth=0.5)
    title = "Head scores and performance drop"
    if base_accuracy is not None:
        title += f" (unpruned: {100 * base_accuracy:.1f} %)"
    ax.set_title(title, fontsize=9)
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(
        handles, ["head score (theory, max = 1)", "drop when pruned alone (GD model)"], fontsize=6.5, loc="upper left"
    )
    return fig


def _pruning_axes(fig, k, xlabel: str, title: str, legend_size: float):
    """Labels the axes of accuracy against ``k`` pruned heads (``k``: ``[K + 1]``) and returns ``fig``."""
    ax = fig.axes[0]
    ax.set(xticks=k, xlabel=xlabel, ylabel="A (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=legend_size, loc="lower left")
    return fig


@palette_cycle
def plot_cumulative_pruning(score_curve, random_curves, *, score_labels=None):
    """Fig. 3f: accuracy after pruning ``k`` heads in ascending score order (blue) against random orders
    (grey lines; black: their mean, band: +-1 sd).

    Args:
        score_curve: ``[K + 1]``; random_curves: ``[n_orders, K + 1]`` (fractions).
        score_labels: optional labels of the heads pruned at steps ``1..K`` along the score order.
    """
    sc = 100 * np.asarray(score_curve, dtype=float)
    rc = 100 * np.asarray(random_curves, dtype=float)
    k = np.arange(sc.size)
    fig, ax = plt.subplots(figsize=(5.2, 3.2), layout="constrained")
    for curve in rc:
        ax.plot(k, curve, color="0.75", linewidth=0.6, zorder=1)
    mean, sd = rc.mean(axis=0), rc.std(axis=0, ddof=1) if rc.shape[0] > 1 else np.zeros(sc.size)
    band = f"random orders, mean +- sd ({rc.shape[0]} orders)"
    ax.fill_between(k, mean - sd, mean + sd, color="0.5", alpha=0.25, linewidth=0, zorder=2, label=band)
    ax.plot(k, mean, color="k", linewidth=1.2, zorder=3, label="random orders, mean")
    ax.plot(k, sc, color=SCORE_COLOR, marker="o", markersize=4, linewidth=1.5, zorder=4, label="ascending head score")
    if score_labels is not None:
        above = dict(textcoords="offset points", xytext=(0, 5), ha="center", fontsize=6, color=SCORE_COLOR)
        for step, label in enumerate(score_labels, start=1):
            ax.annotate(label, (step, sc[step]), **above)
    return _pruning_axes(fig, k, "number of pruned heads", "Accuracy of the GD model after pruning heads", 6.5)


@palette_cycle
def plot_little_loss(
    base_accuracy,
    base_se,
    margin,
    score_curve,
    random_expectation,
    best,
    *,
    ks,
    tuned,
    tuned_se,
    pruned_se,
    control=None,
    control_se=None,
    z: float = 1.96,
):
    """Accuracy of the GD model against the number of heads pruned (sec-oneshot-little-loss): the unpruned model
    (black line, band: +-``z`` binomial standard errors) and its accuracy minus the margin (dashed); the score order
    without fine-tuning (blue, bars at ``ks``: +-``z`` paired standard errors of the difference from the unpruned
    model) and after brief fine-tuning (orange, mean over seeds, bars: +-``z`` standard errors over episodes and
    seeds); the exact random-order expectation (grey) and the best set of each size (green, chosen on the same
    episodes).

    Args:
        base_accuracy, base_se, margin: fractions; score_curve, random_expectation, best: ``[K + 1]`` fractions.
        ks: ``[m]`` numbers of heads pruned with fine-tuned models; tuned, tuned_se, pruned_se: ``[m]``.
        control, control_se: the unpruned model after the same fine-tuning (drawn at ``k = 0``), or ``None``.
    """
    sc, rnd, bst = (100 * np.asarray(v, dtype=float) for v in (score_curve, random_expectation, best))
    ks = np.asarray(ks, dtype=int)
    k = np.arange(sc.size)
    fig, ax = plt.subplots(figsize=(5.2, 3.3), layout="constrained")
    base, band = 100 * float(base_accuracy), 100 * z * float(base_se)
    ax.axhspan(base - band, base + band, color="k", alpha=0.1, linewidth=0)
    ax.axhline(base, color="k", linewidth=1.0, label="unpruned model")
    ax.axhline(base - 100 * float(margin), color="k", linewidth=1.0, linestyle="--", label="unpruned minus the margin")
    ax.plot(k, bst, color=GREEN, marker="^", markersize=4, linewidth=1.0, label="best set of k heads (optimum)")
    ax.plot(k, rnd, color=GREY, marker="s", markersize=3, linewidth=1.0, label="random order (exact expectation)")
    ax.plot(k, sc, color=SCORE_COLOR, marker="o", markersize=4, linewidth=1.5, label="score order, no fine-tuning")
    ax.errorbar(
        ks, sc[ks], yerr=100 * z * np.asarray(pruned_se, dtype=float), color=SCORE_COLOR, linestyle="none", capsize=3
    )
    tuned_style = dict(color=ORANGE, marker="D", markersize=4, linestyle="none", capsize=3)
    ax.errorbar(
        ks + 0.08,
        100 * np.asarray(tuned, dtype=float),
        yerr=100 * z * np.asarray(tuned_se, dtype=float),
        label="score order, briefly fine-tuned",
        **tuned_style,
    )
    if control is not None:
        ax.errorbar(
            [0.08],
            [100 * float(control)],
            yerr=[100 * z * float(control_se)],
            markerfacecolor="white",
            label="unpruned, same fine-tuning (control)",
            **tuned_style,
        )
    title = "Little loss? Accuracy after pruning, with and without fine-tuning"
    return _pruning_axes(fig, k, "number of pruned heads k", title, 6)


@palette_cycle
def plot_temperature_grid(widths, temperatures, accuracy, chosen, *, converged=None, titles=None):
    """Accuracy of the theory over the (N, T) grid, one heat map per split, with the temperature chosen for
    every width marked (one marker style per selection rule).

    Args:
        accuracy: ``{split: [n_w, n_T]}``; chosen: ``{rule label: int [n_w]}`` indices into ``temperatures``.
        converged: optional bool ``[n_w, n_T]``; uncertified points are hatched out.
    """
    widths, temperatures = list(widths), list(temperatures)
    splits = list(accuracy)
    fig, axes = plt.subplots(1, len(splits), figsize=(3.6 * len(splits), 3.5), layout="constrained", squeeze=False)
    markers = ("o", "x", "+", "s")
    hollow = dict(linestyle="none", color=VERMILLION, markerfacecolor="none")
    for ax, split in zip(axes[0], splits):
        a = 100 * np.asarray(accuracy[split], dtype=float)
        image = ax.imshow(a.T, origin="lower", aspect="auto", cmap="viridis")
        if converged is not None:
            bad = ~np.asarray(converged, dtype=bool)
            for i, j in zip(*np.nonzero(bad)):
                ax.text(i, j, "n.c.", ha="center", va="center", fontsize=5, color="w")
        for (label, idx), marker in zip(chosen.items(), markers):
            size = 6 if marker == "o" else 7
            ax.plot(np.arange(len(widths)), np.asarray(idx), marker=marker, markersize=size, label=label, **hollow)
        ax.set_xticks(range(len(widths)), [str(int(w)) for w in widths], rotation=90, fontsize=7)
        ax.set_yticks(range(len(temperatures)), [f"{t:g}" for t in temperatures], fontsize=7)
        ax.set(xlabel="N", ylabel="T")
        ax.set_title((titles or {}).get(split, split), fontsize=9)
        fig.colorbar(image, ax=ax, shrink=0.8, label="A (%)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="outside lower center", ncols=len(labels))
    return fig
