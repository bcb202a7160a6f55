"""Figures of the HMC chapter (Fig. 2 and its appendix) in the authors' plotting conventions; accuracy vs ``N``,
``U`` heat maps and PC overlaps are drawn by :mod:`attnpaths.experiments.plots` with this task's styles.

Every function returns the :class:`matplotlib.figure.Figure` it drew (or draws on the ``ax`` it is given) and
computes nothing that is not plotted: the numbers come from :mod:`attnpaths.experiments` and
:mod:`attnpaths.hmc.bands`.
"""

from __future__ import annotations

import numpy as np
import torch

from .._optional import require
from ..experiments import plots as layer_plots
from ..experiments.plots import figure_and_axes, finish_axes
from ..paths import all_paths
from ..plot_style import BLACK, BLUE, GREEN, GREY, ORANGE, PURPLE, SKY_BLUE, VERMILLION, palette_cycle
from .data import HMCDataset
from .networks import PATH_COLORS, PATH_LABELS, HMCNetwork

plt = require("matplotlib.pyplot", "plots")
PowerNorm = require("matplotlib.colors", "plots").PowerNorm
FancyBboxPatch = require("matplotlib.patches", "plots").FancyBboxPatch

#: line styles of the three GP lines of Fig. 2c
GP_STYLES = {"all": ("solid", "all paths, GP"), "g": ("dashed", "path g, GP"), "g+d": ("dotted", "paths g+d, GP")}


# --------------------------------------------------------------------------------------------------------
# Fig. 2a: the task drawn from data


@palette_cycle
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
    for offset, idx, color in zip((1.25, -1.25), examples, (GREEN, GREY)):
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
    for y, text in ((task.feature_width * 0.5, "features"), (task.feature_width + task.num_tokens / 2, "position")):
        white = {"facecolor": "white", "alpha": 0.7, "linewidth": 0}
        ax.text(task.num_tokens - 1, y, text, ha="right", va="center", fontsize=7, bbox=white)
    ax.set_title(f"visible tokens of example {examples[0]} (y = {int(data.y[examples[0]]):+d})", fontsize=9)

    ax = axes[2]
    idx = examples[0]
    features = data.features[idx]  # [N_f, T_seq]
    noise = data.noise_components()
    along_b = torch.einsum("i,it->t", task.e_B, features).numpy()
    along_a = torch.einsum("i,it->t", task.e_A, features).numpy()
    perp = noise["perp"][idx].norm(dim=0).numpy() / np.sqrt(task.feature_width - 2)
    ax.plot(t, along_b, "o-", markersize=3, color=BLUE, label=r"$e_B \cdot x_t$ (state; noise $\sigma_B$)")
    ax.plot(t, along_a, "s-", markersize=3, color=ORANGE, label=r"$e_A \cdot x_t$ (noise $\sigma_A$)")
    ax.plot(t, perp, "^-", markersize=3, color=GREY, label=r"$|\eta_\perp| / \sqrt{N_f - 2}$ (noise $\sigma_\perp$)")
    scale = float(torch.dot(task.e_B, task.v_plus))
    for sign in (1, -1):
        ax.axhline(sign * scale, color=BLUE, linewidth=0.6, linestyle=":")
    ax.set_xlabel("token t")
    ax.set_title("the three noise directions", fontsize=9)
    ax.legend(fontsize=6.5, loc="lower left", framealpha=0.85)
    return fig


# --------------------------------------------------------------------------------------------------------
# Fig. 2b: the network and its paths


HEAD_NAMES = {
    "same_token": "same-token",
    "uniform_attention": "uniform",
    "blank": "random (blank)",
    "different_token": "different-token",
}


def draw_head(ax, x: float, y: float, text: str, *, size: tuple[float, float]):
    """One head of a network diagram on ``ax``: a rounded box of ``size`` (width, height, data units) centred at
    ``(x, y)``, with ``text`` in it."""
    box = FancyBboxPatch(
        (x - size[0] / 2, y - size[1] / 2),
        *size,
        boxstyle="round,pad=0.02",
        facecolor="whitesmoke",
        edgecolor="k",
        linewidth=0.8,
        zorder=3,
    )
    ax.add_patch(box)
    ax.text(x, y, text, ha="center", va="center", fontsize=6.5, zorder=4)


@palette_cycle
def plot_network(network: HMCNetwork, x_example):
    """Fig. 2b drawn by code: the heads of each layer, the paths through them (coloured as in every figure)
    and, on the right, each head's attention matrix on one input sequence.

    Args:
        network: the HMC network; ``x_example``: ``[N0, T]`` one input sequence.
    """
    fig = plt.figure(figsize=(10.5, 3.4), layout="constrained")
    sub = fig.subfigures(1, 2, width_ratios=(1.25, 1.0))
    _draw_paths(sub[0].subplots(), network)
    _draw_attention(sub[1], network, x_example)
    return fig


