"""Power tests of the depth chapter's claims (attnpaths.hmc.depth.claims): each claim runs on a correct input, where it
must hold, and on deliberately wrong inputs, where it must say "contradicted"; the source of every verdict is
this book, not the paper."""

import math

import numpy as np
import pytest
import torch
from helpers import sampled_curve_point

from attnpaths.claims import Outcome
from attnpaths.experiments import finite_width as fw
from attnpaths.experiments import sampling
from attnpaths.experiments.path_data import path_data
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.depth import claims as dc
from attnpaths.hmc.depth.networks import three_layer_network

HOLDS, NS, CONTRADICTED = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED


def _point(U, se, width=30, accuracy=0.9):
    U = np.asarray(U, dtype=float)
    return sampling.SampledPoint(
        width=width,
        accuracy=accuracy,
        accuracy_mc_sd=0.002,
        mean=np.zeros(3),
        mean_se=np.ones(3),
        sd=np.ones(3),
        kernel_mean=np.zeros(3),
        U=U,
        U_se=np.full(U.shape, se),
        U_sd=np.ones(U.shape),
        U_ess=np.ones(U.shape),
        diagnostics={},
    )


def _exact(U, se, width=30):
    U = np.asarray(U, dtype=float)
    return sampling.ExactOrderParameter(width=width, U=U, U_se=np.full(U.shape, se), mode=U, diagnostics={})


# ------------------------------------------------------------------------------------ (a) exact mean of U
def test_exact_mean_agreement_holds_within_the_margin_and_fails_for_a_U_scaled_by_1_2():
    U = np.array([[3.0, -0.8, 0.1], [-0.8, 1.5, 0.0], [0.1, 0.0, 0.9]])
    points = {10: _point(2 * U, 0.01, width=10), 30: _point(U + 0.01, 0.01)}
    ok = dc.exact_mean_agreement("a", points=points, exact={30: _exact(U, 0.01)}, reference_accuracy={30: 0.9})
    assert ok.outcome is HOLDS and ok.source == dc.SOURCE
    assert "N=10" not in ok.measured  # only the widths with an exact mean are compared
    wrong = dc.exact_mean_agreement("a", points=points, exact={30: _exact(1.2 * U, 0.01)}, reference_accuracy={30: 0.9})
    assert wrong.outcome is CONTRADICTED
    off = dc.exact_mean_agreement("a", points=points, exact={30: _exact(U, 0.01)}, reference_accuracy={30: 0.85})
    assert off.outcome is CONTRADICTED
    short = dc.exact_mean_agreement(
        "a", points={30: _point(U, 0.5)}, exact={30: _exact(U, 0.5)}, reference_accuracy={30: 0.9}
    )
    assert short.outcome is NS
    with pytest.raises(ValueError, match="missing \\[100\\]"):
        dc.exact_mean_agreement("a", points=points, exact={100: _exact(U, 0.01, 100)}, reference_accuracy={100: 0.9})
    with pytest.raises(ValueError, match="exact must hold"):
        dc.exact_mean_agreement("a", points=points, exact={}, reference_accuracy={})


def test_exact_mean_agreement_power_falls_with_the_monte_carlo_errors():
    # the power check of claim a: high when the errors are small against the margins, ~0 where the test above
    # is not significant however close the numbers
    U = np.array([[3.0, -0.8, 0.1], [-0.8, 1.5, 0.0], [0.1, 0.0, 0.9]])
    kwargs = dict(reference_accuracy={30: 0.9})
    precise = dc.exact_mean_agreement_power(points={30: _point(U, 0.01)}, exact={30: _exact(U, 0.01)}, **kwargs)
    noisy = dc.exact_mean_agreement_power(points={30: _point(U, 0.5)}, exact={30: _exact(U, 0.5)}, **kwargs)
    assert precise > 0.99 and noisy < 0.01
    with pytest.raises(ValueError, match="missing \\[100\\]"):
        dc.exact_mean_agreement_power(
            points={30: _point(U, 0.01)}, exact={100: _exact(U, 0.01, 100)}, reference_accuracy={100: 0.9}
        )


# ------------------------------------------------------------------------------------ (b) finite width vs GP
def test_finite_width_advantage_in_both_directions():
    rng = np.random.default_rng(0)
    y = np.where(rng.random(1000) < 0.5, 1.0, -1.0)
    theory = np.where(np.arange(1000) < 950, y, -y)
    gp = np.where(np.arange(1000) < 840, y, -y)
    better = dc.finite_width_advantage("b", theory_mean=theory, gp_mean=gp, labels=y, width=10)
    assert better.outcome is HOLDS and better.source == dc.SOURCE
    # the GP better than the theory (the inputs swapped): contradicted, a finding the chapter would report
    assert dc.finite_width_advantage("b", theory_mean=gp, gp_mean=theory, labels=y, width=10).outcome is CONTRADICTED


