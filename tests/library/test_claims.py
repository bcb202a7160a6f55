"""Tests of attnpaths.claims: every constructor reaches its three outcomes, thresholds, enforce, the table."""

import math

import numpy as np
import pytest
from helpers import verdict
from scipy import stats

from attnpaths.claims import (
    ClaimViolation,
    Outcome,
    Verdict,
    agreement_power,
    all_of,
    bonferroni_z,
    detectable_effect,
    directional_z,
    enforce,
    equivalence,
    equivalence_power,
    exact,
    monte_carlo_draws,
    outcome_counts,
    permutation,
    permutation_p_values,
    positive_difference,
    power_check,
    rederive,
    replicate_equivalence,
    replicate_equivalence_power,
    replicate_t,
)

H, NS, C = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED
COMMON = dict(source="test", statistic="x")


def test_bonferroni_thresholds():
    assert bonferroni_z(1, 0.05) == pytest.approx(stats.norm.isf(0.025))
    assert bonferroni_z(1, 0.05, two_sided=False) == pytest.approx(stats.norm.isf(0.05))
    assert bonferroni_z(10, 0.01) == pytest.approx(stats.norm.isf(0.0005))
    assert bonferroni_z(10, 0.01, two_sided=False) == pytest.approx(stats.norm.isf(0.001))
    assert bonferroni_z(20, 0.01) > bonferroni_z(2, 0.01)
    for bad in (dict(num_tests=0), dict(num_tests=1.5), dict(num_tests=True)):
        with pytest.raises(ValueError, match="num_tests"):
            bonferroni_z(level=0.01, **bad)
    for level in (0, 1, -0.1, 1.5, True, "0.01"):
        with pytest.raises(ValueError, match="level"):
            bonferroni_z(3, level)


@pytest.mark.parametrize("estimate, expected", [(3.0, H), (0.5, NS), (-3.0, C)])
def test_directional_z_outcomes(estimate, expected):
    v = directional_z("c", "s", estimate=estimate, se=1.0, level=0.01, **COMMON)
    assert v.outcome is expected
    assert v.z == pytest.approx(estimate)
    assert v.p_value == pytest.approx(stats.norm.sf(estimate))
    assert v.level == 0.01 and v.correction == "none"


@pytest.mark.parametrize("level, power, num_tests", [(0.01, 0.8, 1), (0.05, 0.9, 1), (0.01, 0.8, 5)])
@pytest.mark.usefixtures("long_computation")
def test_detectable_effect_is_held_with_the_stated_power(level, power, num_tests):
    # simulated estimates of a true effect equal to the detectable one hold with probability `power`
    se = 0.0087
    effect = detectable_effect(se, level, power, num_tests=num_tests)
    estimates = np.random.default_rng(0).normal(effect, se, size=4000)
    held = np.mean(
        [
            directional_z("c", "s", estimate=e, se=se, level=level, num_tests=num_tests, **COMMON).outcome is H
            for e in estimates
        ]
    )
    assert abs(held - power) < 4 * math.sqrt(power * (1 - power) / estimates.size)
    # the detectable effect scales with the standard error
    assert detectable_effect(se / 2, level, power, num_tests=num_tests) == pytest.approx(effect / 2)
    for bad in (dict(se=0.0), dict(se=math.nan), dict(se=1.0, power=1.0), dict(se=1.0, level=0.0)):
        with pytest.raises(ValueError, match=next(k for k in ("power", "level", "se") if k in bad)):
            detectable_effect(**bad)


@pytest.mark.parametrize("margin_over_se", [3.0, 4.0, 6.0])
def test_equivalence_power_is_the_chance_of_holding_at_zero_deviation(margin_over_se):
    # simulated deviations of a correct result (mean 0, the stated standard errors) hold as often as predicted
    rng = np.random.default_rng(1)
    se = np.array([0.01, 0.02, 0.05])
    margin = margin_over_se * se
    power = equivalence_power(se, margin, 0.01)
    held = np.mean(
        [
            equivalence("c", "s", deviation=rng.normal(0, se), se=se, margin=margin, level=0.01, **COMMON).outcome is H
            for _ in range(4000)
        ]
    )
    assert abs(held - power) < 4 * math.sqrt(max(power * (1 - power), 1e-4) / 4000)
    assert equivalence_power(se, 2.0 * se, 0.01) == 0.0  # margins inside z_c se: it can never hold
    assert equivalence_power(se / 2, margin, 0.01) > power  # more draws, more power
    for bad in (dict(se=[0.0, 1.0], margin=1.0), dict(se=[], margin=1.0), dict(se=1.0, margin=0.0)):
        with pytest.raises(ValueError, match="se|margin"):
            equivalence_power(**bad)