def _draw_paths(ax, network: HMCNetwork) -> None:
    versions = network.head_versions
    L, height = len(versions), max(len(v) for v in versions)
    ax.set_xlim(-0.6, L + 1.6)
    ax.set_ylim(-0.45, height + 0.05)
    ax.axis("off")

    def ypos(layer, head):
        n = len(versions[layer])
        return height * (n - head - 0.5) / n

    for layer, heads in enumerate(versions):
        for head, version in enumerate(heads):
            text = f"layer {layer + 1}, head {head + 1}\n{HEAD_NAMES.get(version, version)}"
            draw_head(ax, layer + 1, ypos(layer, head), text, size=(0.64, 0.44))
    ax.text(0, height / 2, "input x\n(tokens)", ha="center", va="center", fontsize=8)
    ax.text(L + 1.15, height / 2, "last-token\nreadout a\n-> f(x)", ha="center", va="center", fontsize=8)
    paths = all_paths(network.heads)
    spread = np.linspace(-0.12, 0.12, len(paths)) if len(paths) > 1 else [0.0]
    for k, (path, name) in enumerate(zip(paths, network.path_names)):
        xs = [0.25] + [layer + 1 for layer in range(L)] + [L + 0.75]
        ys = [height / 2 + spread[k]] + [ypos(layer, h) + spread[k] for layer, h in enumerate(path)]
        ys.append(height / 2 + spread[k])
        label = f"{name}: {PATH_LABELS[name]} (heads {', '.join(str(h + 1) for h in path)})"
        ax.plot(xs, ys, color=PATH_COLORS[name], linewidth=2, zorder=2, label=label)
    ax.legend(fontsize=6.5, loc="lower center", bbox_to_anchor=(0.5, -0.12), ncols=2, frameon=False)
    ax.set_title(f"{network.label}: {len(paths)} attention paths", fontsize=9)


def _draw_attention(sub, network: HMCNetwork, x_example) -> None:
    matrices = [layer.matrices(torch.as_tensor(x_example)[None])[0] for layer in network.attention.layers]
    L, nmax = len(matrices), max(network.heads)
    axes = sub.subplots(L, nmax, squeeze=False)
    for layer in range(L):
        for head in range(nmax):
            a = axes[layer, head]
            if head >= network.heads[layer]:
                a.axis("off")
                continue
            norm = PowerNorm(0.4, vmin=0, vmax=1)
            image = a.imshow(matrices[layer][head].numpy(), cmap="Greys", norm=norm, interpolation="nearest")
            a.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=7)
            a.set_xticks([])
            a.set_yticks([])
            if head == 0:
                a.set_ylabel("key s", fontsize=7)
            if layer == L - 1:
                a.set_xlabel("query t", fontsize=7)
    sub.colorbar(image, ax=axes, shrink=0.8, ticks=[0, 0.03, 0.2, 0.5, 1])
    sub.suptitle(
        r"attention $\Omega_{st}$ on one sequence (colour $\propto \Omega^{0.4}$;"
        "\nlayer 2: only the last query column is read out)",
        fontsize=8,
    )


# --------------------------------------------------------------------------------------------------------
# accuracy vs N (Fig. 2c top, 2e)


@palette_cycle
def plot_accuracy(widths, theory, *, gp_styles=None, **options):
    """Accuracy (%) vs ``N`` (:func:`attnpaths.experiments.plots.plot_accuracy`) with the GP lines of Fig. 2c
    styled as the authors' (:data:`GP_STYLES`; ``gp_styles`` adds or overrides keys)."""
    return layer_plots.plot_accuracy(widths, theory, gp_styles=dict(GP_STYLES, **(gp_styles or {})), **options)


@palette_cycle
def plot_accuracy_with_band(curve, band, samples, gp, *, band_line: str = "all", **options):
    """Fig. 2c (top) and 2e: the theory's accuracy vs ``N`` on the authors' data, its range over independently
    drawn data sets (shaded), the posterior samples (black dots, bars = Monte-Carlo standard deviation) and the
    GP lines (:func:`plot_accuracy`).

    Args:
        curve: the theory over widths at one temperature (:class:`~attnpaths.experiments.sweep.TheorySweep`).
        band: the same network over independently drawn data sets (:class:`~attnpaths.hmc.bands.Band`):
            ``accuracy`` ``[n_sets, n_w]`` gives the theory's range, ``gp["all"]`` ``[n_sets]`` the range of the
            network's own GP limit, shaded around the GP line ``band_line``.
        samples: ``{width: SampledPoint}`` (:func:`~attnpaths.experiments.sampling.sample_widths`).
        gp: ``{line: accuracy}`` GP lines (keys of :data:`GP_STYLES` get the authors' styles).
        options: further options of :func:`attnpaths.experiments.plots.plot_accuracy` (title, labels, styles).
    """
    return plot_accuracy(
        curve.widths,
        curve.accuracy["test"][:, 0],
        gp=gp,
        band=(band.accuracy.min(axis=0), band.accuracy.max(axis=0)),
        gp_band={band_line: (band.gp["all"].min(), band.gp["all"].max())},
        sampled=(list(samples), [p.accuracy for p in samples.values()], [p.accuracy_mc_sd for p in samples.values()]),
        **options,
    )


