"""Tests of attnpaths.hmc.bands and of the experiment layer on the HMC task: ablations, the theory over
widths, kernel PCs, Monte-Carlo errors, sampling and data-set draws (the claims' tests are in
test_claims_hmc.py)."""

import math

import numpy as np
import pytest
import torch
from helpers import random_problem, random_spd, sampled_point
from scipy.stats import norm

from attnpaths.engine import single_threaded
from attnpaths.experiments import kernel_pcs, sampling
from attnpaths.experiments.path_data import path_data
from attnpaths.experiments.sweep import theory_sweep
from attnpaths.hmc import bands as ex
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.networks import four_path_network, good_and_denoising_network, good_path_network, two_path_network
from attnpaths.kernels import pc_label_overlap
from attnpaths.theory import classification_accuracy, solve


@pytest.fixture(scope="module")
def small_data():
    """4-path path features on a small HMC problem (P = 20 training, 40 test sequences)."""
    task = HMCTask()
    generator = torch.Generator().manual_seed(3)
    train, test = task.sample(20, generator), task.sample(40, generator)
    return path_data(four_path_network(train), train, test)


# ------------------------------------------------------------------------------------------------ ablations
def test_diagonal_only_keeps_the_diagonal_and_drops_the_rest():
    U = random_spd(4, seed=1)
    D = ex.diagonal_only(U)
    assert np.array_equal(np.diag(D), np.diag(U.numpy()))  # exact on any CPU: copies of the diagonal
    assert np.count_nonzero(D - np.diag(np.diag(D))) == 0


def test_evened_diagonal_sets_every_diagonal_entry_and_keeps_off_diagonals():
    U = random_spd(4, seed=2).numpy()
    E = ex.evened_diagonal(U, index=2)
    # exact on any CPU: the ablation writes copies of entries of U
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
    sol = solve(xi, y, heads=(2, 2), width=8, temperature=0.1)
    np.testing.assert_allclose(
        kernel_pcs.mean_predictor(xi, y, xt, sol.U, 0.1), sol.predict(xt)[0], rtol=1e-9, atol=1e-12
    )


def test_ablation_with_identity_is_the_gp(small_data):
    curve = theory_sweep(small_data, [5, 50], [0.01], gp_limit=True, progress=False)
    # exact on any CPU: accuracies are counts over 40 sequences (the GP solve and the predictor with U = I are two
    # routes to the outputs, but none lies within rounding of zero)
    assert ex.accuracy_with_order_parameter(small_data, np.eye(4), 0.01) == curve.gp.accuracy["test"][0, 0]
    abl = ex.ablation_curves(small_data, curve, 0.01)
    assert set(abl) == {"theory", "diagonal_only", "evened_diagonal"}
    assert abl["diagonal_only"].shape == (2,)
    expected = ex.accuracy_with_order_parameter(small_data, ex.diagonal_only(curve.U[0, 0]), 0.01)
    assert abl["diagonal_only"][0] == expected  # determinism: the same function of the same ablated U
    np.testing.assert_array_equal(abl["theory"], curve.accuracy["test"][:, 0])  # exact on any CPU: copied
    with pytest.raises(ValueError, match="temperature must be one of"):
        ex.ablation_curves(small_data, curve, 0.1)
    # a one-temperature sweep supplies its temperature; a sweep of several needs it named
    # determinism: the same ablation, the temperature taken from the sweep
    np.testing.assert_array_equal(ex.ablation_curves(small_data, curve)["diagonal_only"], abl["diagonal_only"])
    two = theory_sweep(small_data, [5], [0.01, 0.1], progress=False)
    with pytest.raises(ValueError, match="temperature must be given"):
        ex.ablation_curves(small_data, two)


# ------------------------------------------------------------------------------------------------ theory over N
def test_theory_sweep_orders_U_for_figures(small_data):
    curve = theory_sweep(small_data, [5, 50], [0.01], progress=False)
    assert curve.names == ("g", "d", "a1", "a2") and curve.gp is None
    order = small_data.network.plot_order
    # exact on any CPU: permutations of the same entries
    np.testing.assert_array_equal(curve.U_figure, curve.U[:, :, order][:, :, :, order])
    np.testing.assert_array_equal(curve.U_at(50), curve.U_figure[1, 0])
    assert curve.converged.all()
    with pytest.raises(ValueError, match="width must be one of"):
        curve.index(7)


