"""The verdict type of a claim, its outcomes, the family-wise thresholds, and what the book does with verdicts
(enforce a profile's claims, pick a sentence's words by outcome, count outcomes)."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, fields

from scipy import stats

from .._validation import positive_int, probability


class ClaimViolation(AssertionError):
    """A run does not support a claim that its profile requires; the message names each such claim."""


class Outcome(str, enum.Enum):
    """The three outcomes of a claim's test."""

    HOLDS = "holds"
    NOT_SIGNIFICANT = "not significant"
    CONTRADICTED = "contradicted"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The outcome of one claim's test.

    Attributes:
        claim: identifier, unique within a chapter (e.g. ``"1"``, ``"2 N=10"``, ``"E2a"``).
        statement: the claim in words.
        source: where the claim comes from (e.g. ``"paper, Fig. 2c caption"``, ``"output of the authors'
            code"``, ``"derived in this book"``).
        statistic: name of the measured statistic.
        test: the test and its criterion for each outcome, in words.
        level: the family-wise significance level of the test, or ``None`` for an exact comparison of
            deterministic numbers.
        correction: the multiple-comparison correction applied to reach ``level`` (``"none"`` if a single test).
        value: the measured statistic.
        p_value: p-value of the test in the claim's direction (``None`` when the test reports a z-score only
            or is exact).
        z: standardised statistic (``None`` where it has no meaning).
        outcome: :class:`Outcome`.
        measured: the measured numbers in words.
        inputs: the numbers the test decided on and the name of its constructor (``inputs["test"]``), as plain
            values, so that :func:`rederive` can decide the claim again from a results file; ``None`` for a
            verdict built by hand.
    """

    claim: str
    statement: str
    source: str
    statistic: str
    test: str
    level: float | None
    correction: str
    value: float
    p_value: float | None
    z: float | None
    outcome: Outcome
    measured: str
    inputs: dict | None = None

    def __post_init__(self):
        if not isinstance(self.outcome, Outcome):
            raise ValueError(f"outcome must be an Outcome, got {self.outcome!r}")
        if self.level is not None and not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1) or None, got {self.level!r}")

    @property
    def holds(self) -> bool:
        """Whether the outcome is :attr:`Outcome.HOLDS`."""
        return self.outcome is Outcome.HOLDS

    @property
    def level_text(self) -> str:
        """The level in words, e.g. ``"1 % (Bonferroni over 10 entries)"`` or ``"exact"``."""
        if self.level is None:
            return "exact (no sampling error at fixed inputs)"
        pct = f"{100 * self.level:g} %"
        return pct if self.correction == "none" else f"{pct} ({self.correction})"

    def sentence(self) -> str:
        """One sentence stating the verdict, generated from the fields."""
        evidence = []
        if self.z is not None:
            evidence.append(f"z = {self.z:+.2f}")
        if self.p_value is not None:
            evidence.append(f"p = {self.p_value:.2g}")
        evidence.append(f"level {self.level_text}")
        return (
            f"Claim {self.claim} ({self.statement}): {self.outcome.value}. {self.measured} "
            f"[{self.test}; {', '.join(evidence)}]."
        )

    def to_dict(self) -> dict:
        """Plain values for a results file (the outcome as its text)."""
        out = asdict(self)
        out["outcome"] = self.outcome.value
        return out

    @classmethod
    def from_dict(cls, record: dict) -> Verdict:
        """The verdict stored by :meth:`to_dict` (e.g. read back from a chapter's results file)."""
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in record and n != "inputs"]
        if missing:
            raise ValueError(f"record must hold every field of a verdict, missing {missing}")
        values = {n: record[n] for n in names if n in record}
        try:
            values["outcome"] = Outcome(record["outcome"])
        except ValueError as err:
            raise ValueError(
                f"record['outcome'] must be one of {[o.value for o in Outcome]}, got {record['outcome']!r}"
            ) from err
        return cls(**values)


# --------------------------------------------------------------------------------------------------------
# thresholds


#: The family-wise level of a claim's test unless its chapter says otherwise.
LEVEL = 0.01


def bonferroni_z(num_tests: int, level: float = 0.01, *, two_sided: bool = True) -> float:
    """Gaussian threshold keeping the chance of any false alarm among ``num_tests`` tests below ``level``:
    ``Phi^{-1}(1 - level / (2 num_tests))`` (two-sided) or ``Phi^{-1}(1 - level / num_tests)`` (one-sided)."""
    num_tests = positive_int(num_tests, "num_tests")
    level = probability(level, "level", open_interval=True)
    return float(stats.norm.isf(level / (2 * num_tests if two_sided else num_tests)))


def _correction(num_tests: int, what: str) -> str:
    return "none" if num_tests == 1 else f"Bonferroni over {num_tests} {what}"


def _three_way(p_holds: float, p_contradicts: float, level: float) -> Outcome:
    if p_holds < level:
        return Outcome.HOLDS
    if p_contradicts < level:
        return Outcome.CONTRADICTED
    return Outcome.NOT_SIGNIFICANT


# --------------------------------------------------------------------------------------------------------
# enforcing and showing


def enforce(verdicts, required) -> list[str]:
    """Raise :class:`ClaimViolation` unless every verdict whose claim id is in ``required`` holds.

    Args:
        verdicts: iterable of :class:`Verdict`.
        required: claim ids that must hold in this profile (a profile whose models are too small to test a
            claim leaves it out; its verdict is still computed and shown).

    Returns:
        The required claim ids, in the order given. All failing claims are named in one message.
    """
    verdicts = list(verdicts)
    if any(not isinstance(v, Verdict) for v in verdicts):
        raise ValueError("verdicts must all be Verdict objects")
    by_id = {v.claim: v for v in verdicts}
    if len(by_id) != len(verdicts):
        raise ValueError("claim ids must be unique among the verdicts")
    required = [str(k) for k in required]
    unknown = [k for k in required if k not in by_id]
    if unknown:
        raise ValueError(f"required must name claims among {sorted(by_id)}, got unknown {unknown}")
    failing = [by_id[k] for k in required if not by_id[k].holds]
    if failing:
        raise ClaimViolation("required claims not supported:\n" + "\n".join(v.sentence() for v in failing))
    return required


def by_outcome(verdicts, *, holds: str, not_significant: str, contradicted: str) -> str:
    """The text that states the outcome of ``verdicts`` (one :class:`Verdict` or several, then their weakest
    outcome: contradicted before not significant before holds), so that a sentence of a chapter follows the
    test instead of being written for one run."""
    verdicts = [verdicts] if isinstance(verdicts, Verdict) else list(verdicts)
    if not verdicts or any(not isinstance(v, Verdict) for v in verdicts):
        raise ValueError("verdicts must be a Verdict or a non-empty list of Verdict objects")
    outcomes = {v.outcome for v in verdicts}
    if Outcome.CONTRADICTED in outcomes:
        return contradicted
    if Outcome.NOT_SIGNIFICANT in outcomes:
        return not_significant
    return holds


def outcome_counts(verdicts) -> dict[str, int]:
    """How many verdicts have each outcome: ``{"holds": k1, "not significant": k2, "contradicted": k3}``."""
    counts = {o.value: 0 for o in Outcome}
    for v in verdicts:
        counts[v.outcome.value] += 1
    return counts
