"""Power tests of the finite-width claims (attnpaths.finite_width_claims) and of the hidden-Markov-chain claims
(attnpaths.hmc.claims): each test runs on a correct input, where it must hold, and on deliberately wrong
inputs, where it must say "contradicted"."""

import math

import numpy as np
import pytest
import torch

from attnpaths import finite_width_claims as fw
from attnpaths.claims import Outcome
from attnpaths.hmc import claims as hmc_claims
from attnpaths.experiments import sampling
from attnpaths.experiments.path_data import path_data
from attnpaths.experiments.sweep import theory_sweep
from attnpaths.hmc import experiments as ex
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
    b = np.array([1.0, 1.0, 1.0, 1.0])    # right, right, wrong, wrong
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


def test_advantage_over_data_sets_needs_both_the_gain_and_the_approach():
    rng = np.random.default_rng(1)
    gp = 0.82 + 0.01 * rng.standard_normal(8)
    small = gp + 0.10 + 0.01 * rng.standard_normal(8)
    large = gp + 0.005 * rng.standard_normal(8)
    v = fw.finite_width_advantage_over_data_sets("1", accuracy_small=small, accuracy_large=large, gp_accuracy=gp,
                                                 widths=(10, 1000))
    assert v.outcome is HOLDS and v.correction == "Bonferroni over 2 parts"
    # the GP line above the theory: contradicted
    below = fw.finite_width_advantage_over_data_sets("1", accuracy_small=gp - 0.1, accuracy_large=large,
                                                     gp_accuracy=gp, widths=(10, 1000))
    assert below.outcome is CONTRADICTED
    # widths reversed: the gap grows with N instead of shrinking
    reversed_ = fw.finite_width_advantage_over_data_sets("1", accuracy_small=large + 0.01, accuracy_large=small,
                                                         gp_accuracy=gp, widths=(10, 1000))
    assert reversed_.outcome is CONTRADICTED
    with pytest.raises(ValueError, match="one shape"):
        fw.finite_width_advantage_over_data_sets("1", accuracy_small=small[:3], accuracy_large=large, gp_accuracy=gp,
                                                 widths=(10, 1000))


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
        width=width, accuracy=accuracy, accuracy_mc_sd=accuracy_mc_sd, mean=np.ones(4), mean_se=np.full(4, 0.01),
        sd=np.full(4, 0.2), kernel_mean=np.ones(4), U=U, U_se=np.full_like(U, U_se), U_sd=np.full_like(U, 1.0),
        U_ess=np.full_like(U, 100.0), diagnostics={},
    )


def test_sample_agreement_holds_within_the_margin_and_fails_for_a_U_scaled_by_1_2():
    U = np.array([[2.0, -0.5], [-0.5, 1.0]])
    points = [_point(U + 0.01, 0.01)]
    ok = fw.sample_agreement("2", points=points, reference_accuracy={100: 0.9}, reference_U={100: U})
    assert ok.outcome is HOLDS and ok.correction == "Bonferroni over 4 entries"
    scaled = fw.sample_agreement("2", points=points, reference_accuracy={100: 0.9}, reference_U={100: 1.2 * U})
    assert scaled.outcome is CONTRADICTED
    # the accuracy 5 points off is contradicted too, whatever U does
    off = fw.sample_agreement("2", points=[_point(U, 0.01, accuracy=0.85)], reference_accuracy={100: 0.9},
                              reference_U={100: U})
    assert off.outcome is CONTRADICTED
    # runs too short to resolve the margin: not significant
    short = fw.sample_agreement("2", points=[_point(U, 0.5)], reference_accuracy={100: 0.9}, reference_U={100: U})
    assert short.outcome is NS
    with pytest.raises(ValueError, match="sampled width 100"):
        fw.sample_agreement("2", points=points, reference_accuracy={10: 0.9}, reference_U={10: U})


@pytest.fixture(scope="module")
def sampled_small_problem():
    """Network samples and the exact finite-width mean of U on a small HMC problem (P = 20, N = 10)."""
    task = HMCTask()
    generator = torch.Generator().manual_seed(3)
    train, test = task.sample(20, generator), task.sample(40, generator)
    data = path_data(four_path_network(train), train, test)
    T, N = 0.1, 10
    curve = theory_sweep(data, [N], [T], progress=False)
    point = sampling.sample_posterior(data, N, T, torch.Generator().manual_seed(1), num_warmup=100,
                                      num_samples=2000, num_chains=2, progress=False)
    exact = sampling.exact_order_parameter(data, N, T, torch.Generator().manual_seed(2), num_chains=32,
                                           num_warmup=300, num_samples=600, thin=3, progress=False)
    return curve, point, exact


def test_sample_agreement_on_real_samples_and_the_exact_mean_scaled_by_1_2(sampled_small_problem):
    curve, point, exact = sampled_small_problem
    kwargs = dict(points=[point], reference_accuracy={10: curve.accuracy["test"][0, 0]}, reference_U_se={10: exact.U_se},
                  margin_accuracy=0.1)
    right = fw.sample_agreement("2", reference_U={10: exact.U}, **kwargs)
    assert right.outcome is not CONTRADICTED
    wrong = fw.sample_agreement("2", reference_U={10: 1.2 * exact.U}, **kwargs)
    assert wrong.outcome is CONTRADICTED


def test_saddle_point_agreement_at_large_width_and_a_wrong_action():
    U = np.array([[1.3, -0.05], [-0.05, 1.2]])
    exact_mean = sampling.ExactOrderParameter
    exact = {10: exact_mean(width=10, U=2 * U, U_se=np.full((2, 2), 0.01), mode=U, diagnostics={}),
             100: exact_mean(width=100, U=U * 1.01, U_se=np.full((2, 2), 0.005), mode=U, diagnostics={})}
    # N = 10 is left out: (n + 1) / N = 0.3 exceeds half the margin, so its large shift is not tested
    ok = fw.saddle_point_agreement("2b", exact=exact, theory_U={10: U, 100: U}, num_paths=2)
    assert ok.outcome is HOLDS and "N = 100" in ok.measured and "N=10:" not in ok.measured
    # a theory whose U is 20 % off at N = 100 (e.g. a wrong energy term) is contradicted
    wrong = fw.saddle_point_agreement("2b", exact=exact, theory_U={10: U, 100: 1.2 * U}, num_paths=2)
    assert wrong.outcome is CONTRADICTED
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
    assert hmc_claims.path_interplay("6", U_small=flipped, U_large=large, names=names,
                                     widths=(10, 1000)).outcome is CONTRADICTED
    raised, _ = _interplay(6, rng, a1=1.6)
    assert hmc_claims.path_interplay("6", U_small=raised, U_large=large, names=names,
                                     widths=(10, 1000)).outcome is CONTRADICTED
    # widths reversed: |U_gd| would grow with N
    assert hmc_claims.path_interplay("6", U_small=large, U_large=small, names=names,
                                     widths=(10, 1000)).outcome is CONTRADICTED


# ------------------------------------------------------------------------------------------------ end to end
def test_claims_on_real_theory_curves_hold_and_fail_with_widths_reversed():
    """Claims 1, 3, 4, 5 and 6 on four small independently drawn HMC data sets, then on the same numbers with
    the widths reversed (a theory whose finite-width effects grow with N)."""
    sets = ex.draw_data_sets(4, torch.Generator().manual_seed(11), num_train=60, num_test=300)
    band = ex.data_set_band(sets, four_path_network, [10, 1000], 0.01, gp_references=True, pc_width=10,
                            progress=False)
    args = dict(widths=(10, 1000))
    assert fw.gp_limit_approach("3", U_small=band.U[:, 0], U_large=band.U[:, -1], **args).outcome is HOLDS
    assert fw.gp_limit_approach("3", U_small=band.U[:, -1], U_large=band.U[:, 0], **args).outcome is CONTRADICTED
    assert hmc_claims.path_interplay("6", U_small=band.U[:, 0], U_large=band.U[:, -1], names=band.names,
                                     **args).outcome is not CONTRADICTED
    assert hmc_claims.path_interplay("6", U_small=band.U[:, -1], U_large=band.U[:, 0], names=band.names,
                                     **args).outcome is CONTRADICTED
    frac = band.label_fraction
    assert fw.kernel_alignment("4", fraction_fw=frac["finite_width"], fraction_gp=frac["gp"], k=5,
                               width=10).outcome is HOLDS
    assert fw.kernel_alignment("4", fraction_fw=frac["gp"], fraction_gp=frac["finite_width"], k=5,
                               width=10).outcome is CONTRADICTED
    adv = dict(accuracy_small=band.accuracy[:, 0], accuracy_large=band.accuracy[:, -1], gp_accuracy=band.gp["all"])
    assert fw.finite_width_advantage_over_data_sets("1", **adv, **args).outcome is not CONTRADICTED
    swapped = dict(adv, accuracy_small=band.gp["all"] - (band.accuracy[:, 0] - band.gp["all"]))
    assert fw.finite_width_advantage_over_data_sets("1", **swapped, **args).outcome is CONTRADICTED