@palette_cycle
def plot_ablations(panels):
    """The ablations of ``U`` (appendix), one panel per network: the accuracy with the theory's ``U`` (blue), with
    ``U`` replaced by its diagonal (green, dashed) and with every diagonal entry set to ``U_gg`` (orange, dashed),
    and the network's GP line.

    Args:
        panels: list of ``(widths, ablation, gp, title)``: ``widths`` ``[n_w]``; ``ablation`` the dict of
            :func:`~attnpaths.hmc.bands.ablation_curves` (``"theory"``, ``"diagonal_only"``,
            ``"evened_diagonal"``, each ``[n_w]``); ``gp`` ``{line: accuracy}``; ``title`` the panel's title.
    """
    panels = list(panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.4), layout="constrained", squeeze=False)
    for ax, (widths, ablation, gp, title) in zip(axes[0], panels):
        plot_accuracy(
            widths,
            ablation["theory"],
            gp=gp,
            title=title,
            theory_label="theory",
            extra=[
                (ablation["diagonal_only"], "U -> diag(U)", GREEN, "--"),
                (ablation["evened_diagonal"], "diag(U) -> U_gg", ORANGE, "--"),
            ],
            ax=ax,
        )
    return fig


# --------------------------------------------------------------------------------------------------------
# U heat maps (Fig. 2c bottom, appendix)


@palette_cycle
def plot_order_parameters(matrices, titles, names, *, limits=None, annotate: bool = True):
    """One ``U`` heat map per matrix (:func:`attnpaths.experiments.plots.plot_order_parameters`), tick labels
    coloured by path (``attnpaths.hmc.networks.PATH_COLORS``)."""
    return layer_plots.plot_order_parameters(
        matrices, titles, names, limits=limits, annotate=annotate, colors=PATH_COLORS
    )


# --------------------------------------------------------------------------------------------------------
# appendix


@palette_cycle
def plot_sampled_order_parameters(theory_U, exact_U, sampled_U, names, *, width):
    """Four ``U`` heat maps at one width (appendix): the theory's saddle point, the exact posterior mean
    (eq-exact-density), the sampled ``U`` (eq-sampled-u) on one colour scale ``+-max|U|`` of the three, and the
    sampled minus the exact mean on its own scale.

    Args:
        theory_U, exact_U, sampled_U: ``[n, n]`` in figure order (rows and columns ``names``); width: ``N``.
    """
    matrices = [np.asarray(theory_U), np.asarray(exact_U), np.asarray(sampled_U)]
    matrices.append(matrices[2] - matrices[1])
    titles = [
        f"theory (saddle), N={width}",
        f"exact mean, N={width}",
        f"sampled, N={width}",
        f"sampled - exact, N={width}",
    ]
    common = max(np.abs(m).max() for m in matrices[:3])
    return plot_order_parameters(matrices, titles, names, limits=[common] * 3 + [np.abs(matrices[3]).max()])


@palette_cycle
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


@palette_cycle
def plot_head_scores(widths, scores, labels, *, ax=None):
    """Normalised head scores (sec-head-scores) vs ``N``, one line per head."""
    fig, ax = figure_and_axes(ax, (5.2, 3.0))
    flat = np.asarray(scores).reshape(len(widths), -1)
    valid = ~np.isnan(flat).any(axis=0)
    for column, label in zip(np.flatnonzero(valid), labels):
        ax.plot(widths, flat[:, column], marker="o", markersize=3, label=f"head {label}")
    finish_axes(ax, "N", "head score (max = 1)", "head scores vs N", log_x=True, fontsize=7)
    return fig


