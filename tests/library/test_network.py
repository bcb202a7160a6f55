"""The finite network (eq-forward) against its path form (eq-path-form) and the GP kernel (eq-gp,
sec-prior-kernel)."""

import itertools
import math

import pytest
import torch
from helpers import Z_MAX, random_attention, random_inputs

from attnpaths.kernels import gp_kernel
from attnpaths.network import AttentionNetwork, NetworkWeights


def max_z_score(samples, expected):
    """Largest |mean - expected| / (standard error of the mean) over the entries of ``samples[S, ...]``."""
    standard_error = samples.std(dim=0) / math.sqrt(samples.shape[0])
    return ((samples.mean(dim=0) - expected) / standard_error).abs().max().item()


@pytest.mark.parametrize(
    "heads, readout", [((2, 2), "last_token"), ((2, 1, 3), "average_pooling"), ((3,), "first_token")]
)
def test_layer_by_layer_forward_equals_path_form(heads, readout):
    g = torch.Generator().manual_seed(1)
    attention = random_attention(g, heads, input_width=5, readout=readout)
    x = random_inputs(g, 6, 5, 4)
    network = AttentionNetwork(attention, width=[3, 4, 2, 5][: len(heads) + 1], variances=0.7)
    weights = network.sample_prior(g, num_samples=3)
    direct = network.forward(x, weights)
    via_paths = network.forward_from_features(network.features(x), weights)
    assert direct.shape == (3, 6)
    torch.testing.assert_close(via_paths, direct, rtol=1e-12, atol=1e-12)
    # a single network (no sample axis) gives the same numbers as the batched call
    single = NetworkWeights(weights.V0[1], tuple(v[1] for v in weights.V), weights.a[1])
    torch.testing.assert_close(network.forward(x, single), direct[1], rtol=1e-12, atol=1e-12)


def test_path_weights_follow_definition_and_path_order():
    # e^(1)_pi = a^T V^(L,h_L) ... V^(1,h_1) / sqrt(N_a N_L ... N_2), flattened with h_1 slowest
    g = torch.Generator().manual_seed(2)
    heads = (2, 3, 2)
    network = AttentionNetwork(random_attention(g, heads, 4), width=(3, 5, 2, 4))
    weights = network.sample_prior(g)
    e = network.path_weights(weights)
    expected = []
    for path in itertools.product(*(range(H) for H in heads)):
        row = weights.a
        for l in reversed(range(len(heads))):
            row = row @ weights.V[l][path[l]]
        expected.append(row / math.sqrt(4 * 2 * 5))
    torch.testing.assert_close(e, torch.stack(expected), rtol=1e-12, atol=1e-12)
    overlaps = network.sampled_order_parameter(weights)
    torch.testing.assert_close(overlaps, e @ e.T / 3, rtol=1e-12, atol=1e-12)


def test_path_summary_is_the_input_weights_and_overlaps_bit_for_bit():
    g = torch.Generator().manual_seed(5)
    network = AttentionNetwork(random_attention(g, (2, 2), 4), width=(3, 5, 4))
    weights = network.sample_prior(g, 6)
    for check in (True, False):
        w, u = network.path_summary(weights, check=check)
        # determinism: path_summary calls the same _path_weights, _input_weights and _overlaps as these two methods
        assert torch.equal(w, network.path_input_weights(weights))
        assert torch.equal(u, network.sampled_order_parameter(weights, per_sample=True))
    with pytest.raises(ValueError, match="must have shape"):
        network.path_summary(NetworkWeights(V0=weights.V0[:, :2], V=weights.V, a=weights.a))


def test_prior_sampling_is_reproducible_and_has_the_prior_variances():
    g = torch.Generator().manual_seed(3)
    network = AttentionNetwork(random_attention(g, (2,), 3), width=4, variances=(0.5, 2.0, 3.0))
    first = network.sample_prior(torch.Generator().manual_seed(9), num_samples=2000)
    second = network.sample_prior(torch.Generator().manual_seed(9), num_samples=2000)
    for a, b in zip(first.as_dict().values(), second.as_dict().values()):
        assert torch.equal(a, b)  # determinism: the same prior draws from the same seed
    for tensor, variance in zip(first.as_dict().values(), network.variances):
        assert abs(tensor.var().item() / variance - 1) < 0.05


@pytest.mark.parametrize("width, num_samples", [(3, 20000), (20, 4000)])
def test_prior_second_moment_is_the_gp_kernel_at_finite_width(width, num_samples):
    # E[f(x) f(x')] = K_GP(x, x') at ANY width (sec-prior-kernel); non-unit variances check that
    # s0 sits in the pre-kernels and sa s1 .. sL in U_GP.
    g = torch.Generator().manual_seed(4)
    network = AttentionNetwork(random_attention(g, (2, 2), 5), width=width, variances=(0.5, 2.0, 1.5, 0.7))
    x = random_inputs(g, 4, 5, 4)
    f = network.forward(x, network.sample_prior(g, num_samples))
    products = f[:, :, None] * f[:, None, :]
    k_gp = gp_kernel(network.features(x), s0=0.5, u_gp=network.gp_order_parameter)
    assert network.gp_order_parameter == pytest.approx(2.0 * 1.5 * 0.7)
    assert max_z_score(products, k_gp) < Z_MAX
    # the same comparison detects a normalisation off by a factor of H = 2
    assert max_z_score(products, 2 * k_gp) > Z_MAX


@pytest.mark.parametrize("width", [3, 20])
def test_sampled_order_parameter_of_prior_samples_is_the_gp_value(width):
    g = torch.Generator().manual_seed(5)
    network = AttentionNetwork(random_attention(g, (2, 2), 3), width=width, variances=(1.0, 2.0, 0.5, 1.5))
    overlaps = network.sampled_order_parameter(network.sample_prior(g, 4000), per_sample=True)
    u_gp = torch.eye(4, dtype=torch.float64) * 1.5
    assert max_z_score(overlaps, u_gp) < Z_MAX
    assert max_z_score(overlaps, 1.2 * u_gp) > Z_MAX


def test_invalid_arguments_raise_value_errors_naming_them():
    g = torch.Generator().manual_seed(6)
    attention = random_attention(g, (2, 2), 3)
    with pytest.raises(ValueError, match="width"):
        AttentionNetwork(attention, width=(3, 3))
    with pytest.raises(ValueError, match="width"):
        AttentionNetwork(attention, width=0)
    with pytest.raises(ValueError, match="variances"):
        AttentionNetwork(attention, width=3, variances=(1.0, -1.0, 1.0, 1.0))
    network = AttentionNetwork(attention, width=3)
    with pytest.raises(ValueError, match="num_samples"):
        network.sample_prior(g, num_samples=0)
    weights = network.sample_prior(g)
    bad = NetworkWeights(weights.V0, weights.V, torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="weights.a"):
        network.forward(random_inputs(g, 2, 3, 4), bad)
    with pytest.raises(ValueError, match="features"):
        network.forward_from_features(torch.zeros(2, 3, 5), weights)
