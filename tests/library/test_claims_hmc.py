"""Power tests of the finite-width claims (attnpaths.experiments.finite_width) and of the hidden-Markov-chain claims
(attnpaths.hmc.claims): each test runs on a correct input, where it must hold, and on deliberately wrong
inputs, where it must say "contradicted"."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from helpers import sampled_curve_point

from attnpaths.claims import Outcome
from attnpaths.experiments import finite_width as fw
from attnpaths.experiments import sampling
from attnpaths.experiments.path_data import path_data
from attnpaths.experiments.sweep import theory_sweep
from attnpaths.experiments.wrong_theories import (
    TransposedAttention,
    transposed_features,
    wrong_theories,
    wrong_theory_verdicts,
)
from attnpaths.hmc import bands as ex
from attnpaths.hmc import claims as hmc_claims
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.networks import four_path_network

HOLDS, NS, CONTRADICTED = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED


def _predictions(n, accuracy, rng):
    """Labels and a predictor that is right on the first ``accuracy * n`` points."""
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    right = np.arange(n) < round(accuracy * n)
    return y, np.where(right, y, -y)


# ------------------------------------------------------------------------------------------------ claim 1
def test_paired_accuracy_sd_counts_discordant_points():
    y = np.array([1.0, 1.0, -1.0, -1.0])
    a = np.array([1.0, -1.0, -1.0, 1.0])  # right, wrong, right, wrong
    b = np.array([1.0, 1.0, 1.0, 1.0])  # right, right, wrong, wrong
    assert math.isclose(fw.paired_accuracy_sd(a, b, y), math.sqrt(2) / 4)


def test_finite_width_advantage_holds_for_a_better_theory_and_is_contradicted_when_swapped():
    rng = np.random.default_rng(0)
    y, theory = _predictions(1000, 0.95, rng)
    gp = np.where(np.arange(1000) < 820, y, -y)
    good = fw.finite_width_advantage("1", theory_mean=theory, gp_mean=gp, labels=y, width=10)
    assert good.outcome is HOLDS and good.z > 10 and math.isclose(good.value, 0.13)
    swapped = fw.finite_width_advantage("1", theory_mean=gp, gp_mean=theory, labels=y, width=10)
    assert swapped.outcome is CONTRADICTED
    # a difference of 2 points among 1000, with 220 discordant points, is within the test-set noise
    near = np.where((np.arange(1000) >= 100) & (np.arange(1000) < 940), y, -y)
    assert fw.finite_width_advantage("1", theory_mean=near, gp_mean=gp, labels=y, width=10).outcome is NS


def test_finite_width_advantage_power_uses_the_test_standard_error():
    # the power check's se is the one the test divides by; the 2-point advantage above is below what 1000
    # points detect, four times the points (se halves) bring the detectable advantage down by half
    rng = np.random.default_rng(0)
    y, _ = _predictions(1000, 0.95, rng)
    gp = np.where(np.arange(1000) < 820, y, -y)
    near = np.where((np.arange(1000) >= 100) & (np.arange(1000) < 940), y, -y)
    se, detectable = fw.finite_width_advantage_power(theory_mean=near, gp_mean=gp, labels=y, level=0.01)
    verdict = fw.finite_width_advantage("1", theory_mean=near, gp_mean=gp, labels=y, width=10)
    assert math.isclose(verdict.z * se, verdict.value) and detectable > verdict.value
    se4, detectable4 = fw.finite_width_advantage_power(
        theory_mean=np.tile(near, 4), gp_mean=np.tile(gp, 4), labels=np.tile(y, 4), level=0.01
    )
    assert math.isclose(se4, se / 2) and math.isclose(detectable4, detectable / 2)


def test_advantage_over_data_sets_needs_both_the_gain_and_the_approach():
    rng = np.random.default_rng(1)
    gp = 0.82 + 0.01 * rng.standard_normal(8)
    small = gp + 0.10 + 0.01 * rng.standard_normal(8)
    large = gp + 0.005 * rng.standard_normal(8)
    v = fw.finite_width_advantage_over_data_sets(
        "1", accuracy_small=small, accuracy_large=large, gp_accuracy=gp, widths=(10, 1000)
    )
    assert v.outcome is HOLDS and v.correction == "Bonferroni over 2 parts"
    # the GP line above the theory: contradicted
    below = fw.finite_width_advantage_over_data_sets(
        "1", accuracy_small=gp - 0.1, accuracy_large=large, gp_accuracy=gp, widths=(10, 1000)
    )
    assert below.outcome is CONTRADICTED
    # widths reversed: the gap grows with N instead of shrinking
    reversed_ = fw.finite_width_advantage_over_data_sets(
        "1", accuracy_small=large + 0.01, accuracy_large=small, gp_accuracy=gp, widths=(10, 1000)
    )
    assert reversed_.outcome is CONTRADICTED
    with pytest.raises(ValueError, match="one shape"):
        fw.finite_width_advantage_over_data_sets(
            "1", accuracy_small=small[:3], accuracy_large=large, gp_accuracy=gp, widths=(10, 1000)
        )


# ------------------------------------------------------------------------------------------------ claim 3
def _band_U(n_sets, rng, far=3.0, near=0.05):
    eye = np.eye(3)
    noise = lambda s: s * rng.standard_normal((n_sets, 3, 3))
    sym = lambda A: (A + np.swapaxes(A, 1, 2)) / 2
    return eye + sym(far * (1 + noise(0.2))), eye + sym(noise(near))


def test_gp_limit_approach_over_data_sets_and_reversed_widths():
    small, large = _band_U(6, np.random.default_rng(2))
    assert fw.gp_limit_approach("3", U_small=small, U_large=large, widths=(10, 1000)).outcome is HOLDS
    assert fw.gp_limit_approach("3", U_small=large, U_large=small, widths=(10, 1000)).outcome is CONTRADICTED
    # one data set: an exact comparison of deterministic numbers
    one = fw.gp_limit_approach("3", U_small=small[0], U_large=large[0], widths=(10, 1000))
    assert one.outcome is HOLDS and one.level is None
    assert fw.gp_limit_approach("3", U_small=large[0], U_large=small[0], widths=(10, 1000)).outcome is CONTRADICTED


# ------------------------------------------------------------------------------------------------ claim 4
def test_kernel_alignment_and_swapped_kernels():
    rng = np.random.default_rng(3)
    fw_frac, gp_frac = 0.7 + 0.05 * rng.standard_normal(6), 0.25 + 0.05 * rng.standard_normal(6)
    assert fw.kernel_alignment("4", fraction_fw=fw_frac, fraction_gp=gp_frac, k=5, width=10).outcome is HOLDS
    assert fw.kernel_alignment("4", fraction_fw=gp_frac, fraction_gp=fw_frac, k=5, width=10).outcome is CONTRADICTED
    assert fw.kernel_alignment("4", fraction_fw=0.2, fraction_gp=0.3, k=5, width=10).outcome is CONTRADICTED


# ------------------------------------------------------------------------------------------------ claim 2
def _point(U, U_se, *, width=100, accuracy=0.9, accuracy_mc_sd=0.002):
    return sampling.SampledPoint(
        width=width,
        accuracy=accuracy,
        accuracy_mc_sd=accuracy_mc_sd,
        mean=np.ones(4),
        mean_se=np.full(4, 0.01),
        sd=np.full(4, 0.2),
        kernel_mean=np.ones(4),
        U=U,
        U_se=np.full_like(U, U_se),
        U_sd=np.full_like(U, 1.0),
        U_ess=np.full_like(U, 100.0),
        diagnostics={},
    )


def test_sample_agreement_holds_within_the_margin_and_fails_for_a_U_scaled_by_1_2():
    U = np.array([[2.0, -0.5], [-0.5, 1.0]])
    points = [_point(U + 0.01, 0.01)]
    ok = fw.sample_agreement("2", points=points, reference_accuracy={100: 0.9}, reference_U={100: U})
    assert ok.outcome is HOLDS and ok.correction == "Bonferroni over 4 entries"
    scaled = fw.sample_agreement("2", points=points, reference_accuracy={100: 0.9}, reference_U={100: 1.2 * U})
    assert scaled.outcome is CONTRADICTED
    # the accuracy 5 points off is contradicted too, whatever U does
    off = fw.sample_agreement(
        "2", points=[_point(U, 0.01, accuracy=0.85)], reference_accuracy={100: 0.9}, reference_U={100: U}
    )
    assert off.outcome is CONTRADICTED
    # runs too short to resolve the margin: not significant
    short = fw.sample_agreement("2", points=[_point(U, 0.5)], reference_accuracy={100: 0.9}, reference_U={100: U})
    assert short.outcome is NS
    with pytest.raises(ValueError, match="sampled width 100"):
        fw.sample_agreement("2", points=points, reference_accuracy={10: 0.9}, reference_U={10: U})


def small_problem_sets():
    """The training and test sets of the small HMC problem (P = 20, 40 test sequences), drawn afresh each call."""
    task = HMCTask()
    generator = torch.Generator().manual_seed(3)
    return task.sample(20, generator), task.sample(40, generator)


@pytest.fixture(scope="module")
def sampled_small_problem():
    """Network samples and the exact finite-width mean of U on a small HMC problem (P = 20, N = 10)."""
    train, test = small_problem_sets()
    data = path_data(four_path_network(train), train, test)
    return sampled_curve_point(
        data, 10, 0.1, sweep_widths=[10], num_samples=2000, exact_chain=dict(num_warmup=300, num_samples=600, thin=3)
    )


@pytest.mark.needs("diagnostics")
def test_sample_agreement_on_real_samples_and_the_exact_mean_scaled_by_1_2(sampled_small_problem):
    curve, point, exact = sampled_small_problem
    kwargs = dict(
        points=[point],
        reference_accuracy={10: curve.accuracy["test"][0, 0]},
        reference_U_se={10: exact.U_se},
        margin_accuracy=0.1,
    )
    right = fw.sample_agreement("2", reference_U={10: exact.U}, **kwargs)
    assert right.outcome is not CONTRADICTED
    wrong = fw.sample_agreement("2", reference_U={10: 1.2 * exact.U}, **kwargs)
    assert wrong.outcome is CONTRADICTED


def _variance_point(mean_variance, mean_variance_se, width=100):
    return dataclasses.replace(
        _point(np.eye(2), 0.01, width=width), mean_variance=mean_variance, mean_variance_se=mean_variance_se
    )


def test_predictor_variance_agreement_holds_within_the_margin_and_fails_for_a_variance_off_by_2():
    theory = np.array([0.1, 0.2, 0.3, 0.2])  # test-set average 0.2
    points = {10: _variance_point(0.5, 0.001, width=10), 100: _variance_point(0.204, 0.002)}
    # N = 10 is left out: (n + 1) / N = 0.3 exceeds SADDLE_MAX_EPSILON, so its large finite-width shift is not tested
    ok = fw.predictor_variance_agreement("2v", points=points, theory_variance={10: theory, 100: theory}, num_paths=2)
    assert ok.outcome is HOLDS and "N = 100" in ok.measured and "N = 10:" not in ok.measured
    assert ok.inputs["deviation"] == [pytest.approx(0.02)] and ok.inputs["se"] == [pytest.approx(0.01)]
    for factor in (2.0, 0.5):
        wrong = fw.predictor_variance_agreement(
            "2v", points=points, theory_variance={100: factor * theory}, num_paths=2
        )
        assert wrong.outcome is CONTRADICTED
    # runs too short to resolve the margin: not significant, and the power check says so
    noisy = {100: _variance_point(0.204, 0.05)}
    assert fw.predictor_variance_agreement("2v", points=noisy, theory_variance={100: theory}, num_paths=2).outcome is NS
    power = dict(theory_variance={100: theory}, num_paths=2)
    assert fw.predictor_variance_agreement_power(points=points, **power) > 0.99
    assert fw.predictor_variance_agreement_power(points=noisy, **power) < 0.01
    with pytest.raises(ValueError, match="N >= 60"):
        fw.predictor_variance_agreement("2v", points={10: points[10]}, theory_variance={10: theory}, num_paths=2)
    with pytest.raises(ValueError, match="one positive variance per test point"):
        fw.predictor_variance_agreement("2v", points=points, theory_variance={100: theory[:3]}, num_paths=2)
    with pytest.raises(ValueError, match="mean_variance"):
        fw.predictor_variance_agreement(
            "2v", points={100: _point(np.eye(2), 0.01)}, theory_variance={100: theory}, num_paths=2
        )


@pytest.mark.needs("diagnostics")
@pytest.mark.usefixtures("long_computation")
def test_predictor_variance_agreement_on_real_samples_sees_the_gp_limit_and_a_factor_2():
    """The theory's variance against the posterior variance of a small 4-path network's output at N = 100
    (``(n + 1) / N = 0.05``): the theory is not contradicted; the GP limit's variance and the theory's times 2 or
    divided by 2 are."""
    from attnpaths.experiments.kernel_pcs import predictor_variance

    task = HMCTask(seq_len=6, feature_width=10)
    generator = torch.Generator().manual_seed(3)
    train, test = task.sample(20, generator), task.sample(40, generator)
    data = path_data(four_path_network(train), train, test)
    T, N = 0.01, 100
    curve = theory_sweep(data, [N], [T], progress=False)
    point = sampling.sample_posterior(
        data, N, T, torch.Generator().manual_seed(1), num_warmup=20, num_samples=100, num_chains=2, progress=False
    )
    arguments = (data.features, data.y, data.features_test)
    theory = predictor_variance(*arguments, curve.U[0, 0], T)
    gp = predictor_variance(*arguments, np.eye(4), T)

    def outcome(variance):
        return fw.predictor_variance_agreement(
            "2v", points={N: point}, theory_variance={N: variance}, num_paths=4
        ).outcome

    assert outcome(theory) is not CONTRADICTED
    assert outcome(gp) is CONTRADICTED
    assert outcome(2 * theory) is CONTRADICTED and outcome(theory / 2) is CONTRADICTED


def _exact_variance(mean_variance, mean_variance_se, width):
    return sampling.ExactOrderParameter(
        width=width, U=np.eye(2), U_se=np.zeros((2, 2)), mode=np.eye(2), diagnostics={},
        mean_variance=mean_variance, mean_variance_se=mean_variance_se,
    )  # fmt: skip


def test_the_exact_variance_claim_asks_every_shared_width_and_adds_both_errors():
    points = {10: _variance_point(0.5, 0.003, width=10), 100: _variance_point(0.204, 0.002)}
    exact = {10: _exact_variance(0.51, 0.004, 10), 100: _exact_variance(0.2, 0.0, 100)}
    ok = fw.exact_variance_agreement("2ve", points=points, exact=exact)
    # N = 10 is compared too: both sides are exact, no saddle-point range applies
    assert ok.outcome is HOLDS and "N = 10:" in ok.measured and "N = 100:" in ok.measured
    assert ok.inputs["se"][0] == pytest.approx(np.hypot(0.003, 0.004 * 0.5 / 0.51) / 0.51)
    for factor in (2.0, 0.5):
        wrong = {w: _exact_variance(factor * e.mean_variance, e.mean_variance_se, w) for w, e in exact.items()}
        assert fw.exact_variance_agreement("2ve", points=points, exact=wrong).outcome is CONTRADICTED
    noisy = {10: _exact_variance(0.51, 0.2, 10)}
    assert fw.exact_variance_agreement("2ve", points=points, exact=noisy).outcome is NS
    assert fw.exact_variance_agreement_power(points=points, exact=exact) > 0.99
    assert fw.exact_variance_agreement_power(points=points, exact=noisy) < 0.01
    with pytest.raises(ValueError, match="share a width"):
        fw.exact_variance_agreement("2ve", points={100: points[100]}, exact={10: exact[10]})


def test_the_exact_predictive_variance_is_the_law_of_total_variance_over_the_draws():
    from attnpaths.experiments.kernel_pcs import mean_predictor, predictor_variance

    task = HMCTask(seq_len=6, feature_width=10)
    generator = torch.Generator().manual_seed(3)
    train, test = task.sample(20, generator), task.sample(16, generator)
    data = path_data(four_path_network(train), train, test)
    arguments = (data.features, data.y, data.features_test)
    U0, U1 = np.eye(4), np.diag([2.0, 0.5, 1.0, 0.7])
    same = torch.as_tensor(np.broadcast_to(U0, (3, 4, 4, 4)).copy())
    value, se = sampling.exact_predictive_variance(data, same, 0.05)
    # identical chains: no spread between them; their leave-one-out means agree to rounding only (summed in another
    # order under another BLAS), so the standard error is zero up to a few ulps of the value
    assert value == pytest.approx(predictor_variance(*arguments, U0, 0.05).mean(), rel=1e-12)
    assert se <= 1e-12 * value
    # two chains, each at one U: the mean of the two variances plus the spread of the two means
    split = torch.as_tensor(np.stack([np.broadcast_to(U0, (4, 4, 4)), np.broadcast_to(U1, (4, 4, 4))]))
    means = [mean_predictor(*arguments, U, 0.05) for U in (U0, U1)]
    expected = (predictor_variance(*arguments, U0, 0.05) + predictor_variance(*arguments, U1, 0.05)) / 2
    expected += (means[0] - means[1]) ** 2 / 4
    value, se = sampling.exact_predictive_variance(data, split, 0.05)
    assert value == pytest.approx(expected.mean(), rel=1e-10) and se > 0
    with pytest.raises(ValueError, match="C >= 2"):
        sampling.exact_predictive_variance(data, same[:1], 0.05)


@pytest.mark.needs("diagnostics")
@pytest.mark.usefixtures("long_computation")
def test_the_exact_variance_claim_on_real_samples_at_a_width_below_the_saddle_points_range():
    """At N = 10 with 4 paths ((n + 1) / N = 0.5) the network's sampled output variance is not contradicted by the
    exact density's (short chains: whether it holds depends on the chains, which differ between CPUs); the GP limit's
    variance in its place is contradicted."""
    from attnpaths.experiments.kernel_pcs import predictor_variance

    task = HMCTask(seq_len=6, feature_width=10)
    generator = torch.Generator().manual_seed(3)
    train, test = task.sample(20, generator), task.sample(40, generator)
    data = path_data(four_path_network(train), train, test)
    T, N = 0.01, 10
    point = sampling.sample_posterior(
        data, N, T, torch.Generator().manual_seed(1), num_warmup=50, num_samples=400, num_chains=4, progress=False
    )
    exact = sampling.exact_order_parameter(
        data, N, T, torch.Generator().manual_seed(2), num_chains=16, num_warmup=100, num_samples=100, thin=2,
        progress=False,
    )  # fmt: skip
    verdict = fw.exact_variance_agreement("2ve", points={N: point}, exact={N: exact}, margin=0.1)
    assert verdict.outcome is not CONTRADICTED, verdict.measured
    gp = float(predictor_variance(data.features, data.y, data.features_test, np.eye(4), T).mean())
    wrong = dataclasses.replace(exact, mean_variance=gp, mean_variance_se=0.0)
    assert fw.exact_variance_agreement("2ve", points={N: point}, exact={N: wrong}).outcome is CONTRADICTED


def test_saddle_point_agreement_at_large_width_and_a_wrong_action():
    U = np.array([[1.3, -0.05], [-0.05, 1.2]])
    exact_mean = sampling.ExactOrderParameter
    exact = {
        10: exact_mean(width=10, U=2 * U, U_se=np.full((2, 2), 0.01), mode=U, diagnostics={}),
        100: exact_mean(width=100, U=U * 1.003, U_se=np.full((2, 2), 0.001), mode=U, diagnostics={}),
    }
    # N = 10 is left out: (n + 1) / N = 0.3 exceeds SADDLE_MAX_EPSILON, so its large shift is not tested
    ok = fw.saddle_point_agreement("2b", exact=exact, theory_U={10: U, 100: U}, num_paths=2)
    assert ok.outcome is HOLDS and "N = 100" in ok.measured and "N=10:" not in ok.measured
    # the margin is a fraction of the finite-width effect max|U_exact - I| (0.30 here), not of U itself
    assert ok.inputs["margin"] == [pytest.approx(0.04 * (1.3 * 1.003 - 1))] * 3
    # a theory whose U is 20 % off at N = 100 (e.g. a wrong energy term) is contradicted, and so is one whose
    # finite-width effect is a tenth too large (the entropy weighted by about 0.9)
    wrong = fw.saddle_point_agreement("2b", exact=exact, theory_U={10: U, 100: 1.2 * U}, num_paths=2)
    assert wrong.outcome is CONTRADICTED
    weak_entropy = np.eye(2) + 1.1 * (U - np.eye(2))
    assert (
        fw.saddle_point_agreement("2b", exact=exact, theory_U={10: U, 100: weak_entropy}, num_paths=2).outcome
        is CONTRADICTED
    )
    with pytest.raises(ValueError, match="N >= 60"):
        fw.saddle_point_agreement("2b", exact={10: exact[10]}, theory_U={10: U}, num_paths=2)


# ------------------------------------------------------------------------------------------------ claim 5
def test_gp_ordering_holds_in_order_and_is_contradicted_when_swapped():
    rng = np.random.default_rng(4)
    base = 0.82 + 0.01 * rng.standard_normal(8)
    ordered = {"all": base, "g": base + 0.1 + 0.01 * rng.standard_normal(8), "g+d": base + 0.13}
    assert hmc_claims.gp_ordering("5", gp_accuracy=ordered).outcome is HOLDS
    swapped = {"all": ordered["g"], "g": ordered["all"], "g+d": ordered["g+d"]}
    assert hmc_claims.gp_ordering("5", gp_accuracy=swapped).outcome is CONTRADICTED
    no_help = dict(ordered, **{"g+d": ordered["g"] - 0.02})
    assert hmc_claims.gp_ordering("5", gp_accuracy=no_help).outcome is CONTRADICTED
    with pytest.raises(ValueError, match="'g\\+d'"):
        hmc_claims.gp_ordering("5", gp_accuracy={"all": base, "g": base})


# ------------------------------------------------------------------------------------------------ claim 6
def _interplay(n_sets, rng, *, u_gd=-4.0, a1=0.4):
    small = np.tile(np.diag([12.0, 7.0, a1, 0.5]), (n_sets, 1, 1)) + 0.05 * rng.standard_normal((n_sets, 4, 4))
    small[:, 0, 1] = small[:, 1, 0] = u_gd + 0.1 * rng.standard_normal(n_sets)
    large = np.tile(np.eye(4), (n_sets, 1, 1)) + 0.01 * rng.standard_normal((n_sets, 4, 4))
    return small, large


def test_path_interplay_and_its_wrong_inputs():
    rng = np.random.default_rng(5)
    names = ("g", "d", "a1", "a2")
    small, large = _interplay(6, rng)
    v = hmc_claims.path_interplay("6", U_small=small, U_large=large, names=names, widths=(10, 1000))
    assert v.outcome is HOLDS and v.correction == "Bonferroni over 6 parts"
    flipped, _ = _interplay(6, rng, u_gd=+4.0)
    assert (
        hmc_claims.path_interplay("6", U_small=flipped, U_large=large, names=names, widths=(10, 1000)).outcome
        is CONTRADICTED
    )
    raised, _ = _interplay(6, rng, a1=1.6)
    assert (
        hmc_claims.path_interplay("6", U_small=raised, U_large=large, names=names, widths=(10, 1000)).outcome
        is CONTRADICTED
    )
    # widths reversed: |U_gd| would grow with N
    assert (
        hmc_claims.path_interplay("6", U_small=large, U_large=small, names=names, widths=(10, 1000)).outcome
        is CONTRADICTED
    )


# ------------------------------------------------------------------------------------------------ end to end
def test_interplay_gains_see_which_part_of_U_carries_the_gain():
    """The cross-path claim holds when zeroing U's cross-path entries costs accuracy and is contradicted when it
    gains; the same-path claim does the same for U's diagonal against the GP limit; a gain within the noise of
    the data sets is not significant."""
    rng = np.random.default_rng(11)
    gp = 0.80 + 0.01 * rng.standard_normal(20)
    theory = gp + 0.10 + 0.005 * rng.standard_normal(20)
    cases = {
        "cross-path gain": (theory - 0.08 + 0.005 * rng.standard_normal(20), (HOLDS, HOLDS)),
        "diagonal gain only": (theory + 0.002 * rng.standard_normal(20), (NS, HOLDS)),
        "cross-path weights hurt": (theory + 0.03 + 0.005 * rng.standard_normal(20), (CONTRADICTED, HOLDS)),
        "diagonal below the GP": (gp - 0.05 + 0.005 * rng.standard_normal(20), (HOLDS, CONTRADICTED)),
    }
    for name, (diagonal, expected) in cases.items():
        cross, same = hmc_claims.interplay_gains(
            "I", accuracy=theory, diagonal_accuracy=diagonal, gp_accuracy=gp, width=10, case="4 paths"
        )
        assert (cross.claim, same.claim) == ("I (4 paths)", "Iw (4 paths)")
        assert (cross.outcome, same.outcome) == expected, name
    with pytest.raises(ValueError, match="one shape"):
        hmc_claims.interplay_gains("I", accuracy=theory, diagonal_accuracy=theory[:5], gp_accuracy=gp, width=10)


def test_claims_on_real_theory_curves_hold_and_fail_with_widths_reversed():
    """Claims 1, 3, 4, 5 and 6 on four small independently drawn HMC data sets, then on the same numbers with
    the widths reversed (a theory whose finite-width effects grow with N)."""
    sets = ex.draw_data_sets(4, torch.Generator().manual_seed(11), num_train=60, num_test=300)
    band = ex.data_set_band(sets, four_path_network, [10, 1000], 0.01, gp_references=True, pc_width=10, progress=False)
    args = dict(widths=(10, 1000))
    assert fw.gp_limit_approach("3", U_small=band.U[:, 0], U_large=band.U[:, -1], **args).outcome is HOLDS
    assert fw.gp_limit_approach("3", U_small=band.U[:, -1], U_large=band.U[:, 0], **args).outcome is CONTRADICTED
    assert (
        hmc_claims.path_interplay("6", U_small=band.U[:, 0], U_large=band.U[:, -1], names=band.names, **args).outcome
        is not CONTRADICTED
    )
    assert (
        hmc_claims.path_interplay("6", U_small=band.U[:, -1], U_large=band.U[:, 0], names=band.names, **args).outcome
        is CONTRADICTED
    )
    frac = band.label_fraction
    assert (
        fw.kernel_alignment("4", fraction_fw=frac["finite_width"], fraction_gp=frac["gp"], k=5, width=10).outcome
        is HOLDS
    )
    assert (
        fw.kernel_alignment("4", fraction_fw=frac["gp"], fraction_gp=frac["finite_width"], k=5, width=10).outcome
        is CONTRADICTED
    )
    adv = dict(accuracy_small=band.accuracy[:, 0], accuracy_large=band.accuracy[:, -1], gp_accuracy=band.gp["all"])
    assert fw.finite_width_advantage_over_data_sets("1", **adv, **args).outcome is not CONTRADICTED
    swapped = dict(adv, accuracy_small=band.gp["all"] - (band.accuracy[:, 0] - band.gp["all"]))
    assert fw.finite_width_advantage_over_data_sets("1", **swapped, **args).outcome is CONTRADICTED


# ------------------------------------------------------------------------------------------------ the chapter's claims
def _fake_run(label, names, rng, *, n_sets=6, n_test=400, U_scale=1.0, gp_lines=("all", "g", "g+d")):
    """A NetworkRun whose numbers support every claim: a theory above its GP line on every data set, U raised for
    g and d and suppressed for the adversarial paths at N = 10, samples and exact means that agree."""
    from types import SimpleNamespace

    n = len(names)
    widths = np.array([10, 100, 1000])
    U_small = np.diag([12.0, 7.0, 0.4, 0.5][:n])
    U_small[0, 1] = U_small[1, 0] = -4.0
    U_theory = {10: U_small, 100: np.eye(n) + (U_small - np.eye(n)) / 10, 1000: np.eye(n) + (U_small - np.eye(n)) / 100}
    y = np.where(np.arange(n_test) < n_test // 2, 1.0, -1.0)
    right = lambda k: np.where(np.arange(n_test) < k, y, -y)  # noqa: E731
    curve = SimpleNamespace(
        widths=widths,
        names=tuple(names),
        U=np.stack([U_theory[w] for w in widths])[:, None],
        index=lambda w: int(np.flatnonzero(widths == w)[0]),
        U_at=lambda w: U_theory[int(w)],
        means={"test": np.stack([right(380), right(360), right(345)])[:, None]},
        accuracy={"test": np.array([[0.95], [0.9], [0.8625]])},
        gp=SimpleNamespace(means={"test": right(340)[None, None]}),
    )
    noise = lambda scale, shape: scale * rng.standard_normal(shape)  # noqa: E731
    band_U = np.stack(
        [
            np.stack([U_theory[10] + noise(0.05, (n, n)), U_theory[1000] + noise(0.01, (n, n))], axis=0)
            for _ in range(n_sets)
        ]
    )
    band_U = (band_U + np.swapaxes(band_U, -1, -2)) / 2
    gp_all = 0.8 + noise(0.01, n_sets)
    band = SimpleNamespace(
        accuracy=np.stack([gp_all + 0.1 + noise(0.01, n_sets), gp_all + 0.005 + noise(0.003, n_sets)], axis=1),
        gp={
            line: gp_all + shift + noise(0.005 * (shift > 0), n_sets)
            for line, shift in zip(gp_lines, (0.0, 0.05, 0.08))
        },
        U=band_U,
        names=tuple(names),
        label_fraction={"finite_width": 0.6 + noise(0.02, n_sets), "gp": 0.3 + noise(0.02, n_sets)},
    )
    # U's diagonal alone: half-way between the theory and the GP limit on every data set
    band.diagonal_accuracy = (band.accuracy + gp_all[:, None]) / 2 + noise(0.002, (n_sets, 2))
    samples = {
        w: sampling.SampledPoint(
            width=w,
            accuracy=float(curve.accuracy["test"][curve.index(w), 0]),
            accuracy_mc_sd=0.001,
            mean=np.ones(4),
            mean_se=np.full(4, 0.01),
            sd=np.ones(4),
            kernel_mean=np.ones(4),
            U=U_scale * U_theory[w],
            U_se=np.full((n, n), 0.001),
            U_sd=np.ones((n, n)),
            U_ess=np.full((n, n), 1000.0),
            diagnostics={},
        )
        for w in (10, 100)
    }
    # the exact means, and those of the actions with the entropy weighted by 0.9 and 1.1 (effect ~ 1 / (c N))
    exact = {
        w: sampling.ExactOrderParameter(
            width=w,
            U=U_theory[w],
            U_se=np.full((n, n), 0.001),
            mode=U_theory[w],
            diagnostics={},
            scaled={
                c: sampling.ExactOrderParameter(
                    width=int(c * w),
                    U=np.eye(n) + (U_theory[w] - np.eye(n)) / c,
                    U_se=np.full((n, n), 0.001),
                    mode=U_theory[w],
                    diagnostics={},
                )
                for c in (0.9, 1.1)
            },
        )
        for w in (10, 100)
    }
    return ex.NetworkRun(label, curve, band, samples, exact, y)


def test_figure_verdicts_are_the_chapters_claims_in_order_and_see_a_wrong_input():
    rng = np.random.default_rng(6)
    four = _fake_run("4 paths", ("g", "d", "a1", "a2"), rng)
    two = _fake_run("2 paths", ("g", "d"), rng, gp_lines=("all",))  # its band has its own GP limit only
    options = dict(pc_width=10, alignment_pcs=5, level=0.01, margin_accuracy=0.02, margin_U=0.1)
    verdicts = hmc_claims.figure_verdicts(four, two, **options)
    assert [v.claim for v in verdicts] == [
        "1 (4 paths)",
        "1 (2 paths)",
        "1 (authors' data, 4 paths)",
        "1 (authors' data, 2 paths)",
        "2 (4 paths)",
        "2 (2 paths)",
        "2w (4 paths)",
        "2w (2 paths)",
        "2b (4 paths)",
        "2b (2 paths)",
        "3 (4 paths)",
        "3 (2 paths)",
        "4",
        "5",
        "6 (4 paths)",
        "6 (2 paths)",
        "I (4 paths)",
        "Iw (4 paths)",
        "I (2 paths)",
        "Iw (2 paths)",
    ]
    assert all(v.outcome is HOLDS for v in verdicts), [v.sentence() for v in verdicts if v.outcome is not HOLDS]
    # each verdict is the claim's own test on the right inputs
    assert verdicts[0] == fw.finite_width_advantage_over_data_sets(
        "1 (4 paths)",
        accuracy_small=four.band.accuracy[:, 0],
        accuracy_large=four.band.accuracy[:, -1],
        gp_accuracy=four.band.gp["all"],
        widths=(10, 1000),
        where=", 4 paths",
    )
    assert verdicts[3] == fw.finite_width_advantage(
        "1 (authors' data, 2 paths)",
        theory_mean=two.curve.means["test"][0, 0],
        gp_mean=two.curve.gp.means["test"][0, 0],
        labels=two.test_labels,
        width=10,
        where=", authors' data set, 2 paths",
    )
    assert verdicts[15] == hmc_claims.path_interplay(
        "6 (2 paths)",
        U_small=two.band.U[:, 0],
        U_large=two.band.U[:, -1],
        names=("g", "d"),
        widths=(10, 1000),
        where=", 2 paths",
    )
    assert verdicts[18:] == list(
        hmc_claims.interplay_gains(
            "I",
            accuracy=two.band.accuracy[:, 0],
            diagonal_accuracy=two.band.diagonal_accuracy[:, 0],
            gp_accuracy=two.band.gp["all"],
            width=10,
            case="2 paths",
            where=", 2 paths",
        )
    )
    check = hmc_claims.interplay_power((four, two), level=0.01, power=0.8)
    d = four.band.accuracy[:, 0] - four.band.diagonal_accuracy[:, 0]
    assert check.cases == ("4 paths", "2 paths") and check.se[0] == pytest.approx(d.std(ddof=1) / np.sqrt(d.size))
    assert check.detectable[0] == pytest.approx(check.se[0] * (2.3263478740408408 + 0.8416212335729143))
    # samples of the 2-path network 20 % off the exact mean: its claims 2 and 2w are contradicted, nothing else moves
    off = _fake_run("2 paths", ("g", "d"), np.random.default_rng(7), U_scale=1.2, gp_lines=("all",))
    moved = {v.claim: v.outcome for v in hmc_claims.figure_verdicts(four, off, **options)}
    assert moved.pop("2 (2 paths)") is CONTRADICTED and moved.pop("2w (2 paths)") is CONTRADICTED
    assert set(moved.values()) == {HOLDS}
    # the wrong theories of claim 2w's and 2b's power check are contradicted
    scaled_theory = {c: {w: np.eye(4) + (four.curve.U_at(w) - np.eye(4)) / c for w in four.exact} for c in (0.9, 1.1)}
    checks = hmc_claims.wrong_action_checks(four, scaled_theory)
    assert [v.claim for v in checks[0.9]] == ["2w (4 paths, entropy x 0.9)", "2b (4 paths, entropy x 0.9)"]
    assert all(v.outcome is CONTRADICTED for vs in checks.values() for v in vs)
    assert "every such wrong theory is contradicted" in hmc_claims.wrong_action_sentence({"4 paths": checks}, "2w")
    # the networks swapped: claim 5 needs the 4-path network's three GP lines
    with pytest.raises(ValueError, match="'g'"):
        hmc_claims.figure_verdicts(two, four, **options)
    with pytest.raises(ValueError, match="NetworkRun"):
        hmc_claims.figure_verdicts(four, {"label": "2 paths"}, **options)


def test_power_checks_are_those_of_the_claims_tests():
    rng = np.random.default_rng(6)
    four = _fake_run("4 paths", ("g", "d", "a1", "a2"), rng)
    two = _fake_run("2 paths", ("g", "d"), rng, gp_lines=("all",))
    options = dict(level=0.01, margin_accuracy=0.02, margin_U=0.1)
    checks = hmc_claims.power_checks(four, two, **options)
    assert list(checks) == [
        "1 (authors' data, 4 paths)",
        "1 (authors' data, 2 paths)",
        "2 (4 paths)",
        "2 (2 paths)",
        "2b (4 paths)",
        "2b (2 paths)",
    ]
    se, detectable = fw.finite_width_advantage_power(
        theory_mean=two.curve.means["test"][0, 0],
        gp_mean=two.curve.gp.means["test"][0, 0],
        labels=two.test_labels,
        level=0.01,
    )
    assert checks["1 (authors' data, 2 paths)"] == {"se": se, "detectable": detectable}
    # Monte-Carlo errors small against the margins: claim 2 holds almost surely were the samples exact
    assert checks["2 (4 paths)"]["power"] > 0.99 and checks["2b (4 paths)"]["power"] > 0.99
    # claim 2b rests on the exact mean's errors only: errors as large as its margins leave it no power
    for e in two.exact.values():
        e.U_se[...] = 0.5
    assert hmc_claims.power_checks(four, two, **options)["2b (2 paths)"]["power"] < 0.01
    # the same run with Monte-Carlo errors as large as the margins: the test can no longer show agreement
    for point in two.samples.values():
        point.U_se[...] = 0.5
    assert hmc_claims.power_checks(four, two, **options)["2 (2 paths)"]["power"] < 0.01
    with pytest.raises(ValueError, match="NetworkRun"):
        hmc_claims.power_checks(four, {"label": "2 paths"}, **options)


def test_saddle_point_ratios_and_their_reading():
    from attnpaths.claims import bonferroni_z

    rng = np.random.default_rng(8)
    run = _fake_run("4 paths", ("g", "d", "a1", "a2"), rng)
    # the samples sit on the saddle point: ratio 0
    assert hmc_claims.saddle_point_ratios([run]) == {"4 paths": 0.0}
    shifted = _fake_run("2 paths", ("g", "d"), rng, U_scale=1.01)  # U_gg = 12.12 at N = 10: 120 standard errors
    ratio = hmc_claims.saddle_point_ratios([shifted], level=0.01)["2 paths"]
    assert math.isclose(ratio, 0.12 / 0.001 / bonferroni_z(2 * 3, 0.01))
    assert "resolve" in hmc_claims.saddle_point_reading(ratio)
    assert "hide" in hmc_claims.saddle_point_reading(0.5)


def test_entropy_weight_estimate_recovers_the_weight_of_the_samples_and_its_claim_sees_a_wrong_action():
    rng = np.random.default_rng(8)
    run = _fake_run("4 paths", ("g", "d", "a1", "a2"), rng)
    for true_weight in (0.95, 1.0, 1.04):
        points = {
            w: dataclasses.replace(p, U=np.eye(4) + (run.exact[w].U - np.eye(4)) / true_weight)
            for w, p in run.samples.items()
        }
        est = fw.entropy_weight_estimate(points=points, exact=run.exact)
        # linear in c between the scales 0.9 and 1.1 while U moves as 1/c: within 5 % of |c - 1| near c = 1
        assert est["estimate"] == pytest.approx(true_weight, abs=0.05 * abs(true_weight - 1) + 1e-3)
        assert est["num_entries"] == 20 and est["widths"] == [10, 100]
    assert fw.entropy_weight_agreement("2w", points=run.samples, exact=run.exact).outcome is HOLDS
    # against the action weighted by 0.9 (or 1.1) as reference the same samples measure about 1.1 (0.9)
    for c in (0.9, 1.1):
        wrong = fw.entropy_weight_agreement("2w", points=run.samples, exact=run.exact, reference_scale=c)
        assert wrong.outcome is CONTRADICTED
    with pytest.raises(ValueError, match="reference_scale"):
        fw.entropy_weight_estimate(points=run.samples, exact=run.exact, reference_scale=1.2)
    bare = {w: dataclasses.replace(e, scaled={}) for w, e in run.exact.items()}
    with pytest.raises(ValueError, match="below and one above 1"):
        fw.entropy_weight_estimate(points=run.samples, exact=bare)


# ------------------------------------------------------------------------------------------------ wrong theories
def _wrong_theories(train, test, width, temperature):
    """The chapter's theory on the small problem with the bugs a real implementation could have: ``{bug: (U in
    figure order, test accuracy)}`` at the sampled width ``width``, beside the correct theory (``"none"``)."""
    data = path_data(four_path_network(train), train, test)
    return wrong_theories(data, transposed_features(data, {"train": train.x, "test": test.x}), width, temperature)


@pytest.mark.needs("diagnostics")
def test_the_samples_contradict_every_wrong_theory_that_a_plausible_bug_makes(sampled_small_problem):
    """Claim 2's test (the network's samples against the theory's U and accuracy) on the small problem: the
    correct theory is not contradicted; the theory with its entropy weighted by 0.5 or 2, the GP kernel in place
    of the renormalised one, U of ten times the width and transposed attention matrices each are."""
    _, point, _ = sampled_small_problem
    train, test = small_problem_sets()
    theories = _wrong_theories(train, test, 10, 0.1)
    verdicts = wrong_theory_verdicts("2", point, theories, margin_accuracy=0.1, margin_U=0.1)
    assert all(v.claim == f"2 ({bug})" for bug, v in verdicts.items())
    outcomes = {bug: v.outcome for bug, v in verdicts.items()}
    assert outcomes.pop("none") is not CONTRADICTED
    assert outcomes == dict.fromkeys(outcomes, CONTRADICTED), outcomes


def test_transposed_attention_transposes_the_full_matrices_and_keeps_the_readout():
    train, _ = small_problem_sets()
    attention = four_path_network(train).attention
    x = train.x[:3]
    right, wrong = attention.matrices(x), TransposedAttention(attention).matrices(x)
    assert len(right) == len(wrong) and TransposedAttention(attention).num_paths == attention.num_paths
    for r, w in zip(right, wrong):
        expected = r.transpose(-1, -2) if r.ndim == 4 else r
        assert torch.equal(w, expected)
    assert any(r.ndim == 4 and not torch.equal(r, r.transpose(-1, -2)) for r in right)  # the mistake changes something
