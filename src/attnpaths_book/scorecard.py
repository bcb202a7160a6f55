"""The paper's claims answered one by one from the book's verdicts: the scorecard at the start of the book.

Each claim of the paper's abstract and of its figure captions (:data:`PAPER_CLAIMS`, in the book's words; the
paper's body text was not available, so only the abstract and the captions are sources) names the chapters'
claims that test it. Its answer is computed from those verdicts only (:func:`answer_claims`), so the scorecard
can never say more than the tests do:

* **reproduced**: every test of the claim holds;
* **partly reproduced**: some hold, the others are not significant or contradicted;
* **not reproduced**: none holds (at least one contradicted, or all not significant);
* **not tested**: no chapter of this run recorded a verdict for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attnpaths.claims import Outcome, Verdict
from attnpaths_book.claims_markdown import escape_markdown

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTED = "reproduced", "partly reproduced", "not reproduced", "not tested"
ANSWERS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTED)


@dataclass(frozen=True)
class PaperClaim:
    """One claim of the paper and the chapters' claims that test it.

    Attributes:
        key: short identifier (``"P1"``).
        statement: the claim in the book's words.
        source: where the paper makes it (abstract, figure captions).
        tests: ``(chapter, claim)`` selectors: a selector ``"1"`` picks the chapter's claim ``"1"`` and every
            claim ``"1 (...)"`` (its cases), not ``"1b"``.
        caveat: said when the claim is not reproduced in full: what the chapters found that bears on why.
    """

    key: str
    statement: str
    source: str
    tests: tuple[tuple[str, str], ...]
    caveat: str = ""


PAPER_CLAIMS = (
    PaperClaim(
        "P1",
        "at finite width the network generalises better than its GP limit",
        "abstract (the interplay of attention paths enhances generalization); captions of Figs. 1d, 2c, 3b",
        (("hmc", "1"), ("oneshot", "1"), ("depth", "b"), ("learning_curves", "a")),
    ),
    PaperClaim(
        "P2",
        "the theory's predictor statistics are those of the finite network (posterior samples agree with the "
        "theory's order parameter and accuracy)",
        "abstract (exact equations for the predictor statistics); captions of Figs. 2c, 2e, 3b, 3c (theory "
        "against samples)",
        (
            ("hmc", "2"),
            ("hmc", "2w"),
            ("hmc", "2b"),
            ("hmc", "2v"),
            ("oneshot", "2"),
            ("oneshot", "2w"),
            ("oneshot", "2s"),
            ("depth", "a"),
            ("depth", "aw"),
            ("depth", "d"),
        ),
        caveat="The saddle point of the theory is an approximation for large width: where the number of paths is "
        "large against the width (the one-shot task at its smallest sampled widths) it is not expected to hold; "
        "the one-shot chapter's power check says how often a correct theory would pass there, and its claim 2s "
        "asks whether the samples approach the saddle point like 1/N as the width grows.",
    ),
    PaperClaim(
        "P3",
        "the finite-width kernel aligns with the task's labels better than the GP kernel",
        "abstract (a kernel combination that aligns the total kernel with the labels); caption of Fig. 1c",
        (("hmc", "4"), ("oneshot", "4")),
    ),
    PaperClaim(
        "P4",
        "the order parameter weights pairs of paths by their relevance to the task, cross-path weights included",
        "abstract (task-relevant kernel combination, interplay between attention paths); captions of Figs. 1b, 1d",
        (("hmc", "6"), ("hmc", "I"), ("hmc", "Iw"), ("oneshot", "I"), ("oneshot", "Iw"), ("depth", "c")),
    ),
    PaperClaim(
        "P5",
        "in the GP limit the cross-path kernels drop out and the same-path kernels are weighted equally",
        "caption of Fig. 1d",
        (("hmc", "3"),),
    ),
    PaperClaim(
        "P6",
        "the theory's insights transfer to a network trained by gradient descent (its order-parameter pattern "
        "is found in the trained weights)",
        "abstract; Fig. 3c",
        (("oneshot", "8"),),
    ),
    PaperClaim(
        "P7",
        "the heads that the theory deems less relevant can be pruned at little cost",
        "abstract (pruning the heads deemed less relevant by the theory); captions of Figs. 3e, 3f",
        (
            ("oneshot", "7a"),
            ("oneshot", "7b"),
            ("oneshot", "7c"),
            ("pruning", "MHA1"),
            ("pruning", "MHA2"),
            ("pruning", "MHA3"),
            ("pruning", "MHA4"),
            ("pruning", "MHA5"),
            ("pruning", "MHA6"),
            ("pruning", "SUM1"),
            ("pruning", "SUM2"),
            ("pruning", "SUM3"),
            ("pruning", "SUM4"),
            ("pruning", "SUM5"),
            ("pruning", "SUM6"),
            ("pruning", "MHA-FB"),
            ("pruning", "SUM-FB"),
            ("pruning", "MHA-FE"),
            ("pruning", "SUM-FE"),
        ),
        caveat="On the one-shot model the theory's order beats random pruning orders; on the pruning chapter's "
        "two models, trained on a task of their own, the paper's head score is compared with practical scores "
        "and with the exact optimum over head subsets, and the verdicts listed say where it falls short. Whether the "
        "lowest-score heads of the one-shot model cost little in absolute terms is asked against a margin fixed "
        "before measuring, without fine-tuning as the paper prunes (claim 7c); the same after brief fine-tuning "
        "(claim 7d) is not the paper's protocol and is not counted here.",
    ),
)
"""The paper's claims, in reading order."""


