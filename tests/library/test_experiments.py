"""Tests of the experiment layer (attnpaths.experiments): networks with named paths and their path data, the
one theory sweep over widths and temperatures, posterior sampling at planned widths, and the shared figures.
The layer on the tasks' own networks is tested in test_hmc_experiments.py and test_oneshot_experiments.py."""

import dataclasses
import functools
import math

import numpy as np
import pytest
import torch
from helpers import assert_rounding_close, random_attention, random_inputs, random_problem, sampled_point

from attnpaths.engine import task_generator
from attnpaths.experiments import sampling
from attnpaths.experiments.path_data import PathData, PathNetwork, path_data, reorder
from attnpaths.experiments.sweep import head_score_curve, theory_sweep
from attnpaths.theory import classification_accuracy, solve


@dataclasses.dataclass(frozen=True, eq=False)
class Named(PathNetwork):
    """A network of 2 x 2 random heads with its paths named and shown in reverse order."""

    attention: object
    path_names: tuple = ("p", "q", "r", "s")

    @property
    def plot_order(self):
        return (3, 2, 1, 0)


@dataclasses.dataclass(frozen=True)
class Draw:
    """A data set: inputs and labels."""

    x: torch.Tensor
    y: torch.Tensor


@pytest.fixture(scope="module")
def network():
    return Named(random_attention(torch.Generator().manual_seed(0), (2, 2), 6))


@pytest.fixture(scope="module")
def data(network):
    """Random path features with label structure (P = 24 training, 30 test and 30 validation examples)."""
    (xi, y), (xt, yt), (xv, yv) = (
        random_problem(P=P, n0=6, heads=(2, 2), seed=s) for P, s in ((24, 0), (30, 2), (30, 1))
    )
    return PathData(network, xi, y, {"validation": (xv, yv), "test": (xt, yt)})


# ------------------------------------------------------------------------------------------------ path data
def test_a_path_network_derives_heads_paths_and_figure_order(network):
    assert network.heads == (2, 2) and network.num_paths == 4
    assert network.plot_names == ("s", "r", "q", "p")
    U = np.arange(16.0).reshape(4, 4)
    np.testing.assert_array_equal(reorder(U, network.plot_order), U[::-1, ::-1])  # exact on any CPU: a permutation


def test_path_data_computes_every_split_in_the_given_order(network):
    g = torch.Generator().manual_seed(1)
    train, test, extra = (Draw(random_inputs(g, n, 6, 5), torch.ones(n, dtype=torch.float32)) for n in (4, 3, 2))
    data = path_data(network, train, test, extra=extra)
    assert data.splits == ("test", "extra") and data.num_test == 3
    assert data.features.shape == (4, 6, 4) and data.y.dtype == torch.float64
    # determinism: path_features of the same inputs and attention, as an extra split and as the training split
    np.testing.assert_array_equal(data.evaluation["extra"][0], path_data(network, extra, test).features)


def test_path_data_refuses_what_is_not_a_named_network_or_a_data_set(network, data):
    g = torch.Generator().manual_seed(1)
    sets = [Draw(random_inputs(g, 2, 6, 5), torch.ones(2)) for _ in range(2)]
    with pytest.raises(ValueError, match="network must be a PathNetwork"):
        path_data(network.attention, *sets)
    with pytest.raises(ValueError, match="test must be a data set"):
        path_data(network, sets[0], torch.ones(2, 6, 5))
    with pytest.raises(ValueError, match="'test' split"):
        PathData(network, data.features, data.y, {"validation": data.evaluation["validation"]})
    with pytest.raises(ValueError, match="the test split must hold features"):
        PathData(network, data.features, data.y, {"test": (data.features_test[..., :2], data.y_test)})


