"""Claims about the trained one-shot model (Fig. 3c, e, f), as tests.

Each function returns a :class:`attnpaths.claims.Verdict` decided by permutation p-values:

* :func:`head_scores_predict_drops`: heads with low theory scores cost little accuracy when pruned singly
  (Spearman correlation of score and drop, exact permutation test over all pairings);
* :func:`pruning_order`: pruning heads in ascending score order keeps more accuracy than random orders
  (exact p-value over every random order, from the table of every set of pruned heads);
* :func:`pattern_transfer`: the theory's order-parameter pattern is found in the gradient-descent weights
  (correlation of the patterns against every relabelling of the heads within their layers).

:func:`little_loss` (with its power check :func:`little_loss_power`) is decided by a one-sided z-test instead: pruning
the lowest-score heads costs at most a stated margin of accuracy (non-inferiority to the unpruned model).

A permutation test with ``m`` equally likely arrangements cannot give a p-value below ``1 / m``; where the
level lies below it, the verdict says that the level is not attainable (and cannot hold).

The chapter's claims about the theory are those of :mod:`attnpaths.experiments.finite_width`, applied to the
one-shot grid by :func:`sample_agreements` (with its power check :func:`sample_agreement_powers`), and:

* :func:`interplay_gains`: the cross-path weights of ``U`` add accuracy, and its same-path weights alone beat the
  GP limit (paired z-tests on the test episodes, power check :func:`interplay_power`);
* :func:`entropy_weight_agreement`: the samples measure the action's entropy weight as 1 against the saddle point;
* :func:`deviation_decay`: the samples approach the saddle point like ``1 / N`` (:func:`saddle_deviation`, power
  check :func:`deviation_decay_power`).

Over trained models and draws of the theory's training episodes (:mod:`attnpaths.oneshot.replicates`), each
statistic averaged over the draws of its model (:func:`model_means`) and tested over the models with
:func:`attnpaths.claims.replicate_t`: :func:`advantage_over_models` (claim 1), :func:`interplay_over_models` (I, Iw),
:func:`alignment_over_models` (4), :func:`order_over_models` (7b), :func:`best_set_over_models` (7c, against the best
set of heads of the same size), :func:`transfer_over_models` (8) and :func:`finite_width_against` (the transfer and the
pruning order of finite width against another ``U``), with the power check :func:`replicate_power`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize, stats

from .._validation import as_float64_array
from ..claims import (
    LEVEL,
    PowerCheck,
    Verdict,
    directional_z,
    equivalence,
    equivalence_power,
    permutation,
    power_check,
    replicate_t,
)
from ..experiments import finite_width as fw_claims
from ..experiments.head_pruning import pruning_sets
from ..experiments.head_subsets import random_order_area_distribution, random_order_p_values, subset_curve
from ..experiments.sweep import TheorySweep
from ..statistics import spearman_permutation_test
from .pruning import pattern_similarity

SOURCE_PRUNING = "paper (abstract; captions of Fig. 3e, 3f)"
SOURCE_PATTERN = "paper (abstract; Fig. 3c)"
SOURCE_INTERPLAY = "paper (abstract: the interplay of attention paths)"
#: The tests that the paper does not state: this book's reading of a claim, or a control of it.
SOURCE_SAME_PATH = "derived in this book (what the same-path weights of U add on their own)"
SOURCE_BEST_SET = "derived in this book (the score order against the best set of heads of the same size)"
SOURCE_LITTLE_LOSS = "derived in this book (a loss within a margin fixed before measuring)"
SOURCE_ENTROPY_WEIGHT = "derived in this book (the entropy weight of the action, measured by the samples)"
SOURCE_FINITE_WIDTH_TRANSFER = "derived in this book (is the transferred pattern that of finite width?)"


def attainability(level: float, smallest_p: float, arrangements: str) -> str:
    """Words that a level below a permutation test's smallest attainable p-value ``smallest_p`` cannot be
    reached (with the ``arrangements`` named), or ``""`` when it can."""
    if smallest_p < level:
        return ""
    return (
        f" The level {level:g} is not attainable with {arrangements} (smallest p {smallest_p:.2g}); the claim "
        "cannot hold in this run."
    )


def head_scores_predict_drops(claim: str, *, scores, drops, level: float = LEVEL) -> Verdict:
    """Claim: heads with low theory scores cost little accuracy when pruned singly (Fig. 3e).

    Args:
        scores, drops: ``[L, H]`` (or flat) head scores and single-head accuracy drops (positive = worse);
            non-finite entries are left out.

    Test: the Spearman correlation ``rho`` of score and drop; exact one-sided permutation p-values over all
    ``n!`` pairings of the heads: holds if ``P(rho_perm >= rho) < level``, contradicted if
    ``P(rho_perm <= rho) < level``.
    """
    s, d = np.asarray(scores, dtype=np.float64).ravel(), np.asarray(drops, dtype=np.float64).ravel()
    keep = np.isfinite(s) & np.isfinite(d)
    s, d = s[keep], d[keep]
    greater = spearman_permutation_test(s, d)
    smaller = spearman_permutation_test(s, -d)  # P(rho_perm <= rho) = P(-rho_perm >= -rho)
    return permutation(
        claim,
        "low-score heads cost little accuracy when pruned singly",
        source=SOURCE_PRUNING,
        statistic="Spearman rho(head score, single-head drop)",
        value=greater["rho"],
        p_greater=greater["p_value"],
        p_smaller=smaller["p_value"],
        level=level,
        test=f"exact permutation test over all {greater['n']}! pairings of scores and drops",
        measured=f"Spearman rho = {greater['rho']:+.2f} over {greater['n']} heads."
        + attainability(level, 1 / math.factorial(greater["n"]), f"{greater['n']}! pairings"),
    )


def smallest_order_p_value(areas, probabilities) -> float:
    """The smallest p-value a pruning order can reach against random orders: the probability of the orders whose
    curve's mean is the largest (``random_order_p_values`` at the largest area of
    :func:`~attnpaths.experiments.head_subsets.random_order_area_distribution`)."""
    return random_order_p_values(float(max(areas)), areas, probabilities)[0]


def pruning_order(claim: str, *, score_order, values, heads, level: float = LEVEL) -> Verdict:
    """Claim: pruning heads in ascending head-score order keeps more accuracy than pruning in random orders
    (Fig. 3f).

    Args:
        score_order: the heads in pruning order (:func:`attnpaths.head_scoring.pruning_order` of the scores).
        values: ``[2^n]`` accuracy of every set of pruned heads (the subset table of
            :mod:`attnpaths.experiments.head_subsets`; only the sets on some pruning curve are read).
        heads: ``(H_1, ..., H_L)``.

    Test: the statistic is the accuracy averaged over ``k = 1..K`` pruned heads; its exact one-sided p-values
    over every random order (:func:`~attnpaths.experiments.head_subsets.random_order_p_values`), so no
    Monte-Carlo error enters the verdict. The smallest attainable p is the probability of the orders whose
    curve has the largest mean (:func:`smallest_order_p_value`).
    """
    heads = tuple(int(h) for h in heads)
    sets = pruning_sets(score_order, heads)
    curve = subset_curve(values, sets, heads)
    observed = float(curve[1:].mean())
    areas, probabilities = random_order_area_distribution(values, heads)
    p_greater, p_smaller = random_order_p_values(observed, areas, probabilities)
    mean_random = float(areas @ probabilities)
    return permutation(
        claim,
        "pruning in ascending head-score order beats random pruning orders",
        source=SOURCE_PRUNING,
        statistic=f"accuracy averaged over 1..{curve.size - 1} pruned heads",
        value=observed,
        p_greater=p_greater,
        p_smaller=p_smaller,
        level=level,
        test=f"exact p-value over all random pruning orders ({areas.size} distinct sequences of pruned sets)",
        measured=(
            f"mean accuracy over 1..{curve.size - 1} pruned heads {observed:.3f} (score order) vs {mean_random:.3f} "
            f"(exact mean over random orders); a random order does at least as well with probability "
            f"{p_greater:.3g}."
            + attainability(level, smallest_order_p_value(areas, probabilities), "this model's orders")
        ),
    )


def little_loss(
    claim: str,
    *,
    difference: float,
    se: float,
    margin: float,
    k: int,
    fine_tuned: bool,
    level: float = LEVEL,
    df: float | None = None,
    num_tests: int = 1,
) -> Verdict:
    """Claim: pruning the ``k`` lowest-score heads of the gradient-descent model costs little accuracy, at most
    ``margin`` below the unpruned model (abstract; Figs. 3e, 3f; sec-oneshot-little-loss).

    Args:
        difference: accuracy after pruning minus the unpruned accuracy on the same episodes (fractions; negative =
            a loss); se: its standard error (:func:`attnpaths.oneshot.pruning.paired_difference`).
        margin: the largest loss that counts as little (a fraction, > 0), fixed before measuring.
        fine_tuned: whether the pruned model was fine-tuned (words only).
        df: the degrees of freedom of ``se`` where few fine-tuning seeds enter it
            (:func:`attnpaths.oneshot.pruning.paired_difference_df`): the test then reads Student's t.
        num_tests: the numbers of pruned heads asked together (Bonferroni: each test at ``level / num_tests``).

    Test: one-sided non-inferiority z-test (t-test with ``df``) of ``difference + margin > 0``
    (:func:`attnpaths.claims.directional_z`): holds when the loss lies below the margin beyond doubt (``z > z_c``),
    contradicted when it lies beyond the margin beyond doubt (``z < -z_c``), not significant otherwise.
    """
    margin = float(margin)
    if not 0 < margin < 1:
        raise ValueError(f"margin must be an accuracy fraction in (0, 1), got {margin!r}")
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    how = "after brief fine-tuning with the heads pruned" if fine_tuned else "without fine-tuning"
    heads = "1 head" if k == 1 else f"{k} heads"
    lowest = "the lowest-score head" if k == 1 else f"the {k} lowest-score heads"
    return directional_z(
        claim,
        f"pruning {lowest} ({how}) costs at most {100 * margin:g} accuracy points",
        source=SOURCE_LITTLE_LOSS,
        statistic=f"accuracy change after pruning {heads} {how}, plus the margin {margin:g}",
        estimate=float(difference) + margin,
        se=float(se),
        level=level,
        num_tests=num_tests,
        measured=(
            f"accuracy change {100 * float(difference):+.1f} points (standard error {100 * float(se):.2f}) against a "
            f"margin of -{100 * margin:g} points" + ("." if df is None else f"; {df:.1f} degrees of freedom.")
        ),
        df=df,
    )


def little_loss_power(se: float, margin: float, level: float = LEVEL, df: float | None = None) -> float:
    """The power check of :func:`little_loss`: the probability that it holds were pruning free of cost (true
    difference 0), ``Phi(margin / se - Phi^{-1}(1 - level))`` (with ``df``: the noncentral t law's
    ``P(t > t_c)`` at noncentrality ``margin / se``)."""
    if not (math.isfinite(se) and se > 0):
        raise ValueError(f"se must be a finite number > 0, got {se!r}")
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    if df is not None:
        return float(stats.nct.sf(stats.t.isf(level, df), df, float(margin) / float(se)))
    return float(stats.norm.cdf(float(margin) / float(se) - stats.norm.isf(level)))


def pattern_transfer(claim: str, *, U_theory, U_gd, heads, level: float = LEVEL) -> Verdict:
    """Claim: the theory's ``U`` pattern is found in the gradient-descent weights (Fig. 3c).

    Test: the Pearson correlation of the two normalised patterns (:func:`attnpaths.oneshot.pruning.
    pattern_similarity`) against all relabellings of the heads within their layers (the identity included):
    holds if the fraction with a correlation at least as large is below ``level``, contradicted if the
    fraction with one at most as large is.
    """
    sim = pattern_similarity(U_theory, U_gd, heads)
    p_smaller = float(np.mean(np.asarray(sim["null"]) <= sim["pearson"] + 1e-12))
    return permutation(
        claim,
        "the theory's U pattern transfers to the gradient-descent weights",
        source=SOURCE_PATTERN,
        statistic="Pearson correlation of the normalised U patterns",
        value=sim["pearson"],
        p_greater=sim["p_value"],
        p_smaller=p_smaller,
        level=level,
        test=f"permutation test over all {sim['num_relabelings']} relabellings of the heads within their layers",
        measured=(
            f"correlation of the patterns {sim['pearson']:+.2f} (off-diagonal {sim['pearson_offdiagonal']:+.2f})."
            + attainability(level, 1 / sim["num_relabelings"], f"{sim['num_relabelings']} relabellings")
        ),
    )


def sample_agreements(
    claim: str,
    samples: dict,
    *,
    selection: dict,
    grid: TheorySweep,
    margin_accuracy: float,
    margin_U: float,
    level: float = 0.01,
) -> list[Verdict]:
    """Claims ``"<claim> (N=...)"``, one per sampled width: the posterior samples at the selected temperature
    agree with the theory's saddle point there, accuracy within ``margin_accuracy`` and every distinct entry
    of ``U`` within ``margin_U`` of ``sqrt(U_ii U_jj)`` (:func:`attnpaths.experiments.finite_width.sample_agreement`).

    Args:
        samples: ``{width: SampledPoint}`` (:func:`attnpaths.oneshot.temperature_grid.sample_widths`).
        selection: :func:`attnpaths.oneshot.temperature_grid.selected` ``(grid, ...)``, the reference.
    """
    return [
        fw_claims.sample_agreement(
            f"{claim} (N={w})", **arguments, reference="the theory's saddle point", where=f" at N={w}"
        )
        for w, arguments in _agreement_arguments(samples, selection, grid, margin_accuracy, margin_U, level).items()
    ]


def sample_agreement_powers(
    samples: dict, *, selection: dict, grid: TheorySweep, margin_accuracy: float, margin_U: float, level: float = 0.01
) -> dict[int, float]:
    """The power checks of :func:`sample_agreements` (same arguments): ``{width: probability}`` that the claim at
    that width holds were the samples exactly the saddle point, at their Monte-Carlo errors
    (:func:`attnpaths.experiments.finite_width.sample_agreement_power`)."""
    return {
        w: fw_claims.sample_agreement_power(**arguments)
        for w, arguments in _agreement_arguments(samples, selection, grid, margin_accuracy, margin_U, level).items()
    }


def _agreement_arguments(samples, selection, grid, margin_accuracy, margin_U, level) -> dict[int, dict]:
    arguments = {}
    for w, point in samples.items():
        k = grid.index(w)
        arguments[w] = dict(
            points=[point],
            reference_accuracy={w: selection["accuracy"]["test"][k]},
            reference_U={w: selection["U"][k]},
            margin_accuracy=margin_accuracy,
            margin_U=margin_U,
            level=level,
        )
    return arguments


# --------------------------------------------------------------------------------------------------------
# the interplay of paths, the entropy weight and the samples' approach to the saddle point (sec-oneshot-interplay,
# sec-oneshot-saddle)


def interplay_gains(
    claim: str, *, means: dict, labels, width: int, level: float = LEVEL, where: str = ""
) -> tuple[Verdict, Verdict]:
    """Two claims on the mechanism of the finite-width gain on the test episodes, at one width and temperature
    (sec-oneshot-interplay; the one-episode-set form of :func:`attnpaths.hmc.claims.interplay_gains`):

    * ``claim`` (cross-path weights): the predictor with the theory's ``U`` is more accurate than with ``U``'s
      cross-path entries set to zero (its diagonal kept);
    * ``claim + "w"`` (same-path weights): the predictor with ``U``'s diagonal alone is more accurate than the GP
      limit's (``U = I``) at the same temperature.

    Args:
        means: ``{"theory", "diagonal", "gp"}`` ``[B]`` mean predictors on the same test episodes
            (:func:`attnpaths.oneshot.temperature_grid.ablation_means`); labels: ``[B]`` ``+-1``.

    Test: one-sided paired z-tests (:func:`attnpaths.experiments.finite_width.paired_accuracy_gain`); either may
    hold, be not significant or be contradicted.
    """
    missing = {"theory", "diagonal", "gp"} - set(means)
    if missing:
        raise ValueError(f"means must hold the predictors 'theory', 'diagonal' and 'gp', missing {sorted(missing)}")
    n = int(width)
    return (
        fw_claims.paired_accuracy_gain(
            claim,
            f"the cross-path weights of U add accuracy at N={n}{where}",
            source=SOURCE_INTERPLAY,
            mean=means["theory"],
            reference_mean=means["diagonal"],
            labels=labels,
            names=(f"A(U, N={n})", "A(diag U)"),
            level=level,
            where=where,
        ),
        fw_claims.paired_accuracy_gain(
            claim + "w",
            f"the same-path weights of U alone beat the GP limit at N={n}{where}",
            source=SOURCE_SAME_PATH,
            mean=means["diagonal"],
            reference_mean=means["gp"],
            labels=labels,
            names=(f"A(diag U, N={n})", "A_GP"),
            level=level,
            where=where,
        ),
    )


def interplay_power(means: dict, labels, *, level: float = LEVEL, power: float = 0.8):
    """The power check of :func:`interplay_gains`: for claim I and Iw the gain that its test detects with probability
    ``power`` at its paired standard error (:func:`attnpaths.claims.power_check`), beside the measured gain."""
    pairs = {"I": ("theory", "diagonal"), "Iw": ("diagonal", "gp")}
    labels = np.asarray(labels, dtype=np.float64)
    se = {
        k: max(fw_claims.paired_accuracy_sd(means[b], means[a], labels), 1.0 / labels.size)
        for k, (a, b) in pairs.items()
    }
    estimate = {
        k: float(np.mean(np.sign(means[a]) == labels) - np.mean(np.sign(means[b]) == labels))
        for k, (a, b) in pairs.items()
    }
    return power_check(
        "I/Iw",
        se=se,
        estimate=estimate,
        level=level,
        power=power,
        condition="on these test episodes (paired standard errors)",
        effect="a gain",
        scale=100,
        unit="accuracy points",
    )


class SaddleReference:
    """The saddle point at one width in the form that
    :func:`attnpaths.experiments.finite_width.entropy_weight_estimate` reads: ``U`` and its standard error (zero: a
    solve, not a Monte-Carlo estimate) and ``scaled``, the saddle point at neighbouring entropy weights."""

    def __init__(self, U, scaled: dict):
        self.U = as_float64_array(U, "U")
        self.U_se = np.zeros_like(self.U)
        self.scaled = {float(c): SaddleReference(u, {}) for c, u in scaled.items()}


def entropy_weight_agreement(
    claim: str,
    *,
    samples: dict,
    saddle: dict,
    widths,
    margin: float,
    reference_scale: float = 1.0,
    level: float = LEVEL,
) -> Verdict:
    """Claim: the network's posterior samples at ``widths`` measure the entropy weight of the action (eq-action) as 1,
    within ``margin``, against the saddle point (sec-oneshot-saddle): the one-shot form of the hidden-Markov-chain
    chapter's claim 2w, whose reference is the exact mean of ``U`` instead.

    Args:
        samples: ``{width: SampledPoint}``.
        saddle: ``{width: {c: [n, n]}}`` the theory's ``U`` at entropy weight ``c``
            (:func:`attnpaths.oneshot.temperature_grid.scaled_saddle_points`), with ``c = 1``, one ``c`` below and
            one above 1.
        widths: the widths that enter (each in ``samples`` and ``saddle``).
        reference_scale: 1 for the theory as written; another ``c`` of ``saddle`` for a wrong theory (an action with
            its entropy weighted by ``c``), which the claim must contradict.

    Test: :func:`attnpaths.experiments.finite_width.entropy_weight_agreement`. The saddle point misses the exact
    finite-width mean by terms of order ``1 / N``; the reduced chi-square widens the interval where they show.
    """
    widths = [int(w) for w in widths]
    missing = [w for w in widths if w not in samples or w not in saddle]
    if not widths or missing:
        raise ValueError(f"widths must be sampled widths with saddle points, got {widths} (missing {missing})")
    references = {}
    for w in widths:
        by_scale = {float(c): u for c, u in saddle[w].items()}
        if 1.0 not in by_scale:
            raise ValueError(f"saddle[{w}] must hold the entropy weight 1, got {sorted(by_scale)}")
        references[w] = SaddleReference(by_scale.pop(1.0), by_scale)
    return fw_claims.entropy_weight_agreement(
        claim,
        points={w: samples[w] for w in widths},
        exact=references,
        margin=margin,
        reference_scale=reference_scale,
        level=level,
        where=" (reference: the saddle point)",
        source=SOURCE_ENTROPY_WEIGHT,
    )


def saddle_deviation(samples: dict, reference_U: dict) -> dict[str, np.ndarray]:
    """How far the samples' ``U`` lies from the saddle point at every sampled width (sec-oneshot-saddle): the
    relative distance ``r(N) = ||U_sampled - U_theory||_F / ||U_theory||_F``, corrected for the Monte-Carlo noise
    (whose expected square ``sum se^2`` is subtracted from the squared distance), and its standard error (delta
    method).

    Args:
        samples: ``{width: SampledPoint}``; reference_U: ``{width: [n, n]}`` the saddle point at that width.

    Returns:
        ``{"N", "r", "se"}``, each ``[n_w]`` in increasing width.
    """
    widths = sorted(w for w in samples if w in reference_U)
    if not widths:
        raise ValueError("samples and reference_U must share a width")
    r, se = [], []
    for w in widths:
        U = as_float64_array(reference_U[w], "reference_U")
        D = as_float64_array(samples[w].U, "U") - U
        S = as_float64_array(samples[w].U_se, "U_se")
        scale = float(np.linalg.norm(U))
        raw = float(np.linalg.norm(D))
        r.append(math.sqrt(max(raw**2 - float(np.sum(S**2)), 0.0)) / scale)
        # d||D|| / dD_ij = D_ij / ||D||; the symmetric pair (i, j), (j, i) is one Monte-Carlo estimate
        iu = np.triu_indices(D.shape[0])
        weight = np.where(iu[0] == iu[1], 1.0, 2.0)
        se.append(float(np.sqrt(np.sum((weight * D[iu] / max(raw, 1e-300) * S[iu]) ** 2))) / scale)
    return {"N": np.array(widths), "r": np.array(r), "se": np.maximum(np.array(se), 1e-12)}


def _resolved(deviation: dict) -> np.ndarray:
    """The widths whose distance from the saddle point is resolved beyond its Monte-Carlo noise (``r > 2 se``)."""
    r, se = np.asarray(deviation["r"], dtype=np.float64), np.asarray(deviation["se"], dtype=np.float64)
    return r > 2 * se


def _decay_slope(deviation: dict) -> tuple[float, float, float]:
    """Weighted least-squares slope of ``log r`` against ``log N`` over the resolved widths (weights from the standard
    errors of ``log r``), its standard error inflated by ``sqrt(chi^2 / dof)`` when the points scatter more than
    their errors, and that reduced chi-square (``dof``: the resolved widths minus 2)."""
    keep = _resolved(deviation)
    N, r, se = (np.asarray(deviation[k], dtype=np.float64)[keep] for k in ("N", "r", "se"))
    if N.size < 3:
        raise ValueError(f"the slope needs at least 3 widths with a resolved deviation, got {N.size}")
    x, y, w = np.log(N), np.log(r), (r / se) ** 2
    X = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    beta = cov @ X.T @ (w * y)
    chi2_dof = float(np.sum(w * (y - X @ beta) ** 2)) / (N.size - 2)
    return float(beta[1]), float(math.sqrt(cov[1, 1] * max(1.0, chi2_dof))), chi2_dof


#: The standard error given to a slope that cannot be measured (fewer than 3 resolved widths): the claim is then
#: not significant and has no power, whatever its margin.
_UNMEASURED_SE = 1e6


def deviation_decay(claim: str, deviation: dict, *, margin: float = 0.5, level: float = LEVEL) -> Verdict:
    """Claim: the samples' distance from the saddle point falls like ``1 / N`` (sec-oneshot-saddle): the saddle
    point is the large-``N`` limit of the finite-width mean of ``U``, whose first correction is of order ``1 / N``.

    Args:
        deviation: :func:`saddle_deviation`'s ``{"N", "r", "se"}``. Only widths whose distance is resolved beyond
            its noise (``r > 2 se``) enter; with fewer than 3 of them the slope is not measured and the claim is not
            significant.
        margin: how far the slope of ``log r`` against ``log N`` may lie from -1 (0.5 separates ``1 / N`` from
            ``1 / sqrt(N)`` and from ``1 / N^2``).

    Test: :func:`attnpaths.claims.equivalence` of the weighted least-squares slope to -1, provided that the power law
    fits: where its chi-square rejects it at ``level`` (the points scatter about the line beyond their errors), the
    slope describes no law of the points, and the claim is not significant whatever the slope (it is decided with a
    standard error so large that it can neither hold nor be contradicted).
    """
    keep = _resolved(deviation)
    widths = ", ".join(str(int(w)) for w in np.asarray(deviation["N"])[keep])
    left_out = [int(w) for w in np.asarray(deviation["N"])[~keep]]
    distances = "r = " + ", ".join(f"{v:.3g} (N = {int(N)})" for N, v in zip(deviation["N"], deviation["r"]))
    note = f"; N = {', '.join(map(str, left_out))} within 2 standard errors of 0, left out" if left_out else ""
    if keep.sum() >= 3:
        slope, se, chi2_dof = _decay_slope(deviation)
        dof = int(keep.sum()) - 2
        p_fit = _fit_p_value(deviation)
        measured = (
            f"Slope {slope:+.2f} +- {se:.2f} over N = {widths} ({distances}{note}; chi-square {chi2_dof * dof:.1f} "
            f"on {dof} degrees of freedom, p = {p_fit:.2g}), margin {margin:g} around -1."
        )
        if p_fit < level:
            se = _UNMEASURED_SE
            measured += (
                f" The power law is rejected by its chi-square (p < {level:g}): the points do not follow N^slope "
                "within their errors, so the slope is no measurement of the decay."
            )
    else:
        slope, se = -1.0, _UNMEASURED_SE
        measured = f"The slope is not measured: fewer than 3 widths resolve their distance ({distances}{note})."
    return equivalence(
        claim,
        "the samples approach the saddle point like 1/N as the width grows",
        source=fw_claims.SOURCE_SADDLE,
        statistic="|slope of log r against log N + 1| / margin",
        deviation=[slope + 1.0],
        se=[se],
        margin=[float(margin)],
        level=level,
        measured=measured,
    )


def deviation_decay_power(deviation: dict, *, margin: float = 0.5, level: float = LEVEL) -> float:
    """The power check of :func:`deviation_decay`: the probability that it holds were the slope exactly -1, at the
    standard error of this run's slope (:func:`attnpaths.claims.equivalence_power`); 0 where the slope is not
    measured (fewer than 3 resolved widths, or a power law that its chi-square rejects at ``level``)."""
    if _resolved(deviation).sum() < 3 or _fit_p_value(deviation) < level:
        return 0.0
    return equivalence_power(_decay_slope(deviation)[1], margin, level)


def _fit_p_value(deviation: dict) -> float:
    """The chi-square p-value of :func:`_decay_slope`'s power law over the resolved widths (at least 3)."""
    dof = int(_resolved(deviation).sum()) - 2
    return float(stats.chi2.sf(_decay_slope(deviation)[2] * dof, dof))