def test_saddle_point_agreement_keeps_only_large_widths_and_rejects_a_wrong_action():
    U = np.diag([2.0, 1.2, 0.9])
    exact = {30: _exact(2 * U, 0.01), 300: _exact(1.01 * U, 0.005, width=300)}
    ok = dc.saddle_point_agreement("d", exact=exact, theory_U={30: U, 300: U}, num_paths=3)
    assert ok.outcome is HOLDS and "N = 300" in ok.measured and ok.source == dc.SOURCE
    wrong = dc.saddle_point_agreement("d", exact=exact, theory_U={30: U, 300: 1.2 * U}, num_paths=3)
    assert wrong.outcome is CONTRADICTED


# ------------------------------------------------------------------------------------ (c) cross-path weights
def _theory_U(widths, cross=-2.0):
    """U(N) = I + (D + C) / N: cross weight decaying as 1 / N."""
    n = 3
    out = []
    for N in widths:
        U = np.eye(n) + np.diag([8.0, 1.0, 0.5]) * 10 / N
        U[0, 1] = U[1, 0] = cross * 10 / N
        out.append(U)
    return np.array(out)


def test_largest_cross_weight_is_normalised_by_the_diagonal():
    U = np.array([[4.0, 1.0, 0.0], [1.0, 1.0, -0.9], [0.0, -0.9, 1.0]])
    assert dc.largest_cross_weight(U) == (pytest.approx(0.9), (1, 2))
    with pytest.raises(ValueError, match="positive diagonal"):
        dc.largest_cross_weight(-np.eye(2))


def test_cross_path_weights_compare_values_within_the_monte_carlo_error_where_the_saddle_point_applies():
    widths = [10, 30, 100, 300, 1000]
    U = _theory_U(widths)  # at N = 300: U_gx = -0.067, finite-width effect max|U - I| = 0.267, margin 0.0107
    se = np.full((3, 3), 0.002)
    theory = {w: U[k] for k, w in enumerate(widths)}
    # N = 10 is left out ((n + 1) / N = 0.4): a sampled cross weight far from the theory's there is not tested
    sampled = {10: 2 * theory[10], 300: theory[300] + 0.001}
    args = dict(widths=widths, theory_U=U, sampled_U_se={10: se, 300: se}, names=["g", "x", "y"])
    ok = dc.cross_path_weights("c", sampled_U=sampled, **args)
    assert ok.outcome is HOLDS and ok.source == dc.SOURCE and ok.inputs["test"] == "equivalence"
    assert "U[g,x] at N=300" in ok.measured and "N=10" not in ok.measured
    assert ok.inputs["margin"] == [pytest.approx(0.04 * 80 / 300)]
    # a theory whose cross weight is off by the margin plus 5 standard errors: contradicted, whatever its sign
    shifted = U.copy()
    shifted[3, 0, 1] = shifted[3, 1, 0] = U[3, 0, 1] + ok.inputs["margin"][0] + 5 * 0.002
    assert dc.cross_path_weights("c", **dict(args, theory_U=shifted), sampled_U=sampled).outcome is CONTRADICTED
    # samples without cross weights (the GP limit's), or with the opposite sign: contradicted
    gp = {10: sampled[10], 300: np.diag(np.diag(theory[300]))}
    assert dc.cross_path_weights("c", sampled_U=gp, **args).outcome is CONTRADICTED
    flipped = theory[300].copy()
    flipped[0, 1] = flipped[1, 0] = -theory[300][0, 1]
    assert dc.cross_path_weights("c", sampled_U={10: sampled[10], 300: flipped}, **args).outcome is CONTRADICTED
    # errors as large as the margin: not significant, and the power check says the test could hardly hold
    noisy = dict(args, sampled_U_se={10: se, 300: np.full((3, 3), 0.01)})
    assert dc.cross_path_weights("c", sampled_U=sampled, **noisy).outcome is NS
    power = {k: v for k, v in args.items() if k != "names"}
    assert dc.cross_path_weights_power(sampled_U=sampled, **power) > 0.99
    assert dc.cross_path_weights_power(sampled_U=sampled, **{k: v for k, v in noisy.items() if k != "names"}) < 0.1
    with pytest.raises(ValueError, match="N >= 80"):
        dc.cross_path_weights("c", sampled_U={10: sampled[10]}, **dict(args, sampled_U_se={10: se}))
    with pytest.raises(ValueError, match="among the theory's widths"):
        dc.cross_path_weights("c", sampled_U={20: sampled[10]}, **dict(args, sampled_U_se={20: se}))


def test_cross_weight_decay_is_a_structural_check_that_sees_growing_or_constant_cross_weights():
    widths = [10, 30, 100, 300, 1000]
    U = _theory_U(widths)
    ok = dc.cross_weight_decay("c2", widths=widths, theory_U=U)
    assert ok.outcome is HOLDS and ok.level is None
    # a theory whose cross weights grow with N (the widths reversed), or do not vanish: contradicted
    assert dc.cross_weight_decay("c2", widths=widths, theory_U=U[::-1]).outcome is CONTRADICTED
    constant = np.repeat(U[:1], len(widths), axis=0)
    assert dc.cross_weight_decay("c2", widths=widths, theory_U=constant).outcome is CONTRADICTED
    with pytest.raises(ValueError, match="strictly increasing"):
        dc.cross_weight_decay("c2", widths=widths[::-1], theory_U=U)