# ------------------------------------------------------------------------------------------------ theory sweep
def test_a_sweep_is_the_solver_at_every_point_and_the_gp_row_is_its_limit(data):
    sweep = theory_sweep(data, [5, 500, math.inf], [0.1], gp_limit=True, progress=False)
    assert sweep.widths.tolist() == [5, 500, math.inf] and sweep.temperatures.tolist() == [0.1]
    assert sweep.names == ("s", "r", "q", "p") and sweep.converged.all()
    for k, width in enumerate((5, 500, math.inf)):
        sol = solve(data.features, data.y, heads=(2, 2), width=width, temperature=0.1)
        # determinism: the sweep calls solve with these very arguments (no warm start) and predicts with it
        np.testing.assert_array_equal(sweep.U[k, 0], sol.U)
        np.testing.assert_array_equal(sweep.U_layers[1][k, 0], sol.U_layers[1])
        assert sweep.U_a[k, 0] == sol.U_a and sweep.iterations[k, 0] == sol.iterations  # determinism: as above
        for split in ("validation", "test"):
            mean = sol.predict(data.evaluation[split][0])[0]
            np.testing.assert_array_equal(sweep.means[split][k, 0], mean)  # determinism: as above
            labels = data.evaluation[split][1].numpy()
            # determinism: classification_accuracy of the same means
            assert sweep.accuracy[split][k, 0] == classification_accuracy(mean, labels)
            # the sweep averages along the last axis of the whole grid: another reduction, rounding apart
            assert_rounding_close(sweep.mse[split][k, 0], np.mean((mean - labels) ** 2), what="mse")
    np.testing.assert_array_equal(sweep.U[-1, 0], np.eye(4))  # exact on any CPU: the GP limit's U is an eye times 1
    assert sweep.gp.widths.tolist() == [math.inf] and sweep.gp.gp is None
    # determinism: the GP row is the same GP solve and prediction as the sweep's last width
    np.testing.assert_array_equal(sweep.gp.means["test"][0, 0], sweep.means["test"][-1, 0])
    np.testing.assert_array_equal(sweep.U_at(5), sweep.U[0, 0][::-1, ::-1])  # exact on any CPU: a permutation


def test_temperatures_of_one_sweep_are_independent_solves_unless_warm_started(data):
    grid = theory_sweep(data, [5, 50], [0.1, 1.0], progress=False)
    assert not grid.warm_started.any()
    for j, T in enumerate((0.1, 1.0)):
        alone = theory_sweep(data, [5, 50], [T], progress=False)
        # determinism: without warm starts each temperature is the same solve from the same start
        np.testing.assert_array_equal(grid.U[:, j], alone.U[:, 0])
        np.testing.assert_array_equal(grid.means["test"][:, j], alone.means["test"][:, 0])
    warm = theory_sweep(data, [5, 50], [0.1, 1.0], warm_start=True, progress=False)
    assert warm.warm_started[:, 0].all() and not warm.warm_started[:, 1].any()
    np.testing.assert_allclose(warm.U, grid.U, atol=1e-7)
    with pytest.raises(ValueError, match="temperature must be given"):
        grid.U_at(5)
    np.testing.assert_array_equal(grid.U_at(5, 1.0), grid.U_figure[0, 1])  # exact on any CPU: the same permutation
    with pytest.raises(ValueError, match="temperature must be one of"):
        grid.temperature_index(0.5)


def test_engine_tasks_give_the_numbers_of_the_loop(data):
    loop = theory_sweep(data, [5, 50], [0.1, 1.0], warm_start=True, progress=False)
    tasks = theory_sweep(data, [5, 50], [0.1, 1.0], warm_start=True, engine=None, progress=False)
    for field in ("U", "U_a", "action", "converged", "iterations", "warm_started"):
        np.testing.assert_allclose(getattr(tasks, field), getattr(loop, field), rtol=1e-12, err_msg=field)
    np.testing.assert_allclose(tasks.means["validation"], loop.means["validation"], rtol=1e-12, atol=1e-14)