# --------------------------------------------------------------------------------------------------------
# the claims over trained models and draws of the training episodes (sec-oneshot-replicates)


def model_means(models, statistic) -> np.ndarray:
    """``[S]`` (or ``[S, m]``): for each :class:`~attnpaths.oneshot.replicates.ModelReplicates` of ``models`` the mean
    over its draws of ``statistic(model)`` (``[D]`` or ``[D, m]``). The draws of a model share it, so they are not
    independent replicates; the models are, and the spread of these means carries the draws' spread too."""
    models = list(models)
    if len(models) < 2:
        raise ValueError(f"models must hold at least 2 trained models, got {len(models)}")
    return np.array([np.mean(np.asarray(statistic(m), dtype=np.float64), axis=0) for m in models])


def _replicates(models) -> str:
    """What the replicates are, in words: ``"trained models, 5 draws of the training episodes each"``."""
    draws = {m.num_draws for m in models}
    each = f"{draws.pop()} draws" if len(draws) == 1 else "several draws"
    return f"trained models, {each} of the training episodes each"


def _over(models) -> str:
    return f" over {len(models)} {_replicates(models)}"


def _replicate(claim, statement, source, statistic, per_model, level, *, num_tests=1, points=True):
    """:func:`attnpaths.claims.replicate_t` over the models' means ``per_model`` ``[S]``, with every model's mean in
    the measured words (accuracy differences in points, correlations as they are)."""
    per_model = np.asarray(per_model, dtype=np.float64)
    scale, unit, digits = (100.0, " points", 1) if points else (1.0, "", 3)
    listed = ", ".join(f"{scale * v:+.{digits}f}" for v in per_model)
    return replicate_t(
        claim,
        statement,
        source=source,
        statistic=statistic,
        differences=per_model,
        level=level,
        num_tests=num_tests,
        measured=(
            f"Mean {statistic} = {scale * per_model.mean():+.{digits + 1}f}{unit} (per model {listed}; sd across the "
            f"models {scale * per_model.std(ddof=1):.{digits + 1}f})."
        ),
    )


