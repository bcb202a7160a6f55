"""The constructors of verdicts: one per statistical test the book uses, their combination, and
:func:`rederive`, which decides a recorded verdict again from its inputs."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .._validation import as_float64_array, positive_int, probability
from ._verdict import Outcome, Verdict, _correction, _three_way, bonferroni_z

# --------------------------------------------------------------------------------------------------------
# constructors


def _verdict(words: tuple, measured: str, *, correction: str = "none", p_value=None, z=None, **fields) -> Verdict:
    """The verdict of the claim ``words = (claim, statement, source, statistic)``."""
    words = dict(zip(("claim", "statement", "source", "statistic"), words))
    return Verdict(**words, correction=correction, p_value=p_value, z=z, measured=measured, **fields)


def _replicates(values, name: str) -> tuple[np.ndarray, int, float, float]:
    """``values`` as float64 ``[n]`` independent replicates (``n >= 2``), with ``n``, their mean and their sample
    standard deviation (``n - 1`` degrees of freedom): what the t-tests over replicates read."""
    r = as_float64_array(values, name).ravel()
    if r.size < 2:
        raise ValueError(f"{name} must hold at least 2 values (one per independent replicate), got {r.size}")
    return r, r.size, float(r.mean()), float(r.std(ddof=1))


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
    name, above, below = (
        ("z-test", "z", "z ") if df is None else (f"t-test ({df:.1f} degrees of freedom)", "the statistic", "")
    )
    test = (
        f"one-sided {name} of {statistic} > 0 (standard error {se:.3g}): holds if {above} > {law.isf(alpha):.2f}, "
        f"contradicted if {below}< -{law.isf(alpha):.2f}"
    )
    inputs = dict(test="directional_z", estimate=estimate, se=float(se), level=level, num_tests=num_tests)
    if df is not None:
        inputs["df"] = float(df)
    return _verdict(
        (claim, statement, source, statistic),
        measured or f"{statistic} = {estimate:+.4g}.",
        test=test,
        level=level,
        correction=_correction(num_tests, "tests"),
        value=estimate,
        p_value=float(law.sf(z)),
        z=z,
        outcome=outcome,
        inputs=inputs,
    )


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
    d, n, mean, sd = _replicates(differences, "differences")
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
    return _verdict(
        (claim, statement, source, statistic),
        measured or f"mean {statistic} = {mean:+.4g} (sd {sd:.3g} over {n} replicates).",
        test=test,
        level=level,
        correction=_correction(num_tests, "tests"),
        value=mean,
        p_value=p_greater,
        z=t if math.isfinite(t) else None,
        outcome=outcome,
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
    return _verdict(
        (claim, statement, source, statistic),
        measured or f"{statistic} = {value:+.4g}.",
        test=f"{test}: holds if p < {level:g}, contradicted if the opposite p < {level:g}",
        level=level,
        value=float(value),
        p_value=float(p_greater),
        outcome=outcome,
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
    return _verdict(
        (claim, statement, source, statistic),
        measured or f"largest |deviation| / margin = {ratio.max():.3g}.",
        test=test,
        level=level,
        correction=_correction(d.size, "entries"),
        value=float(ratio.max()),
        z=float((excess / s).max()),
        outcome=outcome,
        inputs=dict(
            test="equivalence",
            deviation=d.ravel().tolist(),
            se=s.ravel().tolist(),
            margin=m.ravel().tolist(),
            level=level,
        ),
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
    r, n, mean, sd = _replicates(replicates, "replicates")
    reference = float(as_float64_array(reference, "reference"))
    margin = float(as_float64_array(margin, "margin"))
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
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
    return _verdict(
        (claim, statement, source, statistic),
        measured or f"mean {statistic} = {mean:.4g} (sd {sd:.3g} over {n} replicates; reference {reference:.4g}).",
        test=test,
        level=level,
        value=dev / margin,
        p_value=p_holds,
        z=t,
        outcome=outcome,
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
    return _verdict(
        (claim, statement, source, statistic),
        measured or f"{statistic} = {value:+.4g}.",
        test=f"exact comparison: holds if {criterion}",
        level=None,
        value=float(value),
        outcome=outcome,
        inputs=dict(test="exact", value=float(value), criterion=criterion, satisfied=bool(satisfied)),
    )


def positive_difference(
    claim: str, statement: str, *, source: str, statistic: str, differences, level: float = 0.01, measured: str = ""
) -> Verdict:
    """The claim "``differences > 0``", measured on one data set or on several drawn independently.

    Args:
        differences: a scalar (one data set: numbers without sampling error at fixed inputs, e.g. the theory
            solved on it), decided by :func:`exact` with the criterion ``statistic > 0``; or ``[n]``, ``n >= 2``
            (one per data set), decided by :func:`replicate_t` at ``level``.
    """
    d = as_float64_array(differences, "differences")
    if d.ndim:
        return replicate_t(
            claim, statement, source=source, statistic=statistic, differences=d, level=level, measured=measured
        )
    value = float(d)
    return exact(
        claim,
        statement,
        source=source,
        statistic=statistic,
        value=value,
        criterion=f"{statistic} > 0",
        satisfied=value > 0,
        measured=measured,
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
    return _verdict(
        (claim, statement, source, weakest.statistic),
        measured or " ".join(p.measured for p in parts),
        test=test,
        level=parts[0].level,
        correction=correction,
        value=weakest.value,
        p_value=weakest.p_value,
        z=weakest.z,
        outcome=outcome,
        inputs=dict(test="all_of", parts=[p.to_dict() for p in parts]),
    )


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
