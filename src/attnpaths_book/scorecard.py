"""The paper's claims answered one by one from the book's verdicts: the scorecard at the start of the book.

Each claim of the paper's abstract and of its figure captions (:data:`PAPER_CLAIMS`, in the book's words; the
paper's body text was not available, so only the abstract and the captions are sources) names the chapters'
claims that test it, and its counter-tests: chapters' claims whose holding counts against it (the paper claims a
finite-width advantage; a chapter's claim that the GP limit is the more accurate somewhere counts against it). Its
answer is computed from those verdicts only (:func:`answer`), so the scorecard can never say more than the tests
do; so are the sentences of the book's headline (:func:`headline`).

A counter-test is a directional claim with the paper's direction reversed, so it is read reversed: it holding
counts as a contradiction of the paper's claim, it contradicted (significant in the paper's direction) counts as
holding, not significant stays not significant. Of the ``n`` tests and counter-tests, ``k`` hold and ``m``
contradict the claim, so read:

* **reproduced**: every one holds (``k = n``);
* **mostly reproduced**: at least two thirds hold and none contradicts (``3 k >= 2 n``, ``m = 0``);
* **partly reproduced**: some hold, and more hold than contradict (``k > m``), short of the above;
* **contradicted**: some contradict, at least as many as hold (``m >= k``, ``m >= 1``);
* **not reproduced**: none holds and none contradicts (every test not significant);
* **not tested**: no chapter of this run recorded a verdict for it.

Why these thresholds: a test that is not significant may lack power, so a claim whose tests hold with at most a
third lacking significance still reads as supported ("mostly"), while with more than a third not holding the support
is partial; a contradiction is evidence against the claim at the test's level, not a lack of power, so one bars
"mostly" whatever the share; and when the tests that contradict a claim are as many as those that support it, the
claim is not reproduced even in part: a tie goes against the side that makes the claim. Every answer is shown with
its counts ("k of n hold, m contradicted"), so that two tests of eighteen do not read like eighteen of nineteen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attnpaths.claims import Outcome, Verdict
from attnpaths_book.claims_markdown import escape_markdown, with_detectable

REPRODUCED, MOSTLY, PARTLY = "reproduced", "mostly reproduced", "partly reproduced"
CONTRADICTED, NOT_REPRODUCED, NOT_TESTED = "contradicted", "not reproduced", "not tested"
ANSWERS = (REPRODUCED, MOSTLY, PARTLY, CONTRADICTED, NOT_REPRODUCED, NOT_TESTED)
"""The answers, from the strongest support to none."""


@dataclass(frozen=True)
class PaperClaim:
    """One claim of the paper and the chapters' claims that test it.

    Attributes:
        key: short identifier (``"P1"``).
        statement: the claim in the book's words.
        source: where the paper makes it (abstract, figure captions), in the book's words: not a quotation.
        tests: ``(chapter, claim)`` selectors: a selector ``"1"`` picks the chapter's claim ``"1"`` and every
            claim ``"1 (...)"`` (its cases), not ``"1b"``. A selector for a claim that a run did not record picks
            nothing.
        against: selectors of the counter-tests: chapters' claims whose holding counts against this claim.
        caveat: Markdown said when the claim is not reproduced in full: what the chapters found that bears on why.
        note: Markdown said with the answer whatever it is: what in this book stands in for what the claim is
            about, or what bears on it without being counted (a structural check).
    """

    key: str
    statement: str
    source: str
    tests: tuple[tuple[str, str], ...]
    against: tuple[tuple[str, str], ...] = ()
    caveat: str = ""
    note: str = ""


def _on(chapter: str, *claims: str) -> tuple[tuple[str, str], ...]:
    """The selectors of ``claims`` of ``chapter``."""
    return tuple((chapter, claim) for claim in claims)


PAPER_CLAIMS = (
    PaperClaim(
        "P1",
        "at finite width the network generalises better than its GP limit",
        "abstract (the interplay of attention paths enhances generalization); captions of Figs. 1d, 2c, 3b",
        (("hmc", "1"), ("oneshot", "1"), ("depth", "b"), ("learning_curves", "a"), ("learning_curves", "t")),
        against=(("learning_curves", "r"), ("learning_curves", "s"), ("learning_curves", "sa")),
        caveat="The advantage holds with fewer training examples than the kernel's rank D and, at a fixed "
        "temperature, reverses near P = D, where the GP limit is the more accurate ({doc}`learning_curves`).",
    ),
    PaperClaim(
        "P2",
        "the theory's predictor statistics are those of the finite network (posterior samples agree with the "
        "theory's order parameter and accuracy)",
        "abstract (exact equations for the predictor statistics); captions of Figs. 2c, 2e, 3b, 3c (theory "
        "against samples)",
        (
            *_on("hmc", "2", "2w", "2b", "2v", "2ve"),
            *_on("oneshot", "2", "2w", "2s"),
            *_on("depth", "a", "aw", "d"),
            *_on("learning_curves", "n", "nc", "nu"),
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
        (("theory", "T4"),),
        note="The test counted, {doc}`theory` claim T4, draws finite networks from the prior, whose kernel is the GP "
        "limit's, and compares their kernel with the one that weights the same-path kernels equally and has no "
        "cross-path kernel. That the theory's U approaches its GP value as the width grows ({doc}`hmc`, check 3) "
        "is a structural check, not counted: any action E + N s has a minimiser that tends to that of s as N grows, "
        "whatever the task.",
    ),
    PaperClaim(
        "P6",
        "the theory's insights transfer to a network trained by gradient descent (its order-parameter pattern "
        "is found in the trained weights)",
        "abstract; Fig. 3c",
        (("oneshot", "8"), ("oneshot", "8f")),
    ),
    PaperClaim(
        "P7",
        "the heads that the theory deems less relevant can be pruned at little cost",
        "abstract (pruning the heads deemed less relevant by the theory); captions of Figs. 3e, 3f",
        (
            *_on("oneshot", "7a", "7b", "7bf", "7c"),
            *_on("pruning", "MHA1", "MHA2", "MHA3", "MHA4", "MHA5", "MHA6"),
            *_on("pruning", "SUM1", "SUM2", "SUM3", "SUM4", "SUM5", "SUM6"),
            *_on("pruning", "MHA-FB", "SUM-FB", "MHA-FE", "SUM-FE"),
        ),
        caveat="On the one-shot model the theory's order beats random pruning orders; on the pruning chapter's "
        "two models, trained on a task of their own, the paper's head score is compared with practical scores "
        "and with the exact optimum over head subsets, and the verdicts listed say where it falls short. Whether the "
        "lowest-score heads of the one-shot model cost little in absolute terms is asked against a margin fixed "
        "before measuring, without fine-tuning as the paper prunes (claim 7c); the same after brief fine-tuning "
        "(claim 7d) is not the paper's protocol and is not counted here.",
    ),
    PaperClaim(
        "P8",
        "the theory's findings hold on real-world sequence classification tasks as well as on synthetic ones",
        "abstract (its experiments include real-world sequence classification tasks)",
        (("pretrained", "M1"), ("pretrained", "P1")),
        caveat="The paper's own real-world experiments are not available to this book; {doc}`pretrained` asks its two "
        "findings of a pretrained transformer instead (MiniLM's frozen attention on Rotten Tomatoes review "
        "snippets): whether the theory beats its GP limit on held-out snippets (M1) and whether its head scores rank "
        "MiniLM's heads by what pruning them costs (P1).",
        note="The one-shot task renders its characters from the fonts shipped with matplotlib in place of Omniglot's "
        "handwritten ones, with scikit-learn's 8x8 handwritten digits in place of MNIST out of distribution "
        "({doc}`oneshot`), and the hidden-Markov-chain task is synthetic ({doc}`hmc`): the real-world evidence is "
        "the pretrained transformer's chapter, on a model and a task that the paper did not study.",
    ),
)
"""The paper's claims, in the abstract's reading order, the row on its real-world tasks last."""


_REVERSED = {
    Outcome.HOLDS: Outcome.CONTRADICTED,
    Outcome.CONTRADICTED: Outcome.HOLDS,
    Outcome.NOT_SIGNIFICANT: Outcome.NOT_SIGNIFICANT,
}


def grade(holds: int, contradicted: int, total: int) -> str:
    """The answer (one of :data:`ANSWERS`) to a claim of whose ``total`` tests and counter-tests ``holds`` hold and
    ``contradicted`` contradict it (see the module's docstring for the thresholds and why)."""
    for name, count in (("holds", holds), ("contradicted", contradicted), ("total", total)):
        if not isinstance(count, int) or count < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {count!r}")
    if holds + contradicted > total:
        raise ValueError(f"holds + contradicted must be at most total, got {holds} + {contradicted} > {total}")
    if total == 0:
        return NOT_TESTED
    if holds == total:
        return REPRODUCED
    if contradicted == 0 and 3 * holds >= 2 * total:
        return MOSTLY
    if contradicted >= 1 and contradicted >= holds:
        return CONTRADICTED
    return PARTLY if holds else NOT_REPRODUCED


@dataclass(frozen=True)
class ClaimAnswer:
    """The answer to one :class:`PaperClaim` from a run's verdicts.

    Attributes:
        claim: the paper's claim.
        answer: one of :data:`ANSWERS`.
        tests: ``(chapter, verdict)`` of every verdict that tests it, in the order of ``claim.tests``.
        against: ``(chapter, verdict)`` of every counter-test, in the order of ``claim.against``.
    """

    claim: PaperClaim
    answer: str
    tests: tuple[tuple[str, Verdict], ...]
    against: tuple[tuple[str, Verdict], ...] = ()

    def counted(self) -> list[tuple[str, Verdict, Outcome, bool]]:
        """``(chapter, verdict, what it counts as for the paper's claim, whether it is a counter-test)`` of every
        test, then of every counter-test (read reversed)."""
        return [(c, v, v.outcome, False) for c, v in self.tests] + [
            (c, v, _REVERSED[v.outcome], True) for c, v in self.against
        ]

    def counts(self) -> dict[str, int]:
        """``{outcome: number of tests and counter-tests that count as it for the paper's claim}``, every outcome
        present."""
        return {o.value: sum(counted is o for _, _, counted, _ in self.counted()) for o in Outcome}

    def summary(self) -> str:
        """The answer with its counts, e.g. ``"partly reproduced: 3 of 14 tests hold, 6 not significant, 5
        contradicted"`` (counter-tests counted as they bear on the claim, and said)."""
        if not self.tests and not self.against:
            where = "this book" if not (self.claim.tests or self.claim.against) else "this run"
            return f"{self.answer}: no chapter of {where} tests it"
        c = self.counts()
        n = len(self.tests) + len(self.against)
        counter = f" (counter-tests included: {len(self.against)})" if self.against else ""
        return (
            f"{self.answer}: {c['holds']} of {n} tests hold, {c['not significant']} not significant, "
            f"{c['contradicted']} contradicted{counter}"
        )

    def to_dict(self) -> dict:
        """Plain values for a results file."""
        return {
            "key": self.claim.key,
            "statement": self.claim.statement,
            "answer": self.answer,
            "counts": self.counts(),
            "tests": [
                {"chapter": chapter, "claim": v.claim, "outcome": v.outcome.value, "counter_test": counter}
                for chapter, v, _, counter in self.counted()
            ],
        }


def selects(selector: str, claim: str) -> bool:
    """Whether the selector ``selector`` picks the chapter claim ``claim`` (itself, or a case ``"<selector> (...)"``)."""
    return claim == selector or re.fullmatch(rf"{re.escape(selector)} \(.*\)", claim) is not None


def _picked(selectors, verdicts: dict[str, list[Verdict]]) -> tuple[tuple[str, Verdict], ...]:
    return tuple(
        (chapter, v) for chapter, selector in selectors for v in verdicts.get(chapter, ()) if selects(selector, v.claim)
    )


def answer(claim: PaperClaim, verdicts: dict[str, list[Verdict]]) -> ClaimAnswer:
    """The answer to ``claim`` from ``verdicts`` (``{chapter: its verdicts}``): its tests and counter-tests graded
    by :func:`grade`."""
    tests, against = _picked(claim.tests, verdicts), _picked(claim.against, verdicts)
    counted = [v.outcome for _, v in tests] + [_REVERSED[v.outcome] for _, v in against]
    result = grade(counted.count(Outcome.HOLDS), counted.count(Outcome.CONTRADICTED), len(counted))
    return ClaimAnswer(claim, result, tests, against)


def answer_claims(chapter_claims, claims=PAPER_CLAIMS) -> list[ClaimAnswer]:
    """The answer to each of ``claims`` from the verdicts of ``chapter_claims``
    (:func:`attnpaths_book.report.read_claims`)."""
    verdicts = {c.chapter: list(c.verdicts) for c in chapter_claims}
    return [answer(claim, verdicts) for claim in claims]


def _test_cell(chapter: str, verdict: Verdict, counted: Outcome, counter: bool) -> str:
    cell = f"{{doc}}`{chapter}` {escape_markdown(verdict.claim)}"
    outcome = f"**{verdict.outcome.value}**"
    if counter:
        return f"{cell} (counter-test): {outcome}, counts as {counted.value}"
    return f"{cell}: {outcome} ({escape_markdown(verdict.statistic)} = {verdict.value:.3g})"


def scorecard_table(answers) -> str:
    """A Markdown table: the paper's claim, its source, the answer with its counts, and every test and counter-test
    with its outcome (and what a counter-test counts as), each linked to its chapter, then the claim's note."""
    rows = ["| | the paper's claim | source | answer here | tests |", "|---|---|---|---|---|"]
    for a in answers:
        tests = "<br>".join(_test_cell(*counted) for counted in a.counted()) or (
            "none in this run" if a.claim.tests or a.claim.against else "none"
        )
        if a.claim.note:
            tests += "<br>" + a.claim.note
        cells = [a.claim.key, escape_markdown(a.claim.statement), escape_markdown(a.claim.source), a.summary(), tests]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def reproduction_list(answers) -> str:
    """A Markdown list, one item per claim: its answer and, where it is not reproduced in full, what the tests that
    do not count as holding measured (their own words, with the effect a not-significant directional test detects)
    and the claim's caveat; the claim's note in every case."""
    items = []
    for a in answers:
        item = f"- **{a.claim.key}, {a.answer}.** The paper: {escape_markdown(a.claim.statement)}. {a.summary()}."
        failing = [f for f in a.counted() if f[2] is not Outcome.HOLDS]
        if failing:
            item += " Where it does not hold: " + " ".join(
                f"{{doc}}`{chapter}` {'counter-test' if counter else 'claim'} {escape_markdown(v.claim)} "
                f"({v.outcome.value}): {escape_markdown(with_detectable(v.measured, v))}"
                for chapter, v, _, counter in failing
            )
            if a.claim.caveat:
                item += " " + a.claim.caveat
        if a.claim.note:
            item += " " + a.claim.note
        items.append(item)
    return "\n".join(items)


def headline(answers, keys) -> str:
    """Markdown sentences, one per paper claim of ``keys`` (in that order), that state its answer with its counts
    and name the tests that do not count as holding: the book's headline, said from the verdicts only. Raises
    ``ValueError`` naming a key that ``answers`` lacks."""
    by_key = {a.claim.key: a for a in answers}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ValueError(f"keys must name claims among {sorted(by_key)}, got unknown {unknown}")
    sentences = []
    for key in keys:
        a = by_key[key]
        sentence = f"The paper's claim that {escape_markdown(a.claim.statement)} ({key}) is {a.summary()}"
        weak = [
            f"{{doc}}`{chapter}` {escape_markdown(v.claim)} ({v.outcome.value}{', a counter-test' if counter else ''})"
            for chapter, v, counted, counter in a.counted()
            if counted is not Outcome.HOLDS
        ]
        if weak:
            sentence += "; not holding: " + ", ".join(weak)
        sentences.append(sentence + ".")
    return " ".join(sentences)