def order_parameter_name(theory: str) -> str:
    """The words for an order parameter of a replicate (:func:`attnpaths.oneshot.replicates.draw_replicate`): the
    theory's (``"theory"``), one near the GP limit, or a mistake's."""
    if theory == "theory":
        return "the theory's U"
    return f"U {theory}" if theory.startswith("near the GP limit") else f"U with a mistake: {theory}"


def advantage_over_models(claim: str, models, *, width: int, rule: str = "validation", level: float = LEVEL):
    """Claim 1 over the replicates: at ``width`` the theory beats the GP limit on the test episodes, each at the
    temperature chosen on the ``rule`` episodes (``"validation"``, or ``"test"``: the authors' rule).

    Test: one-sided t-test over the models of their mean over the draws of ``A(N) - A_GP``
    (:func:`attnpaths.claims.replicate_t`)."""
    if rule not in ("validation", "test"):
        raise ValueError(f"rule must be 'validation' or 'test', got {rule!r}")
    suffix = "" if rule == "validation" else "_test_rule"
    where = "validation episodes" if rule == "validation" else "test episodes (the authors' rule)"
    return _replicate(
        claim,
        f"finite width beats the GP limit, temperatures chosen on the {where}{_over(models)}",
        fw_claims.SOURCE_ADVANTAGE,
        f"A(N={int(width)}) - A_GP",
        model_means(models, lambda m: m.accuracy["theory" + suffix] - m.accuracy["gp" + suffix]),
        level,
    )


def interplay_over_models(claim: str, models, *, width: int, level: float = LEVEL) -> tuple[Verdict, Verdict]:
    """Claims I and Iw over the replicates (sec-oneshot-interplay): ``claim``, the cross-path weights of ``U`` add
    accuracy (``U`` against its diagonal, both at the theory's temperature); ``claim + "w"``, the diagonal alone beats
    the GP limit at the GP limit's own temperature, chosen on the validation episodes.

    Test: one-sided t-tests over the models of the mean accuracy differences over the draws."""
    n = int(width)
    return (
        _replicate(
            claim,
            f"the cross-path weights of U add accuracy at N={n}{_over(models)}",
            SOURCE_INTERPLAY,
            f"A(U, N={n}) - A(diag U)",
            model_means(models, lambda m: m.accuracy["theory"] - m.accuracy["diagonal"]),
            level,
        ),
        _replicate(
            claim + "w",
            f"the same-path weights of U alone beat the GP limit at its own temperature at N={n}{_over(models)}",
            SOURCE_SAME_PATH,
            f"A(diag U, N={n}) - A_GP",
            model_means(models, lambda m: m.accuracy["diagonal"] - m.accuracy["gp"]),
            level,
        ),
    )


def alignment_over_models(claim: str, models, *, k: int, width: int, level: float = LEVEL) -> Verdict:
    """Claim 4 over the replicates: :func:`attnpaths.experiments.finite_width.kernel_alignment` of each model's mean
    label fractions over its draws (a t-test over the models)."""
    return fw_claims.kernel_alignment(
        claim,
        fraction_fw=model_means(models, lambda m: m.label_fraction["finite_width"]),
        fraction_gp=model_means(models, lambda m: m.label_fraction["gp"]),
        k=k,
        width=width,
        level=level,
        replicates=_replicates(models),
    )


def transfer_over_models(claim: str, models, *, theory: str = "theory", level: float = LEVEL) -> Verdict:
    """Claim 8 over the replicates: the pattern of ``U`` (of ``theory``: the theory as written, or a key of
    :func:`attnpaths.experiments.wrong_theories.wrong_order_parameters`) is found in each model's gradient-descent
    weights beyond chance: its correlation with them exceeds the mean correlation over every relabelling of the
    heads within their layers (the null of :func:`pattern_transfer`).

    Test: one-sided t-test over the models of their mean excess over the draws."""
    return _replicate(
        claim,
        f"the pattern of {order_parameter_name(theory)} transfers to the gradient-descent weights{_over(models)}",
        SOURCE_PATTERN,
        "pattern correlation minus its mean over the relabellings of the heads",
        model_means(models, lambda m: m.transfer_excess[theory]),
        level,
        points=False,
    )


def finite_width_against(
    claim: str, models, *, reference: str, width: int, statistic: str = "transfer", level: float = LEVEL
) -> Verdict:
    """What transfers is that of finite width: the theory's ``U`` at ``width`` does better than the ``U`` of
    ``reference`` (e.g. near the GP limit) by claim 8's statistic (``statistic="transfer"``: the correlation of its
    pattern with the gradient-descent weights) or by claim 7b's (``"order"``: pruning in ascending head score,
    accuracy averaged over the pruned heads). The two order parameters are scored on the same draws and the same
    model, so the difference is paired.

    Test: one-sided t-test over the models of their mean paired difference over the draws."""
    finite, other = f"U(N={int(width)})", order_parameter_name(reference)
    if statistic == "transfer":
        field, points = "transfer", False
        statement = f"the pattern of the theory's U at finite width (N={int(width)}) transfers to the gradient-descent "
        statement += f"weights better than that of {other}"
        words = f"pattern correlation, {finite} minus {other}"
    elif statistic == "order":
        field, points = "order_gain", True
        statement = f"pruning in ascending head score of the theory's U at finite width (N={int(width)}) keeps more "
        statement += f"accuracy than in that of {other}"
        words = f"accuracy averaged over the pruned heads, score order of {finite} minus {other}"
    else:
        raise ValueError(f"statistic must be 'transfer' (claim 8) or 'order' (claim 7b), got {statistic!r}")
    return _replicate(
        claim,
        statement + _over(models),
        SOURCE_FINITE_WIDTH_TRANSFER,
        words,
        model_means(models, lambda m: getattr(m, field)["theory"] - getattr(m, field)[reference]),
        level,
        points=points,
    )


def order_over_models(claim: str, models, *, theory: str = "theory", level: float = LEVEL) -> Verdict:
    """Claim 7b over the replicates: pruning each model's heads in ascending head score of ``U`` (of ``theory``, as
    :func:`transfer_over_models`) keeps more accuracy, averaged over ``k = 1..K`` pruned heads, than the exact
    expectation over random orders (eq-pruning-random).

    Test: one-sided t-test over the models of their mean gain over the draws."""
    return _replicate(
        claim,
        f"pruning in ascending head score of {order_parameter_name(theory)} beats random pruning orders{_over(models)}",
        SOURCE_PRUNING,
        "accuracy averaged over the pruned heads, score order minus random orders",
        model_means(models, lambda m: m.order_gain[theory]),
        level,
    )


def best_set_over_models(claim: str, models, *, margin: float, level: float = LEVEL) -> list[Verdict]:
    """Claim 7c over the replicates, one verdict ``"<claim> (k=...)"`` per number of pruned heads ``k`` of the models'
    ``ks``: pruning the ``k`` lowest-score heads (no fine-tuning) costs at most ``margin`` more than the best set of
    ``k`` heads, the best that any ranking could do (picked on the pruning episodes themselves, so the test is
    conservative).

    Test: one-sided non-inferiority t-tests over the models of their mean ``A(score set) - A(best set) + margin``
    over the draws, Bonferroni over the ``k``; contradicted when the score order costs more than the margin beyond
    doubt.
    """
    margin = float(margin)
    if not 0 < margin < 1:
        raise ValueError(f"margin must be an accuracy fraction in (0, 1), got {margin!r}")
    ks = models[0].ks
    gaps = model_means(models, lambda m: m.best_gap["theory"])
    return [
        _replicate(
            f"{claim} (k={k})",
            f"pruning {'the lowest-score head' if k == 1 else f'the {k} lowest-score heads'} (no fine-tuning) costs at "
            f"most {100 * margin:g} accuracy points more than the best "
            f"{'single head' if k == 1 else f'set of {k} heads'}{_over(models)}",
            SOURCE_BEST_SET,
            f"A(score order, k={k}) - A(best set of {k}) + {margin:g}",
            gaps[:, i] + margin,
            level,
            num_tests=len(ks),
        )
        for i, k in enumerate(ks)
    ]