def selects(selector: str, claim: str) -> bool:
    """Whether the selector ``selector`` picks the chapter claim ``claim`` (itself, or a case ``"<selector> (...)"``)."""
    return claim == selector or re.fullmatch(rf"{re.escape(selector)} \(.*\)", claim) is not None


@dataclass(frozen=True)
class ClaimAnswer:
    """The answer to one :class:`PaperClaim` from a run's verdicts.

    Attributes:
        claim: the paper's claim.
        answer: one of :data:`ANSWERS`.
        tests: ``(chapter, verdict)`` of every verdict that tests it, in the order of ``claim.tests``.
    """

    claim: PaperClaim
    answer: str
    tests: tuple[tuple[str, Verdict], ...]

    def counts(self) -> dict[str, int]:
        """``{outcome: number of tests}``, every outcome present."""
        return {o.value: sum(v.outcome is o for _, v in self.tests) for o in Outcome}

    def summary(self) -> str:
        """The answer with its counts, e.g. ``"partly reproduced: 3 of 14 tests hold, 6 not significant, 5
        contradicted"``."""
        if not self.tests:
            return f"{self.answer}: no chapter of this run tests it"
        c = self.counts()
        return (
            f"{self.answer}: {c['holds']} of {len(self.tests)} tests hold, {c['not significant']} not significant, "
            f"{c['contradicted']} contradicted"
        )

    def to_dict(self) -> dict:
        """Plain values for a results file."""
        return {
            "key": self.claim.key,
            "statement": self.claim.statement,
            "answer": self.answer,
            "counts": self.counts(),
            "tests": [{"chapter": chapter, "claim": v.claim, "outcome": v.outcome.value} for chapter, v in self.tests],
        }


def answer(claim: PaperClaim, verdicts: dict[str, list[Verdict]]) -> ClaimAnswer:
    """The answer to ``claim`` from ``verdicts`` (``{chapter: its verdicts}``)."""
    tests = tuple(
        (chapter, v)
        for chapter, selector in claim.tests
        for v in verdicts.get(chapter, ())
        if selects(selector, v.claim)
    )
    if not tests:
        result = NOT_TESTED
    elif all(v.holds for _, v in tests):
        result = REPRODUCED
    elif any(v.holds for _, v in tests):
        result = PARTLY
    else:
        result = NOT_REPRODUCED
    return ClaimAnswer(claim, result, tests)


def answer_claims(chapter_claims, claims=PAPER_CLAIMS) -> list[ClaimAnswer]:
    """The answer to each of ``claims`` from the verdicts of ``chapter_claims``
    (:func:`attnpaths_book.report.read_claims`)."""
    verdicts = {c.chapter: list(c.verdicts) for c in chapter_claims}
    return [answer(claim, verdicts) for claim in claims]


def _test_cell(chapter: str, verdict: Verdict) -> str:
    return (
        f"{{doc}}`{chapter}` {escape_markdown(verdict.claim)}: **{verdict.outcome.value}** "
        f"({escape_markdown(verdict.statistic)} = {verdict.value:.3g})"
    )


def scorecard_table(answers) -> str:
    """A Markdown table: the paper's claim, its source, the answer with its counts, and every test with its
    outcome and statistic, each linked to its chapter."""
    rows = ["| | the paper's claim | source | answer here | tests |", "|---|---|---|---|---|"]
    for a in answers:
        tests = "<br>".join(_test_cell(chapter, v) for chapter, v in a.tests) or "none in this run"
        cells = [a.claim.key, escape_markdown(a.claim.statement), escape_markdown(a.claim.source), a.summary(), tests]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def reproduction_list(answers) -> str:
    """A Markdown list, one item per claim: its answer and, where it is not reproduced in full, what the tests
    that do not hold measured (their own words) and the claim's caveat."""
    items = []
    for a in answers:
        item = f"- **{a.claim.key}, {a.answer}.** The paper: {escape_markdown(a.claim.statement)}. {a.summary()}."
        failing = [(chapter, v) for chapter, v in a.tests if not v.holds]
        if failing:
            item += " Where it does not hold: " + " ".join(
                f"{{doc}}`{chapter}` claim {escape_markdown(v.claim)} ({v.outcome.value}): {escape_markdown(v.measured)}"
                for chapter, v in failing
            )
            if a.claim.caveat:
                item += " " + escape_markdown(a.claim.caveat)
        items.append(item)
    return "\n".join(items)
