"""The pruning chapter's claims: theory scores against practical scores, as tests (sec-pruning-verdicts).

The primary question, one per model kind (:func:`family_verdicts`): each family of scores picks its best score
on the validation images of each seed and split by the same rule (:func:`family_choice`); does the theory
family's pick beat, match or lose to the practical family's on the test images? The secondary comparisons
(:func:`ranking_verdicts`) put the paper's head score against each practical score, with no choice on data.

The statistics are per-seed differences averaged over the splits (:func:`attnpaths.pruning.sweep.split_mean`):
the splits of one seed share its model, so the seeds are the independent replicates of the paired tests,
Bonferroni-corrected over each family of tests.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._validation import as_float64_array, positive_int
from ..claims import Outcome, Verdict, replicate_equivalence, replicate_t
from ..statistics import mean_interval
from .sweep import RANKING_NAMES

PRIMARY_SOURCE = (
    "primary question of this book: does the best theory score prune as well as the best practical score, each "
    "family choosing its best on validation images by the same rule?"
)
SOURCE = "question of this book: is the theory's head score a better pruning guide than the usual rankings?"
#: The rankings the paper's head score is compared with, in the order of their claims (``<prefix>1`` ...).
COMPARISONS = ("michel", "entropy", "norm", "random", "michel_iterative", "fisher")
#: The theory family (sec-pruning-theory-scores), in the chapter's order.
THEORY_FAMILY = ("theory", "theory_removal", "theory_action", "theory_gate", "theory_loo", "theory_trained")
#: The practical family (sec-pruning-rankings), the scores a practitioner computes without the theory or a
#: table of pruned models.
PRACTICAL_FAMILY = ("michel", "michel_iterative", "fisher", "entropy", "norm")


def _paired(first, second, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Two ``[S]`` float64 arrays of one seed count ``S >= 2``, or a ``ValueError`` naming them."""
    a, b = (as_float64_array(v, name, ndim=1) for v, name in zip((first, second), names))
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"{' and '.join(names)} must hold the same number (>= 2) of seeds, got {a.size} and {b.size}")
    return a, b


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
    a, b = _paired(theory_auc, other_auc, ("theory_auc", "other_auc"))
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
    deciding = [(v.claim, min(v.p_value, 1.0 - v.p_value)) for v in verdicts if v.p_value is not None]
    return [(claim, p, threshold) for claim, p in deciding if threshold / factor <= p <= threshold * factor]


def select_on_validation(normalised: dict, candidates) -> str:
    """The candidate ranking with the largest mean normalised area on the validation images (eq-pruning-normalised);
    ties go to the earlier candidate. The test images play no part in the choice.

    Args:
        normalised: ``{ranking: [S]}`` normalised areas on the validation images.
        candidates: the ranking names to choose from (e.g. :data:`THEORY_FAMILY`).
    """
    candidates = tuple(candidates)
    missing = [c for c in candidates if c not in normalised]
    if not candidates or missing:
        raise ValueError(f"candidates must be a non-empty list of rankings of normalised, missing {missing}")
    means = [float(np.nanmean(np.asarray(normalised[c], dtype=float))) for c in candidates]
    return candidates[int(np.argmax(means))]


def family_choice(validation: dict, test: dict, candidates) -> tuple[list[list[str]], np.ndarray]:
    """A family's best score, chosen for each seed on each split's validation images of that seed alone and judged
    on the same seed's test images: for seed ``s`` in split ``r``, the candidate of largest validation area
    (:func:`select_on_validation`), and its test area.

    The choice for one seed reads none of the other seeds' images or models, so the per-seed differences of two
    families stay independent replicates (a choice pooled over the seeds would tie every seed's difference to the
    others' validation areas).

    Args:
        validation, test: ``{ranking: [S, R]}`` normalised areas (eq-pruning-normalised) on the validation and
            the test images of ``R`` splits (:meth:`attnpaths.pruning.sweep.PruningSweep.normalised_auc`).
        candidates: the family's ranking names (:data:`THEORY_FAMILY`, :data:`PRACTICAL_FAMILY`).

    Returns:
        ``(choices, areas)``: ``choices[r][s]`` the ranking chosen for seed ``s`` in split ``r``; ``areas``
        ``[S, R]`` its test areas.
    """
    candidates = tuple(candidates)
    missing = [c for c in candidates if c not in validation or c not in test]
    if not candidates or missing:
        raise ValueError(f"candidates must be a non-empty list of rankings of validation and test, missing {missing}")
    shape = np.shape(validation[candidates[0]])
    if len(shape) != 2 or any(np.shape(d[c]) != shape for d in (validation, test) for c in candidates):
        raise ValueError(f"validation and test must hold [S, R] areas of one shape for every candidate, got {shape}")
    # each seed's and split's candidate of largest validation area (ties: the earlier one)
    chosen = np.stack([np.asarray(validation[c], dtype=np.float64) for c in candidates]).argmax(axis=0)  # [S, R]
    areas = np.take_along_axis(np.stack([np.asarray(test[c], dtype=np.float64) for c in candidates]), chosen[None], 0)
    choices = [[candidates[i] for i in split] for split in chosen.T]
    return choices, areas[0]


