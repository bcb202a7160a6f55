"""The book's Markdown of verdicts (:class:`attnpaths.claims.Verdict`): claims tables whose every cell comes from the
verdicts' fields, sentences escaped for Markdown, the tables of structural checks and of sanity identities.

A directional claim that is "not significant" says little without the size of effect its test could see: its row of
a claims table and its sentence state the effect that the test detects with probability :data:`DETECTION_POWER`
(:func:`detectable_words`), read from the verdict's recorded inputs."""

from __future__ import annotations

import dataclasses

from attnpaths.claims import MIN_POWER, Outcome, Verdict, verdict_detectable_effect

DETECTION_POWER = 0.8
"""The power at which the effect that a not-significant directional test could detect is stated (the usual 80 %)."""


def detectable_words(verdict: Verdict) -> str:
    """For a not-significant directional verdict with a standard error (:func:`attnpaths.claims.verdict_detectable_effect`),
    a sentence stating the true effect its test detects with probability :data:`DETECTION_POWER`, in units of its
    statistic; an empty string for any other verdict."""
    if verdict.outcome is not Outcome.NOT_SIGNIFICANT:
        return ""
    effect = verdict_detectable_effect(verdict, DETECTION_POWER)
    if effect is None:
        return ""
    return (
        f"Its test detects a true {verdict.statistic} of {effect:.3g} or more with probability {DETECTION_POWER:g}; "
        "a smaller effect would likely come out not significant."
    )


def with_detectable(text: str, verdict: Verdict) -> str:
    """``text`` (the verdict's measured numbers or its sentence) followed by :func:`detectable_words` of ``verdict``
    where it has any."""
    words = detectable_words(verdict)
    return f"{text} {words}" if words else text


def claims_table(verdicts) -> str:
    """A Markdown table of verdicts: claim, statement, source, test, level, measured, outcome. The measured cell of
    a not-significant directional claim ends with the effect its test detects (:func:`detectable_words`)."""
    rows = [
        "| claim | statement | source | test and criterion | level | measured | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        measured = with_detectable(v.measured, v)
        cells = [v.claim, v.statement, v.source, v.test, v.level_text, measured, f"**{v.outcome.value}**"]
        rows.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


_MARKDOWN_SPECIAL = "\\*_`$[]<>"


def escape_markdown(text: str) -> str:
    """``text`` with the characters that Markdown or MyST would interpret (emphasis, code, math, links, HTML)
    escaped by a backslash, so that a verdict's words render as written."""
    return "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in str(text))


def markdown_sentence(verdict: Verdict) -> str:
    """:meth:`attnpaths.claims.Verdict.sentence`, followed for a not-significant directional claim by the effect its
    test detects (:func:`detectable_words`), escaped for Markdown."""
    return escape_markdown(with_detectable(verdict.sentence(), verdict))


def markdown_claims_table(verdicts) -> str:
    """:func:`claims_table` of ``verdicts`` with every text field escaped for Markdown (the statistic too: the
    detectable effect names it)."""
    text_fields = ("claim", "statement", "source", "statistic", "test", "measured")
    return claims_table(
        [dataclasses.replace(v, **{f: escape_markdown(getattr(v, f)) for f in text_fields}) for v in verdicts]
    )


def structural_table(verdicts) -> str:
    """A Markdown table of structural checks: verdicts (usually :func:`attnpaths.claims.exact`) of properties that follow from the
    form of the theory once its solver has converged (e.g. any action ``E + N s`` approaches its large-``N``
    limit as ``1/N``), whatever the task or a wrong energy or entropy weight. They check the solver and the
    setup, not the theory against data, so they are shown apart from the claims. Text fields are escaped for
    Markdown."""
    rows = [
        "| check (follows from the theory's form; not a claim) | criterion | measured | outcome |",
        "|---|---|---|---|",
    ]
    for v in verdicts:
        if not isinstance(v, Verdict):
            raise ValueError(f"verdicts must be Verdict objects, got {type(v).__name__}")
        cells = [f"{v.claim}: {v.statement}", v.test, v.measured]
        rows.append(
            "| " + " | ".join(escape_markdown(c).replace("|", "\\|") for c in cells) + f" | **{v.outcome.value}** |"
        )
    return "\n".join(rows)


def sanity_table(rows) -> str:
    """A Markdown table of sanity identities (not claims): ``rows`` of ``(identity, largest deviation, bound)``."""
    lines = ["| identity (not a claim) | largest deviation | asserted bound |", "|---|---|---|"]
    for name, dev, bound in rows:
        lines.append(f"| {name} | {dev:.1e} | {bound:.0e} |")
    return "\n".join(lines)


def diagnostic_words(power: float) -> str:
    """The words that mark an agreement test reported as a diagnostic, with its power for a correct result."""
    return (
        f"Not a claim: were the theory exactly right, this test would hold with probability {power:.2g} only "
        f"(below {MIN_POWER:g}), so it is a diagnostic."
    )


def diagnostics_table(diagnostics) -> str:
    """A Markdown table of the diagnostics ``[(verdict, power)]``: test, power for a correct result, measured,
    outcome; a sentence saying that there are none when the list is empty."""
    if not diagnostics:
        return f"Every agreement test of this run has a power of at least {MIN_POWER:g} for a correct result."
    rows = [
        "| test (a diagnostic, not a claim) | power for a correct result | measured | outcome |",
        "|---|---|---|---|",
    ]
    for v, p in diagnostics:
        cells = [escape_markdown(f"{v.claim}: {v.statement}"), f"{p:.2g}", escape_markdown(v.measured)]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + f" | **{v.outcome.value}** |")
    return "\n".join(rows)


def wrong_theory_sentence(verdicts: dict) -> str:
    """What a claim's test says of the right theory and of each theory with a plausible mistake
    (:func:`attnpaths.experiments.wrong_theories.wrong_theory_verdicts`, ``{mistake: Verdict}`` with ``"none"`` the
    right theory), and whether every mistake is caught (contradicted) while the right theory is not."""
    verdicts = dict(verdicts)
    if "none" not in verdicts or len(verdicts) < 2:
        raise ValueError("verdicts must hold the right theory ('none') and at least one mistake")
    right = verdicts.pop("none")
    parts = [f"{m}, {v.outcome.value} ({v.value:.2f})" for m, v in verdicts.items()]
    caught = [m for m, v in verdicts.items() if v.outcome is Outcome.CONTRADICTED]
    missed = [m for m in verdicts if m not in caught]
    ending = (
        "every mistake is caught"
        if not missed
        else "not caught: " + ", ".join(missed) + " (at this width and these Monte-Carlo errors the test cannot tell "
        "it from the right theory)"
    )
    return (
        f"With the statistic {escape_markdown(right.statistic)} in parentheses: against the right theory the test is "
        f"{right.outcome.value} ({right.value:.2f}); against the mistakes, " + "; ".join(parts) + f": {ending}."
    )
