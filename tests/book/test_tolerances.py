"""The reproducibility classes: every number of a results file has one rule, and the rules tell a change of
the last bits from a change of the result."""

import copy
import json
import math

import pytest
from helpers import ROOT

from attnpaths_book import tolerances
from attnpaths_book.tolerances import MC_Z, TABLE, Tolerance, compare_results, rule_for


def _baseline(chapter):
    return {"values": json.loads((ROOT / "tests" / "baselines" / f"{chapter}.json").read_text())["values"]}


def test_every_rule_states_a_class_and_a_reason_and_the_last_one_takes_everything():
    for rule in TABLE:
        assert rule.cls in tolerances.CLASSES and len(rule.reason) > 20
    assert rule_for("any", "values.anything[3].at.all") is TABLE[-1] and TABLE[-1].pattern == "*"
    with pytest.raises(ValueError, match="cls must be one of"):
        Tolerance("*", "close enough", 0.0, 0.0, 0.0, "no such class")
    with pytest.raises(ValueError, match="rule"):
        rule_for("x", "values.y", table=(TABLE[0],))


def test_rounding_passes_and_a_real_change_fails():
    base = _baseline("theory")
    moved = copy.deepcopy(base)
    u = moved["values"]["U"]["10"]
    u[0][0] *= 1 + 1e-12  # another summation order
    assert compare_results("theory", base, moved) == []
    u[0][0] *= 1 + 1e-6  # a changed result
    (found,) = compare_results("theory", base, moved)
    assert found.path == "values.U.10[0][0]" and found.rule.cls == "rounding"


def test_differences_of_nearly_equal_numbers_are_compared_on_the_scale_of_their_terms():
    base = {"values": {"E3_erm": {"supervised": {"excess": [0.0113516950, 0.2]}}}}
    solver = copy.deepcopy(base)
    solver["values"]["E3_erm"]["supervised"]["excess"][0] = 0.0113516962  # 1e-7 relative, 1.1e-9 absolute
    assert compare_results("exchangeability", base, solver) == []
    wrong = copy.deepcopy(base)
    wrong["values"]["E3_erm"]["supervised"]["excess"][0] = 0.01136
    assert len(compare_results("exchangeability", base, wrong)) == 1


@pytest.mark.usefixtures("long_computation")
def test_monte_carlo_estimates_agree_within_their_standard_errors_and_verdict_outcomes_exactly():
    base = _baseline("hmc")
    se = base["values"]["sampler"]["10"]["U_mc_se"][0][0]
    within = copy.deepcopy(base)
    within["values"]["U_sampled"]["10"][0][0] += 3 * se  # another chain: z = 3 / sqrt(2)
    within["values"]["sampler"]["10"]["U_ess"][0][0] *= 1.3
    within["values"]["power_checks"]["2 (4 paths)"]["power"] = 0.5  # not compared (a power from sampled errors)
    assert rule_for("hmc", "values.power_checks.2 (4 paths).power").agrees(0.0, 0.0)
    assert compare_results("hmc", base, within) == []
    beyond = copy.deepcopy(base)
    beyond["values"]["U_sampled"]["10"][0][0] += 2 * MC_Z * se
    assert [d.path for d in compare_results("hmc", base, beyond)] == ["values.U_sampled.10[0][0]"]
    outcome = copy.deepcopy(base)
    first = outcome["values"]["verdicts"][0]
    first["outcome"] = "contradicted" if first["outcome"] != "contradicted" else "holds"
    assert [d.path for d in compare_results("hmc", base, outcome)] == ["values.verdicts[0].outcome"]


def test_a_sampled_claims_words_may_name_another_entry_but_its_outcome_may_not_move():
    """Another CPU's chains may put a sampled claim's largest deviation on another entry of U (seen on an AVX2 AMD
    EPYC against an AVX-512 Intel Xeon's depth record): its measured words change, its outcome must not."""
    record = "Largest |deviation| / margin 0.14 (U[3,7] at N=30: deviation -0.0141, margin 0.0973)."
    run = "Largest |deviation| / margin 0.22 (U_2[3,3] at N=30: deviation +0.0225, margin 0.1029)."
    base = {"values": {"verdicts": [{"measured": record, "outcome": "holds"}]}}
    moved = copy.deepcopy(base)
    moved["values"]["verdicts"][0]["measured"] = run
    for chapter in ("hmc", "depth", "oneshot"):
        assert compare_results(chapter, base, moved) == []
        flipped = copy.deepcopy(moved)
        flipped["values"]["verdicts"][0]["outcome"] = "contradicted"
        assert [d.path for d in compare_results(chapter, base, flipped)] == ["values.verdicts[0].outcome"]
    # elsewhere (no chains) the words of a verdict stay compared
    assert [d.path for d in compare_results("theory", base, moved)] == ["values.verdicts[0].measured"]


def test_the_solvers_certificate_may_move_in_its_rounding_but_not_past_the_solvers_tolerance():
    """Claim T1's value is the largest gradient norm of converged solves, zero up to rounding: 9.5e-10 in the smoke
    baseline, 9.8e-10 under the portable CPU dispatch (ATEN_CPU_CAPABILITY=default). Only whether it stays below
    the solver's tolerance (1e-8) means anything; the Hessian's eigenvalue in the same words stays compared."""

    def verdict(norm: float, eigenvalue: str) -> dict:
        words = f"largest gradient norm {norm:.2g}, smallest Hessian eigenvalue {eigenvalue} over 6 widths."
        return {"values": {"verdicts": [{"value": norm, "inputs": {"value": norm}, "measured": words}]}}

    base = verdict(9.476150651984618e-10, "0.129")
    assert compare_results("theory", base, verdict(9.759148388005185e-10, "0.129")) == []
    past = {d.path for d in compare_results("theory", base, verdict(2.5e-8, "0.129"))}
    assert past == {"values.verdicts[0].value", "values.verdicts[0].inputs.value", "values.verdicts[0].measured"}
    moved = compare_results("theory", base, verdict(9.759148388005185e-10, "0.131"))
    assert [d.path for d in moved] == ["values.verdicts[0].measured"]


def test_printed_numbers_in_words_may_move_by_their_last_digit_only():
    rule = rule_for("theory", "values.glued.some_sentence")
    assert rule.agrees("mean 0.125 (sd 0.03)", "mean 0.126 (sd 0.03)")  # a rounding boundary crossed
    assert not rule.agrees("mean 0.125 (sd 0.03)", "mean 0.128 (sd 0.03)")
    assert not rule.agrees("holds at 0.125", "fails at 0.125")
    exact = Tolerance("*", "exact", 0.0, 0.0, 0.0, "integers and words: no tolerance")
    assert not exact.agrees("0.125", "0.126") and exact.agrees(3, 3) and not exact.agrees(3, 4)
    assert rule.agrees(math.nan, math.nan) and not rule.agrees(math.inf, 1e308)


def test_a_missing_or_added_number_is_a_disagreement():
    base = {"values": {"a": 1.0}}
    assert [d.path for d in compare_results("x", base, {"values": {"a": 1.0, "b": 2.0}})] == ["values.b"]
    assert sorted(d.path for d in compare_results("x", base, {"values": {"c": 1.0}})) == ["values.a", "values.c"]
