"""The claims of the chapter on the pretrained transformer (sec-pretrained): does the theory of one frozen
MiniLM layer classify held-out review snippets better than its GP limit, and do head scores rank MiniLM's heads by
what pruning them costs?

Each claim is a test with a stated level and a power check:

* :func:`accuracy_gain`: one predictor against another on the same held-out snippets, an exact sign test on the
  snippets that one classifies right and the other wrong (McNemar's test), with :func:`accuracy_gain_power`;
* :func:`ranks_pruning_cost`: Spearman's rank correlation of a head ranking with the cost of pruning each head,
  a one-sided permutation test over random pairings of the heads, with :func:`rank_power`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..claims import LEVEL, PowerCheck, Verdict, permutation, power_check
from .study_theory import spearman_monte_carlo

SOURCE_REAL = "abstract (the theory's findings on real-world sequence classification), asked of a pretrained model"
"""The source of the chapter's claims, the abstract's real-world claim, asked here of a model the paper did not
study (the paper's real-world experiments are not available to this book)."""


def _scores(outputs, labels) -> np.ndarray:
    """Per snippet, 1 when the sign of the output is the label, 0 when it is not, 1/2 for an output of 0."""
    f, y = np.asarray(outputs, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    if f.ndim != 1 or f.shape != y.shape or f.size == 0:
        raise ValueError(f"outputs and labels must be [B] of the same B >= 1, got {f.shape} and {y.shape}")
    return np.where(f == 0, 0.5, (np.sign(f) == y).astype(np.float64))


def _discordant(outputs, baseline_outputs, labels) -> tuple[int, int, int]:
    """``(wins, losses, B)``: the snippets scored higher by ``outputs`` than by ``baseline_outputs``, lower, and
    all of them."""
    a, b = _scores(outputs, labels), _scores(baseline_outputs, labels)
    if a.shape != b.shape:
        raise ValueError(f"outputs and baseline_outputs must have the same shape, got {a.shape} and {b.shape}")
    return int(np.sum(a > b)), int(np.sum(a < b)), a.size


def accuracy_gain(
    claim: str, statement: str, *, outputs, baseline_outputs, labels, names=("theory", "GP limit"), level=LEVEL
) -> Verdict:
    """Claim: ``outputs`` classify the held-out snippets more accurately than ``baseline_outputs``.

    Args:
        outputs, baseline_outputs: ``[B]`` the two predictors on the same snippets; labels: ``[B]`` ``+-1``.
        names: the two predictors in words.

    Test: McNemar's exact test. Of the ``m`` snippets on which the two disagree about being right, ``w`` are won
    by ``outputs``; under "equally accurate" ``w`` is binomial ``(m, 1/2)``. Holds when ``P(W >= w) < level``,
    contradicted when ``P(W <= w) < level``. The statistic is the accuracy gain ``(w - l) / B``.
    """
    wins, losses, size = _discordant(outputs, baseline_outputs, labels)
    m = wins + losses
    p_greater = float(stats.binom.sf(wins - 1, m, 0.5)) if m else 1.0
    p_smaller = float(stats.binom.cdf(wins, m, 0.5)) if m else 1.0
    gain = (wins - losses) / size
    return permutation(
        claim,
        statement,
        source=SOURCE_REAL,
        statistic=f"accuracy of the {names[0]} minus that of the {names[1]} on the held-out snippets",
        value=gain,
        p_greater=p_greater,
        p_smaller=p_smaller,
        level=level,
        test=f"McNemar's exact one-sided test over the {m} snippets that one of the two classifies right and the "
        "other wrong (binomial, 1/2)",
        measured=f"{100 * gain:+.2f} points over {size} snippets: the {names[0]} alone right on {wins}, the "
        f"{names[1]} alone right on {losses}.",
    )


def accuracy_gain_power(claim: str, *, outputs, baseline_outputs, labels, level=LEVEL) -> PowerCheck:
    """The power check of :func:`accuracy_gain`: the accuracy gain its test detects with probability
    0.8 (the default of :func:`attnpaths.claims.power_check`), from the standard error ``sqrt(m) / B`` of ``(w - l) / B`` under
    "equally accurate" (``m`` discordant snippets of ``B``)."""
    wins, losses, size = _discordant(outputs, baseline_outputs, labels)
    se = math.sqrt(max(wins + losses, 1)) / size
    return power_check(
        claim,
        se=se,
        estimate=(wins - losses) / size,
        level=level,
        condition="on these held-out snippets",
        effect="an accuracy gain",
        scale=100,
        unit="points",
    )


def ranks_pruning_cost(
    claim: str, *, name: str, scores, costs, level=LEVEL, num_draws: int | None = None, seed: int = 0
) -> Verdict:
    """Claim: the heads that ``scores`` rank higher cost more when pruned singly.

    Args:
        name: the ranking in words; scores, costs: ``[L, H]`` (or flat) each head's score and what pruning it
            alone costs (larger: worse); non-finite entries are left out.
        num_draws, seed: the Monte-Carlo permutations (default :func:`attnpaths.claims.monte_carlo_draws` at 1 %).

    Test: Spearman's ``rho`` of score and cost, one-sided Monte-Carlo permutation p-values over random pairings
    (:func:`attnpaths.pretrained.study_theory.spearman_monte_carlo`): holds when ``P(rho_perm >= rho) < level``,
    contradicted when ``P(rho_perm <= rho) < level``.
    """
    s, c = np.asarray(scores, dtype=np.float64).ravel(), np.asarray(costs, dtype=np.float64).ravel()
    keep = np.isfinite(s) & np.isfinite(c)
    test = spearman_monte_carlo(s[keep], c[keep], num_draws=num_draws, seed=seed)
    return permutation(
        claim,
        f"the heads that the {name} ranks higher cost more when pruned",
        source=SOURCE_REAL,
        statistic=f"Spearman rho({name}, cost of pruning the head alone)",
        value=test["rho"],
        p_greater=test["p_greater"],
        p_smaller=test["p_smaller"],
        level=level,
        test=f"one-sided permutation test over {test['num_draws']} random pairings of the {test['n']} heads",
        measured=f"Spearman rho = {test['rho']:+.2f} over {test['n']} heads.",
    )


def rank_power(claim: str, *, num_heads: int, estimate: float | None = None, level=LEVEL) -> PowerCheck:
    """The power check of :func:`ranks_pruning_cost`: the rank correlation its test detects, from the standard
    deviation ``1 / sqrt(n - 1)`` of Spearman's ``rho`` over random pairings of ``n`` heads (its normal
    approximation, close for ``n`` of tens)."""
    if num_heads < 3:
        raise ValueError(f"num_heads must be >= 3, got {num_heads}")
    return power_check(
        claim,
        se=1 / math.sqrt(num_heads - 1),
        estimate=estimate,
        level=level,
        condition=f"over {num_heads} heads",
        effect="a rank correlation",
    )


_ANSWERS = {
    "M1": {
        "holds": "On held-out snippets the theory of one frozen MiniLM layer is more accurate than its GP limit: the "
        "interplay of that layer's attention paths helps, as the paper finds on its own tasks.",
        "not significant": "On held-out snippets the theory of one frozen MiniLM layer and its GP limit cannot be "
        "told apart at this level: whatever the interplay of that layer's paths adds is below what the test detects.",
        "contradicted": "On held-out snippets the GP limit of one frozen MiniLM layer is more accurate than the "
        "theory: here the interplay of attention paths does not help.",
    },
    "P1": {
        "holds": "The theory's head scores rank MiniLM's heads by what pruning each costs its readout.",
        "not significant": "The theory's head scores do not tell, at this level, which of MiniLM's heads cost its "
        "readout the most when pruned.",
        "contradicted": "The theory's head scores rank MiniLM's heads against what pruning each costs its readout: "
        "the heads it scores high cost less.",
    },
    "P2": {
        "holds": "For comparison, the gradient importance computed on MiniLM itself ranks its heads by that cost.",
        "not significant": "For comparison, the gradient importance computed on MiniLM itself does not rank its "
        "heads by that cost at this level either way.",
        "contradicted": "For comparison, the gradient importance computed on MiniLM itself ranks its heads against "
        "that cost.",
    },
}


def answer(verdicts) -> str:
    """The chapter's answer in plain words, one sentence per question (the theory against its GP limit, claim
    ``M1``; the theory's head scores against pruning costs, ``P1``, beside the gradient importance, ``P2``),
    chosen by each claim's outcome: whichever way the tests go, the words follow them."""
    by_claim = {v.claim: v for v in verdicts}
    missing = sorted(set(_ANSWERS) - set(by_claim))
    if missing:
        raise ValueError(f"verdicts must hold the claims {sorted(_ANSWERS)}, missing {missing}")
    return " ".join(_ANSWERS[claim][by_claim[claim].outcome.value] for claim in _ANSWERS)