@pytest.fixture(scope="module")
def deep_small_problem():
    """The 3-layer network on a small HMC problem (P = 20, T = 0.1): theory, network samples at N = 30 and the
    exact finite-width mean of U there."""
    task = HMCTask()
    generator = torch.Generator().manual_seed(5)
    train, test = task.sample(20, generator), task.sample(40, generator)
    data = path_data(three_layer_network(train), train, test)
    return sampled_curve_point(
        data,
        30,
        0.1,
        sweep_widths=[30, 100, 1000],
        num_samples=1000,
        exact_chain=dict(num_warmup=400, num_samples=300, thin=4),
    )


@pytest.mark.needs("diagnostics")
def test_depth_claims_on_real_samples_of_the_three_layer_network(deep_small_problem):
    curve, point, exact = deep_small_problem
    kwargs = dict(points={30: point}, reference_accuracy={30: curve.accuracy["test"][0, 0]}, margin_accuracy=0.1)
    assert dc.exact_mean_agreement("a", exact={30: exact}, **kwargs).outcome is not CONTRADICTED
    scaled = dataclass_replace(exact, U=1.5 * exact.U)
    assert dc.exact_mean_agreement("a", exact={30: scaled}, **kwargs).outcome is CONTRADICTED
    # claim c at N = 30 ((n + 1) / N = 0.3, admitted here with max_epsilon = 0.5): the theory's cross weight against
    # the samples', and a theory whose cross weight is shifted by the margin and 5 standard errors
    cross = dict(widths=curve.widths, sampled_U={30: point.U}, sampled_U_se={30: point.U_se}, max_epsilon=0.5)
    right = dc.cross_path_weights("c", theory_U=curve.U_figure[:, 0], **cross)
    assert right.outcome is not CONTRADICTED
    _, (i, j) = dc.largest_cross_weight(curve.U_figure[0, 0])
    shift = right.inputs["margin"][0] + 5 * right.inputs["se"][0]
    shifted = curve.U_figure[:, 0].copy()
    shifted[0, i, j] += np.sign(shifted[0, i, j]) * shift
    shifted[0, j, i] = shifted[0, i, j]
    assert dc.cross_path_weights("c", theory_U=shifted, **cross).outcome is CONTRADICTED


def dataclass_replace(value, **changes):
    import dataclasses

    return dataclasses.replace(value, **changes)


def test_layer_order_parameters_are_the_overlaps_of_each_layers_path_weights():
    from attnpaths.network import AttentionNetwork

    net = AttentionNetwork(three_layer_network(HMCTask().sample(4, torch.Generator().manual_seed(0))).attention, 7)
    weights = net.sample_prior(torch.Generator().manual_seed(1), 3)
    layers = net.layer_order_parameters(weights)
    assert [tuple(U.shape) for U in layers] == [(3, 8, 8), (3, 4, 4), (3, 2, 2)]
    assert torch.allclose(layers[0], net.sampled_order_parameter(weights, per_sample=True))
    # U_L = e e^T / N_L with e[h] = a V_L[h] / sqrt(N_a): the top layer from the weights directly
    top = torch.einsum("sk,shkj->shj", weights.a, weights.V[-1]) / math.sqrt(net.widths[-1])
    assert torch.allclose(layers[-1], top @ top.transpose(-1, -2) / net.widths[-2])


@pytest.mark.needs("diagnostics")
def test_claims_a_and_d_compare_the_layers_above_the_first(deep_small_problem):
    curve, point, exact = deep_small_problem
    w = 30
    assert len(point.U_upper) == 2 and len(exact.U_upper) == 2
    kwargs = dict(points={w: point}, reference_accuracy={w: point.accuracy}, margin_accuracy=0.1)
    ok = dc.exact_mean_agreement("a", exact={w: exact}, **kwargs)
    # the exact density's short chains here mix slowly in the upper layers (a funnel at N = 30 with eight paths):
    # their means lie ~2 of their standard errors from the network's, not decided at the 10 % margin
    assert ok.outcome is not CONTRADICTED
    n_1, n_2, n_3 = (U.shape[0] for U in (point.U, *point.U_upper))
    assert len(ok.inputs["deviation"]) == sum(n * (n + 1) // 2 for n in (n_1, n_2, n_3)) + 1
    # a second-layer exact mean twice the true one: contradicted through U_2 alone
    wrong = dataclass_replace(exact, U_upper=(2.0 * exact.U_upper[0], exact.U_upper[1]))
    off = dc.exact_mean_agreement("a", exact={w: wrong}, **kwargs)
    assert off.outcome is CONTRADICTED and "U_2[" in off.measured
    # claim d with the theory's upper layers: the entries of every layer enter
    upper = {w: curve.upper_U_at(w)}
    d = fw.saddle_point_agreement(
        "d", exact={w: exact}, theory_U={w: curve.U_at(w)}, theory_upper=upper, num_paths=8, max_epsilon=0.5
    )
    assert len(d.inputs["deviation"]) == sum(n * (n + 1) // 2 for n in (n_1, n_2, n_3))
