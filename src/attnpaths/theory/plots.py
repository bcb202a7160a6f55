"""Figures of the theory chapter: the approach of the order parameter to its GP value, the solver's
certificate, and the prior kernel of finite networks against the GP kernel.

Every function returns the :class:`matplotlib.figure.Figure` it drew and computes nothing that is not plotted.
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..plot_style import BLUE, GREEN, ORANGE, palette_cycle

plt = require("matplotlib.pyplot", "plots")


@palette_cycle
def plot_order_parameter_approach(widths, U_by_width, names, colors, distance, far_widths, far_distance):
    """Left: the diagonal entries of ``U`` and its first cross entry against the width; right: the largest
    distance of ``U`` to its GP value at the figure's widths and at far larger ones, with a ``1/N`` line.

    Args:
        widths: ``[W]`` widths; U_by_width: ``{width: [paths, paths] U}`` in the order of ``names``.
        names, colors: path names and colours, in the same order.
        distance: ``[W]`` ``max|U - U_GP|``; far_widths, far_distance: the same at the far widths.
    """
    widths, far_widths = np.asarray(widths, float), np.asarray(far_widths, float)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for a, (name, color) in enumerate(zip(names, colors)):
        axes[0].plot(
            widths,
            [U_by_width[int(w)][a, a] for w in widths],
            "o-",
            color=color,
            label=f"$U_{{\\mathrm{{{name}}},\\mathrm{{{name}}}}}$",
        )
    axes[0].plot(
        widths,
        [U_by_width[int(w)][0, 1] for w in widths],
        "s--",
        color="black",
        label=f"$U_{{\\mathrm{{{names[0]}}},\\mathrm{{{names[1]}}}}}$",
    )
    axes[0].axhline(1.0, color="grey", lw=0.8, ls=":")
    axes[0].axhline(0.0, color="grey", lw=0.8, ls=":")
    axes[0].set(xscale="log", xlabel="width $N$", ylabel="order parameter entry", title="Entries of $U$")
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].loglog(widths, distance, "o-", label=r"$\max|U - U_{\mathrm{GP}}|$")
    axes[1].loglog(far_widths, far_distance, "o", color=BLUE, mfc="none", label="same, far widths (claim T3)")
    all_widths = np.concatenate([widths, far_widths])
    reference = np.concatenate([distance, far_distance])[-1] * all_widths[-1] / all_widths
    axes[1].loglog(all_widths, reference, "k:", label=r"$\propto 1/N$ through the last point")
    axes[1].set(xlabel="width $N$", ylabel="distance to GP value", title="Approach to the GP limit")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


@palette_cycle
def plot_certificates(widths, min_eigenvalues, gradient_norms, solve_seconds):
    """The certificate of each solution against the width: smallest Hessian eigenvalue (symmetric
    directions), final gradient norm, and the solve's wall time. All arguments are ``[W]``."""
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.0))
    axes[0].semilogx(widths, min_eigenvalues, "o-")
    axes[0].set(
        xlabel="width $N$", ylabel="smallest eigenvalue", title="Hessian of $S$ (symmetric directions)", yscale="log"
    )
    axes[1].loglog(widths, np.maximum(gradient_norms, 1e-18), "o-", color=ORANGE)
    axes[1].set(xlabel="width $N$", ylabel="gradient norm", title="Gradient at the solution")
    axes[2].semilogx(widths, 1000 * np.asarray(solve_seconds), "o-", color=GREEN)
    axes[2].set(xlabel="width $N$", ylabel="ms", title="Solve time")
    fig.tight_layout()
    return fig


@palette_cycle
def plot_prior_kernel(K_gp, estimates):
    """Monte-Carlo prior kernels of finite networks against the GP kernel, one panel per width.

    Args:
        K_gp: ``[M, M]`` GP kernel; estimates: ``{width: ([M, M] mean, [M, M] standard error)}``.
    """
    K_gp = np.asarray(K_gp)
    fig, axes = plt.subplots(1, len(estimates), figsize=(4 * len(estimates), 3.4), squeeze=False)
    for ax, (N, (mean, se)) in zip(axes[0], estimates.items()):
        ax.errorbar(K_gp.ravel(), np.asarray(mean).ravel(), yerr=2 * np.asarray(se).ravel(), fmt=".", ms=3, alpha=0.7)
        ax.plot([K_gp.min(), K_gp.max()], [K_gp.min(), K_gp.max()], "k:", lw=1)
        ax.set(
            xlabel=r"$K_{\mathrm{GP}}(x, x')$",
            ylabel=r"Monte-Carlo $\langle f(x) f(x')\rangle$",
            title=f"prior of the network at N = {N}",
        )
    fig.tight_layout()
    return fig