def test_an_uncertified_point_is_kept_only_when_asked(data):
    with pytest.raises(RuntimeError, match="not certified"):
        theory_sweep(data, [5], [0.1], max_iterations=1, progress=False)
    kept = theory_sweep(data, [5], [0.1], max_iterations=1, keep_uncertified=True, progress=False)
    assert not kept.converged[0, 0] and kept.iterations[0, 0] == 1


@pytest.mark.parametrize(
    "widths, temperatures, match",
    [
        ([], [0.1], "widths"),
        ([5, 5], [0.1], "widths"),
        ([math.inf, 5], [0.1], "widths"),
        (5, [0.1], "widths"),
        ([5], [], "temperatures"),
        ([5], [1.0, 0.1], "temperatures"),
        ([5], [0.0], "temperatures"),
    ],
)
def test_a_sweep_refuses_bad_grids(data, widths, temperatures, match):
    with pytest.raises(ValueError, match=match):
        theory_sweep(data, widths, temperatures, progress=False)


def test_head_scores_over_widths(data):
    sweep = theory_sweep(data, [5, 50], [0.1], progress=False)
    scores = head_score_curve(sweep, (2, 2))
    assert scores.shape == (2, 2, 2) and np.nanmax(scores[0]) == 1.0  # exact on any CPU: divided by the largest


# ------------------------------------------------------------------------------------------------ sampling
@pytest.mark.needs("diagnostics")
def test_planned_widths_are_sampled_from_the_task_seed_of_their_identity(data):
    plans = [sampling.SamplingPlan(3, 2, 6, 2), sampling.SamplingPlan(12, 2, 6, 2, 2, 4, 4, 1)]
    points, exact = sampling.sample_widths(data, plans, [0.1, 0.5], 7, network_index=2, progress=False)
    assert list(points) == [3, 12] and list(exact) == [12] and exact[12].U.shape == (4, 4)
    alone = sampling.sample_posterior(
        data, 3, 0.1, task_generator(7, 2, 3), num_warmup=2, num_samples=6, num_chains=2, progress=False
    )
    # determinism: sample_widths runs sample_posterior with the task generator of this identity
    np.testing.assert_array_equal(points[3].U, alone.U)
    np.testing.assert_array_equal(points[3].mean, alone.mean)
    other, _ = sampling.sample_widths(data, plans[:1], 0.1, 7, progress=False)
    assert not np.array_equal(other[3].U, points[3].U)  # another identity, another stream
    with pytest.raises(ValueError, match="one per plan"):
        sampling.sample_widths(data, plans, [0.1], 7, progress=False)
    with pytest.raises(ValueError, match="plans"):
        sampling.sample_widths(data, [3], 0.1, 7, progress=False)
    with pytest.raises(ValueError, match="network_index"):
        sampling.sample_widths(data, plans, 0.1, 7, network_index=-1, progress=False)


def test_a_precision_target_looks_on_a_geometric_schedule_and_refuses_bad_settings():
    target = sampling.PrecisionTarget(0.05)
    assert target.checkpoints(100) == [25, 32, 40, 50, 63, 79, 99]
    assert target.checkpoints(25) == [] and sampling.PrecisionTarget(0.05, 8, 1.01).checkpoints(11) == [8, 9, 10]
    for arguments, match in (
        ((0.0,), "relative_se"),
        ((1.5,), "relative_se"),
        ((0.1, 5), "min_draws"),
        ((0.1, 25.0), "min_draws"),
        ((0.1, 25, 1.0), "growth"),
    ):
        with pytest.raises(ValueError, match=match):
            sampling.PrecisionTarget(*arguments)


