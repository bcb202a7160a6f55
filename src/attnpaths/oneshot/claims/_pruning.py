"""The claims about pruning the trained one-shot model and the transfer of the theory's pattern to it (Fig. 3c, e, f)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..._validation import positive_real, probability
from ...claims import LEVEL, Verdict, by_outcome, directional_z, permutation
from ...experiments.head_pruning import pruning_sets
from ...experiments.head_subsets import random_order_area_distribution, random_order_p_values, subset_curve
from ...statistics import spearman_permutation_test
from ..pruning import pattern_similarity
from ._sources import SOURCE_LITTLE_LOSS, SOURCE_PATTERN, SOURCE_PRUNING


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
    margin = probability(margin, "margin (an accuracy fraction)", open_interval=True)
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
    se, margin = positive_real(se, "se"), positive_real(margin, "margin", allow_inf=True)
    if df is not None:
        return float(stats.nct.sf(stats.t.isf(level, df), df, margin / se))
    return float(stats.norm.cdf(margin / se - stats.norm.isf(level)))


def pattern_transfer(claim: str, *, U_theory, U_gd, heads, level: float = LEVEL) -> Verdict:
    """Claim: the theory's ``U`` pattern is found in the gradient-descent weights (Fig. 3c).

    Test: the Pearson correlation of the two normalised patterns (:func:`attnpaths.oneshot.pruning.pattern_similarity`) against all relabellings of the heads within their layers (the identity included):
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


def little_loss_outcome(verdicts) -> str:
    """The sentence that states the outcome of claim 7d, the little-loss tests after brief fine-tuning
    (sec-oneshot-little-loss), one :func:`little_loss` verdict per ``k`` asked: their weakest outcome.

    Returns:
        Markdown text.
    """
    return by_outcome(
        verdicts,
        holds="After brief fine-tuning the loss stays within the margin at every k asked.",
        not_significant="After brief fine-tuning, the data cannot tell at some k asked whether the loss stays within "
        "the margin.",
        contradicted="Even after brief fine-tuning the loss exceeds the margin at some k asked.",
    )