def most_chosen(choices) -> str:
    """The ranking chosen most often by :func:`family_choice` (ties: the first in sorted order)."""
    values, counts = np.unique(np.asarray(choices).ravel(), return_counts=True)
    return str(values[int(np.argmax(counts))])


def choice_counts(choices, names: dict | None = None) -> str:
    """``"<name> in a of n choices, ..."``, the rankings chosen by :func:`family_choice` (one choice per seed and
    split), most often first."""
    values, counts = np.unique(np.asarray(choices).ravel(), return_counts=True)
    order = np.argsort(-counts, kind="stable")
    names = names or RANKING_NAMES
    total = int(counts.sum())
    return ", ".join(f"{names[str(values[i])]} in {counts[i]} of {total} choices" for i in order)


def family_verdicts(
    prefix: str,
    *,
    theory,
    practical,
    theory_choices,
    practical_choices,
    margin: float,
    level: float = 0.05,
    num_tests: int = 1,
    where: str = "",
) -> tuple[Verdict, Verdict]:
    """The primary question for one model kind, as two verdicts on the per-seed differences
    ``d = A(theory family's pick) - A(practical family's pick)`` of normalised areas on the test images
    (eq-pruning-normalised), each averaged over the splits, paired by seed:

    * ``<prefix>-FB`` (:func:`attnpaths.claims.replicate_t`): the theory family's pick beats the practical family's
      (holds) or loses to it (contradicted), one-sided t-tests;
    * ``<prefix>-FE`` (:func:`attnpaths.claims.replicate_equivalence`): the two agree within ``margin`` (two
      one-sided t-tests against ``+-margin``).

    Both at ``level / num_tests`` (Bonferroni over every primary test of the chapter).

    Args:
        theory, practical: ``[S]`` split-averaged normalised test areas of each family's pick
            (:func:`family_choice` then :func:`attnpaths.pruning.sweep.split_mean`).
        theory_choices, practical_choices: each split's pick (for the statement of what was measured).
        margin: the largest ``|mean d|`` that counts as a match (> 0).
    """
    a, b = _paired(theory, practical, ("theory", "practical"))
    num_tests = positive_int(num_tests, "num_tests")
    d = a - b
    statistic = "A(best theory score) - A(best practical score), both chosen on validation"
    measured = (
        f"normalised area {a.mean():.3f} (theory family: {choice_counts(theory_choices)}) vs {b.mean():.3f} "
        f"(practical family: {choice_counts(practical_choices)}), mean difference {d.mean():+.3f} "
        f"(sd {d.std(ddof=1):.3f} over seeds), theory ahead on {int((d > 0).sum())} of {d.size} seeds."
    )
    beats = replicate_t(
        f"{prefix}-FB",
        f"the best theory score prunes better than the best practical score, each chosen on validation images{where}",
        source=PRIMARY_SOURCE,
        statistic=statistic,
        differences=d,
        level=level,
        num_tests=num_tests,
        measured=measured,
    )
    matches = replicate_equivalence(
        f"{prefix}-FE",
        f"the best theory score prunes as well as the best practical score, each chosen on validation images, "
        f"within {margin:g} of normalised area{where}",
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
    """One word from the two primary verdicts of :func:`family_verdicts`: ``"beats"`` or ``"loses"`` (the
    one-sided test decides; ``" narrowly"`` appended when the equivalence also holds), else ``"matches"`` (the
    equivalence holds), else ``"undecided"``."""
    narrowly = " narrowly" if matches.outcome is Outcome.HOLDS else ""
    if beats.outcome is Outcome.HOLDS:
        return "beats" + narrowly
    if beats.outcome is Outcome.CONTRADICTED:
        return "loses" + narrowly
    return "matches" if matches.outcome is Outcome.HOLDS else "undecided"


#: What each :func:`primary_answer` says of the best theory score against the best practical score.
ANSWER_WORDS = {
    "beats": "beats the practical family's",
    "beats narrowly": "beats the practical family's, by less than the margin",
    "loses": "loses to the practical family's",
    "loses narrowly": "loses to the practical family's, by less than the margin",
    "matches": "matches the practical family's within the margin",
    "undecided": "neither beats, loses to nor matches the practical family's at this level and margin",
}


def answer_sentence(model: str, answer: str, theory, practical) -> str:
    """The primary answer for ``model`` as a sentence: what ``answer`` (:func:`primary_answer`) says, with the mean
    normalised test areas of the two families' picks (``theory``, ``practical``: ``[S]``, as for
    :func:`family_verdicts`) and their mean difference."""
    if answer not in ANSWER_WORDS:
        raise ValueError(f"answer must be one of {list(ANSWER_WORDS)}, got {answer!r}")
    a, b = _paired(theory, practical, ("theory", "practical"))
    return (
        f"For the {model}, the best theory score (chosen on the validation images) {ANSWER_WORDS[answer]}: "
        f"normalised area {np.nanmean(a):.2f} against {np.nanmean(b):.2f}, mean difference {np.nanmean(a - b):+.2f}."
    )


def _side(x: float, y: float) -> str:
    return "above" if x > y else "below" if x < y else "level with"


def why_sentence(normalised: dict, best: dict) -> str:
    """Where the paper's head score stands on the normalised scale (0: a random order, 1: the exact optimum),
    against the random expectation, the gradient importance of Michel et al., the best practical score and the
    best theory score, and what its reading of the trained path weights reaches, as a sentence.

    Args:
        normalised: ``{ranking: [S]}`` normalised test areas with ``"theory"``, ``"michel"`` and
            ``"theory_trained"``; best: ``{"theory", "practical": [S]}`` those of each family's pick.
    """
    missing = [k for k in ("theory", "michel", "theory_trained") if k not in normalised]
    missing += [f"best[{k!r}]" for k in ("theory", "practical") if k not in best]
    if missing:
        raise ValueError(f"normalised and best must hold the areas of every score quoted, missing {missing}")
    paper, michel, trained = (float(np.nanmean(normalised[k])) for k in ("theory", "michel", "theory_trained"))
    practical_best, theory_best = float(np.nanmean(best["practical"])), float(np.nanmean(best["theory"]))
    return (
        f"On the scale of the normalised area, where 0 is the exact expectation of a random order and 1 the exact "
        f"optimum, the paper's head score stands at {paper:.2f}, {_side(paper, 0)} the random expectation, "
        f"{_side(paper, michel)} the gradient importance of Michel et al. ({michel:.2f}) and "
        f"{_side(paper, practical_best)} the best practical score ({practical_best:.2f}); the best theory score "
        f"reaches {theory_best:.2f}. The paper's score, the size of $U$ on a head's paths, says how much the "
        f"theory uses them, not what is lost without them; "
        + (
            "reading the trained value weights is not what makes the difference: the"
            if trained < theory_best
            else "the"
        )
        + f" paper's score applied to the trained path weights reaches {trained:.2f}."
    )


def near_threshold_sentence(close_calls, factor: float = 3.0) -> str:
    """The comparisons of :func:`near_threshold` (``[(claim, p, threshold)]``, found with ``factor``) as a
    sentence: which were decided close to the corrected threshold and why their outcome may change with models
    trained again, or that none was."""
    if not close_calls:
        return f"No secondary comparison is decided within a factor {factor:g} of the corrected threshold."
    return (
        f"Decided within a factor {factor:g} of the corrected threshold: "
        + ", ".join(f"{c} (p = {p:.2g} against {t:.2g})" for c, p, t in close_calls)
        + ". These outcomes rest on the trained models: with models trained again (`retrain = True`, or on another "
        "machine, where float32 training ends at other models) they may change, while the shipped weights fix them."
    )
