"""Figures of the exchangeability chapter, one per experiment (E1-E4).

Every function takes the result objects of the experiments (:mod:`.representation`, :mod:`.convergence`,
:mod:`.erm`, :mod:`.transfer`), returns the :class:`matplotlib.figure.Figure` it drew and computes nothing
that is not plotted.
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..experiments.panels import LOG_LOG, draw_panel, finished
from ..plot_style import BLUE, GREEN, ORANGE, VERMILLION, palette_cycle

plt = require("matplotlib.pyplot", "plots")

_LENGTH = "sequence length $L$"
_KAPPA = r"condition number $\kappa(\Sigma)$"


@palette_cycle
def plot_representation(gaussian, concepts):
    """E1. Left, (M1): the test risk of the three predictors of ``gaussian`` (posterior mean, first token,
    least squares on all raw coordinates) against ``L``, with the Bayes risk (ex-risk-m1) and ``R(1)``.
    Middle and right, (M2): the accuracy and confidence of the posterior of ``concepts`` against ``L``, and
    its reliability diagram (empty confidence bins left out).

    Args:
        gaussian: a :class:`~.representation.GaussianRepresentationResult` (risks ``[len(lengths)]``).
        concepts: a :class:`~.representation.ConceptPosteriorResult` (accuracy, confidence
            ``[len(lengths)]``; ``bin_confidence``, ``bin_accuracy``, ``bin_count`` ``[bins]``).
    """
    e1, e1c = gaussian, concepts
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    L = e1.lengths
    risks = [
        (L, e1.risk_posterior, "o", {"color": BLUE, "label": "(i) posterior mean"}),
        (L, e1.risk_posterior_theory, "-", {"color": BLUE, "lw": 1, "label": "(i) Bayes risk (ex-risk-m1)"}),
        (L, e1.risk_first_token, "s", {"color": ORANGE, "label": "(ii) first token only"}),
        (L, e1.risk_first_token_theory, "-", {"color": ORANGE, "lw": 1, "label": "(ii) theory $R(1)$"}),
        (L, e1.risk_flat_ls, "x", {"color": GREEN, "ms": 8, "label": "(iii) least squares on all $L d$ coordinates"}),
    ]
    title = "(M1): risk of three representations"
    draw_panel(axes[0], risks, legend=7, **LOG_LOG, xlabel=_LENGTH, ylabel="test risk (MSE)", title=title)
    recovery = [
        (e1c.lengths, e1c.accuracy, "o-", {"label": "accuracy of the posterior's mode"}),
        (e1c.lengths, e1c.confidence, "s--", {"label": "mean max posterior (confidence)"}),
    ]
    draw_panel(axes[1], recovery, xscale="log", xlabel=_LENGTH, ylabel="probability", title="(M2): concept recovery")
    ok = e1c.bin_count > 0
    reliability = [
        ([0, 1], [0, 1], "-", {"color": "0.6", "lw": 1, "label": "perfect calibration"}),
        (e1c.bin_confidence[ok], e1c.bin_accuracy[ok], "o-", {"label": "posterior, all L pooled"}),
    ]
    xlabel, title = "confidence (max posterior)", "(M2): reliability"
    draw_panel(axes[2], reliability, xlabel=xlabel, ylabel="accuracy", title=title, xlim=(0, 1), ylim=(0, 1))
    return finished(fig)


@palette_cycle
def plot_attention_convergence(
    lengths_result, labels, temperatures, short, short_length: int, long, long_length: int, best_temperature: float
):
    """E2, (M3). Left: the RMSE of attention against ``z^T q`` for each parameter of ``lengths_result``
    (measured, dots) with the prediction (ex-mse) (lines). Right: the temperature sweep ``W = beta Sigma^{-1}``
    at a short and a long length (error bars: one standard error) with its prediction, and a star at the
    optimum ``best_temperature`` of (ex-mse) at the short length, the last parameter of ``short``.

    Args:
        lengths_result: a :class:`~.convergence.LengthConvergenceResult`, ``rmse`` and ``rmse_predicted``
            ``[arms, len(lengths)]``.
        labels: ``[arms]`` legend label of each parameter.
        temperatures: ``[B]`` the grid of ``beta``.
        short: the :class:`~.convergence.LengthConvergenceResult` at ``short_length`` (one length), with
            ``B + 1`` parameters: the grid, then ``best_temperature``.
        long: the same at ``long_length``, with the ``B`` parameters of the grid.
        best_temperature: ``beta*``, the minimiser of (ex-mse) at ``short_length``.
    """
    e2 = lengths_result
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    lengths = []
    for i, label in enumerate(labels):
        lengths.append((e2.lengths, e2.rmse[i], "o", {"color": f"C{i}", "label": f"{label}: measured"}))
        derived = {"color": f"C{i}", "lw": 1, "label": f"{label}: derived (ex-mse)"}
        lengths.append((e2.lengths, e2.rmse_predicted[i], "-", derived))
    ylabel = r"RMSE of $\mathrm{Attn}_W(q; X)$ vs $z^\top q$"
    title = "(M3): convergence and bias floors"
    draw_panel(axes[0], lengths, legend=7, **LOG_LOG, xlabel=_LENGTH, ylabel=ylabel, title=title)
    n_grid = len(temperatures)
    sweep = []
    for j, (res, L) in enumerate(((short, short_length), (long, long_length))):
        measured = {
            "yerr": res.rmse_se[:n_grid, 0],
            "color": f"C{3 + j}",
            "capsize": 2,
            "label": f"$L = {L}$: measured",
        }
        sweep.append((temperatures, res.rmse[:n_grid, 0], "o", measured))
        derived = {"color": f"C{3 + j}", "lw": 1, "label": f"$L = {L}$: derived (ex-mse)"}
        sweep.append((temperatures, res.rmse_predicted[:n_grid, 0], "-", derived))
    best = {"color": VERMILLION, "ms": 12, "label": rf"$L = {short_length}$: at the derived optimum $\beta^*$"}
    sweep.append((best_temperature, np.sqrt(short.mse[-1, 0]), "*", best))
    xlabel = r"temperature factor $\beta$ in $W = \beta\Sigma^{-1}$"
    draw_panel(axes[1], sweep, legend=7, yscale="log", xlabel=xlabel, ylabel="RMSE", title="(M3): temperature")
    return finished(fig)


@palette_cycle
def plot_bandwidth(result, h_slope: float, mse_slope: float):
    """E2b, (M4). Left: the MSE of Gaussian-kernel attention (ex-nw) against the bandwidth, one curve per
    length, a star at each grid minimum. Right: the best bandwidth ``h*`` and its MSE against ``L``, with lines
    of the textbook slopes ``-1/5`` and ``-4/5`` through the first point; the legend gives the fitted slopes.

    Args:
        result: a :class:`~.convergence.BandwidthResult`, ``mse`` ``[len(lengths), len(bandwidths)]``,
            ``h_star`` and ``mse_star`` ``[len(lengths)]``.
        h_slope, mse_slope: the fitted log-log slopes of ``h*`` and ``MSE*`` against ``L``.
    """
    e2b = result
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    curves = []
    for j, L in enumerate(e2b.lengths):
        curves.append((e2b.bandwidths, e2b.mse[j], "-", {"color": f"C{j}", "label": f"$L = {L}$"}))
        curves.append((e2b.h_star[j], e2b.mse_star[j], "*", {"color": f"C{j}", "ms": 12}))
    ylabel, title = r"MSE vs $\sin(zq)$", "(M4): MSE($h$), minimum marked"
    draw_panel(axes[0], curves, **LOG_LOG, xlabel="bandwidth $h$", ylabel=ylabel, title=title)
    L, growth = e2b.lengths, e2b.lengths / e2b.lengths[0]
    tuned = [
        (L, e2b.h_star, "o", {"color": BLUE, "label": f"$h^*$: slope {h_slope:.2f} (theory $-0.2$)"}),
        (L, e2b.h_star[0] * growth**-0.2, "-", {"color": BLUE, "lw": 1}),
        (L, e2b.mse_star, "s", {"color": ORANGE, "label": f"MSE$^*$: slope {mse_slope:.2f} (theory $-0.8$)"}),
        (L, e2b.mse_star[0] * growth**-0.8, "-", {"color": ORANGE, "lw": 1}),
    ]
    title = "(M4): tuned bandwidth and error"
    draw_panel(axes[1], tuned, **LOG_LOG, xlabel=_LENGTH, ylabel="$h^*$ and MSE$^*$", title=title)
    return finished(fig)


@palette_cycle
def plot_cme_vs_softmax(result, softmax_floor: float):
    """E2c, (M4). The MSE of CME attention (ex-cme) and of fixed-bandwidth softmax attention (ex-nw) against
    ``L`` (error bars: one standard error over the sequences), and the large-L limit of the latter.

    Args:
        result: a :class:`~.convergence.CmeComparisonResult`, ``mse_cme``, ``mse_softmax`` and their standard
            errors ``[len(lengths)]``.
        softmax_floor: the bias floor of fixed-bandwidth softmax attention
            (:func:`~.convergence.smoothing_bias_floor`).
    """
    e2c = result
    fig, ax = plt.subplots(figsize=(5.5, 4))
    cme = {"yerr": e2c.mse_cme_se, "capsize": 2, "label": r"CME attention, $\lambda = 0.1/\sqrt{L}$"}
    softmax = {"yerr": e2c.mse_softmax_se, "capsize": 2, "label": "softmax attention, $h = 0.3$ fixed"}
    floor = {"color": ORANGE, "label": "large-$L$ limit (bias floor) of fixed-$h$ softmax"}
    series = [
        (e2c.lengths, e2c.mse_cme, "o-", cme),
        (e2c.lengths, e2c.mse_softmax, "s-", softmax),
        (None, softmax_floor, ":", floor),
    ]
    title = "(M4): CME vs fixed-temperature softmax"
    draw_panel(ax, series, **LOG_LOG, xlabel=_LENGTH, ylabel=r"MSE vs $\sin(zq)$", title=title)
    return finished(fig)


@palette_cycle
def plot_erm(results):
    """E3, (M3). Left: for each objective, the distance ``|W*_L - Sigma^{-1}|_F`` of the reference minimiser
    (solid) and the shortfall ``1 - c_L`` (dashed) against ``L``, with their standard errors. One more panel
    per objective: the excess test risk against the number of training sequences, one curve per ``L``
    (mean over the repetitions, error bars one standard error over them; symmetric-log vertical axis, linear
    below ``1e-3``).

    Args:
        results: ``{objective: ErmResult}`` (:class:`~.erm.ErmResult`; ``approximation``, ``temperature`` and
            their standard errors ``[len(lengths)]``, ``excess`` ``[len(lengths), len(sample_sizes),
            repetitions]``, ``excess_mean`` ``[len(lengths), len(sample_sizes)]``), in panel order.
    """
    fig, axes = plt.subplots(1, 1 + len(results), figsize=(14, 4))
    terms = []
    for k, (mode, res) in enumerate(results.items()):
        label = mode + r": $\|W^*_L - \Sigma^{-1}\|_F$ $\pm$ s.e."
        distance = {"yerr": res.approximation_se, "color": f"C{k}", "capsize": 3, "label": label}
        terms.append((res.lengths, res.approximation, "o-", distance))
        label = mode + r": $1 - c_L$ $\pm$ s.e."
        shortfall = {"yerr": res.temperature_se, "color": f"C{k}", "alpha": 0.6, "capsize": 3, "label": label}
        terms.append((res.lengths, 1 - res.temperature, "s--", shortfall))
    title = r"Reference minimiser $W^*_L$ vs $\Sigma^{-1}$"
    draw_panel(axes[0], terms, legend=7, **LOG_LOG, xlabel=_LENGTH, ylabel="approximation term", title=title)
    for ax, (mode, res) in zip(axes[1:], results.items()):
        curves = []
        for j, L in enumerate(res.lengths):
            se = res.excess[j].std(axis=1, ddof=1) / np.sqrt(res.excess.shape[2])
            style = {"yerr": se, "color": f"C{j}", "capsize": 2, "label": f"$L = {L}$"}
            curves.append((res.sample_sizes, res.excess_mean[j], "o-", style))
        curves.append((None, 0.0, "-", {"color": "0.5", "lw": 0.8}))
        ylabel, title = "excess test risk (mean over repetitions)", mode + r": $R(\hat W_N) - R(W^*_L)$"
        draw_panel(ax, curves, legend=7, xscale="log", xlabel="training sequences $N$", ylabel=ylabel, title=title)
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_xticks(res.sample_sizes, [str(n) for n in res.sample_sizes])
        ax.minorticks_off()
    return finished(fig)


@palette_cycle
def plot_transfer(result):
    """E4. Left: the downstream excess risk in the weak direction over that in the strong one, against the
    condition number ``kappa``, with its prediction from (ex-mse) and the worst case ``kappa``. Right: the
    downstream excess in both directions and the masked-prediction (pretraining) excess.

    Args:
        result: a :class:`~.transfer.TransferResult`: ``ratio``, ``ratio_predicted``, ``pretrain_excess``
            ``[len(condition_numbers)]`` and ``downstream_excess`` ``[len(condition_numbers), 2]``.
    """
    e4 = result
    kappa = e4.condition_numbers
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ratios = [
        (kappa, e4.ratio, "o", {"label": "measured weak / strong excess"}),
        (kappa, e4.ratio_predicted, "-", {"lw": 1, "label": "derived from (ex-mse)"}),
        (kappa, kappa, ":", {"color": "0.5", "label": r"$\kappa$ (worst case)"}),
    ]
    title = "Downstream: weak vs strong direction"
    draw_panel(axes[0], ratios, **LOG_LOG, xlabel=_KAPPA, ylabel="downstream excess ratio", title=title)
    excess = [
        (kappa, e4.downstream_excess[:, 0], "o-", {"label": "downstream, strong direction"}),
        (kappa, e4.downstream_excess[:, 1], "s-", {"label": "downstream, weak direction"}),
        (kappa, e4.pretrain_excess, "^-", {"label": "pretraining (masked prediction)"}),
    ]
    title = "Pretraining and downstream excess"
    draw_panel(axes[1], excess, **LOG_LOG, xlabel=_KAPPA, ylabel="excess risk", title=title)
    return finished(fig)
