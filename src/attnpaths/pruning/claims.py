"""The pruning chapter's claims: the theory's head ranking against each other ranking, as tests (sec-pruning-verdicts).

The primary question, one per model kind (:func:`primary_verdicts`): does the best theory score, chosen on the
validation images (:func:`select_on_validation`), beat, match or lose to the gradient importance of Michel et
al. on the test images, in normalised area (eq-pruning-normalised)? The secondary comparisons
(:func:`ranking_verdicts`) put the paper's head score against each other ranking.

For each comparison the statistic is, per training seed, the difference of the areas under the two pruning
curves (eq-pruning-auc), ``AUC(theory) - AUC(other)``, both measured on the same trained model and test set;
the test is a one-sided paired t-test over the seeds (:func:`attnpaths.claims.replicate_t`) with a Bonferroni
correction over every comparison of the chapter: "holds" when the theory's ranking keeps significantly more
accuracy, "contradicted" when it keeps significantly less, "not significant" otherwise.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._validation import as_float64_array, positive_int
from ..claims import Outcome, Verdict, replicate_equivalence, replicate_t
from .sweep import RANKING_NAMES, mean_interval

PRIMARY_SOURCE = (
    "primary question of this book, stated before the results: does the best theory score, chosen on "
    "validation images, prune as well as the gradient importance of Michel et al.?"
)
SOURCE = "question of this book: is the theory's head score a better pruning guide than the usual rankings?"
#: The rankings the theory's is compared with, in the chapter's order.
COMPARISONS = ("michel", "entropy", "norm", "random")


def ranking_comparison(
    claim: str, *, theory_auc, other_auc, other: str, level: float = 0.05, num_tests: int = 1, where: str = ""
) -> Verdict:
    """Claim: pruning along the theory's head score keeps more test accuracy than pruning along ``other``.

    Args:
        theory_auc, other_auc: ``[S]`` areas under the pruning curves (eq-pruning-auc) of the same ``S``
            trained models (paired by seed); for random orders, each seed's mean over its orders.
        other: the compared ranking's key (:data:`attnpaths.pruning.sweep.RANKING_NAMES`).
        level: family-wise level; num_tests: the comparisons sharing it (Bonferroni).
        where: text appended to the statement (e.g. the model).

    Test: one-sided paired t-test over seeds of the mean of ``AUC(theory) - AUC(other)``; holds if
    ``p < level / num_tests``, contradicted if the opposite one-sided ``p < level / num_tests``.
    """
    if other not in RANKING_NAMES or other == "theory":
        raise ValueError(f"other must be one of {[k for k in RANKING_NAMES if k != 'theory']}, got {other!r}")
    a = as_float64_array(theory_auc, "theory_auc", ndim=1)
    b = as_float64_array(other_auc, "other_auc", ndim=1)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(
            f"theory_auc and other_auc must hold the same number (>= 2) of seeds, got {a.size} and {b.size}"
        )
    positive_int(num_tests, "num_tests")
    difference = a - b
    # the two-sided interval whose bounds decide the two one-sided tests: holds iff it lies above 0,
    # contradicted iff it lies below 0
    coverage = 1 - 2 * level / num_tests
    interval = mean_interval(difference, coverage) if difference.std() > 0 and coverage > 0 else None
    ci = f" ({100 * coverage:.4g} % interval {interval['low']:+.3f} to {interval['high']:+.3f})" if interval else ""
    measured = (
        f"AUC {a.mean():.3f} (theory) vs {b.mean():.3f} ({RANKING_NAMES[other]}), mean difference "
        f"{difference.mean():+.3f}{ci}, theory ahead on {int((difference > 0).sum())} of {a.size} seeds."
    )
    return replicate_t(
        claim,
        f"pruning by the theory's head score keeps more accuracy than {RANKING_NAMES[other]}{where}",
        source=SOURCE,
        statistic="AUC(theory) - AUC(" + RANKING_NAMES[other] + ")",
        differences=difference,
        level=level,
        num_tests=num_tests,
        measured=measured,
    )


def ranking_verdicts(
    auc: dict,
    *,
    prefix: str = "P",
    level: float = 0.05,
    num_tests: int | None = None,
    where: str = "",
    others=COMPARISONS,
) -> list[Verdict]:
    """One :func:`ranking_comparison` per ranking of ``others``, claims ``"<prefix>1"``, ``"<prefix>2"``, ...

    Args:
        auc: ``{ranking: [S]}`` with ``"theory"`` and every key of ``others``
            (:meth:`attnpaths.pruning.sweep.PruningSweep.auc`).
        num_tests: the Bonferroni count (default: ``len(others)``; the chapter passes the number of comparisons
            over all its models).
    """
    others = tuple(others)
    missing = [k for k in ("theory", *others) if k not in auc]
    if missing:
        raise ValueError(f"auc must hold the areas of 'theory' and of {list(others)}, missing {missing}")
    num_tests = len(others) if num_tests is None else positive_int(num_tests, "num_tests")
    return [
        ranking_comparison(
            f"{prefix}{i + 1}",
            theory_auc=np.asarray(auc["theory"]),
            other_auc=np.asarray(auc[k]),
            other=k,
            level=level,
            num_tests=num_tests,
            where=where,
        )
        for i, k in enumerate(others)
    ]


def near_threshold(verdicts, *, level: float, num_tests: int, factor: float = 3.0) -> list[tuple[str, float, float]]:
    """The comparisons whose deciding one-sided p-value lies within ``factor`` of the corrected threshold
    ``level / num_tests``: their outcome rests on the trained models and can change with models trained again
    (another machine trains other float32 models), while the shipped weights fix it.

    Returns:
        ``[(claim, p, threshold)]`` with ``p = min(p_holds, 1 - p_holds)``, in the verdicts' order.
    """
    positive_int(num_tests, "num_tests")
    threshold = float(as_float64_array(level, "level")) / num_tests
    if not factor > 1:
        raise ValueError(f"factor must be > 1, got {factor!r}")
    out = []
    for verdict in verdicts:
        if verdict.p_value is None:
            continue
        p = min(verdict.p_value, 1.0 - verdict.p_value)
        if threshold / factor <= p <= threshold * factor:
            out.append((verdict.claim, p, threshold))
    return out


def select_on_validation(normalised: dict, candidates) -> str:
    """The candidate ranking with the largest mean normalised area on the validation images (eq-pruning-normalised);
    ties go to the earlier candidate. The test images play no part in the choice.

    Args:
        normalised: ``{ranking: [S]}`` normalised areas on the validation images.
        candidates: the ranking names to choose from (e.g. :data:`attnpaths.pruning.theory_scores.THEORY_SCORES`).
    """
    candidates = tuple(candidates)
    missing = [c for c in candidates if c not in normalised]
    if not candidates or missing:
        raise ValueError(f"candidates must be a non-empty list of rankings of normalised, missing {missing}")
    means = [float(np.nanmean(np.asarray(normalised[c], dtype=float))) for c in candidates]
    return candidates[int(np.argmax(means))]


def primary_verdicts(
    prefix: str,
    *,
    theory,
    michel,
    theory_name: str,
    margin: float,
    level: float = 0.05,
    num_tests: int = 1,
    where: str = "",
) -> tuple[Verdict, Verdict]:
    """The primary question for one model kind, as two verdicts on the per-seed differences
    ``d = A(theory) - A(Michel)`` of normalised areas on the test images (eq-pruning-normalised), paired by seed:

    * ``<prefix>-B`` (:func:`attnpaths.claims.replicate_t`): the theory score beats Michel et al.'s importance
      (holds) or loses to it (contradicted), one-sided t-tests;
    * ``<prefix>-E`` (:func:`attnpaths.claims.replicate_equivalence`): the two agree within ``margin`` (two
      one-sided t-tests against ``+-margin``).

    Both at ``level / num_tests`` (Bonferroni over every primary test of the chapter).

    Args:
        theory, michel: ``[S]`` normalised test areas; theory_name: the theory score's name (for the statement).
        margin: the largest ``|mean d|`` that counts as a match (> 0).
    """
    a = as_float64_array(theory, "theory", ndim=1)
    b = as_float64_array(michel, "michel", ndim=1)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"theory and michel must hold the same number (>= 2) of seeds, got {a.size} and {b.size}")
    num_tests = positive_int(num_tests, "num_tests")
    d = a - b
    statistic = "A(theory) - A(Michel)"
    measured = (
        f"normalised area {a.mean():.3f} ({theory_name}) vs {b.mean():.3f} (Michel et al.), mean difference "
        f"{d.mean():+.3f} (sd {d.std(ddof=1):.3f}), theory ahead on {int((d > 0).sum())} of {d.size} seeds."
    )
    beats = replicate_t(
        f"{prefix}-B",
        f"the {theory_name} prunes better than Michel et al.'s importance{where}",
        source=PRIMARY_SOURCE,
        statistic=statistic,
        differences=d,
        level=level,
        num_tests=num_tests,
        measured=measured,
    )
    matches = replicate_equivalence(
        f"{prefix}-E",
        f"the {theory_name} prunes as well as Michel et al.'s importance within {margin:g} of normalised area{where}",
        source=PRIMARY_SOURCE,
        statistic=statistic,
        replicates=d,
        reference=0.0,
        margin=margin,
        level=level / num_tests,
        measured=measured,
    )
    matches = dataclasses.replace(matches, level=level, correction=f"Bonferroni over {num_tests} tests")
    return beats, matches


def primary_answer(beats: Verdict, matches: Verdict) -> str:
    """One word from the two primary verdicts of :func:`primary_verdicts`: ``"beats"`` or ``"loses"`` (the
    one-sided test decides; ``" narrowly"`` appended when the equivalence also holds), else ``"matches"`` (the
    equivalence holds), else ``"undecided"``."""
    narrowly = " narrowly" if matches.outcome is Outcome.HOLDS else ""
    if beats.outcome is Outcome.HOLDS:
        return "beats" + narrowly
    if beats.outcome is Outcome.CONTRADICTED:
        return "loses" + narrowly
    return "matches" if matches.outcome is Outcome.HOLDS else "undecided"