@pytest.mark.parametrize("widths", [[], [10, 5], [0, 5], [2.5], [True, 5]])
def test_theory_sweep_rejects_bad_widths(small_data, widths):
    with pytest.raises(ValueError, match="widths"):
        theory_sweep(small_data, widths, [0.01], progress=False)


# ------------------------------------------------------------------------------------------------ data sets
def test_draw_data_sets_is_reproducible_and_prefix_stable():
    a = ex.draw_data_sets(3, torch.Generator().manual_seed(9), num_train=4, num_test=6)
    b = ex.draw_data_sets(2, torch.Generator().manual_seed(9), num_train=4, num_test=6)
    for (tr_a, te_a), (tr_b, te_b) in zip(a, b):  # determinism: the same draws from the same seed
        assert torch.equal(tr_a.x, tr_b.x) and torch.equal(te_a.x, te_b.x)
    assert not torch.equal(a[0][0].x, a[1][0].x)  # independent draws differ
    assert a[0][1].num_examples == 6


def test_draw_data_sets_passes_task_parameters():
    sets = ex.draw_data_sets(1, torch.Generator().manual_seed(1), num_train=2, num_test=2, sigma_perp=5.0)
    assert sets[0][0].task.sigma_perp == 5.0 and sets[0][1].task == sets[0][0].task


def test_data_set_draws_give_the_pairs_of_draw_data_sets_bit_for_bit():
    drawn = torch.Generator().manual_seed(9)
    pairs = ex.draw_data_sets(3, drawn, num_train=4, num_test=6, sigma_perp=5.0)
    recipes = torch.Generator().manual_seed(9)
    draws = ex.data_set_draws(3, recipes, num_train=4, num_test=6, sigma_perp=5.0)
    # determinism (below): generator states are bytes, and a recipe redraws with the same sampler from the same state
    assert torch.equal(drawn.get_state(), recipes.get_state())  # the generator is left where draw_data_sets leaves it
    for (train, test), draw in zip(pairs, draws):
        again_train, again_test = draw.draw()
        assert torch.equal(again_train.x, train.x) and torch.equal(again_test.x, test.x)
        assert torch.equal(again_test.noise, test.noise) and again_test.task == test.task
    assert torch.equal(draws[2].draw()[0].x, pairs[2][0].x)  # drawing one pair does not disturb another
    assert not torch.equal(draws[0].draw()[0].x, draws[1].draw()[0].x)


def test_a_band_from_draws_equals_the_band_from_pairs():
    # the pairs drawn here with one thread, as the tasks draw theirs (every task runs single-threaded): the
    # noise's projections are reductions, whose last bits depend on how many threads share them
    with single_threaded():
        pairs = ex.draw_data_sets(2, torch.Generator().manual_seed(4), num_train=20, num_test=30)
    draws = ex.data_set_draws(2, torch.Generator().manual_seed(4), num_train=20, num_test=30)
    a = ex.data_set_band(pairs, four_path_network, [5, 50], 0.1, pc_width=5, progress=False)
    b = ex.data_set_band(draws, four_path_network, [5, 50], 0.1, pc_width=5, progress=False)
    # determinism: the same band computation on bit-identical data sets
    assert np.array_equal(a.accuracy, b.accuracy) and np.array_equal(a.U, b.U)
    assert np.array_equal(a.label_fraction["finite_width"], b.label_fraction["finite_width"])


def test_gp_lines_read_the_sub_networks_paths_from_the_four_path_features():
    task = HMCTask()
    generator = torch.Generator().manual_seed(11)
    train, test = task.sample(30, generator), task.sample(50, generator)
    shared = ex.gp_predictions(train, test, 0.01)
    given = ex.gp_predictions(train, test, 0.01, data=path_data(four_path_network(train), train, test))
    # each network's own path features, computed from its own attention
    for key, factory in zip(ex.GP_LINES, (four_path_network, good_path_network, good_and_denoising_network)):
        own = path_data(factory(train), train, test)
        alone = solve(own.features, own.y, heads=own.network.heads, width=math.inf, temperature=0.01)
        expected = alone.predict(own.features_test)[0]
        np.testing.assert_allclose(shared[key], expected, rtol=1e-10, atol=1e-12)
        assert np.array_equal(given[key], shared[key])  # determinism: the given path data is the one computed inside
    assert not np.allclose(shared["g"], shared["all"])  # three different lines
    with pytest.raises(ValueError, match="data must be the path data of four_path_network"):
        ex.gp_predictions(train, test, 0.01, data=path_data(two_path_network(train), train, test))


def test_path_data_refuses_mismatched_tasks():
    g = torch.Generator().manual_seed(0)
    train = HMCTask().sample(2, g)
    test = HMCTask(sigma_perp=5.0).sample(2, g)
    with pytest.raises(ValueError, match="same task"):
        path_data(two_path_network(train), train, test)


# ------------------------------------------------------------------------------------------------ PCs, kernels
def test_pc_overlaps_and_kernels_with_identity_are_the_gp(small_data):
    pcs = kernel_pcs.pc_overlaps(small_data, np.eye(4), num_components=5)
    np.testing.assert_allclose(pcs["finite_width"], pcs["gp"], atol=1e-12)
    kernels = kernel_pcs.appendix_kernels(small_data, np.eye(4))
    assert list(kernels) == ["g", "d", "a1", "a2", "GP", "FW"]
    np.testing.assert_allclose(kernels["FW"], kernels["GP"], atol=1e-14)
    # K_GP is the mean of the same-path kernels (eq-gp)
    np.testing.assert_allclose(kernels["GP"], np.mean([kernels[n] for n in ("g", "d", "a1", "a2")], axis=0), atol=1e-14)
    assert kernels["g"].shape == (20, 20)


def test_label_fraction_of_all_components_is_one():
    K = random_spd(8, seed=3).numpy()
    y = np.array([1.0] * 4 + [-1.0] * 4)
    overlaps, _ = pc_label_overlap(K, y)
    assert math.isclose(kernel_pcs.label_fraction(overlaps, 8), 1.0, rel_tol=1e-12)


def test_centered_alignment():
    y = np.array([1.0, 1.0, -1.0, -1.0])
    assert math.isclose(
        kernel_pcs.centered_alignment(np.outer(y, y) + 3.0, y), 1.0
    )  # a constant offset is centred away
    assert kernel_pcs.centered_alignment(np.ones((4, 4)), y) == 0.0  # exact on any CPU: 1 - 1 - 1 + 1 = 0, no norm
    # y is centred (H y = y), so <K_c, y y^T> = y^T K y = 1 + 2 + 3 + 4 = 10, and ||K_c||_F^2 = tr(K H K H)
    # = tr K^2 - 2 (1^T K^2 1) / 4 + (1^T K 1)^2 / 16 = 30 - 15 + 6.25 for K = diag(1, 2, 3, 4)
    expected = 10 / (math.sqrt(30 - 15 + 6.25) * 4)
    assert math.isclose(kernel_pcs.centered_alignment(np.diag([1.0, 2.0, 3.0, 4.0]), y), expected, rel_tol=1e-12)


# ------------------------------------------------------------------------------------------------ MC errors
def test_accuracy_mc_sd():
    assert sampling.accuracy_mc_sd(np.ones(10), np.full(10, 1e-6)) == 0.0  # exact on any CPU: Phi(-1e6) underflows to 0
    # a point exactly at zero flips with probability 1/2: sd = sqrt(1/4) / n
    assert math.isclose(sampling.accuracy_mc_sd(np.array([0.0, 5.0]), np.array([1.0, 1e-9])), 0.25)
    p = norm.cdf(-1.0)
    assert math.isclose(sampling.accuracy_mc_sd(np.array([1.0]), np.array([1.0])), math.sqrt(p * (1 - p)))
    with pytest.raises(ValueError, match="mean_se > 0"):
        sampling.accuracy_mc_sd(np.ones(2), np.zeros(2))


