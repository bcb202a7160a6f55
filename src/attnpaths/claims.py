"""Claims as statistical tests: one verdict type for every chapter.

A claim of the book is a statement about a measured quantity together with a test that a wrong result
would fail. Every check of every chapter returns a :class:`Verdict`: what is claimed, where the claim comes
from, the statistic, the test and its criterion, the level with its multiple-comparison correction, the
measured value with its p-value or z-score, and one of three outcomes (:class:`Outcome`):

* ``holds``: the claim is supported at the stated level;
* ``not significant``: the data neither support nor contradict it at that level;
* ``contradicted``: the data contradict it at that level.

Constructors for the tests the book uses:

* :func:`directional_z`: a one-sided z-test of the sign of an estimate with a standard error (e.g. a paired
  accuracy difference on one test set);
* :func:`replicate_t`: a one-sided t-test of the mean of independent replicates (e.g. one difference per
  independently drawn data set);
* :func:`permutation`: a claim decided by two one-sided permutation p-values (greater, smaller);
* :func:`equivalence`: agreement of estimates with references within a stated margin, entry by entry
  (two one-sided tests, TOST, with a Bonferroni correction over the entries);
* :func:`replicate_equivalence`: agreement of the mean of a few independent replicates with a reference
  within a stated margin (TOST with Student's t);
* :func:`exact`: a deterministic inequality between numbers that carry no sampling error at fixed inputs.

Power checks say how likely a test is to hold when its claim is true: :func:`detectable_effect` (the smallest
effect a directional test detects with a stated power), :func:`equivalence_power` (the chance that an agreement
test holds at zero deviation) and :func:`power_check`, which states either of them, for one case or several, as a
:class:`PowerCheck` with its sentence. :func:`agreement_power` reads the power of a recorded agreement verdict for a
correct result from its inputs: below :data:`MIN_POWER` the test is a diagnostic, not a claim;
:func:`verdict_detectable_effect` reads the detectable effect of a recorded directional verdict from its inputs.

:func:`rederive` decides a recorded verdict again from the numbers stored with it (``Verdict.inputs``).
:func:`enforce` turns the verdicts a profile requires into a single :class:`ClaimViolation`;
:func:`by_outcome` picks the words of a sentence by a verdict's outcome; :func:`outcome_counts` counts them. The
book renders verdicts as Markdown tables with its companion (``attnpaths_book.claims_markdown``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, fields

import numpy as np
from scipy import optimize, stats

from ._validation import as_float64_array, positive_int, probability


class ClaimViolation(AssertionError):
    """A run does not support a claim that its profile requires; the message names each such claim."""


class Outcome(str, enum.Enum):
    """The three outcomes of a claim's test."""

    HOLDS = "holds"
    NOT_SIGNIFICANT = "not significant"
    CONTRADICTED = "contradicted"


@dataclass(frozen=True)
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
# constructors


def directional_z(
    claim: str,
    statement: str,
    *,
    source: str,
    statistic: str,
    estimate: float,
    se: float,
    level: float = 0.01,
    num_tests: int = 1,
    measured: str = "",
    df: float | None = None,
) -> Verdict:
    """The claim "``estimate > 0``", tested with a one-sided z-test of standard error ``se``.

    ``z = estimate / se``; holds when ``z > z_c``, contradicted when ``z < -z_c``, with
    ``z_c = Phi^{-1}(1 - level / num_tests)`` (``num_tests`` one-sided tests share the family level). With ``df``
    (degrees of freedom of ``se``, e.g. Welch-Satterthwaite's where few replicates enter it) the statistic is read
    against Student's t with ``df`` degrees of freedom instead of the normal distribution.
    """
    level, num_tests = probability(level, "level", open_interval=True), positive_int(num_tests, "num_tests")
    estimate = float(estimate)
    if not (math.isfinite(se) and se > 0):
        raise ValueError(f"se must be a finite number > 0, got {se!r}")
    if df is not None and not (math.isfinite(df) and df > 0):
        raise ValueError(f"df must be a finite number > 0 or None, got {df!r}")
    z = estimate / float(se)
    alpha = level / num_tests
    law = stats.norm if df is None else stats.t(float(df))
    outcome = _three_way(float(law.sf(z)), float(law.cdf(z)), alpha)
    name = "z-test" if df is None else f"t-test ({float(df):.1f} degrees of freedom)"
    test = (
        f"one-sided {name} of {statistic} > 0 (standard error {se:.3g}): holds if the statistic > "
        f"{law.isf(alpha):.2f}, contradicted if < -{law.isf(alpha):.2f}"
        if df is not None
        else f"one-sided z-test of {statistic} > 0 (standard error {se:.3g}): holds if z > {stats.norm.isf(alpha):.2f}, "
        f"contradicted if z < -{stats.norm.isf(alpha):.2f}"
    )
    inputs = dict(test="directional_z", estimate=estimate, se=float(se), level=level, num_tests=num_tests)
    if df is not None:
        inputs["df"] = float(df)
    return Verdict(
        claim,
        statement,
        source,
        statistic,
        test,
        level,
        _correction(num_tests, "tests"),
        estimate,
        float(law.sf(z)),
        z,
        outcome,
        measured or f"{statistic} = {estimate:+.4g}.",
        inputs=inputs,
    )


def detectable_effect(se: float, level: float = 0.01, power: float = 0.8, *, num_tests: int = 1) -> float:
    """The power check of :func:`directional_z`: the smallest true effect that its one-sided z-test of standard
    error ``se`` declares to hold with probability ``power``, ``(Phi^{-1}(1 - level / num_tests) +
    Phi^{-1}(power)) se``. An effect well below it is likely to come out "not significant" even when real."""
    level, num_tests = probability(level, "level", open_interval=True), positive_int(num_tests, "num_tests")
    power = probability(power, "power", open_interval=True)
    if not (math.isfinite(se) and se > 0):
        raise ValueError(f"se must be a finite number > 0, got {se!r}")
    return float((stats.norm.isf(level / num_tests) + stats.norm.ppf(power)) * se)


def replicate_t(
    claim: str,
    statement: str,
    *,
    source: str,
    statistic: str,
    differences,
    level: float = 0.01,
    num_tests: int = 1,
    measured: str = "",
) -> Verdict:
    """The claim "the mean of ``differences`` is > 0", tested with a one-sided one-sample t-test over
    independent replicates (``differences``: ``[n]``, ``n >= 2``, e.g. one per independently drawn data set).

    Holds when the one-sided p-value of "mean > 0" is below ``level / num_tests``; contradicted when that of
    "mean < 0" is. Identical replicates (zero spread) are decided by their sign.
    """
    level, num_tests = probability(level, "level", open_interval=True), positive_int(num_tests, "num_tests")
    d = as_float64_array(differences, "differences").ravel()
    if d.size < 2:
        raise ValueError(f"differences must hold at least 2 replicates, got {d.size}")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    n = d.size
    if sd == 0:
        t = math.copysign(math.inf, mean) if mean != 0 else 0.0
    else:
        t = mean / (sd / math.sqrt(n))
    p_greater, p_less = float(stats.t.sf(t, n - 1)), float(stats.t.cdf(t, n - 1))
    alpha = level / num_tests
    outcome = _three_way(p_greater, p_less, alpha)
    test = (
        f"one-sided t-test over {n} independent replicates of mean {statistic} > 0: holds if p < {alpha:.3g}, "
        f"contradicted if the opposite one-sided p < {alpha:.3g}"
    )
    return Verdict(
        claim,
        statement,
        source,
        statistic,
        test,
        level,
        _correction(num_tests, "tests"),
        mean,
        p_greater,
        t if math.isfinite(t) else None,
        outcome,
        measured or f"mean {statistic} = {mean:+.4g} (sd {sd:.3g} over {n} replicates).",
        inputs=dict(test="replicate_t", differences=d.tolist(), level=level, num_tests=num_tests),
    )


def permutation(
    claim: str,
    statement: str,
    *,
    source: str,
    statistic: str,
    value: float,
    p_greater: float,
    p_smaller: float,
    test: str,
    level: float = 0.05,
    measured: str = "",
) -> Verdict:
    """A claim decided by permutation p-values: holds when ``p_greater`` (the chance, under the null, of a
    statistic at least as large as ``value``) is below ``level``; contradicted when ``p_smaller`` is."""
    level = probability(level, "level", open_interval=True)
    for name, p in (("p_greater", p_greater), ("p_smaller", p_smaller)):
        probability(p, name)
    outcome = _three_way(float(p_greater), float(p_smaller), level)
    return Verdict(
        claim,
        statement,
        source,
        statistic,
        f"{test}: holds if p < {level:g}, contradicted if the opposite p < {level:g}",
        level,
        "none",
        float(value),
        float(p_greater),
        None,
        outcome,
        measured or f"{statistic} = {value:+.4g}.",
        inputs=dict(
            test="permutation",
            value=float(value),
            p_greater=float(p_greater),
            p_smaller=float(p_smaller),
            test_text=test,
            level=level,
        ),
    )


def monte_carlo_draws(level: float, *, relative_error: float = 0.1) -> int:
    """The number ``m`` of null draws that a Monte-Carlo p-value needs at ``level``: its standard error at
    ``p = level``, ``sqrt(level (1 - level) / m)``, is at most ``relative_error * level``, so another set of draws
    moves a p-value at the threshold by a tenth of the level, not across it (9 900 draws at 1 %)::

        m = ceil((1 - level) / (level * relative_error^2)).
    """
    level = probability(level, "level", open_interval=True)
    relative_error = probability(relative_error, "relative_error", open_interval=True)
    return math.ceil((1 - level) / (level * relative_error**2) - 1e-9)


def permutation_p_values(observed: float, null, *, level: float | None = None) -> tuple[float, float]:
    """Monte-Carlo permutation p-values ``((1 + #{null >= observed}) / (1 + m), (1 + #{null <= observed}) / (1 + m))``
    of an observed statistic against ``m`` draws of its null distribution (the observed value counted once,
    so a p-value is never 0).

    With ``level``, ``null`` must hold at least :func:`monte_carlo_draws` ``(level)`` draws: a verdict at that
    level is then not decided by the Monte-Carlo error of its p-value.
    """
    null = as_float64_array(null, "null").ravel()
    if null.size < 1:
        raise ValueError("null must hold at least one draw")
    if level is not None and null.size < monte_carlo_draws(level):
        raise ValueError(
            f"null must hold at least {monte_carlo_draws(level)} draws for a p-value at level {level:g} "
            f"(its Monte-Carlo standard error below a tenth of the level), got {null.size}"
        )
    observed = float(observed)
    m = null.size
    return (1 + int(np.sum(null >= observed))) / (1 + m), (1 + int(np.sum(null <= observed))) / (1 + m)


def equivalence(
    claim: str,
    statement: str,
    *,
    source: str,
    statistic: str,
    deviation,
    se,
    margin,
    level: float = 0.01,
    measured: str = "",
) -> Verdict:
    """Agreement within a margin, entry by entry (two one-sided tests with a Bonferroni correction).

    Args:
        deviation: ``[...]`` estimate minus reference, one value per compared entry.
        se: ``[...]`` (or scalar) standard errors of ``deviation`` (Monte-Carlo errors; > 0).
        margin: ``[...]`` (or scalar) the largest deviation that counts as agreement (> 0).

    With ``z_c = Phi^{-1}(1 - level / m)`` over the ``m`` entries: holds when every entry's interval
    ``|deviation| + z_c se`` lies inside its margin; contradicted when some entry's ``|deviation| - z_c se``
    exceeds its margin; not significant otherwise. The statistic is the largest ``|deviation| / margin``; ``z``
    is the largest ``(|deviation| - margin) / se``.
    """
    level = probability(level, "level", open_interval=True)
    d = as_float64_array(deviation, "deviation")
    s = np.broadcast_to(as_float64_array(se, "se"), d.shape)
    m = np.broadcast_to(as_float64_array(margin, "margin"), d.shape)
    if d.size < 1:
        raise ValueError("deviation must hold at least one entry")
    if np.any(s <= 0):
        raise ValueError("se must be > 0 for every entry")
    if np.any(m <= 0):
        raise ValueError("margin must be > 0 for every entry")
    zc = bonferroni_z(d.size, level, two_sided=False)
    excess = np.abs(d) - m
    if np.any(excess - zc * s > 0):
        outcome = Outcome.CONTRADICTED
    elif np.all(excess + zc * s < 0):
        outcome = Outcome.HOLDS
    else:
        outcome = Outcome.NOT_SIGNIFICANT
    ratio = np.abs(d) / m
    test = (
        f"two one-sided tests per entry against the margin, z = {zc:.2f}: holds if every |deviation| + z se "
        f"< margin, contradicted if some |deviation| - z se > margin"
    )
    return Verdict(
        claim,
        statement,
        source,
        statistic,
        test,
        level,
        _correction(d.size, "entries"),
        float(ratio.max()),
        None,
        float((excess / s).max()),
        outcome,
        measured or f"largest |deviation| / margin = {ratio.max():.3g}.",
        inputs=dict(
            test="equivalence",
            deviation=d.ravel().tolist(),
            se=s.ravel().tolist(),
            margin=m.ravel().tolist(),
            level=level,
        ),
    )


def equivalence_power(se, margin, level: float = 0.01) -> float:
    """The power check of :func:`equivalence`: the probability that it declares agreement when every true
    deviation is 0 and the estimates are independent Gaussians of standard errors ``se``,
    ``prod_i max(0, 2 Phi(margin_i / se_i - z_c) - 1)`` with its threshold ``z_c`` over the ``m`` entries.

    Near 0, the margins are too narrow for the Monte-Carlo errors: "not significant" is then the likely outcome
    even of a correct result, and more draws (smaller ``se``) are needed before the claim can hold.

    Args:
        se, margin: ``[m]`` (or scalar, broadcast) standard errors and margins of the compared entries (> 0).
    """
    level = probability(level, "level", open_interval=True)
    s = as_float64_array(se, "se")
    m = as_float64_array(margin, "margin")
    s, m = np.broadcast_arrays(s, m)
    if s.size < 1:
        raise ValueError("se must hold at least one entry")
    if np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("se must be finite and > 0 for every entry")
    if np.any(m <= 0):
        raise ValueError("margin must be > 0 for every entry")
    zc = bonferroni_z(s.size, level, two_sided=False)
    return float(np.prod(np.clip(2 * stats.norm.cdf(m / s - zc) - 1, 0.0, 1.0)))


@dataclass(frozen=True)
class PowerCheck:
    """The power check of one claim over one or several cases (networks, sampled widths, ...): how likely its
    test is to say "holds" when the claim is true. It tells how to read a "not significant" outcome: from a test
    with little power (or a large detectable effect) it says little, from a test with much power it says that the
    effect, if any, is smaller than the test can see. Built by :func:`power_check`.

    Attributes:
        claim: the claim's identifier.
        cases: ``[k]`` the names of the cases (``("",)`` for a single unnamed one).
        power: ``[k]`` the probability that the test says "holds": at the effect ``detectable`` for a
            directional test (the stated power, the same in every case); for an agreement test, when every true
            deviation is 0, as computed for its test (e.g. :func:`equivalence_power`).
        se: ``[k]`` the standard errors of a directional test's estimate (``None`` for an agreement test).
        detectable: ``[k]`` the smallest true effect that the directional test declares to hold with probability
            ``power`` (:func:`detectable_effect`; ``None`` for an agreement test).
        estimate: ``[k]`` the measured effects, compared with ``detectable`` in the sentence, or ``None``.
        level: the family-wise level of the test; num_tests: the one-sided tests that share it.
        condition: where the check applies, in words (e.g. ``"on the authors' test points"`` for a directional
            test, ``"were the samples exactly right at this run's Monte-Carlo errors"`` for an agreement test).
        effect: the effect in words, with its article (e.g. ``"an advantage"``).
        scale, unit: how the sentence writes a standard error or effect ``x``: ``x * scale`` followed by ``unit``.
    """

    claim: str
    cases: tuple[str, ...]
    power: tuple[float, ...]
    se: tuple[float, ...] | None
    detectable: tuple[float, ...] | None
    estimate: tuple[float, ...] | None
    level: float
    num_tests: int
    condition: str
    effect: str
    scale: float
    unit: str

    @property
    def directional(self) -> bool:
        """Whether this is the check of a directional test (``se`` and ``detectable`` given)."""
        return self.se is not None

    def _effects(self, values) -> list[str]:
        unit = f" {self.unit}" if self.unit else ""
        return [f"{v * self.scale:#.3g}".rstrip(".") + unit for v in values]

    def _listing(self, texts) -> str:
        items = [text if not case else f"{text} ({case})" for text, case in zip(texts, self.cases)]
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    @property
    def listing(self) -> str:
        """The check's numbers with their cases, e.g. ``"0.93 (4 paths) and 0.88 (2 paths)"``: the detectable
        effects of a directional test, the probabilities of holding of an agreement test."""
        if self.directional:
            return self._listing(self._effects(self.detectable))
        return self._listing(f"{p:.2f}" for p in self.power)

    @property
    def sentence(self) -> str:
        """The check in one sentence (two with ``estimate``), generated from the fields."""
        if not self.directional:
            where = f" {self.condition}" if self.condition else ""
            return f"The power check of claim {self.claim}, the probability that it holds{where}, is {self.listing}."
        where = f", {self.condition}" if self.condition else ""
        text = (
            f"The power check of claim {self.claim}{where}: its standard error is "
            f"{self._listing(self._effects(self.se))}, so its test declares {self.effect} of {self.listing} or "
            f"more to hold with {100 * self.power[0]:g} % power."
        )
        if self.estimate is None:
            return text
        sides = ["above" if e >= d else "below" for e, d in zip(self.estimate, self.detectable)]
        measured = self._effects(self.estimate)
        if len(self.cases) == 1:
            return text + f" The measured value, {measured[0]}, lies {sides[0]} it."
        return (
            text
            + " Measured: "
            + "; ".join(f"{m} ({case}), {side} it" for m, case, side in zip(measured, self.cases, sides))
            + "."
        )


def _checked_probability(value, name: str, *, open_interval: bool = False) -> float:
    """:func:`~attnpaths._validation.probability`, under a name that :func:`power_check`'s argument does not hide."""
    return probability(value, name, open_interval=open_interval)


def _by_case(values, name: str) -> dict[str, float]:
    """``values`` (a number, or a mapping ``{case: number}``) as ``{case: float}``; a number is the unnamed case."""
    if isinstance(values, dict):
        if not values or any(not isinstance(k, str) for k in values):
            raise ValueError(f"{name} must be a number or a non-empty dict {{case name: number}}, got {values!r}")
        items = values
    else:
        items = {"": values}
    out = {}
    for case, value in items.items():
        try:
            out[case] = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must hold numbers, got {value!r} for case {case!r}") from None
        if not math.isfinite(out[case]):
            raise ValueError(f"{name} must hold finite numbers, got {value!r} for case {case!r}")
    return out


def power_check(
    claim: str,
    *,
    se=None,
    probability=None,
    condition: str = "",
    level: float = LEVEL,
    num_tests: int = 1,
    power: float = 0.8,
    estimate=None,
    effect: str = "an effect",
    scale: float = 1.0,
    unit: str = "",
) -> PowerCheck:
    """The power check of a claim and its sentence (:class:`PowerCheck`), for one case or several.

    Give exactly one of:

    * ``se``: the standard error of a directional test's estimate (:func:`directional_z`), a number or
      ``{case: se}`` (``[k]`` cases, each ``> 0``). The detectable effect of each case is
      ``(Phi^{-1}(1 - level / num_tests) + Phi^{-1}(power)) se``: a true effect ``d`` makes ``z`` a Gaussian of
      mean ``d / se`` and unit variance, which exceeds the threshold ``Phi^{-1}(1 - level / num_tests)`` with
      probability ``Phi(d / se - Phi^{-1}(1 - level / num_tests))``, that is ``power`` at the detectable effect.
      ``estimate`` (the same cases) adds the measured effects to the sentence, each above or below its
      detectable effect.
    * ``probability``: the probability that an agreement test holds when every true deviation is 0, a number or
      ``{case: probability}`` (each in [0, 1]; e.g. :func:`equivalence_power` at the test's standard errors and
      margins, or a chapter's own power function). It is stated as it is.

    Args:
        claim: the claim's identifier, as in its :class:`Verdict`.
        condition, effect, scale, unit: words and units of the sentence (see :class:`PowerCheck`).
        level, num_tests, power: the directional test's family-wise level, the one-sided tests that share it
            and the stated power.

    Raises ``ValueError`` naming the argument that is missing, doubled or out of range.
    """
    if (se is None) == (probability is None):
        raise ValueError(
            "give exactly one of se (the check of a directional test) and probability (the check of an "
            f"agreement test), got se={se!r}, probability={probability!r}"
        )
    if not isinstance(claim, str) or not claim:
        raise ValueError(f"claim must be a non-empty string, got {claim!r}")
    level, num_tests = _checked_probability(level, "level", open_interval=True), positive_int(num_tests, "num_tests")
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
    words = dict(
        claim=claim,
        level=level,
        num_tests=num_tests,
        condition=str(condition),
        effect=str(effect),
        scale=scale,
        unit=str(unit),
    )
    if probability is not None:
        if estimate is not None:
            raise ValueError(
                "estimate must be None for an agreement test (probability given): it has no detectable "
                "effect to compare with"
            )
        p = {
            case: _checked_probability(v, f"probability[{case!r}]" if case else "probability")
            for case, v in _by_case(probability, "probability").items()
        }
        return PowerCheck(cases=tuple(p), power=tuple(p.values()), se=None, detectable=None, estimate=None, **words)
    power = _checked_probability(power, "power", open_interval=True)
    s = _by_case(se, "se")
    if any(v <= 0 for v in s.values()):
        raise ValueError(f"se must be > 0 in every case, got {s!r}")
    detectable = {case: detectable_effect(v, level, power, num_tests=num_tests) for case, v in s.items()}
    measured = None
    if estimate is not None:
        e = _by_case(estimate, "estimate")
        if list(e) != list(s):
            raise ValueError(f"estimate must name the cases of se, {list(s)}, got {list(e)}")
        measured = tuple(e.values())
    return PowerCheck(
        cases=tuple(s),
        power=(power,) * len(s),
        se=tuple(s.values()),
        detectable=tuple(detectable.values()),
        estimate=measured,
        **words,
    )


def replicate_equivalence(
    claim: str,
    statement: str,
    *,
    source: str,
    statistic: str,
    replicates,
    reference: float,
    margin: float,
    level: float = 0.01,
    measured: str = "",
) -> Verdict:
    """Agreement of the mean of independent replicates with ``reference`` within ``margin``: two one-sided
    t-tests (TOST) with ``n - 1`` degrees of freedom, for claims measured on a few replicates (e.g. one value
    per independently drawn network), where :func:`equivalence`'s Gaussian threshold would be too lenient.

    With ``t_c = t_{n-1}^{-1}(1 - level)`` and ``se = sd / sqrt(n)``: holds when
    ``|mean - reference| + t_c se < margin``; contradicted when ``|mean - reference| - t_c se > margin``; not
    significant otherwise. Identical replicates (zero spread) are decided by ``|mean - reference|`` against
    ``margin``. The statistic is ``|mean - reference| / margin``; ``z`` is the t statistic
    ``(|mean - reference| - margin) / se``.

    Args:
        replicates: ``[n]``, ``n >= 2``.
        reference: the value the mean is claimed to equal; margin: the largest deviation that counts as
            agreement (> 0).
    """
    level = probability(level, "level", open_interval=True)
    r = as_float64_array(replicates, "replicates").ravel()
    if r.size < 2:
        raise ValueError(f"replicates must hold at least 2 values, got {r.size}")
    reference = float(as_float64_array(reference, "reference"))
    margin = float(as_float64_array(margin, "margin"))
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    n = r.size
    mean, sd = float(r.mean()), float(r.std(ddof=1))
    dev = abs(mean - reference)
    tc = float(stats.t.isf(level, n - 1))
    if sd == 0:
        p_holds, p_contra, t = (
            (0.0, 1.0, None) if dev < margin else ((1.0, 0.0, None) if dev > margin else (1.0, 1.0, None))
        )
    else:
        se = sd / math.sqrt(n)
        t = (dev - margin) / se
        p_holds, p_contra = float(stats.t.cdf(t, n - 1)), float(stats.t.sf(t, n - 1))
    outcome = _three_way(p_holds, p_contra, level)
    test = (
        f"two one-sided t-tests over {n} independent replicates against the margin {margin:.3g}, t = {tc:.2f}: "
        f"holds if |mean - {reference:.4g}| + t se < margin, contradicted if |mean - {reference:.4g}| - t se > margin"
    )
    return Verdict(
        claim,
        statement,
        source,
        statistic,
        test,
        level,
        "none",
        dev / margin,
        p_holds,
        t,
        outcome,
        measured or f"mean {statistic} = {mean:.4g} (sd {sd:.3g} over {n} replicates; reference {reference:.4g}).",
        inputs=dict(
            test="replicate_equivalence", replicates=r.tolist(), reference=reference, margin=margin, level=level
        ),
    )


def exact(
    claim: str,
    statement: str,
    *,
    source: str,
    statistic: str,
    value: float,
    criterion: str,
    satisfied: bool,
    measured: str = "",
) -> Verdict:
    """A deterministic claim: numbers computed without sampling error at fixed inputs (e.g. the theory at
    a fixed data set). Holds when ``satisfied``, contradicted otherwise; ``level`` is ``None``."""
    outcome = Outcome.HOLDS if satisfied else Outcome.CONTRADICTED
    return Verdict(
        claim,
        statement,
        source,
        statistic,
        f"exact comparison: holds if {criterion}",
        None,
        "none",
        float(value),
        None,
        None,
        outcome,
        measured or f"{statistic} = {value:+.4g}.",
        inputs=dict(test="exact", value=float(value), criterion=criterion, satisfied=bool(satisfied)),
    )


def all_of(claim: str, statement: str, *, source: str, parts, measured: str = "") -> Verdict:
    """A claim made of ``k`` parts that must all hold: holds when every part holds, contradicted when any part
    is contradicted, not significant otherwise. The statistic, p-value and z are those of the weakest part (the
    largest p-value among the parts that do not hold, else among all).

    The parts are either all exact comparisons (:func:`exact`; the claim is then exact too) or all tests built
    by :func:`directional_z` or :func:`replicate_t` with ``num_tests=k`` at one family level, each thus at
    ``level / k`` (Bonferroni); any other mix raises ``ValueError``, since the family level would not hold.
    """
    parts = list(parts)
    if not parts or any(not isinstance(p, Verdict) for p in parts):
        raise ValueError("parts must be a non-empty list of Verdict objects")
    levels = {p.level for p in parts}
    if len(levels) != 1:
        raise ValueError(f"parts must share one family level, got {sorted(map(str, levels))}")
    k = len(parts)
    kinds = {(p.inputs or {}).get("test") for p in parts}
    if kinds == {"exact"}:
        correction = "none (exact parts)"
    elif kinds <= {"directional_z", "replicate_t"} and all(p.inputs["num_tests"] == k for p in parts):
        correction = "none" if k == 1 else f"Bonferroni over {k} parts"
    else:
        raise ValueError(
            f"parts must be {k} exact comparisons, or {k} z- or t-tests built with num_tests={k}, "
            "got "
            + ", ".join(
                f"{p.claim}: {(p.inputs or {}).get('test')} with num_tests={(p.inputs or {}).get('num_tests')}"
                for p in parts
            )
        )
    if any(p.outcome is Outcome.CONTRADICTED for p in parts):
        outcome = Outcome.CONTRADICTED
    elif all(p.holds for p in parts):
        outcome = Outcome.HOLDS
    else:
        outcome = Outcome.NOT_SIGNIFICANT
    candidates = [p for p in parts if not p.holds] or parts
    weakest = max(candidates, key=lambda p: -math.inf if p.p_value is None else p.p_value)
    test = "every part holds: " + "; ".join(f"({i + 1}) {p.statistic}: {p.test}" for i, p in enumerate(parts))
    return Verdict(
        claim,
        statement,
        source,
        weakest.statistic,
        test,
        parts[0].level,
        correction,
        weakest.value,
        weakest.p_value,
        weakest.z,
        outcome,
        measured or " ".join(p.measured for p in parts),
        inputs=dict(test="all_of", parts=[p.to_dict() for p in parts]),
    )


MIN_POWER = 0.8
"""The smallest power for a correct result at which an agreement test is reported as a claim. Below it the test
would most likely fail even were the theory exactly right, so its outcome says little about the theory, and it
is reported as a diagnostic with its power (:func:`agreement_power`)."""


def replicate_equivalence_power(replicates, margin: float, level: float = 0.01) -> float:
    """The power check of :func:`replicate_equivalence`: the probability that it declares agreement when the true
    mean equals the reference, at the replicates' spread, approximated with the standard error ``se = sd /
    sqrt(n)`` of this run in place of the unknown one and the t distribution for the mean,
    ``max(0, 2 F_{n-1}(margin / se - t_c) - 1)`` with ``t_c = t_{n-1}^{-1}(1 - level)``; 1 for identical
    replicates (they are decided by their deviation alone).

    Args:
        replicates: ``[n]``, ``n >= 2``; margin: the agreement margin (> 0).
    """
    level = probability(level, "level", open_interval=True)
    r = as_float64_array(replicates, "replicates").ravel()
    if r.size < 2:
        raise ValueError(f"replicates must hold at least 2 values, got {r.size}")
    margin = float(margin)
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    sd = float(r.std(ddof=1))
    if sd == 0:
        return 1.0
    n = r.size
    se = sd / math.sqrt(n)
    return float(max(0.0, 2 * stats.t.cdf(margin / se - stats.t.isf(level, n - 1), n - 1) - 1))


def agreement_power(verdict: Verdict) -> float | None:
    """The power of an agreement verdict for a correct result, from its recorded inputs: the probability that its
    test holds were every true deviation zero, at the standard errors (or the spread of the replicates) it was
    decided with (:func:`equivalence_power`, :func:`replicate_equivalence_power`; for :func:`all_of`, the product
    over its agreement parts). ``None`` for a verdict that is not an agreement test (directional, permutation and
    exact tests state a detectable effect or have no sampling error instead).
    """
    if not isinstance(verdict, Verdict):
        raise ValueError(f"verdict must be a Verdict, got {type(verdict).__name__}")
    inputs = verdict.inputs or {}
    kind = inputs.get("test")
    if kind == "equivalence":
        return equivalence_power(inputs["se"], inputs["margin"], inputs["level"])
    if kind == "replicate_equivalence":
        return replicate_equivalence_power(inputs["replicates"], inputs["margin"], inputs["level"])
    if kind == "all_of":
        powers = [agreement_power(Verdict.from_dict(p)) for p in inputs["parts"]]
        powers = [p for p in powers if p is not None]
        return float(np.prod(powers)) if powers else None
    return None


def verdict_detectable_effect(verdict: Verdict, power: float = 0.8) -> float | None:
    """The power check of a recorded directional verdict, from its inputs: the smallest true effect, in units of its
    statistic, that its one-sided test declares to hold with probability ``power``.

    For :func:`directional_z` without degrees of freedom this is :func:`detectable_effect`, ``(Phi^{-1}(1 - level /
    num_tests) + Phi^{-1}(power)) se``. For a test read against Student's t with ``df`` degrees of freedom
    (:func:`directional_z` with ``df``; :func:`replicate_t` over ``n`` replicates, ``df = n - 1`` and ``se`` the
    replicates' ``sd / sqrt(n)``) it is ``delta se``, with ``delta`` the noncentrality at which a noncentral t
    exceeds the test's threshold with probability ``power`` (the replicates' spread taken as the true one).

    ``None`` for a verdict that is not a directional test with a standard error (agreement, permutation, exact and
    combined tests) and for replicates without spread (decided by their sign).
    """
    if not isinstance(verdict, Verdict):
        raise ValueError(f"verdict must be a Verdict, got {type(verdict).__name__}")
    power = probability(power, "power", open_interval=True)
    inputs = verdict.inputs or {}
    kind = inputs.get("test")
    if kind == "directional_z":
        se, df = inputs["se"], inputs.get("df")
    elif kind == "replicate_t":
        d = np.asarray(inputs["differences"], dtype=np.float64)
        se, df = float(d.std(ddof=1)) / math.sqrt(d.size), d.size - 1
    else:
        return None
    if not se > 0:
        return None
    alpha = inputs["level"] / inputs["num_tests"]
    if df is None:
        return detectable_effect(se, inputs["level"], power, num_tests=inputs["num_tests"])
    if not power > alpha:
        raise ValueError(
            f"power must exceed the test's level {alpha:g} (a true effect of 0 holds that often), got {power}"
        )
    threshold = float(stats.t.isf(alpha, df))
    # the noncentral t's chance to exceed the threshold grows with the noncentrality from below alpha towards 1
    upper = threshold + stats.norm.ppf(power) + 1.0
    while stats.nct.sf(threshold, df, upper) < power:
        upper *= 2
    delta = optimize.brentq(lambda nc: stats.nct.sf(threshold, df, nc) - power, 0.0, upper, xtol=1e-10)
    return float(delta * se)


def rederive(verdict: Verdict) -> Verdict:
    """The verdict decided again from its recorded ``inputs`` by the constructor that built it (the words are
    kept; the outcome, statistic, p-value and z are recomputed). A results file's verdict that does not come out
    the same was not decided by this module's tests on the numbers recorded beside it.

    Raises ``ValueError`` for a verdict without inputs or with an unknown constructor.
    """
    if not isinstance(verdict, Verdict):
        raise ValueError(f"verdict must be a Verdict, got {type(verdict).__name__}")
    inputs = dict(verdict.inputs or {})
    kind = inputs.pop("test", None)
    words = dict(source=verdict.source, statistic=verdict.statistic, measured=verdict.measured)
    if kind == "all_of":
        parts = [rederive(Verdict.from_dict(p)) for p in inputs["parts"]]
        words.pop("statistic")
        return all_of(verdict.claim, verdict.statement, parts=parts, **words)
    if kind == "permutation":
        inputs["test"] = inputs.pop("test_text")
    constructors = {
        "directional_z": directional_z,
        "replicate_t": replicate_t,
        "permutation": permutation,
        "equivalence": equivalence,
        "replicate_equivalence": replicate_equivalence,
        "exact": exact,
    }
    if kind not in constructors:
        raise ValueError(
            f"verdict.inputs must name one of {sorted(constructors) + ['all_of']} as its test, got "
            f"{kind!r} (claim {verdict.claim!r})"
        )
    return constructors[kind](verdict.claim, verdict.statement, **words, **inputs)


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
