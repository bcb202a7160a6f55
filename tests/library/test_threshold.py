"""The interpolation threshold's experiments and claims (attnpaths.experiments.threshold, sec-learning-threshold)."""

import math

import numpy as np
import pytest
import torch
from helpers import random_problem

from attnpaths.experiments import threshold
from attnpaths.gram import GramStatistics
from attnpaths.theory import classification_accuracy, solve_from_statistics

HEADS = (2, 2)


def nested_statistics(sizes, seed=0):
    xi, y = random_problem(P=max(sizes), n0=3, heads=HEADS, seed=seed)
    order = torch.randperm(xi.shape[0], generator=torch.Generator().manual_seed(seed))  # mix the two classes
    xi, y = xi[order], y[order]
    return [GramStatistics().update(xi[:P], y[:P]) for P in sizes], (xi, y)


def held_out(P=40, seed=11):
    return random_problem(P=P, n0=3, heads=HEADS, seed=seed)


def test_a_temperature_scan_is_the_solves_at_each_temperature_and_chooses_on_validation():
    statistics, _ = nested_statistics([8, 20])
    validation, test = held_out(seed=11), held_out(seed=12)
    widths = np.array([[5.0, 5.0], [math.inf, math.inf]])
    grid = [0.01, 0.1, 1.0]
    scan = threshold.temperature_scan(statistics, widths, grid, validation, test, heads=HEADS, progress=False)
    for c in range(2):
        for j, stats in enumerate(statistics):
            for k, T in enumerate(grid):
                # warm-started from the neighbouring temperature, the certified minimum is the cold-started one
                sol = solve_from_statistics(stats, heads=HEADS, width=float(widths[c, j]), temperature=T)
                assert scan.test[c, j, k] == classification_accuracy(sol.predict(test[0])[0], test[1])
                assert scan.trace_U[c, j, k] == pytest.approx(float(np.trace(sol.U)), rel=1e-6)
    assert scan.converged.all()
    assert np.array_equal(scan.chosen, scan.validation.argmax(axis=-1))
    assert np.array_equal(scan.tuned_test, np.take_along_axis(scan.test, scan.chosen[..., None], -1)[..., 0])
    assert np.array_equal(scan.at_temperature(0.1), scan.test[..., 1])
    with pytest.raises(ValueError, match="temperature must be one of the grid"):
        scan.at_temperature(0.2)
    with pytest.raises(ValueError, match="temperatures must be"):
        threshold.temperature_scan(statistics, widths, [1.0, 0.1], validation, test, heads=HEADS, progress=False)


def test_rescaling_U_is_changing_the_ridge():
    (stats,), _ = nested_statistics([20])
    test = held_out(seed=12)
    sol = solve_from_statistics(stats, heads=HEADS, width=5.0, temperature=0.05)
    trace = float(np.trace(sol.U))
    assert threshold.rescaled_accuracy(stats, sol.U, trace, test, temperature=0.05) == classification_accuracy(
        sol.predict(test[0])[0], test[1]
    )
    # the predictor depends on K / T: U times c at T times c is the same predictor
    for c in (0.01, 7.0):
        assert threshold.rescaled_accuracy(stats, sol.U, c * trace, test, temperature=0.05 * c) == pytest.approx(
            threshold.rescaled_accuracy(stats, sol.U, trace, test, temperature=0.05)
        )


def test_the_dip_is_the_vertex_of_the_parabola_in_log_P():
    sizes = [100, 200, 400, 800, 1600]
    vertex = 350.0
    advantage = [(math.log(P / vertex)) ** 2 - 0.1 for P in sizes]
    assert threshold.dip_position(sizes, advantage) == pytest.approx(vertex, rel=1e-10)
    assert threshold.dip_position(sizes, sorted(advantage, reverse=True)) == 1600  # smallest at an end: the end
    with pytest.raises(ValueError, match="n_P = 2 >= 3"):
        threshold.dip_position([1, 2], [0.0, 1.0])


def test_the_dip_claim_holds_for_a_dip_that_follows_D_and_is_contradicted_for_a_fixed_P():
    rng = np.random.default_rng(0)
    dimensions = np.repeat([460, 924, 1844], 3)
    following = dimensions * np.exp(0.03 * rng.standard_normal(9))
    assert threshold.dip_follows_dimension("d", dimensions=dimensions, positions=following).outcome.value == "holds"
    fixed = 900 * np.exp(0.03 * rng.standard_normal(9))
    assert threshold.dip_follows_dimension("d", dimensions=dimensions, positions=fixed).outcome.value == "contradicted"
    with pytest.raises(ValueError, match="distinct D"):
        threshold.dip_follows_dimension("d", dimensions=[5, 5, 5], positions=[1, 2, 3])