def test_finite_width_epsilon_is_n_plus_one_over_N():
    assert sampling.finite_width_epsilon(10, 4) == 0.5
    with pytest.raises(ValueError, match="width"):
        sampling.finite_width_epsilon(0, 4)


# ------------------------------------------------------------------------------------------------ sampling
@pytest.mark.needs("diagnostics")
def test_sample_posterior_is_reproducible_and_summarised(small_data):
    run = lambda: sampling.sample_posterior(
        small_data, 3, 0.1, torch.Generator().manual_seed(5), num_warmup=2, num_samples=6, num_chains=2, progress=False
    )
    a, b = run(), run()
    assert np.array_equal(a.U, b.U) and a.accuracy == b.accuracy  # determinism: the same run twice
    assert a.U.shape == (4, 4) and np.allclose(a.U, a.U.T)
    assert a.mean.shape == (40,) and np.all(a.mean_se > 0)
    # the kernel predictor with the sampled U (flat order) is the (eq-predictor) predictor of that U
    inverse = np.argsort(small_data.network.plot_order)
    expected = kernel_pcs.mean_predictor(
        small_data.features, small_data.y, small_data.features_test, a.U[np.ix_(inverse, inverse)], 0.1
    )
    np.testing.assert_allclose(a.kernel_mean, expected, rtol=1e-10, atol=1e-12)
    assert a.accuracy == classification_accuracy(a.mean, small_data.y_test.numpy())  # determinism: same function
    assert {"wall_time_s", "min_predictor_ess", "max_predictor_rhat", "min_U_ess", "max_U_rhat"} <= set(a.diagnostics)
    assert a.diagnostics["num_chains"] == 2 and a.diagnostics["num_samples"] == 6
    np.testing.assert_allclose(a.U_se, a.U_sd / np.sqrt(a.U_ess))


# ------------------------------------------------------------------------------------------------ the chapter's records
def _exact(width, U):
    return sampling.ExactOrderParameter(
        width=width, U=U, U_se=np.full_like(U, 0.02), mode=U - 0.1, diagnostics={"wall_time_s": 2.0, "min_ess": 50.0}
    )


def test_network_record_holds_the_curve_band_and_samples(small_data):
    curve = theory_sweep(small_data, [5, 50], [0.1], progress=False)
    sets = ex.draw_data_sets(2, torch.Generator().manual_seed(4), num_train=20, num_test=30)
    band = ex.data_set_band(sets, four_path_network, [5, 50], 0.1, progress=False)
    samples = {5: sampled_point(5, curve.U_at(5) + 0.1)}
    exact = {5: _exact(5, curve.U_at(5) + 0.05)}
    record = ex.network_record(curve, band, samples, exact)
    assert set(record) == {
        "theory_accuracy",
        "sampled_accuracy",
        "U",
        "U_sampled",
        "U_order",
        "sampler",
        "U_exact",
        "band",
    }
    # exact on any CPU (here and below): the record holds copies of the numbers it is given
    np.testing.assert_array_equal(record["theory_accuracy"]["accuracy"], curve.accuracy["test"][:, 0])
    assert list(record["U"]) == ["5", "50"] and np.array_equal(record["U"]["50"], curve.U_at(50))
    assert record["U_order"] == ["g", "d", "a1", "a2"]
    assert record["sampled_accuracy"] == {"N": [5], "accuracy": [0.9], "mc_sd": [0.01]}
    assert np.array_equal(record["U_sampled"]["5"], samples[5].U)
    assert record["sampler"]["5"]["num_chains"] == 2 and np.array_equal(
        record["sampler"]["5"]["U_mc_se"], samples[5].U_se
    )
    assert np.array_equal(record["U_exact"]["5"]["mode"], exact[5].mode) and record["U_exact"]["5"]["min_ess"] == 50
    assert record["band"]["num_sets"] == 2
    two_temperatures = theory_sweep(small_data, [5], [0.1, 0.2], progress=False)
    with pytest.raises(ValueError, match="one temperature"):
        ex.network_record(two_temperatures, band, samples, exact)
    with pytest.raises(ValueError, match="band"):
        ex.network_record(curve, band.summary(), samples, exact)