@pytest.mark.parametrize("level, power, num_tests", [(0.01, 0.8, 1), (0.05, 0.9, 3)])
@pytest.mark.usefixtures("long_computation")
def test_power_check_of_a_directional_test_holds_with_the_stated_power_at_its_detectable_effect(
    level, power, num_tests
):
    se = {"4 paths": 0.012, "2 paths": 0.02}
    check = power_check(
        "1",
        se=se,
        level=level,
        power=power,
        num_tests=num_tests,
        effect="an advantage",
        scale=100,
        unit="points",
        estimate={"4 paths": 0.2, "2 paths": 0.001},
    )
    assert check.cases == ("4 paths", "2 paths") and check.power == (power, power) and check.directional
    rng = np.random.default_rng(2)
    for s, d in zip(check.se, check.detectable):
        # z of a true effect d is N(d / se, 1): it clears the one-sided threshold with probability `power`
        assert stats.norm.sf(stats.norm.isf(level / num_tests) - d / s) == pytest.approx(power)
        held = np.mean(
            [
                directional_z("1", "s", estimate=e, se=s, level=level, num_tests=num_tests, **COMMON).outcome is H
                for e in rng.normal(d, s, size=2000)
            ]
        )
        assert abs(held - power) < 4 * math.sqrt(power * (1 - power) / 2000)
    assert check.detectable[1] / check.detectable[0] == pytest.approx(0.02 / 0.012)  # proportional to se
    assert f"{100 * check.detectable[0]:.2f} points (4 paths)" in check.sentence
    assert "above it; " in check.sentence and "below it." in check.sentence
    assert f"{100 * power:g} % power" in check.sentence


def test_power_check_of_an_agreement_test_states_its_probabilities_and_refuses_bad_arguments():
    p = equivalence_power([0.01, 0.02], [0.05, 0.1], 0.01)
    check = power_check("2", probability={"N = 10": p, "N = 100": 1.0}, condition="were the samples exact")
    assert check.power == (p, 1.0) and check.se is None and check.detectable is None and not check.directional
    assert check.listing == f"{p:.2f} (N = 10) and 1.00 (N = 100)"
    assert check.sentence == (
        f"The power check of claim 2, the probability that it holds were the samples exact, is {check.listing}."
    )
    assert power_check("2", probability=0.5).listing == "0.50"  # one unnamed case
    for bad, name in (
        (dict(), "exactly one of se"),
        (dict(se=1.0, probability=0.5), "exactly one of se"),
        (dict(se={"a": 0.0}), "se"),
        (dict(se={}), "se"),
        (dict(probability=1.5), "probability"),
        (dict(probability={"a": math.nan}), "probability"),
        (dict(se=1.0, power=1.0), "power"),
        (dict(se=1.0, level=0.0), "level"),
        (dict(se=1.0, scale=-1.0), "scale"),
        (dict(se={"a": 1.0}, estimate={"b": 0.1}), "estimate"),
        (dict(probability=0.5, estimate=0.1), "estimate"),
    ):
        with pytest.raises(ValueError, match=name):
            power_check("2", **bad)


def test_directional_z_bonferroni_over_tests():
    # z = 2.5 clears the one-sided 1 % threshold 2.33 of a single test but not 2.88 of five tests
    assert directional_z("c", "s", estimate=2.5, se=1.0, **COMMON).outcome is H
    five = directional_z("c", "s", estimate=2.5, se=1.0, num_tests=5, **COMMON)
    assert five.outcome is NS and five.correction == "Bonferroni over 5 tests"
    assert directional_z("c", "s", estimate=-2.9, se=1.0, num_tests=5, **COMMON).outcome is C
    for se in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="se"):
            directional_z("c", "s", estimate=1.0, se=se, **COMMON)


@pytest.mark.parametrize("shift, expected", [(2.0, H), (0.0, NS), (-2.0, C)])
def test_replicate_t_outcomes(shift, expected):
    d = shift + np.array([-0.5, 0.2, 0.4, -0.1, 0.0, 0.3, -0.3, 0.1])
    v = replicate_t("c", "s", differences=d, **COMMON)
    assert v.outcome is expected
    t = d.mean() / (d.std(ddof=1) / np.sqrt(d.size))
    assert v.z == pytest.approx(t) and v.p_value == pytest.approx(stats.t.sf(t, d.size - 1))


def test_replicate_t_zero_spread_and_bad_input():
    assert replicate_t("c", "s", differences=[1.0, 1.0], **COMMON).outcome is H
    assert replicate_t("c", "s", differences=[-1.0, -1.0], **COMMON).outcome is C
    assert replicate_t("c", "s", differences=[0.0, 0.0], **COMMON).outcome is NS
    with pytest.raises(ValueError, match="at least 2"):
        replicate_t("c", "s", differences=[1.0], **COMMON)
    with pytest.raises(ValueError, match="finite"):
        replicate_t("c", "s", differences=[1.0, math.nan], **COMMON)
    # two tests share the level: a p-value between level / 2 and level is no longer enough
    d = np.array([0.1, 0.25, 0.05, 0.2, 0.15, 0.0, 0.3, -0.05, 0.1, 0.12])
    p = stats.t.sf(d.mean() / (d.std(ddof=1) / np.sqrt(d.size)), d.size - 1)
    level = 2.0 * p * 0.9  # p < level, p > level / 2
    assert replicate_t("c", "s", differences=d, level=level, **COMMON).outcome is H
    assert replicate_t("c", "s", differences=d, level=level, num_tests=2, **COMMON).outcome is NS


@pytest.mark.parametrize("p_greater, p_smaller, expected", [(0.001, 0.999, H), (0.3, 0.7, NS), (0.999, 0.001, C)])
def test_permutation_outcomes(p_greater, p_smaller, expected):
    v = permutation("c", "s", value=1.0, p_greater=p_greater, p_smaller=p_smaller, test="perm", level=0.01, **COMMON)
    assert v.outcome is expected and v.p_value == p_greater


def test_permutation_p_values_and_bad_input():
    null = np.arange(99.0)
    assert permutation_p_values(200.0, null) == (1 / 100, 1.0)
    assert permutation_p_values(-1.0, null) == (1.0, 1 / 100)
    assert permutation_p_values(49.0, null) == ((1 + 50) / 100, (1 + 50) / 100)
    with pytest.raises(ValueError, match="null"):
        permutation_p_values(1.0, [])
    with pytest.raises(ValueError, match="p_greater"):
        permutation("c", "s", value=1.0, p_greater=1.5, p_smaller=0.1, test="perm", **COMMON)
    with pytest.raises(ValueError, match="p_smaller"):
        permutation("c", "s", value=1.0, p_greater=0.1, p_smaller=-0.1, test="perm", **COMMON)


def test_monte_carlo_p_values_have_room_at_their_level():
    """At 1 % a Monte-Carlo p-value needs 9 900 draws for its standard error at the threshold to be a tenth of
    the level; fewer draws are refused when the level is given."""
    assert monte_carlo_draws(0.01) == 9900 and monte_carlo_draws(0.05) == 1900
    for level in (0.01, 0.05):
        m = monte_carlo_draws(level)
        assert np.sqrt(level * (1 - level) / m) <= 0.1 * level < np.sqrt(level * (1 - level) / (m - 1))
    null = np.arange(9899.0)
    with pytest.raises(ValueError, match="at least 9900 draws"):
        permutation_p_values(1.0, null, level=0.01)
    assert permutation_p_values(1e6, np.arange(9900.0), level=0.01)[0] == pytest.approx(1 / 9901)


@pytest.mark.parametrize("deviation, expected", [([0.01, -0.02], H), ([0.08, 0.0], NS), ([0.2, 0.0], C)])
def test_equivalence_outcomes(deviation, expected):
    v = equivalence("c", "s", deviation=deviation, se=0.01, margin=0.1, level=0.01, **COMMON)
    assert v.outcome is expected
    assert v.value == pytest.approx(np.max(np.abs(deviation)) / 0.1)
    assert v.correction == "Bonferroni over 2 entries"


def test_equivalence_bonferroni_and_bad_input():
    zc1, zc50 = bonferroni_z(1, 0.01, two_sided=False), bonferroni_z(50, 0.01, two_sided=False)
    dev = 0.1 - 0.5 * (zc1 + zc50) * 0.01  # inside the margin by a z between the one-entry and 50-entry thresholds
    assert equivalence("c", "s", deviation=[dev], se=0.01, margin=0.1, **COMMON).outcome is H
    assert equivalence("c", "s", deviation=np.full(50, dev), se=0.01, margin=0.1, **COMMON).outcome is NS
    for kwargs, match in (
        (dict(deviation=[], se=1.0, margin=1.0), "deviation"),
        (dict(deviation=[0.1], se=0.0, margin=1.0), "se"),
        (dict(deviation=[0.1], se=1.0, margin=0.0), "margin"),
        (dict(deviation=[0.1, 0.2], se=[1.0, 1.0, 1.0], margin=1.0), None),
    ):
        with pytest.raises(ValueError, match=match):
            equivalence("c", "s", **kwargs, **COMMON)


@pytest.mark.parametrize("offset, expected", [(0.02, H), (0.45, NS), (1.5, C)])
def test_replicate_equivalence_outcomes(offset, expected):
    r = 3.0 + offset + np.array([-0.1, 0.05, 0.1, -0.05, 0.0, 0.08, -0.08, 0.02])
    v = replicate_equivalence("c", "s", replicates=r, reference=3.0, margin=0.5, **COMMON)
    assert v.outcome is expected
    assert v.value == pytest.approx(abs(r.mean() - 3.0) / 0.5)


def test_replicate_equivalence_uses_student_t_and_zero_spread():
    # with 3 replicates the t threshold (6.96 at 1 %) is far above the Gaussian one (2.33)
    r = np.array([0.0, 0.1, -0.1])
    se = r.std(ddof=1) / np.sqrt(3)
    margin = 4.0 * se  # |mean| + 2.33 se < margin, but |mean| + 6.96 se > margin
    assert equivalence("c", "s", deviation=[r.mean()], se=se, margin=margin, **COMMON).outcome is H
    assert replicate_equivalence("c", "s", replicates=r, reference=0.0, margin=margin, **COMMON).outcome is NS
    assert replicate_equivalence("c", "s", replicates=[2.0, 2.0], reference=2.1, margin=0.5, **COMMON).outcome is H
    assert replicate_equivalence("c", "s", replicates=[2.0, 2.0], reference=3.0, margin=0.5, **COMMON).outcome is C
    for kwargs, match in (
        (dict(replicates=[1.0], reference=0.0, margin=1.0), "at least 2"),
        (dict(replicates=[1.0, 2.0], reference=0.0, margin=0.0), "margin"),
        (dict(replicates=[1.0, 2.0], reference=0.0, margin=1.0, level=0.0), "level"),
    ):
        with pytest.raises(ValueError, match=match):
            replicate_equivalence("c", "s", **kwargs, **COMMON)


def test_exact_outcomes():
    held = exact("c", "s", value=0.3, criterion="x < 1", satisfied=True, **COMMON)
    broken = exact("c", "s", value=3.0, criterion="x < 1", satisfied=False, **COMMON)
    assert held.outcome is H and broken.outcome is C
    assert held.level is None and "exact" in held.level_text and held.p_value is None
    # an exact claim has no third outcome
    assert {exact("c", "s", value=0.0, criterion="", satisfied=s, **COMMON).outcome for s in (True, False)} == {H, C}


def test_verdict_validation_sentence_and_dict():
    with pytest.raises(ValueError, match="outcome"):
        verdict("c", "holds", p_value=None, z=None)
    with pytest.raises(ValueError, match="level"):
        verdict("c", H, level=1.5, p_value=None, z=None)
    v = directional_z("E9", "the effect is positive", estimate=3.0, se=1.0, num_tests=2, **COMMON)
    sentence = v.sentence()
    assert sentence.startswith("Claim E9 (the effect is positive): holds.")
    assert "z = +3.00" in sentence and "Bonferroni over 2 tests" in sentence
    d = v.to_dict()
    assert d["outcome"] == "holds" and d["claim"] == "E9" and isinstance(d["outcome"], str)


def _verdicts():
    return [
        directional_z("A", "a", estimate=3.0, se=1.0, **COMMON),
        directional_z("B", "b", estimate=0.0, se=1.0, **COMMON),
        directional_z("C", "c", estimate=-3.0, se=1.0, **COMMON),
    ]


def test_enforce_names_every_failing_claim():
    vs = _verdicts()
    assert enforce(vs, ["A"]) == ["A"]
    assert enforce(vs, []) == []
    with pytest.raises(ClaimViolation) as err:
        enforce(vs, ["A", "B", "C"])
    message = str(err.value)
    assert "Claim B (b): not significant" in message and "Claim C (c): contradicted" in message
    assert "Claim A" not in message
    assert isinstance(err.value, AssertionError)


def test_enforce_rejects_bad_input():
    vs = _verdicts()
    with pytest.raises(ValueError, match="unknown"):
        enforce(vs, ["A", "Z"])
    with pytest.raises(ValueError, match="unique"):
        enforce(vs + [vs[0]], ["A"])
    with pytest.raises(ValueError, match="Verdict"):
        enforce(vs + ["A"], ["A"])


def test_outcome_counts():
    assert outcome_counts(_verdicts()) == {"holds": 1, "not significant": 1, "contradicted": 1}


# ---------------------------------------------------------------------------------- inputs and re-derivation
def _one_of_each():
    from attnpaths import claims as c

    return [
        c.directional_z("z", "s", source="x", statistic="d", estimate=0.3, se=0.1, level=0.01, num_tests=2),
        c.replicate_t("t", "s", source="x", statistic="d", differences=[0.1, 0.2, 0.15, 0.12], level=0.05),
        c.permutation(
            "p",
            "s",
            source="x",
            statistic="r",
            value=0.4,
            p_greater=0.002,
            p_smaller=0.999,
            test="permutation test over 500 draws",
            level=0.01,
        ),
        c.equivalence("e", "s", source="x", statistic="m", deviation=[0.01, -0.02], se=[0.01, 0.01], margin=0.1),
        c.replicate_equivalence(
            "r", "s", source="x", statistic="m", replicates=[0.1, 0.12, 0.09], reference=0.1, margin=0.05
        ),
        c.exact("x", "s", source="x", statistic="v", value=2.0, criterion="v > 0", satisfied=True),
        c.all_of(
            "a",
            "s",
            source="x",
            parts=[
                c.replicate_t("a", "p1", source="x", statistic="d1", differences=[1.0, 1.1, 0.9], num_tests=2),
                c.replicate_t("a", "p2", source="x", statistic="d2", differences=[-1.0, -1.1, -0.9], num_tests=2),
            ],
        ),
    ]


def test_every_constructor_records_its_inputs_and_rederive_reproduces_the_verdict_from_a_results_file():
    import json

    from attnpaths.claims import Verdict, rederive

    for made in _one_of_each():
        assert made.inputs is not None and "test" in made.inputs
        stored = Verdict.from_dict(json.loads(json.dumps(made.to_dict())))
        assert stored == made
        assert rederive(stored) == made


def test_rederive_sees_a_verdict_that_its_inputs_do_not_support():
    import dataclasses

    from attnpaths.claims import Outcome, rederive

    for made in _one_of_each():
        flipped = Outcome.CONTRADICTED if made.outcome is not Outcome.CONTRADICTED else Outcome.HOLDS
        assert rederive(dataclasses.replace(made, outcome=flipped)).outcome is made.outcome
    t = _one_of_each()[1]
    moved = dataclasses.replace(t, inputs=dict(t.inputs, differences=[-0.1, -0.2, -0.15, -0.12]))
    assert rederive(moved).outcome is Outcome.CONTRADICTED
    with pytest.raises(ValueError, match="inputs must name"):
        rederive(dataclasses.replace(t, inputs=None))


def test_all_of_requires_parts_built_for_its_correction():
    from attnpaths import claims as c

    part = dict(source="x", statistic="d", differences=[1.0, 1.1, 0.9])
    with pytest.raises(ValueError, match="num_tests=2"):
        c.all_of("a", "s", source="x", parts=[c.replicate_t("a", "p", **part), c.replicate_t("a", "q", **part)])
    exact_parts = [c.exact("a", "s", source="x", statistic="v", value=1.0, criterion="v > 0", satisfied=True)] * 2
    assert c.all_of("a", "s", source="x", parts=exact_parts).correction == "none (exact parts)"
    with pytest.raises(ValueError, match="one family level"):
        c.all_of("a", "s", source="x", parts=[exact_parts[0], c.replicate_t("a", "p", num_tests=2, **part)])


def test_by_outcome_follows_the_weakest_verdict():
    from attnpaths import claims as c

    holds = c.exact("h", "s", source="x", statistic="v", value=1.0, criterion="v > 0", satisfied=True)
    fails = c.exact("f", "s|t", source="x", statistic="v", value=-1.0, criterion="v > 0", satisfied=False)
    ns = _one_of_each()[4]
    words = dict(holds="H", not_significant="N", contradicted="C")
    assert c.by_outcome(holds, **words) == "H"
    assert c.by_outcome([holds, ns], **words) == ("N" if ns.outcome is c.Outcome.NOT_SIGNIFICANT else "H")
    assert c.by_outcome([holds, ns, fails], **words) == "C"


def test_agreement_power_reads_the_power_of_a_recorded_agreement_test():
    common = dict(source="s", statistic="d", level=0.01)
    v = equivalence("c", "s", deviation=[0.0, 0.01], se=[0.02, 0.03], margin=[0.1, 0.1], **common)
    assert agreement_power(Verdict.from_dict(v.to_dict())) == equivalence_power([0.02, 0.03], [0.1, 0.1], 0.01)
    rng = np.random.default_rng(0)
    tight = rng.normal(0.0, 0.01, 10)
    assert replicate_equivalence_power(tight, 0.1) > 0.99 > 0.01 > replicate_equivalence_power(tight, 0.005)
    assert replicate_equivalence_power(np.full(4, 0.3), 0.1) == 1.0  # decided by the deviation alone
    r = replicate_equivalence("c", "s", replicates=tight, reference=0.0, margin=0.02, **common)
    assert agreement_power(r) == replicate_equivalence_power(tight, 0.02, 0.01)
    # a claim of agreement parts multiplies their powers; directional and permutation tests have none
    z = directional_z("c", "s", estimate=0.1, se=0.01, **common)
    assert agreement_power(z) is None
    parts = [replicate_t(f"c{i}", "s", differences=[0.1, 0.2, 0.15], num_tests=2, **common) for i in range(2)]
    assert agreement_power(all_of("c", "s", source="s", parts=parts)) is None
    with pytest.raises(ValueError, match="replicates"):
        replicate_equivalence_power([1.0], 0.1)


def test_directional_z_with_degrees_of_freedom_reads_student_t_and_rederives():
    from attnpaths.claims import rederive

    # estimate / se = 3: beyond the normal law's 1 % threshold (2.33), not beyond Student's t with 2 degrees of
    # freedom (6.96)
    z = directional_z("c", "s", source="x", statistic="d", estimate=0.3, se=0.1)
    t = directional_z("c", "s", source="x", statistic="d", estimate=0.3, se=0.1, df=2)
    assert z.outcome is Outcome.HOLDS and t.outcome is Outcome.NOT_SIGNIFICANT
    assert t.p_value == pytest.approx(stats.t.sf(3.0, 2)) and "2.0 degrees of freedom" in t.test
    assert rederive(t).outcome is t.outcome and rederive(t).p_value == pytest.approx(t.p_value)
    assert "df" not in z.inputs  # a z-test's record is unchanged
    with pytest.raises(ValueError, match="df"):
        directional_z("c", "s", source="x", statistic="d", estimate=0.3, se=0.1, df=0)


def test_a_verdict_takes_its_fields_by_name_only():
    fields = dict(
        claim="c", statement="s", source="src", statistic="x", test="t", level=0.01, correction="none", value=1.0,
        p_value=None, z=None, outcome=H, measured="m",
    )  # fmt: skip
    with pytest.raises(TypeError):
        Verdict(*fields.values())
    verdict = Verdict(**fields)
    assert Verdict.from_dict(verdict.to_dict()) == verdict


def test_a_positive_difference_is_exact_on_one_data_set_and_a_t_test_over_several():
    one = positive_difference("c", "s", differences=np.float64(0.25), measured="one set", **COMMON)
    assert one == exact("c", "s", value=0.25, criterion="x > 0", satisfied=True, measured="one set", **COMMON)
    assert positive_difference("c", "s", differences=-0.25, **COMMON).outcome is C
    several = positive_difference("c", "s", differences=[0.2, 0.3, 0.25, 0.22], level=0.05, **COMMON)
    assert several == replicate_t("c", "s", differences=[0.2, 0.3, 0.25, 0.22], level=0.05, **COMMON)
    assert rederive(several) == several and rederive(one) == one
