"""Figures of the HMC chapter (Fig. 2 and its appendix), following the authors' plotting conventions:
accuracy in % vs ``N`` on a log axis, theory blue ``x`` joined by a line, samples black dots on
top, GP red horizontal lines; ``U`` heat maps in ``RdBu`` with limits ``+-max|U|`` and tick labels coloured
by path; PC overlaps as paired bars (finite width blue, GP orange).

Every function returns the :class:`matplotlib.figure.Figure` it drew (or draws on the ``ax`` it is given) and
computes nothing that is not plotted: the numbers come from :mod:`attnpaths.hmc.experiments`.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib import pyplot as plt
from matplotlib.colors import PowerNorm
from matplotlib.patches import FancyBboxPatch

from .data import HMCDataset
from .networks import PATH_COLORS, PATH_LABELS, HMCNetwork

THEORY_COLOR = "tab:blue"
GP_COLOR = "tab:red"
FW_BAR_COLOR = "tab:blue"
GP_BAR_COLOR = "tab:orange"
#: line styles of the three GP lines of Fig. 2c
GP_STYLES = {"all": ("solid", "all paths, GP"), "g": ("dashed", "path g, GP"), "g+d": ("dotted", "paths g+d, GP")}


def _axes(ax, figsize):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        return fig, ax
    return ax.figure, ax


# --------------------------------------------------------------------------------------------------------
# Fig. 2a: the task drawn from data


def plot_task(data: HMCDataset, examples=None):
    """Fig. 2a from data: hidden states, the visible tokens of one sequence, and the three noise directions.

    Args:
        data: an HMC data set; ``examples``: two example indices, default the first of each class.
    """
    P = data.num_examples
    examples = (0, P // 2) if examples is None else tuple(examples)
    task = data.task
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.0), layout="constrained", width_ratios=(1.1, 1.0, 1.3))

    ax = axes[0]
    t = np.arange(1, task.seq_len + 1)
    for offset, idx, color in zip((1.25, -1.25), examples, ("tab:green", "tab:gray")):
        label = f"y = {int(data.y[idx]):+d}"
        ax.step(t, data.hidden_states[idx].numpy() * 0.5 + offset, where="mid", color=color, label=label)
    ax.set_yticks([1.75, 0.75, -0.75, -1.75], ["+1", "-1", "+1", "-1"])
    ax.set_xlabel("token t")
    ax.set_ylabel("hidden state $s_t$")
    ax.set_title("hidden Markov chains (stay prob. 0.7 vs 0.3)", fontsize=9)
    ax.legend(fontsize=7, loc="upper right", ncols=2, bbox_to_anchor=(1.0, 1.02))
    ax.set_ylim(-2.6, 2.9)

    ax = axes[1]
    x = data.x[examples[0]].numpy()
    vmax = np.abs(x).max()
    ax.imshow(x, aspect="auto", cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
    ax.axhline(task.feature_width - 0.5, color="k", linewidth=0.8)
    ax.set_xlabel("token (0 = BOS)")
    ax.set_ylabel("input row")
    ax.text(task.num_tokens - 1, task.feature_width * 0.5, "features", ha="right", va="center", fontsize=7,
            bbox={"facecolor": "white", "alpha": 0.7, "linewidth": 0})
    ax.text(task.num_tokens - 1, task.feature_width + task.num_tokens / 2, "position", ha="right", va="center",
            fontsize=7, bbox={"facecolor": "white", "alpha": 0.7, "linewidth": 0})
    ax.set_title(f"visible tokens of example {examples[0]} (y = {int(data.y[examples[0]]):+d})", fontsize=9)

    ax = axes[2]
    idx = examples[0]
    features = data.features[idx]  # [N_f, T_seq]
    noise = data.noise_components()
    along_b = torch.einsum("i,it->t", task.e_B, features).numpy()
    along_a = torch.einsum("i,it->t", task.e_A, features).numpy()
    perp = noise["perp"][idx].norm(dim=0).numpy() / np.sqrt(task.feature_width - 2)
    ax.plot(t, along_b, "o-", markersize=3, color="tab:blue", label=r"$e_B \cdot x_t$ (state; noise $\sigma_B$)")
    ax.plot(t, along_a, "s-", markersize=3, color="tab:orange", label=r"$e_A \cdot x_t$ (noise $\sigma_A$)")
    ax.plot(t, perp, "^-", markersize=3, color="tab:gray",
            label=r"$|\eta_\perp| / \sqrt{N_f - 2}$ (noise $\sigma_\perp$)")
    scale = float(torch.dot(task.e_B, task.v_plus))
    ax.axhline(scale, color="tab:blue", linewidth=0.6, linestyle=":")
    ax.axhline(-scale, color="tab:blue", linewidth=0.6, linestyle=":")
    ax.set_xlabel("token t")
    ax.set_title("the three noise directions", fontsize=9)
    ax.legend(fontsize=6.5, loc="lower left", framealpha=0.85)
    return fig


# --------------------------------------------------------------------------------------------------------
# Fig. 2b: the network and its paths


HEAD_NAMES = {"same_token": "same-token", "uniform_attention": "uniform", "blank": "random (blank)",
              "different_token": "different-token"}


def plot_network(network: HMCNetwork, x_example):
    """Fig. 2b drawn by code: the heads of each layer, the paths through them (coloured as in every figure)
    and, on the right, each head's attention matrix on one input sequence.

    Args:
        network: the HMC network; ``x_example``: ``[N0, T]`` one input sequence.
    """
    versions = network.head_versions
    L = len(versions)
    fig = plt.figure(figsize=(10.5, 3.4), layout="constrained")
    sub = fig.subfigures(1, 2, width_ratios=(1.25, 1.0))
    ax = sub[0].subplots()
    ax.set_xlim(-0.6, L + 1.6)
    ax.set_ylim(-0.45, max(len(v) for v in versions) + 0.05)
    ax.axis("off")
    height = max(len(v) for v in versions)

    def ypos(layer, head):
        n = len(versions[layer])
        return height * (n - head - 0.5) / n

    for layer, heads in enumerate(versions):
        for head, version in enumerate(heads):
            y = ypos(layer, head)
            ax.add_patch(FancyBboxPatch((layer + 1 - 0.32, y - 0.22), 0.64, 0.44, boxstyle="round,pad=0.02",
                                        facecolor="whitesmoke", edgecolor="k", linewidth=0.8, zorder=3))
            ax.text(layer + 1, y, f"layer {layer + 1}, head {head + 1}\n{HEAD_NAMES.get(version, version)}",
                    ha="center", va="center", fontsize=6.5, zorder=4)
    ax.text(0, height / 2, "input x\n(tokens)", ha="center", va="center", fontsize=8)
    ax.text(L + 1.15, height / 2, "last-token\nreadout a\n-> f(x)", ha="center", va="center", fontsize=8)
    from ..paths import all_paths

    paths = all_paths(network.heads)
    spread = np.linspace(-0.12, 0.12, len(paths)) if len(paths) > 1 else [0.0]
    for k, (path, name) in enumerate(zip(paths, network.path_names)):
        xs = [0.25] + [layer + 1 for layer in range(L)] + [L + 0.75]
        ys = [height / 2 + spread[k]] + [ypos(layer, h) + spread[k] for layer, h in enumerate(path)]
        ys.append(height / 2 + spread[k])
        ax.plot(xs, ys, color=PATH_COLORS[name], linewidth=2, zorder=2,
                label=f"{name}: {PATH_LABELS[name]} (heads {', '.join(str(h + 1) for h in path)})")
    ax.legend(fontsize=6.5, loc="lower center", bbox_to_anchor=(0.5, -0.12), ncols=2, frameon=False)
    ax.set_title(f"{network.label}: {len(paths)} attention paths", fontsize=9)

    matrices = [layer.matrices(torch.as_tensor(x_example)[None])[0] for layer in network.attention.layers]
    nmax = max(network.heads)
    axes = sub[1].subplots(L, nmax, squeeze=False)
    for layer in range(L):
        for head in range(nmax):
            a = axes[layer, head]
            if head >= network.heads[layer]:
                a.axis("off")
                continue
            image = a.imshow(matrices[layer][head].numpy(), cmap="Greys", norm=PowerNorm(0.4, vmin=0, vmax=1),
                             interpolation="nearest")
            a.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=7)
            a.set_xticks([])
            a.set_yticks([])
            if head == 0:
                a.set_ylabel("key s", fontsize=7)
            if layer == L - 1:
                a.set_xlabel("query t", fontsize=7)
    sub[1].colorbar(image, ax=axes, shrink=0.8, ticks=[0, 0.03, 0.2, 0.5, 1])
    sub[1].suptitle(r"attention $\Omega_{st}$ on one sequence (colour $\propto \Omega^{0.4}$;"
                    "\nlayer 2: only the last query column is read out)", fontsize=8)
    return fig


# --------------------------------------------------------------------------------------------------------
# accuracy vs N (Fig. 2c top, 2e)


def plot_accuracy(
    widths, theory, *, gp=None, band=None, gp_band=None, sampled=None, title="Classification accuracy",
    theory_label="all paths, theory", sampled_label="all paths, sampled", theory_style="solid", gp_styles=None,
    extra=None, ax=None,
):
    """Accuracy (%) vs ``N``.

    Args:
        widths, theory: the theory curve on the paper's data set (fractions in [0, 1]).
        gp: ``{key: accuracy}`` GP lines (keys of :data:`GP_STYLES`, or any key with ``gp_styles``).
        band: ``(low, high)`` arrays over widths: the spread of the theory over independent data sets.
        gp_band: ``{key: (low, high)}`` the same for GP lines.
        sampled: ``(widths, accuracy, mc_sd)`` posterior-sample points (black dots with Monte-Carlo error bars).
        extra: list of ``(accuracy, label, color, linestyle)`` further theory-like curves (ablations).
    """
    fig, ax = _axes(ax, (5.2, 3.4))
    styles = dict(GP_STYLES, **(gp_styles or {}))
    widths = np.asarray(widths)
    if band is not None:
        ax.fill_between(widths, 100 * np.asarray(band[0]), 100 * np.asarray(band[1]), color=THEORY_COLOR,
                        alpha=0.18, linewidth=0, label="theory, spread over data sets")
    ax.plot(widths, 100 * np.asarray(theory), color=THEORY_COLOR, marker="x", linestyle=theory_style,
            linewidth=1, markersize=5, label=theory_label)
    for accuracy, label, color, linestyle in extra or []:
        ax.plot(widths, 100 * np.asarray(accuracy), color=color, marker="x", linestyle=linestyle, linewidth=1,
                markersize=5, label=label)
    for key, value in (gp or {}).items():
        linestyle, label = styles[key]
        ax.axhline(100 * value, color=GP_COLOR, linestyle=linestyle, linewidth=1, label=label)
        if gp_band and key in gp_band:
            low, high = gp_band[key]
            ax.axhspan(100 * low, 100 * high, color=GP_COLOR, alpha=0.08, linewidth=0)
    if sampled is not None:
        w, acc, err = (np.asarray(v) for v in sampled)
        ax.errorbar(w, 100 * acc, yerr=100 * err, fmt="o", color="k", markersize=4, capsize=2, zorder=10,
                    label=sampled_label)
    ax.set_xscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel("A (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=6.5, loc="upper right")
    return fig


# --------------------------------------------------------------------------------------------------------
# U heat maps (Fig. 2c bottom, appendix)


def _label_ticks(ax, names):
    ticks = range(len(names))
    ax.set_xticks(ticks, names)
    ax.set_yticks(ticks, names)
    for tick, name in zip(ax.get_xticklabels(), names):
        tick.set_color(PATH_COLORS.get(name, "k"))
    for tick, name in zip(ax.get_yticklabels(), names):
        tick.set_color(PATH_COLORS.get(name, "k"))


def plot_order_parameters(matrices, titles, names, *, limits=None, annotate: bool = True):
    """One ``U`` heat map per matrix (``RdBu``), path-labelled axes.

    Args:
        limits: colour limit ``+-v`` per panel (default ``max|U|`` of each panel).
    """
    matrices = [np.asarray(U) for U in matrices]
    fig, axes = plt.subplots(1, len(matrices), figsize=(2.6 * len(matrices), 2.6), layout="constrained",
                             squeeze=False)
    limits = [np.abs(U).max() for U in matrices] if limits is None else list(limits)
    for ax, U, title, vmax in zip(axes[0], matrices, titles, limits):
        image = ax.imshow(U, cmap="RdBu", vmin=-vmax, vmax=vmax)
        _label_ticks(ax, names)
        ax.set_title(title, fontsize=9)
        if annotate:
            for (i, j), value in np.ndenumerate(U):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6.5,
                        color="white" if abs(value) > 0.6 * vmax else "k")
        fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


# --------------------------------------------------------------------------------------------------------
# Fig. 2d


def plot_pc_overlap(finite_width, gp, *, width=10, ax=None):
    """Paired bars: overlap of the kernel PCs with the labels, finite width (blue) vs GP (orange)."""
    fig, ax = _axes(ax, (5.2, 3.0))
    k = np.arange(1, len(finite_width) + 1)
    ax.bar(k - 0.175, finite_width, width=0.35, color=FW_BAR_COLOR, label=f"N = {width}")
    ax.bar(k + 0.175, gp, width=0.35, color=GP_BAR_COLOR, label="GP limit")
    ax.set_xlabel("PC rank")
    ax.set_ylabel("Overlap")
    ax.set_title("overlap of kernel PCs with task labels", fontsize=10)
    ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------------------------------------------------
# appendix


def plot_kernels(kernels: dict, *, width=10):
    """Heat maps (viridis) of the same-path pre-kernels, ``K_GP`` and the finite-width ``K``."""
    titles = {name: PATH_LABELS.get(name, name) for name in kernels}
    titles["GP"] = "GP"
    titles["FW"] = f"finite width, N = {width}"
    fig, axes = plt.subplots(1, len(kernels), figsize=(2.1 * len(kernels), 2.3), layout="constrained")
    for ax, (name, K) in zip(axes, kernels.items()):
        image = ax.imshow(K, cmap="viridis")
        ax.set_title(titles[name], fontsize=8, color=PATH_COLORS.get(name, "k"))
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(image, ax=ax, shrink=0.7)
    return fig


def plot_head_scores(widths, scores, labels, *, ax=None):
    """Normalised head scores (sec-head-scores) vs ``N``, one line per head."""
    fig, ax = _axes(ax, (5.2, 3.0))
    flat = np.asarray(scores).reshape(len(widths), -1)
    valid = ~np.isnan(flat).any(axis=0)
    for column, label in zip(np.flatnonzero(valid), labels):
        ax.plot(widths, flat[:, column], marker="o", markersize=3, label=f"head {label}")
    ax.set_xscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel("head score (max = 1)")
    ax.set_title("head scores vs N", fontsize=10)
    ax.legend(fontsize=7)
    return fig


def plot_finite_width_shift(widths, relative_shift, names, *, errors=None, exact=None, num_paths=None, ax=None):
    """``N (U_sampled - U_theory) / U_theory`` on the diagonal vs ``N``: a shift of order ``1/N`` is a level
    line. Error bars ``N * errors`` (Monte-Carlo standard errors); ``exact`` (same shape as ``relative_shift``):
    the shift of the exact posterior mean (:mod:`attnpaths.order_parameter_posterior`), drawn as lines;
    dashed: ``+-(n + 1)``, the scale of the Wishart correction (:func:`attnpaths.hmc.experiments.finite_width_epsilon`)."""
    fig, ax = _axes(ax, (5.2, 3.0))
    widths = np.asarray(widths, dtype=float)
    scaled = widths[:, None] * np.asarray(relative_shift)
    for k, name in enumerate(names):
        color = PATH_COLORS.get(name, "k")
        offset = widths * (1 + 0.04 * (k - (len(names) - 1) / 2))  # side by side, so the bars stay readable
        yerr = None if errors is None else widths * np.asarray(errors)[:, k]
        ax.errorbar(offset, scaled[:, k], yerr=yerr, fmt="o", color=color, markersize=4, capsize=2,
                    linewidth=1, label=f"U_{name}{name} sampled")
        if exact is not None:
            ax.plot(widths, widths * np.asarray(exact)[:, k], "-", color=color, linewidth=1.2,
                    label=f"U_{name}{name} exact mean")
    if num_paths is not None:
        for sign in (1, -1):
            ax.axhline(sign * (num_paths + 1), color="k", linestyle="--", linewidth=1,
                       label="scale $\\pm(n+1)$" if sign > 0 else None)
    ax.axhline(0, color="gray", linewidth=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel("N (sampled - theory) / theory")
    ax.set_title("finite-width shift of the diagonal of U", fontsize=10)
    ax.legend(fontsize=7, ncols=2)
    return fig


# --------------------------------------------------------------------------------------------------------
# The model chapter: heads and paths on one sequence


def plot_head_matrices(matrices: dict):
    """Attention matrices of several heads on one sequence, side by side with one colour bar.

    Args:
        matrices: ``{head name: [T+1, T+1] matrix}`` (key ``s`` down, query ``t`` across, token 0 = BOS).
    """
    fig, axes = plt.subplots(1, len(matrices), figsize=(3.2 * len(matrices), 3.8), layout="constrained")
    axes = np.atleast_1d(axes)
    for ax, (name, m) in zip(axes, matrices.items()):
        image = ax.imshow(np.asarray(m), cmap="viridis", vmin=0, vmax=1, origin="upper")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("query token $t$")
    axes[0].set_ylabel("key token $s$")
    fig.colorbar(image, ax=axes, shrink=0.8, label=r"$\Omega_{st}$")
    return fig


def plot_path_features(network: HMCNetwork, path_attention, projection, y, *, direction_label: str):
    """Left: the path attention vectors of one sequence; right: histograms of the path features of a data set
    projected on one direction, by class.

    Args:
        network: the network (path names, colours, labels and plotting order).
        path_attention: ``[paths, T+1]`` path attention of one sequence.
        projection: ``[P, paths]`` projected path features; y: ``[P]`` labels ``+-1``.
        direction_label: the direction's name for the axis label (TeX allowed).
    """
    path_attention, projection, y = np.asarray(path_attention), np.asarray(projection), np.asarray(y)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    for i in network.plot_order:
        axes[0].plot(path_attention[i], "o-", ms=3, color=network.path_colors[i],
                     label=f"{network.path_names[i]} ({network.path_labels[i]})")
    axes[0].set(xlabel="token $s$ (0 = BOS)", ylabel=r"$\omega_{\pi,s}$", title="path attention, one sequence")
    axes[0].legend(fontsize=7)
    for i in network.plot_order:
        name = network.path_names[i]
        for sign, style in ((1, "-"), (-1, "--")):
            axes[1].hist(projection[y * sign > 0, i], bins=25, histtype="step", color=network.path_colors[i],
                         lw=1.5, ls=style, label=f"{name}, y={sign:+d}")
    axes[1].set(xlabel=rf"$\xi_\pi(x) \cdot {direction_label}$", ylabel="sequences",
                title=f"path features along ${direction_label}$")
    axes[1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig
