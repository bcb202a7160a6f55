"""Power checks: how likely a claim's test is to hold when the claim is true (detectable effects of directional
tests, the power of agreement tests for a correct result), for a planned test or a recorded verdict."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from .._validation import as_float64_array, positive_int, probability
from .._validation import probability as _checked_probability  # power_check has an argument probability
from ._tests import _replicates
from ._verdict import LEVEL, Verdict, bonferroni_z


def detectable_effect(se: float, level: float = 0.01, power: float = 0.8, *, num_tests: int = 1) -> float:
    """The power check of :func:`directional_z`: the smallest true effect that its one-sided z-test of standard
    error ``se`` declares to hold with probability ``power``, ``(Phi^{-1}(1 - level / num_tests) +
    Phi^{-1}(power)) se``. An effect well below it is likely to come out "not significant" even when real."""
    level, num_tests = probability(level, "level", open_interval=True), positive_int(num_tests, "num_tests")
    power = probability(power, "power", open_interval=True)
    if not (math.isfinite(se) and se > 0):
        raise ValueError(f"se must be a finite number > 0, got {se!r}")
    return float((stats.norm.isf(level / num_tests) + stats.norm.ppf(power)) * se)


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
    _, n, _, sd = _replicates(replicates, "replicates")
    margin = float(margin)
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    if sd == 0:
        return 1.0
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