def test_the_directional_and_agreement_claims_read_their_direction():
    gp = np.array([0.88, 0.89, 0.885, 0.887])
    theory = gp - np.array([0.08, 0.07, 0.09, 0.075])
    kwargs = dict(size=1000, dimension=924, what="the theory")
    assert threshold.gp_wins_at("r", theory=theory, gp=gp, **kwargs).outcome.value == "holds"
    assert threshold.gp_wins_at("r", theory=gp + 0.08, gp=gp, **kwargs).outcome.value == "contradicted"
    assert threshold.theory_wins_at("t", theory=theory, gp=gp, **kwargs).outcome.value == "contradicted"
    sampled = theory + np.array([0.001, -0.002, 0.0, 0.001])
    agree = threshold.networks_agree("n", theory=theory, sampled=sampled, size=1000, margin=0.02)
    assert agree.outcome.value == "holds" and "A(theory) - A(sampled)" in agree.statistic
    far = threshold.networks_agree("n", theory=theory + 0.05, sampled=sampled, size=1000, margin=0.02)
    assert far.outcome.value == "contradicted"
    with pytest.raises(ValueError, match="n_sets >= 2"):
        threshold.gp_wins_at("r", theory=[0.8], gp=[0.9], **kwargs)
    # along a curve (claim nc) every sampled point counts on its own: a curve without the dip (the GP limit's, 8
    # points above the networks at the threshold, a little below them elsewhere) is contradicted although its
    # differences average out
    networks = np.array([0.92, 0.80, 0.95, 0.97, 0.91, 0.81, 0.95, 0.97])
    se = np.array([0.001, 0.001, 0.0, 0.001, 0.001, 0.002, 0.001, 0.0])
    curve = networks + np.array([0.002, -0.001, 0.0, 0.001, -0.002, 0.001, 0.0, -0.001])
    along = threshold.curve_agrees("nc", theory=curve, sampled=networks, se=se, margin=0.02, resolution=5e-4)
    assert along.outcome.value == "holds" and along.inputs["se"][2] == 5e-4  # a zero error floored
    no_dip = networks + np.array([-0.04, 0.08, -0.04, 0.0, -0.04, 0.08, -0.04, 0.0])
    assert abs(np.mean(no_dip - networks)) < 1e-12
    without = threshold.curve_agrees("nc", theory=no_dip, sampled=networks, se=se, margin=0.02, resolution=5e-4)
    assert without.outcome.value == "contradicted"
    with pytest.raises(ValueError, match="one shape"):
        threshold.curve_agrees("nc", theory=curve, sampled=networks[:3], se=se, margin=0.02, resolution=5e-4)
    with pytest.raises(ValueError, match="se must hold finite"):
        threshold.curve_agrees("nc", theory=curve, sampled=networks, se=-se, margin=0.02, resolution=5e-4)


@pytest.mark.needs("diagnostics")
def test_a_wide_sampled_network_predicts_as_its_saddle_point():
    # at a width far above the number of paths the exact density concentrates at the saddle point: the posterior
    # predictive mean is the theory's predictor, and so is its accuracy
    (stats,), _ = nested_statistics([30])
    test = held_out(seed=12)
    sol = solve_from_statistics(stats, heads=HEADS, width=3000.0, temperature=0.05)
    result = threshold.sampled_network_accuracy(
        stats, test, heads=HEADS, width=3000.0, temperature=0.05, generator=torch.Generator().manual_seed(1),
        num_chains=4, num_warmup=20, num_samples=5, thin=1,
    )  # fmt: skip
    assert result.accuracy == classification_accuracy(sol.predict(test[0])[0], test[1])
    assert result.trace_U == pytest.approx(float(np.trace(sol.U)), rel=0.05)
    assert result.se >= 0 and result.wall_time_s > 0
    assert set(result.to_dict()) == {"accuracy", "se", "trace_U", "trace_U_se", "max_rhat", "min_ess", "acceptance",
                                     "wall_time_s"}  # fmt: skip


def test_a_dip_curve_is_the_difference_of_the_two_predictors():
    sizes = [10, 20]
    xi, y = random_problem(P=20, n0=3, heads=HEADS, seed=3)
    order = torch.randperm(20, generator=torch.Generator().manual_seed(3))
    xi, y = xi[order], y[order]
    test = held_out(seed=12)
    advantage = threshold.dip_curve(lambda k: (xi[10 * k : 10 * k + 10], y[10 * k : 10 * k + 10]), 10, sizes, test,
                                    heads=HEADS, width=5.0, temperature=0.05)  # fmt: skip
    for P, value in zip(sizes, advantage):
        stats = GramStatistics().update(xi[:P], y[:P])
        acc = [
            classification_accuracy(
                solve_from_statistics(stats, heads=HEADS, width=w, temperature=0.05).predict(test[0])[0], test[1]
            )
            for w in (5.0, math.inf)
        ]
        assert value == acc[0] - acc[1]