def replicate_power(
    claim: str, differences: dict, *, level: float = LEVEL, power: float = 0.8, num_tests: int = 1, **words
) -> PowerCheck:
    """The power check of a one-sided t-test over replicates (:func:`attnpaths.claims.replicate_t`), per case: the
    smallest true mean that it declares to hold with probability ``power`` at the replicates' spread, from the
    noncentral t law with ``n - 1`` degrees of freedom (not the normal law, which with a handful of replicates
    promises effects well below those the test can see).

    Args:
        differences: ``{case: [n]}`` the replicates of each case (``n >= 2``).
        words: ``condition``, ``effect``, ``scale``, ``unit`` of :class:`attnpaths.claims.PowerCheck`.
    """
    se, detectable, estimate = {}, {}, {}
    alpha = level / num_tests
    for case, d in differences.items():
        d = as_float64_array(d, f"differences[{case!r}]").ravel()
        if d.size < 2:
            raise ValueError(f"differences[{case!r}] must hold at least 2 replicates, got {d.size}")
        n, s = d.size, max(float(d.std(ddof=1)) / math.sqrt(d.size), 1e-12)
        critical = stats.t.isf(alpha, n - 1)
        shift = optimize.brentq(lambda x: stats.nct.sf(critical, n - 1, x) - power, 0.0, 100.0)
        se[case], detectable[case], estimate[case] = s, shift * s, float(d.mean())
    check = power_check(claim, se=se, estimate=estimate, level=level, num_tests=num_tests, power=power, **words)
    return dataclasses.replace(check, detectable=tuple(detectable.values()))