@palette_cycle
def plot_finite_width_shift(widths, relative_shift, names, *, errors=None, exact=None, num_paths=None, ax=None):
    """``N (U_sampled - U_theory) / U_theory`` on the diagonal vs ``N``: a shift of order ``1/N`` is a level
    line. Error bars ``N * errors`` (Monte-Carlo standard errors); ``exact`` (same shape as ``relative_shift``):
    the shift of the exact posterior mean (:mod:`attnpaths.order_parameter_posterior`), drawn as lines;
    dashed: ``+-(n + 1)``, the scale of the Wishart correction (:func:`attnpaths.experiments.sampling.finite_width_epsilon`)."""
    fig, ax = figure_and_axes(ax, (5.2, 3.0))
    widths = np.asarray(widths, dtype=float)
    scaled = widths[:, None] * np.asarray(relative_shift)
    for k, name in enumerate(names):
        color = PATH_COLORS.get(name, "k")
        offset = widths * (1 + 0.04 * (k - (len(names) - 1) / 2))  # side by side, so the bars stay readable
        yerr = None if errors is None else widths * np.asarray(errors)[:, k]
        ax.errorbar(
            offset,
            scaled[:, k],
            yerr=yerr,
            fmt="o",
            color=color,
            markersize=4,
            capsize=2,
            linewidth=1,
            label=f"U_{name}{name} sampled",
        )
        if exact is not None:
            ax.plot(
                widths,
                widths * np.asarray(exact)[:, k],
                "-",
                color=color,
                linewidth=1.2,
                label=f"U_{name}{name} exact mean",
            )
    if num_paths is not None:
        for sign in (1, -1):
            ax.axhline(
                sign * (num_paths + 1),
                color="k",
                linestyle="--",
                linewidth=1,
                label="scale $\\pm(n+1)$" if sign > 0 else None,
            )
    ax.axhline(0, color="gray", linewidth=0.6)
    finish_axes(
        ax,
        "N",
        "N (sampled - theory) / theory",
        "finite-width shift of the diagonal of U",
        log_x=True,
        fontsize=7,
        ncols=2,
    )
    return fig


#: colour-blind-safe colours (Okabe and Ito 2008) of the sampled widths in :func:`plot_predictor_variance`
WIDTH_COLORS = (BLUE, ORANGE, GREEN, PURPLE, SKY_BLUE, VERMILLION, BLACK)


@palette_cycle
def plot_predictor_variance(panels):
    """The theory's predictor variance (eq-predictor) against the posterior variance of the network's output,
    per test point, one panel per network, one colour per sampled width, with the identity line.

    Args:
        panels: ``[(title, theory_variance, sampled_variance)]`` with ``theory_variance`` and ``sampled_variance``
            ``{width: [P_test]}`` (the sampled one ``SampledPoint.sd ** 2``), the same widths.
    """
    panels = list(panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.2), layout="constrained", squeeze=False)
    for ax, (title, theory, sampled) in zip(axes[0], panels):
        if list(theory) != list(sampled):
            raise ValueError(
                f"theory and sampled variances must name the same widths, got {list(theory)}, {list(sampled)}"
            )
        if len(theory) > len(WIDTH_COLORS):
            raise ValueError(f"at most {len(WIDTH_COLORS)} widths per panel, got {len(theory)}")
        values = [np.asarray(v, dtype=np.float64) for w in theory for v in (theory[w], sampled[w])]
        low, high = min(v.min() for v in values), max(v.max() for v in values)
        ax.plot([low, high], [low, high], color="gray", linewidth=0.8, label="identity")
        for color, w in zip(WIDTH_COLORS, theory):
            ax.plot(np.asarray(theory[w]), np.asarray(sampled[w]), ".", ms=3, alpha=0.6, color=color, label=f"N={w}")
        ax.set(xlabel="theory: Var f(x*)", ylabel="samples: Var f(x*)", title=title)
        ax.legend(fontsize=7, markerscale=2)
    return fig


# --------------------------------------------------------------------------------------------------------
# The model chapter: heads and paths on one sequence


@palette_cycle
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


@palette_cycle
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
        axes[0].plot(
            path_attention[i],
            "o-",
            ms=3,
            color=network.path_colors[i],
            label=f"{network.path_names[i]} ({network.path_labels[i]})",
        )
    axes[0].set(xlabel="token $s$ (0 = BOS)", ylabel=r"$\omega_{\pi,s}$", title="path attention, one sequence")
    axes[0].legend(fontsize=7)
    for i in network.plot_order:
        name = network.path_names[i]
        for sign, style in ((1, "-"), (-1, "--")):
            axes[1].hist(
                projection[y * sign > 0, i],
                bins=25,
                histtype="step",
                color=network.path_colors[i],
                lw=1.5,
                ls=style,
                label=f"{name}, y={sign:+d}",
            )
    axes[1].set(
        xlabel=rf"$\xi_\pi(x) \cdot {direction_label}$",
        ylabel="sequences",
        title=f"path features along ${direction_label}$",
    )
    axes[1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig
