"""Tests of attnpaths.hmc.experiments: ablations, Monte-Carlo errors, data-set draws and the claim checks
(each must raise ClaimViolation, naming its claim, on an input that contradicts it)."""

import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from attnpaths.hmc import experiments as ex
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.networks import four_path_network, two_path_network
from attnpaths.kernels import pc_label_overlap
from attnpaths.theory import classification_accuracy, solve

from helpers import random_problem, random_spd


@pytest.fixture(scope="module")
def small_data():
    """4-path path features on a small HMC problem (P = 20 training, 40 test sequences)."""
    task = HMCTask()
    generator = torch.Generator().manual_seed(3)
    train, test = task.sample(20, generator), task.sample(40, generator)
    return ex.path_data(four_path_network(train), train, test)


# ------------------------------------------------------------------------------------------------ ablations
def test_diagonal_only_keeps_the_diagonal_and_drops_the_rest():
    U = random_spd(4, seed=1)
    D = ex.diagonal_only(U)
    assert np.array_equal(np.diag(D), np.diag(U.numpy()))
    assert np.count_nonzero(D - np.diag(np.diag(D))) == 0


def test_evened_diagonal_sets_every_diagonal_entry_and_keeps_off_diagonals():
    U = random_spd(4, seed=2).numpy()
    E = ex.evened_diagonal(U, index=2)
    assert np.all(np.diag(E) == U[2, 2])
    off = ~np.eye(4, dtype=bool)
    assert np.array_equal(E[off], U[off])
    assert np.all(np.diag(ex.evened_diagonal(U)) == U[0, 0])


@pytest.mark.parametrize("index", [-1, 4, 1.0, True])
def test_evened_diagonal_rejects_bad_index(index):
    with pytest.raises(ValueError, match="index"):
        ex.evened_diagonal(np.eye(4), index=index)


def test_ablations_reject_non_square():
    with pytest.raises(ValueError, match="U must be a square"):
        ex.diagonal_only(np.ones((2, 3)))


def test_mean_predictor_with_the_theory_U_is_the_theory_predictor():
    xi, y = random_problem(P=24, heads=(2, 2), seed=4)
    xt, _ = random_problem(P=10, heads=(2, 2), seed=5)
    sol = solve(xi, y, heads=(2, 2), widths=8, temperature=0.1)
    np.testing.assert_allclose(ex.mean_predictor(xi, y, xt, sol.U, 0.1), sol.predict(xt)[0], rtol=1e-9, atol=1e-12)


def test_ablation_with_identity_is_the_gp(small_data):
    curve = ex.theory_curve(small_data, [5, 50], 0.01, progress=False)
    assert ex.accuracy_with_order_parameter(small_data, np.eye(4), 0.01) == curve.gp_accuracy
    abl = ex.ablation_curves(small_data, curve, 0.01)
    assert set(abl) == {"theory", "diagonal_only", "evened_diagonal"}
    assert abl["diagonal_only"].shape == (2,)
    expected = ex.accuracy_with_order_parameter(small_data, ex.diagonal_only(curve.U_flat[0]), 0.01)
    assert abl["diagonal_only"][0] == expected


# ------------------------------------------------------------------------------------------------ theory curve
def test_theory_curve_orders_U_for_figures(small_data):
    curve = ex.theory_curve(small_data, [5, 50], 0.01, progress=False)
    assert curve.names == ("g", "d", "a1", "a2")
    order = small_data.plot_order
    np.testing.assert_array_equal(curve.U, curve.U_flat[:, order][:, :, order])
    assert curve.converged.all()
    assert curve.U_at(50).shape == (4, 4)
    with pytest.raises(ValueError, match="width must be one of"):
        curve.index(7)


@pytest.mark.parametrize("widths", [[], [10, 5], [0, 5], [2.5]])
def test_theory_curve_rejects_bad_widths(small_data, widths):
    with pytest.raises(ValueError, match="widths"):
        ex.theory_curve(small_data, widths, 0.01, progress=False)


# ------------------------------------------------------------------------------------------------ data sets
def test_draw_data_sets_is_reproducible_and_prefix_stable():
    a = ex.draw_data_sets(3, torch.Generator().manual_seed(9), num_train=4, num_test=6)
    b = ex.draw_data_sets(2, torch.Generator().manual_seed(9), num_train=4, num_test=6)
    for (tr_a, te_a), (tr_b, te_b) in zip(a, b):
        assert torch.equal(tr_a.x, tr_b.x) and torch.equal(te_a.x, te_b.x)
    assert not torch.equal(a[0][0].x, a[1][0].x)  # independent draws differ
    assert a[0][1].num_examples == 6


def test_draw_data_sets_passes_task_parameters():
    sets = ex.draw_data_sets(1, torch.Generator().manual_seed(1), num_train=2, num_test=2, sigma_perp=5.0)
    assert sets[0][0].task.sigma_perp == 5.0 and sets[0][1].task == sets[0][0].task


def test_path_data_refuses_mismatched_tasks():
    g = torch.Generator().manual_seed(0)
    train = HMCTask().sample(2, g)
    test = HMCTask(sigma_perp=5.0).sample(2, g)
    with pytest.raises(ValueError, match="same task"):
        ex.path_data(two_path_network(train), train, test)


# ------------------------------------------------------------------------------------------------ PCs, kernels
def test_pc_overlaps_and_kernels_with_identity_are_the_gp(small_data):
    pcs = ex.pc_overlaps(small_data, np.eye(4), num_components=5)
    np.testing.assert_allclose(pcs["finite_width"], pcs["gp"], atol=1e-12)
    kernels = ex.appendix_kernels(small_data, np.eye(4))
    assert list(kernels) == ["g", "d", "a1", "a2", "GP", "FW"]
    np.testing.assert_allclose(kernels["FW"], kernels["GP"], atol=1e-14)
    # K_GP is the mean of the same-path kernels (S9)
    np.testing.assert_allclose(kernels["GP"], np.mean([kernels[n] for n in ("g", "d", "a1", "a2")], axis=0), atol=1e-14)
    assert kernels["g"].shape == (20, 20)


def test_label_fraction_of_all_components_is_one():
    K = random_spd(8, seed=3).numpy()
    y = np.array([1.0] * 4 + [-1.0] * 4)
    overlaps, _ = pc_label_overlap(K, y)
    assert math.isclose(ex.label_fraction(overlaps, 8), 1.0, rel_tol=1e-12)


def test_centered_alignment():
    y = np.array([1.0, 1.0, -1.0, -1.0])
    assert math.isclose(ex.centered_alignment(np.outer(y, y) + 3.0, y), 1.0)  # a constant offset is centred away
    assert ex.centered_alignment(np.ones((4, 4)), y) == 0.0
    assert abs(ex.centered_alignment(np.diag([1.0, 2.0, 3.0, 4.0]), y)) < 1


# ------------------------------------------------------------------------------------------------ MC errors
def test_accuracy_mc_sd():
    assert ex.accuracy_mc_sd(np.ones(10), np.full(10, 1e-6)) == 0.0
    # a point exactly at zero flips with probability 1/2: sd = sqrt(1/4) / n
    assert math.isclose(ex.accuracy_mc_sd(np.array([0.0, 5.0]), np.array([1.0, 1e-9])), 0.25)
    p = norm.cdf(-1.0)
    assert math.isclose(ex.accuracy_mc_sd(np.array([1.0]), np.array([1.0])), math.sqrt(p * (1 - p)))
    with pytest.raises(ValueError, match="mean_se > 0"):
        ex.accuracy_mc_sd(np.ones(2), np.zeros(2))


def test_paired_accuracy_sd_counts_discordant_points():
    y = np.array([1.0, 1.0, -1.0, -1.0])
    a = np.array([1.0, -1.0, -1.0, 1.0])  # right, wrong, right, wrong
    b = np.array([1.0, 1.0, 1.0, 1.0])    # right, right, wrong, wrong
    assert math.isclose(ex.paired_accuracy_sd(a, b, y), math.sqrt(2) / 4)


def test_bonferroni_and_epsilon():
    assert math.isclose(ex.bonferroni_z(1, 0.01), norm.ppf(0.995))
    assert ex.bonferroni_z(10) > ex.bonferroni_z(1)
    assert ex.finite_width_epsilon(10, 4) == 0.5
    with pytest.raises(ValueError, match="family_error"):
        ex.bonferroni_z(3, 1.5)


# ------------------------------------------------------------------------------------------------ claim 1
def test_claim1_passes_and_fails():
    out = ex.check_finite_width_advantage([10, 100], [0.95, 0.85], 0.83)
    assert math.isclose(out["margin_smallest_N"], 0.12)
    with pytest.raises(ex.ClaimViolation, match=r"claim 1 .*contradicted.*-0\.0100"):
        ex.check_finite_width_advantage([10, 100], [0.82, 0.80], 0.83)
    with pytest.raises(ex.ClaimViolation, match="claim 1 .*approaches"):
        ex.check_finite_width_advantage([10, 100], [0.90, 0.99], 0.83)


# ------------------------------------------------------------------------------------------------ claim 3
def test_claim3_passes_and_fails():
    good = np.stack([np.eye(2) + [[1, -0.5], [-0.5, 1]], np.eye(2) + 0.1])
    out = ex.check_gp_limit_approach([10, 100], good)
    assert out["distance"][1] < out["distance"][0]
    with pytest.raises(ex.ClaimViolation, match=r"claim 3 .*grows .*by"):
        ex.check_gp_limit_approach([10, 100], good[::-1])
    # distance falls but the cross-path entry does not
    tricky = np.stack([[[3.0, 0.1], [0.1, 3.0]], [[1.0, 0.2], [0.2, 1.0]]])
    with pytest.raises(ex.ClaimViolation, match="claim 3 .*cross-path"):
        ex.check_gp_limit_approach([10, 100], tricky)


# ------------------------------------------------------------------------------------------------ claim 4
def test_claim4_passes_and_fails():
    fw = np.array([0.1, 0.9, 0.1, 0.1, 0.1])
    gp = np.array([0.1, 0.2, 0.3, 0.2, 0.1])
    assert ex.check_kernel_alignment(fw, gp, k=5)["label_fraction"][0] > 0.8
    with pytest.raises(ex.ClaimViolation, match=r"claim 4 .*short by"):
        ex.check_kernel_alignment(gp, fw, k=5)


# ------------------------------------------------------------------------------------------------ claim 5
def test_claim5_passes_fails_and_tolerates_test_noise():
    assert ex.check_gp_ordering({"all": 0.82, "g": 0.94, "g+d": 0.95})["strict_order_holds"]
    with pytest.raises(ex.ClaimViolation, match=r"claim 5 \(the denoising path helps the GP\).*by 0\.0150"):
        ex.check_gp_ordering({"all": 0.78, "g": 0.945, "g+d": 0.93})
    with pytest.raises(ex.ClaimViolation, match="claim 5 .*adversarial"):
        ex.check_gp_ordering({"all": 0.95, "g": 0.94, "g+d": 0.96})
    out = ex.check_gp_ordering({"all": 0.78, "g": 0.945, "g+d": 0.93}, tolerance={"g+d-g": 0.02})
    assert not out["strict_order_holds"]
    with pytest.raises(ValueError, match="must hold the keys"):
        ex.check_gp_ordering({"all": 0.8, "g": 0.9})


# ------------------------------------------------------------------------------------------------ claim 6
def _interplay_U(u_gd_small=-2.0, u_gd_large=-0.1, a1=0.5):
    small = np.array([[5.0, u_gd_small, 0, 0], [u_gd_small, 3.0, 0, 0], [0, 0, a1, 0], [0, 0, 0, 0.4]])
    large = np.array([[1.2, u_gd_large, 0, 0], [u_gd_large, 1.1, 0, 0], [0, 0, 1.1, 0], [0, 0, 0, 1.1]])
    return np.stack([small, large])


def test_claim6_passes_and_fails():
    names = ("g", "d", "a1", "a2")
    out = ex.check_path_interplay([10, 100], _interplay_U(), names)
    assert out["U_gd"][0] == -2.0 and out["adversarial"] == {"a1": 0.5, "a2": 0.4}
    with pytest.raises(ex.ClaimViolation, match="claim 6 .*U_gd = 2.0000 .*not negative"):
        ex.check_path_interplay([10, 100], _interplay_U(u_gd_small=2.0, u_gd_large=0.1), names)
    with pytest.raises(ex.ClaimViolation, match="claim 6 .*U_a1a1 .*by 0.5000"):
        ex.check_path_interplay([10, 100], _interplay_U(a1=1.5), names)
    with pytest.raises(ex.ClaimViolation, match=r"claim 6 .*\|U_gd\| grows with N"):
        ex.check_path_interplay([10, 100], _interplay_U(u_gd_small=-0.05, u_gd_large=-0.1), names)
    # the 2-path network has no adversarial paths
    two = _interplay_U()[:, :2, :2]
    assert ex.check_path_interplay([10, 100], two, ("g", "d"))["adversarial"] == {}


# ------------------------------------------------------------------------------------------------ claim 2
def _point(U, U_se, *, width=100, accuracy=0.9, mean=None, kernel_mean=None):
    mean = np.array([1.0, -1.0, 0.5, -0.5]) if mean is None else mean
    return ex.SampledPoint(
        width=width, accuracy=accuracy, accuracy_mc_sd=0.0, mean=mean, mean_se=np.full(4, 0.01),
        sd=np.full(4, 0.2), kernel_mean=mean if kernel_mean is None else kernel_mean, U=U,
        U_se=np.full_like(U, U_se), U_sd=np.full_like(U, 1.0),
        U_ess=np.full_like(U, 100.0), diagnostics={},
    )


def test_claim2_passes_within_tolerance_and_fails_beyond():
    theory_U = np.diag([2.0, 1.0])
    theory_mean = np.array([1.0, -1.0, 0.5, -0.5])
    ok = _point(theory_U + 0.01, U_se=0.01)
    out = ex.check_samples_match_theory(ok, theory_mean, 0.9, theory_U)
    assert out["U_worst_ratio"] < 1 and out["epsilon"] == 3 / 100
    # 20 standard errors away and beyond the finite-width allowance (3 % of sqrt(U_ii U_jj))
    bad = _point(theory_U + np.array([[0.3, 0.0], [0.0, 0.0]]), U_se=0.01)
    with pytest.raises(ex.ClaimViolation, match=r"claim 2 \(sampled U agrees with the theory U\).*entry \(0, 0\)"):
        ex.check_samples_match_theory(bad, theory_mean, 0.9, theory_U)
    with pytest.raises(ex.ClaimViolation, match=r"claim 2 \(samples agree with the theory\).*0\.1000"):
        ex.check_samples_match_theory(_point(theory_U, 0.01, accuracy=0.8), theory_mean, 0.9, theory_U)


def test_claim2_finite_width_term_is_what_allows_an_O_1_over_N_shift():
    theory_U = np.diag([2.0, 1.0])
    theory_mean = np.array([1.0, -1.0, 0.5, -0.5])
    shifted = _point(theory_U * 1.02, U_se=0.001)  # a 2 % shift, resolved by the samples
    out = ex.check_samples_match_theory(shifted, theory_mean, 0.9, theory_U)  # within (n+1)/N = 3 %
    assert out["U_z"][0, 0] > 30
    with pytest.raises(ex.ClaimViolation, match="claim 2"):
        ex.check_samples_match_theory(shifted, theory_mean, 0.9, theory_U, finite_width=False)


def test_claim2_with_the_exact_mean_is_a_pure_monte_carlo_comparison_with_it():
    theory_U = np.diag([2.0, 1.0])
    theory_mean = np.array([1.0, -1.0, 0.5, -0.5])
    exact_U = theory_U * 1.05  # the finite-width mean, 5 % above the saddle point
    exact = ex.ExactOrderParameter(width=100, U=exact_U, U_se=np.full((2, 2), 0.002), mode=exact_U, diagnostics={})
    # samples at the exact mean pass, although they are 50 standard errors from the saddle point
    near = _point(exact_U + 0.005, U_se=0.002)
    out = ex.check_samples_match_theory(near, theory_mean, 0.9, theory_U, exact=exact)
    assert out["U_reference"] == "exact" and out["epsilon"] == 0.0 and out["U_worst_ratio"] < 1
    np.testing.assert_allclose(out["saddle_shift"], exact_U - theory_U)
    # samples at the saddle point fail: the (n + 1) / N allowance is not applied against the exact mean
    with pytest.raises(ex.ClaimViolation, match=r"sampled U agrees.*vs exact 2\.1000"):
        ex.check_samples_match_theory(_point(theory_U, U_se=0.002), theory_mean, 0.9, theory_U, exact=exact)
    with pytest.raises(ValueError, match="exact must be the exact mean at N=10"):
        ex.check_samples_match_theory(_point(exact_U, 0.002, width=10), theory_mean, 0.9, theory_U, exact=exact)


def test_claim2_sign_changes_explained_by_the_sampled_U_are_allowed():
    theory_U = np.eye(2)
    theory_mean = np.array([0.01, -1.0, 0.5, -0.5])
    # with the sampled U in the kernel, the first test point changes sign: one point of four may differ
    point = _point(theory_U, 0.01, width=10, accuracy=0.7, kernel_mean=np.array([-0.01, -1.0, 0.5, -0.5]))
    out = ex.check_samples_match_theory(point, theory_mean, 0.9, theory_U)
    assert out["num_sign_changes"] == 1 and math.isclose(out["accuracy_tolerance"], 0.25)
    with pytest.raises(ex.ClaimViolation, match=r"claim 2 \(samples agree"):
        ex.check_samples_match_theory(point, theory_mean, 0.9, theory_U, finite_width=False)


# ------------------------------------------------------------------------------------------------ sampling
def test_sample_posterior_is_reproducible_and_summarised(small_data):
    run = lambda: ex.sample_posterior(small_data, 3, 0.1, torch.Generator().manual_seed(5), num_warmup=2,
                                      num_samples=6, num_chains=2, progress=False)
    a, b = run(), run()
    assert np.array_equal(a.U, b.U) and a.accuracy == b.accuracy
    assert a.U.shape == (4, 4) and np.allclose(a.U, a.U.T)
    assert a.mean.shape == (40,) and np.all(a.mean_se > 0)
    # the kernel predictor with the sampled U (flat order) is the S8 predictor of that U
    inverse = np.argsort(small_data.plot_order)
    expected = ex.mean_predictor(small_data.features, small_data.y, small_data.features_test,
                                 a.U[np.ix_(inverse, inverse)], 0.1)
    np.testing.assert_allclose(a.kernel_mean, expected, rtol=1e-10, atol=1e-12)
    assert a.accuracy == classification_accuracy(a.mean, small_data.y_test.numpy())
    assert {"wall_time_s", "min_predictor_ess", "max_predictor_rhat", "min_U_ess", "max_U_rhat"} <= set(a.diagnostics)
    assert a.diagnostics["num_chains"] == 2 and a.diagnostics["num_samples"] == 6
    np.testing.assert_allclose(a.U_se, a.U_sd / np.sqrt(a.U_ess))