@pytest.mark.needs("diagnostics")
@pytest.mark.usefixtures("long_computation")
def test_sampling_stops_at_the_first_look_that_meets_the_target_and_keeps_the_chains_draws(data):
    """A run that stops on a precision target keeps exactly the first draws of the same chains run to the end, and
    stops at the first look where every entry (every layer) meets the target, not before and not later."""
    from attnpaths.network import AttentionNetwork
    from attnpaths.sampler import PosteriorSampler

    sampler = PosteriorSampler(AttentionNetwork(data.network.attention, 4), data.y, 0.1, features=data.features)
    full = sampler.run(torch.Generator().manual_seed(3), 5, 120, 3, progress=False)
    target = sampling.PrecisionTarget(0.1, min_draws=10)  # met at 87 draws (first layer at 69, the second not)
    stopped = sampler.run(torch.Generator().manual_seed(3), 5, 120, 3, progress=False, stop=target)
    kept = stopped.num_samples
    assert 10 <= kept < 120 and kept in target.checkpoints(120)
    # determinism: the same sampler code draws the same chains from the same seed; the stopped run is a prefix
    torch.testing.assert_close(stopped.order_parameters, full.order_parameters[:, :kept], rtol=0, atol=0)
    for mine, theirs in zip(stopped.upper_order_parameters, full.upper_order_parameters):
        torch.testing.assert_close(mine, theirs[:, :kept], rtol=0, atol=0)  # determinism: as above, upper layers

    def met(draws):
        return target.reached(
            full.order_parameters[:, :draws], tuple(u[:, :draws] for u in full.upper_order_parameters)
        )

    assert met(kept) and not any(met(c) for c in target.checkpoints(120) if c < kept)
    never = sampler.run(
        torch.Generator().manual_seed(3), 5, 120, 3, progress=False, stop=sampling.PrecisionTarget(1e-6, min_draws=10)
    )
    assert never.num_samples == 120
    point = sampling.sample_posterior(
        data,
        4,
        0.1,
        torch.Generator().manual_seed(3),
        num_warmup=5,
        num_samples=120,
        num_chains=3,
        progress=False,
        target=target,
    )
    assert point.diagnostics["num_samples"] == kept and point.diagnostics["max_samples"] == 120


@pytest.mark.needs("diagnostics")
def test_sampling_several_networks_at_once_gives_each_networks_own_numbers(data):
    plans = [sampling.SamplingPlan(3, 2, 6, 2), sampling.SamplingPlan(12, 2, 6, 2, 2, 4, 4, 1)]
    both = sampling.sample_networks({"a": data, "b": data}, plans, 0.2, 5, progress=False)
    assert list(both) == ["a", "b"]
    for k, key in enumerate(both):
        points, exact = sampling.sample_widths(data, plans, 0.2, 5, network_index=k, progress=False)
        assert list(both[key][0]) == [3, 12] and list(both[key][1]) == [12]
        for width in points:  # determinism: each network's tasks are sample_widths' tasks, with the same seeds
            np.testing.assert_array_equal(both[key][0][width].U, points[width].U)
        np.testing.assert_array_equal(both[key][1][12].U, exact[12].U)
    assert not np.array_equal(both["a"][0][3].U, both["b"][0][3].U)  # another network index, another stream
    with pytest.raises(ValueError, match="networks"):
        sampling.sample_networks({}, plans, 0.2, 5, progress=False)


def test_sampling_plans_pair_the_lists_and_share_the_exact_run():
    plans = sampling.sampling_plans(
        [10, 100], [200, 20], [100, 20], [4, 2], exact_chains=16, exact_warmup=30, exact_draws=15, exact_thin=3
    )
    assert plans == [
        sampling.SamplingPlan(10, 200, 100, 4, 16, 30, 15, 3),
        sampling.SamplingPlan(100, 20, 20, 2, 16, 30, 15, 3),
    ]
    assert sampling.sampling_plans([10], [5], [6], [2])[0].exact_chains is None
    targeted = sampling.sampling_plans([10, 100], [5, 5], [60, 60], [2, 2], relative_se=0.02, min_draws=12)
    assert all(plan.target == sampling.PrecisionTarget(0.02, 12) for plan in targeted)
    with pytest.raises(ValueError, match="one value per sampled width"):
        sampling.sampling_plans([10, 100], [200], [100, 20], [4, 2])
    with pytest.raises(ValueError, match="chains"):
        sampling.sampling_plans([10], [5], [6], [0])
    with pytest.raises(ValueError, match="exact_thin"):
        sampling.sampling_plans([10], [5], [6], [2], exact_chains=4, exact_thin=0)


