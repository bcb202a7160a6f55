"""The detectable effect of a recorded directional verdict (attnpaths.claims.verdict_detectable_effect): read from
its inputs, it is the true effect that the verdict's own test declares to hold with the stated power."""

import math

import numpy as np
import pytest
from helpers import verdict

from attnpaths.claims import (
    Outcome,
    Verdict,
    detectable_effect,
    directional_z,
    equivalence,
    exact,
    permutation,
    replicate_t,
    verdict_detectable_effect,
)

COMMON = dict(source="test", statistic="x")


def test_a_z_test_detects_the_effect_of_its_power_check():
    v = directional_z("c", "s", estimate=0.01, se=0.02, level=0.01, num_tests=3, **COMMON)
    assert verdict_detectable_effect(v) == pytest.approx(detectable_effect(0.02, 0.01, 0.8, num_tests=3))
    assert verdict_detectable_effect(v, 0.9) == pytest.approx(detectable_effect(0.02, 0.01, 0.9, num_tests=3))
    # read from the results file's record as well as from the verdict
    assert verdict_detectable_effect(Verdict.from_dict(v.to_dict())) == pytest.approx(verdict_detectable_effect(v))


@pytest.mark.parametrize("n, level", [(4, 0.05), (8, 0.01)])
def test_replicates_of_the_detectable_effect_hold_with_the_stated_power(n, level):
    # replicates whose true mean is the detectable effect of a verdict, with its replicates' spread, make its
    # t-test hold in 80 % of simulated runs
    rng = np.random.default_rng(1)
    recorded = replicate_t("c", "s", differences=rng.normal(0.0, 0.03, size=n), level=level, **COMMON)
    effect = verdict_detectable_effect(recorded)
    sd = float(np.std(recorded.inputs["differences"], ddof=1))
    runs = 3000
    held = np.mean(
        [
            replicate_t("c", "s", differences=rng.normal(effect, sd, size=n), level=level, **COMMON).outcome
            is Outcome.HOLDS
            for _ in range(runs)
        ]
    )
    assert abs(held - 0.8) < 4 * math.sqrt(0.8 * 0.2 / runs)
    # the normal approximation would understate the effect that few replicates need
    assert effect > detectable_effect(sd / math.sqrt(n), level, 0.8)


def test_a_z_test_against_student_t_needs_a_larger_effect_than_against_the_normal():
    with_df = directional_z("c", "s", estimate=0.0, se=1.0, df=5.0, **COMMON)
    many_df = directional_z("c", "s", estimate=0.0, se=1.0, df=1e6, **COMMON)
    assert verdict_detectable_effect(with_df) > detectable_effect(1.0) + 0.5
    assert verdict_detectable_effect(many_df) == pytest.approx(detectable_effect(1.0), rel=1e-3)


def test_tests_without_a_directional_standard_error_have_no_detectable_effect():
    others = [
        equivalence("c", "s", deviation=[0.0], se=[0.1], margin=[0.5], **COMMON),
        permutation("c", "s", value=0.1, p_greater=0.2, p_smaller=0.8, test="t", **COMMON),
        exact("c", "s", value=1.0, criterion="x > 0", satisfied=True, **COMMON),
        replicate_t("c", "s", differences=[0.25, 0.25, 0.25], **COMMON),  # no spread: decided by its sign
        verdict("c", Outcome.NOT_SIGNIFICANT, value=0.0, p_value=0.5, z=0.0),  # no inputs
    ]
    assert [verdict_detectable_effect(v) for v in others] == [None] * len(others)
    with pytest.raises(ValueError, match="verdict must be a Verdict"):
        verdict_detectable_effect({"test": "directional_z"})
    with pytest.raises(ValueError, match="power"):
        verdict_detectable_effect(replicate_t("c", "s", differences=[0.1, -0.2, 0.3], level=0.05, **COMMON), 0.01)
