"""Power tests of the claims of the chapter ``related`` (R1-R5).

For every claim, the check function that the chapter calls is run on a small correct input, where it must not
come out contradicted, and on a deliberately wrong input, where it must come out contradicted.
"""

import numpy as np
import pytest

from attnpaths.claims import Outcome
from attnpaths.related import claims as V
from attnpaths.related.bayesian_attention import bayesian_attention_experiment
from attnpaths.related.lipschitz import input_scaling_experiment, sequence_length_experiment
from attnpaths.related.measures import measure_lipschitz_experiment
from attnpaths.related.rank_collapse import log_residual_ratios, rank_collapse_experiment


def _rng(seed):
    return np.random.default_rng([seed, 88])


def _ok(v):
    assert v.outcome is not Outcome.CONTRADICTED, v.sentence()


def _bad(v):
    assert v.outcome is Outcome.CONTRADICTED, v.sentence()


@pytest.fixture(scope="module")
def r1():
    return rank_collapse_experiment(_rng(1), num_tokens=32, width=64, depth=8, repetitions=6)


def test_r1a_collapse_exponent_against_an_exponential_collapse(r1):
    ratios = [log_residual_ratios(r) for r in r1.residual_pure]
    _ok(V.collapse_exponent_verdict(ratios))
    # the same check on networks whose residual shrinks by a constant factor per layer (exponential collapse)
    rng = _rng(2)
    exponential = [log_residual_ratios(0.08 * rng.uniform(0.2, 0.4) ** np.arange(9)) for _ in range(6)]
    _bad(V.collapse_exponent_verdict(exponential))


def test_r1b_skip_connections_against_pure_networks(r1):
    _ok(V.skip_verdict(r1.residual_skip[:, -1]))
    _bad(V.skip_verdict(r1.residual_pure[:, -1]))


@pytest.fixture(scope="module")
def r2():
    return input_scaling_experiment(_rng(3), scales=[1, 4, 16, 32], num_tokens=6, width=3, num_draws=6)


def test_r2a_dot_product_growth_against_l2_attention(r2):
    _ok(V.dot_product_growth_verdict(r2.scales, r2.dot_product_draws))
    _bad(V.dot_product_growth_verdict(r2.scales, r2.l2_draws))


def test_r2b_l2_bounded_against_dot_product_attention(r2):
    _ok(V.l2_growth_verdict(r2.scales, r2.l2_draws))
    _bad(V.l2_growth_verdict(r2.scales, r2.dot_product_draws))


def test_r2_claims_state_their_exponent_and_margin(r2):
    dot, l2 = V.dot_product_growth_verdict(r2.scales, r2.dot_product_draws), V.l2_growth_verdict(r2.scales, r2.l2_draws)
    assert (dot.claim, l2.claim) == ("R2a", "R2b")
    assert "slope 2 within 1)" in dot.statement and "slope 0 within 0.5)" in l2.statement
    # the margin is part of the claim: a much tighter one is stated, and six draws cannot show the slope within it
    tight = V.dot_product_growth_verdict(r2.scales, r2.dot_product_draws, margin=1e-4)
    assert "within 0.0001)" in tight.statement and tight.outcome is Outcome.NOT_SIGNIFICANT


@pytest.fixture(scope="module")
def r3():
    return sequence_length_experiment(_rng(4), num_tokens=[16, 64, 128, 256], radius=6.0, repetitions=4)


def test_r3a_adversarial_rate_against_random_tokens(r3):
    _ok(V.adversarial_rate_verdict(r3.num_tokens, r3.adversarial))
    _bad(V.adversarial_rate_verdict(r3.num_tokens, r3.random))  # random tokens do not attain sqrt(n)
    _bad(V.adversarial_rate_verdict(r3.num_tokens, r3.adversarial, exponent=1.0))  # a wrong exponent


def test_r3b_random_tokens_against_adversarial_tokens(r3):
    _ok(V.random_input_verdict(r3.num_tokens, r3.random_draws, n_from=64, n_to=256))
    adversarial = np.tile(r3.adversarial, (4, 1))  # the same check on tokens built to grow like sqrt(n)
    _bad(V.random_input_verdict(r3.num_tokens, adversarial, n_from=64, n_to=256))


def test_r4a_w1_lipschitz_against_a_squared_distance():
    r4 = measure_lipschitz_experiment(_rng(5), num_atoms=[8, 256], num_trials=25, num_queries=8)
    _ok(V.w1_lipschitz_verdict(_rng(6), r4.num_atoms, r4.delta, r4.w1, num_permutations=10_000))
    # W1^2 is not a metric attention is Lipschitz in: the ratio grows as the samples get closer
    _bad(V.w1_lipschitz_verdict(_rng(6), r4.num_atoms, r4.delta, r4.w1**2, num_permutations=10_000))


def test_r5a_window_against_reversed_rates():
    r5 = bayesian_attention_experiment(
        _rng(7), num_tokens=12, dim=6, key_norm=2.0, noise=1.0, num_trials=40, rates=[0.01, 0.3, 0.9]
    )
    _ok(V.window_verdict(r5.rates, r5.window_trials))
    _bad(V.window_verdict(r5.rates[::-1], r5.window_trials[:, ::-1]))  # the windows attributed to the wrong rates


def test_scale_slopes():
    norms = np.array([[1.0, 4.0, 16.0], [2.0, 2.0, 2.0]])
    np.testing.assert_allclose(V.scale_slopes([1, 2, 4], norms), [2.0, 0.0])