_point = functools.partial(
    sampled_point,
    diagnostics={
        "wall_time_s": 1.25,
        "num_chains": 4,
        "num_samples": 100,
        "num_warmup": 200,
        "min_predictor_ess": 105.2,
        "median_predictor_ess": 368.0,
        "max_predictor_rhat": 1.0441,
        "min_U_ess": 7.4,
        "max_U_rhat": 1.1,
    },
)


def _exact(width, U, *, se=0.02):
    return sampling.ExactOrderParameter(
        width=width,
        U=U,
        U_se=np.full_like(U, se),
        mode=U - 0.1,
        diagnostics={
            "wall_time_s": 4.04,
            "num_chains": 16,
            "num_samples": 150,
            "min_ess": 80.3,
            "max_rhat": 1.1372,
            "acceptance": 0.3,
        },
    )


def test_records_of_sampled_widths():
    U = np.array([[2.0, -0.5], [-0.5, 1.0]])
    points = {10: _point(10, U, accuracy=0.9), 100: _point(100, U + 0.1, accuracy=0.8)}
    assert sampling.sampled_accuracy_record(points) == {"N": [10, 100], "accuracy": [0.9, 0.8], "mc_sd": [0.01, 0.01]}
    sampler = sampling.sampler_record(points)
    assert list(sampler) == ["10", "100"] and sampler["10"]["min_U_ess"] == 7.4
    np.testing.assert_array_equal(sampler["100"]["U_mc_se"], points[100].U_se)  # exact on any CPU: a copy
    exact = sampling.exact_record({10: _exact(10, U)})
    # exact on any CPU: the record copies the numbers it is given, and U - 0.1 is one correctly rounded subtraction
    assert exact["10"]["acceptance"] == 0.3 and np.array_equal(exact["10"]["mode"], U - 0.1)
    np.testing.assert_array_equal(exact["10"]["U_mc_se"], np.full((2, 2), 0.02))
    reference = {10: 0.92, 100: 0.75}
    assert math.isclose(sampling.largest_accuracy_difference(points, reference), 0.05)
    with pytest.raises(ValueError, match="missing \\[100\\]"):
        sampling.largest_accuracy_difference(points, {10: 0.9})


def test_saddle_point_z_and_finite_width_shift():
    theory = np.array([[2.0, -0.5], [-0.5, 1.0]])
    sampled = theory + np.array([[0.2, 0.0], [0.0, -0.1]])  # 4 and 2 standard errors of 0.05
    points = {10: _point(10, sampled), 100: _point(100, theory)}
    z = sampling.saddle_point_z_max(points, {10: theory, 100: theory})
    assert math.isclose(z[10], 4.0) and z[100] == 0.0  # exact on any CPU: sampled U - theory U is exactly zero
    with pytest.raises(ValueError, match="theory_U"):
        sampling.saddle_point_z_max(points, {10: theory})
    exacts = {10: _exact(10, theory * 1.05), 100: _exact(100, theory)}
    shift = sampling.finite_width_shift(points, exacts, {10: theory, 100: theory})
    assert shift["N"] == [10, 100] and shift["epsilon"] == [0.3, 0.03]
    np.testing.assert_allclose(shift["relative_diagonal_shift"], [[0.1, -0.1], [0.0, 0.0]])
    np.testing.assert_allclose(shift["relative_mc_se"], [[0.025, 0.05], [0.025, 0.05]])
    np.testing.assert_allclose(shift["exact_relative_diagonal_shift"], [[0.05, 0.05], [0.0, 0.0]], atol=1e-15)
    np.testing.assert_allclose(shift["exact_relative_mc_se"], [[0.01, 0.02], [0.01, 0.02]])
    with pytest.raises(ValueError, match="exacts and theory_U"):
        sampling.finite_width_shift(points, {10: exacts[10]}, {10: theory, 100: theory})


def test_exact_density_dimension_counts_the_distinct_entries():
    assert sampling.exact_density_dimension((2, 2)) == 10 + 3 + 1  # U_1 4 x 4, U_2 2 x 2, U_a
    assert sampling.exact_density_dimension((3,)) == 6 + 1
    assert sampling.exact_density_dimension((2, 2, 2)) == 36 + 10 + 3 + 1
    with pytest.raises(ValueError, match="heads"):
        sampling.exact_density_dimension((2, 0))


def test_diagnostics_table_has_one_line_per_network_and_width():
    U = np.eye(2)
    table = sampling.diagnostics_table(
        {
            "4 paths": ({10: _point(10, U), 100: _point(100, U)}, {10: _exact(10, U), 100: _exact(100, U)}),
            "2 paths": ({10: _point(10, U)}, {10: _exact(10, U)}),
        }
    )
    lines = table.split("\n")
    assert len(lines) == 2 + 3 and all(line.count("|") == 10 for line in lines)
    assert lines[2] == (
        "| 4 paths | 10 | 4 x 100 (200) | 105 / 368 | 1.044 | 7 | 0.0500 | 1.2 | 16 x 150, 80, 1.137, 4.0 |"
    )
    assert lines[4].startswith("| 2 paths | 10 |")
    stopped = _point(10, 4 * U)
    stopped.diagnostics.update(num_samples=40, max_samples=500)
    line = sampling.diagnostics_table({"x": ({10: stopped}, {10: _exact(10, U)})}).split("\n")[2]
    assert line.startswith("| x | 10 | 4 x 40 of 500 (200) |") and "| 0.0125 |" in line
    with pytest.raises(ValueError, match="exact run at every sampled width, missing \\[100\\]"):
        sampling.diagnostics_table({"x": ({10: _point(10, U), 100: _point(100, U)}, {10: _exact(10, U)})})


def test_kernel_alignments_of_named_kernels():
    from attnpaths.experiments.kernel_pcs import kernel_alignments

    y = np.array([1.0, 1.0, -1.0, -1.0])
    alignment = kernel_alignments({"labels": np.outer(y, y), "identity": np.eye(4), "flipped": -np.outer(y, y)}, y)
    assert list(alignment) == ["labels", "identity", "flipped"]
    assert math.isclose(alignment["labels"], 1.0) and math.isclose(alignment["flipped"], -1.0)
    assert math.isclose(alignment["identity"], 1 / math.sqrt(3))  # y' H y / (|H|_F |y|^2), H = I - 11'/4


# ------------------------------------------------------------------------------------------------ figures
def test_figures_take_the_task_styles(plt):
    from attnpaths.experiments import plots

    fig = plots.plot_accuracy(
        [10, 100], [0.7, 0.8], gp={"GP": 0.6, "all": 0.5}, gp_styles={"all": ("dashed", "all paths, GP")}
    )
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert lines["all paths, GP"].get_linestyle() == "--" and lines["GP"].get_linestyle() == "-"
    fig = plots.plot_order_parameters([np.eye(2)], ["U"], ["g", "d"], colors={"g": "tab:green"})
    colors = [tick.get_color() for tick in fig.axes[0].get_xticklabels()]
    assert colors == ["tab:green", "k"]