def test_least_relevant_head_skips_missing_heads():
    assert ex.least_relevant_head([[1.0, 0.5], [0.2, 0.7]], ["a", "b", "c", "d"]) == ("c", 0.2)
    # layer 1 has one head: the labels are those of the heads that exist
    assert ex.least_relevant_head([[1.0, np.nan], [0.3, 0.1]], ["a", "b", "c"]) == ("c", 0.1)
    assert ex.least_relevant_head([[0.05, np.nan], [0.3, 0.1]], ["a", "b", "c"]) == ("a", 0.05)
    with pytest.raises(ValueError, match="one label per head"):
        ex.least_relevant_head([[1.0, 0.5], [0.2, 0.7]], ["a", "b", "c"])


# ------------------------------------------------------------------------------------------------ figures
def test_accuracy_with_band_shades_the_data_set_range_and_draws_the_samples(small_data, plt):
    from attnpaths.hmc import plots

    curve = theory_sweep(small_data, [5, 50], [0.1], progress=False)
    band = ex.Band(
        widths=np.array([5, 50]),
        accuracy=np.array([[0.7, 0.6], [0.8, 0.65]]),
        U=np.zeros((2, 2, 4, 4)),
        gp={"all": np.array([0.55, 0.6])},
        names=("g", "d", "a1", "a2"),
    )
    fig = plots.plot_accuracy_with_band(curve, band, {5: sampled_point(5, np.eye(4), accuracy=0.75)}, {"all": 0.58})
    ax = fig.axes[0]
    theory_range = [c for c in ax.collections if c.get_label() == "theory, spread over data sets"][0]
    np.testing.assert_allclose(theory_range.get_paths()[0].vertices[:, 1].max(), 80.0)
    np.testing.assert_allclose(theory_range.get_paths()[0].vertices[:, 1].min(), 60.0)
    gp_span = [p for p in ax.patches if p.get_alpha() == 0.08][0]  # the GP band: 55 % to 60 %
    np.testing.assert_allclose([gp_span.get_y(), gp_span.get_y() + gp_span.get_height()], [55.0, 60.0])
    sampled = [c for c in ax.containers if c.get_label() == "all paths, sampled"][0]
    np.testing.assert_allclose(sampled.lines[0].get_xydata(), [[5.0, 75.0]])
    plt.close(fig)


def test_ablation_panels_and_sampled_order_parameters(plt):
    from attnpaths.hmc import plots

    ablation = {
        "theory": np.array([0.9, 0.8]),
        "diagonal_only": np.array([0.85, 0.8]),
        "evened_diagonal": np.array([0.6, 0.79]),
    }
    fig = plots.plot_ablations([([10, 100], ablation, {"all": 0.7}, "4 paths"), ([10, 100], ablation, {}, "2 paths")])
    assert [ax.get_title() for ax in fig.axes] == ["4 paths", "2 paths"]
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["diag(U) -> U_gg"].get_ydata(), [60.0, 79.0])
    np.testing.assert_allclose(lines["U -> diag(U)"].get_ydata(), [85.0, 80.0])
    plt.close(fig)
    theory, exact = np.array([[2.0, -1.0], [-1.0, 1.5]]), np.array([[2.2, -1.1], [-1.1, 1.6]])
    sampled = exact + np.array([[0.1, 0.0], [0.0, -0.3]])
    fig = plots.plot_sampled_order_parameters(theory, exact, sampled, ["g", "d"], width=10)
    heat_maps = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in heat_maps] == [
        "theory (saddle), N=10",
        "exact mean, N=10",
        "sampled, N=10",
        "sampled - exact, N=10",
    ]
    np.testing.assert_allclose([ax.images[0].get_clim() for ax in heat_maps[:3]], [(-2.3, 2.3)] * 3)
    np.testing.assert_allclose(heat_maps[3].images[0].get_clim(), (-0.3, 0.3))
    np.testing.assert_allclose(heat_maps[3].images[0].get_array(), sampled - exact)
    plt.close(fig)
