"""Figures of the related-results chapter, one per result (R1-R5).

Every function takes the result object of one experiment (:mod:`.rank_collapse`, :mod:`.lipschitz`,
:mod:`.measures`, :mod:`.bayesian_attention`), returns the :class:`matplotlib.figure.Figure` it drew and
computes nothing that is not plotted.
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..experiments.panels import LOG_LOG, draw_panel, finished
from ..plot_style import BLUE, ORANGE, palette_cycle
from .rank_collapse import network_log_ratios

plt = require("matplotlib.pyplot", "plots")

RESIDUAL_FLOOR = 1e-17
"""The pure networks' residuals are drawn no lower than this (an exact rank one gives 0, off a log axis)."""


@palette_cycle
def plot_rank_collapse(result):
    """R1 (sec-r1). Left: the relative residual ``r_l`` of every pure network (floored at
    :data:`RESIDUAL_FLOOR`) and of the same networks with skip connections, against the layer ``l``. Right:
    the successive log-residual ratios ``log r_{l+1} / log r_l`` of all pure networks in the asymptotic regime
    (:func:`~.rank_collapse.network_log_ratios`, concatenated in network order), with the exponent 3 of the
    bound (rel-rank-bound).

    Args:
        result: a :class:`~.rank_collapse.RankCollapseResult`, ``residual_pure`` and ``residual_skip``
            ``[repetitions, depth + 1]``.
    """
    pure, skip = result.residual_pure, result.residual_skip
    layers = np.arange(pure.shape[1])
    ratios = np.concatenate(network_log_ratios(pure))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    residuals = []
    for r in range(pure.shape[0]):
        pure_style = {"color": BLUE, "alpha": 0.6, "label": "pure attention" if r == 0 else None}
        residuals.append((layers, np.maximum(pure[r], RESIDUAL_FLOOR), "o-", pure_style))
        skip_style = {"color": ORANGE, "alpha": 0.6, "label": "with skip connections" if r == 0 else None}
        residuals.append((layers, skip[r], "s-", skip_style))
    ylabel = r"relative residual $r_l$ (floored at $10^{-17}$)"
    draw_panel(axes[0], residuals, yscale="log", xlabel="layer $l$", ylabel=ylabel, title="Distance to rank one")
    rate = [
        (np.arange(ratios.size), ratios, "o", {"label": r"$\log r_{l+1} / \log r_l$, $r_l \leq 0.1$"}),
        (None, 3.0, ":", {"color": "0.5", "label": "3 (exponent of the bound)"}),
    ]
    xlabel, title = "measurement (all networks)", "Doubly exponential rate"
    draw_panel(axes[1], rate, xlabel=xlabel, ylabel="ratio", ylim=(0, 5), title=title)
    return finished(fig)


@palette_cycle
def plot_input_scaling(result):
    """R2 (sec-r2). The largest Jacobian spectral norm over the draws of dot-product attention and of L2
    attention (rel-l2) against the input scale ``t``, on log-log axes.

    Args:
        result: a :class:`~.lipschitz.ScalingResult`, ``scales``, ``dot_product`` and ``l2`` ``[S]``.
    """
    fig, ax = plt.subplots(figsize=(5.5, 4))
    norms = [
        (result.scales, result.dot_product, "o-", {"label": "dot-product attention"}),
        (result.scales, result.l2, "s-", {"label": "L2 attention (rel-l2)"}),
    ]
    ylabel, title = "max Jacobian spectral norm over draws", "Local Lipschitz constant vs input scale"
    draw_panel(ax, norms, **LOG_LOG, xlabel="input scale $t$", ylabel=ylabel, title=title)
    return finished(fig)


@palette_cycle
def plot_sequence_length(result):
    """R3 (sec-r3). The Jacobian spectral norm (rel-jac) on the adversarial tokens and its mean over the
    random draws in the disk against the number of tokens ``n``, with the line ``sqrt(n)`` through the last
    adversarial point, on log-log axes.

    Args:
        result: a :class:`~.lipschitz.SequenceLengthResult`, ``num_tokens``, ``adversarial`` and ``random``
            ``[J]``.
    """
    n = result.num_tokens
    fig, ax = plt.subplots(figsize=(5.5, 4))
    root_n = {"color": "0.5", "label": r"$\sqrt{n}$ through the last point"}
    norms = [
        (n, result.adversarial, "o-", {"label": "adversarial tokens"}),
        (n, result.random, "s-", {"label": "uniform in the disk (mean over draws)"}),
        (n, result.adversarial[-1] * np.sqrt(n / n[-1]), ":", root_n),
    ]
    ylabel, title = "Jacobian spectral norm (rel-jac)", "Lipschitz constant vs sequence length"
    draw_panel(ax, norms, **LOG_LOG, xlabel="sequence length $n$", ylabel=ylabel, title=title)
    return finished(fig)


@palette_cycle
def plot_measures(result):
    """R4 (rel-meas). Left: the ratio ``max_q |Gamma(mu)(q) - Gamma(nu)(q)| / W1(mu, nu)``, largest and mean
    over the trials, against the number of atoms ``n``. Right: the mean ``W1`` distance between the two
    samples and the mean output change, on log-log axes.

    Args:
        result: a :class:`~.measures.MeasureResult`, ``num_atoms``, ``ratio_max``, ``ratio_mean``, ``w1_mean``
            and ``delta_mean`` ``[J]``.
    """
    n = result.num_atoms
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ratios = [
        (n, result.ratio_max, "o-", {"label": "largest over trials"}),
        (n, result.ratio_mean, "s-", {"label": "mean over trials"}),
    ]
    ylabel, title = r"$\max_q\|\Delta\Gamma\| / W_1$", r"$W_1$-Lipschitz ratio"
    draw_panel(axes[0], ratios, xscale="log", ylim=(0, None), xlabel="number of atoms $n$", ylabel=ylabel, title=title)
    distances = [
        (n, result.w1_mean, "o-", {"label": r"mean $W_1(\mu, \nu)$"}),
        (n, result.delta_mean, "s-", {"label": r"mean $\max_q \|\Gamma(\mu)(q) - \Gamma(\nu)(q)\|$"}),
    ]
    title = "Distances between samples"
    draw_panel(axes[1], distances, **LOG_LOG, xlabel="number of atoms $n$", ylabel="distance", title=title)
    return finished(fig)


@palette_cycle
def plot_context_window(result):
    """R5 (rel-bayes). The mean effective window ``exp H`` of the posterior over the parent token under the
    geometric prior against its rate ``rho`` (log axis), and as a horizontal line under the uniform prior,
    where the posterior is softmax attention.

    Args:
        result: a :class:`~.bayesian_attention.BayesianAttentionResult`, ``rates`` and ``window`` ``[K]``,
            ``window_uniform`` a number.
    """
    fig, ax = plt.subplots(figsize=(5.5, 4))
    windows = [
        (result.rates, result.window, "o-", {"label": "geometric prior"}),
        (None, result.window_uniform, ":", {"color": "0.5", "label": "uniform prior (= softmax attention)"}),
    ]
    xlabel, ylabel = r"geometric prior rate $\rho$", r"effective window $\exp H$ (mean over trials)"
    title = "A prior over positions and the context window"
    draw_panel(ax, windows, xscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
    return finished(fig)