# ------------------------------------------------------------------------------------------------ predictor variance
@pytest.mark.needs("diagnostics")
def test_variance_and_se_are_the_draws_variance_and_a_calibrated_monte_carlo_error():
    rng = np.random.default_rng(0)
    draws = torch.as_tensor(rng.standard_normal((4, 1000, 3)) * np.array([1.0, 2.0, 0.5]))
    variance, se, mean_variance, mean_variance_se = sampling.variance_and_se(draws)
    expected = draws.flatten(0, 1).var(dim=0).numpy()
    np.testing.assert_allclose(variance, expected, rtol=1e-12)
    assert math.isclose(mean_variance, expected.mean(), rel_tol=1e-12)
    # independent Gaussian draws: Var(s^2) = 2 sigma^4 / n, so the error is near sigma^2 sqrt(2 / 4000)
    np.testing.assert_allclose(se, np.array([1.0, 4.0, 0.25]) * math.sqrt(2 / 4000), rtol=0.2)
    # AR(1) chains of correlation 0.9 (ESS of the squares ~ n (1 - 0.81) / (1 + 0.81)): the error of the
    # estimated variance over independent runs is what the standard error says, not the i.i.d. error
    errors, ses = [], []
    for k in range(200):
        g = np.random.default_rng(100 + k)
        x = np.empty((2, 400))
        x[:, 0] = g.standard_normal(2)
        for t in range(1, 400):
            x[:, t] = 0.9 * x[:, t - 1] + math.sqrt(1 - 0.81) * g.standard_normal(2)
        v, s, _, _ = sampling.variance_and_se(torch.as_tensor(x[..., None]))
        errors.append(v[0] - 1.0)
        ses.append(s[0])
    ratio = np.std(errors) / np.mean(ses)
    assert 0.8 < ratio < 1.25
    assert np.mean(ses) > 2 * math.sqrt(2 / 800)  # much more than the i.i.d. error of 800 draws


@pytest.mark.needs("diagnostics")
def test_the_average_variances_error_counts_the_shared_draws():
    # test points that are one series (fully correlated errors) average to that series' error; independent ones
    # average to an error smaller by sqrt(B)
    rng = np.random.default_rng(1)
    one = torch.as_tensor(rng.standard_normal((4, 200, 1)))
    _, se_one, _, _ = sampling.variance_and_se(one)
    _, _, _, shared_se = sampling.variance_and_se(one.repeat(1, 1, 16))
    assert math.isclose(shared_se, se_one[0], rel_tol=1e-9)
    _, se_independent, _, independent_se = sampling.variance_and_se(torch.as_tensor(rng.standard_normal((4, 200, 16))))
    assert independent_se < 0.4 * se_independent.mean()
    with pytest.raises(ValueError, match="C, S >= 4, B"):
        sampling.variance_and_se(torch.zeros(2, 3, 4))


@pytest.mark.needs("diagnostics")
def test_sampled_points_keep_the_variance_error_of_their_draws(data):
    point = sampling.sample_posterior(
        data, 5, 0.1, torch.Generator().manual_seed(3), num_warmup=5, num_samples=40, num_chains=2, progress=False
    )
    assert point.variance_se.shape == point.sd.shape and np.all(point.variance_se > 0)
    assert math.isclose(point.mean_variance, float(np.mean(point.sd**2)), rel_tol=1e-9)
    assert 0 < point.mean_variance_se < point.variance_se.max()


def test_predictor_variance_at_the_minimiser_is_the_theorys_and_at_the_identity_the_gp_limits(data):
    from attnpaths.experiments.kernel_pcs import predictor_variance

    sol = solve(data.features, data.y, heads=(2, 2), width=8, temperature=0.1)
    _, expected = sol.predict(data.features_test)
    np.testing.assert_allclose(
        predictor_variance(data.features, data.y, data.features_test, sol.U, 0.1), expected, rtol=1e-10, atol=1e-13
    )
    gp = solve(data.features, data.y, heads=(2, 2), width=math.inf, temperature=0.1)
    np.testing.assert_allclose(
        predictor_variance(data.features, data.y, data.features_test, np.eye(4), 0.1),
        gp.predict(data.features_test)[1],
        rtol=1e-10,
        atol=1e-13,
    )
    with pytest.raises(ValueError, match="y must have shape"):
        predictor_variance(data.features, data.y[:3], data.features_test, np.eye(4), 0.1)
