"""The exact blocked-Gibbs posterior sampler (sec-hmc-theory) beyond two layers.

The sampler's blocks are written for any depth: layer ``l``'s values act on the paths through the split
``(heads below, H_l, heads above)``. These tests repeat the two-layer checks of ``tests/library/test_sampler.py`` on
three-layer networks whose layers have different numbers of heads (so that a wrong split of the path axis
cannot pass unnoticed):

(i)  every block's conditional draw (``a``, ``V_3``, ``V_2``, ``V_1``, ``V_0``) against the closed-form Gaussian
     conditional, with the design matrix built from the layer-by-layer forward (eq-forward), and a draw
     compared with the conditional at twice the temperature must be rejected;
(ii) (the whole sampler against pyro's NUTS at three layers is in ``tests/book/test_sampler_against_nuts.py``)
(iii) the path form (eq-path-form) and the sampled order parameter (eq-sampled-u) of a three-layer network:
     the path input weights reproduce the layer-by-layer output, and under the prior the sampled ``U`` has
     mean ``U_GP`` (eq-gp).
"""

import pytest
import torch
from helpers import (
    conditional_draw_mismatch,
    family_z,
    rejects,
    sampler_problem,
)

HEADS = (2, 3, 2)
"""Three layers with 2, 3 and 2 heads: 12 paths, and the layer in the middle has heads above and below."""


@pytest.mark.parametrize("block", ["a", "V_3", "V_2", "V_1", "V_0"])
def test_conditional_draw_is_the_exact_gaussian_conditional_at_depth_three(block):
    network, x, y, g = sampler_problem(seed=5, heads=HEADS, widths=(2, 3, 2, 3), variances=(0.5, 1.5, 0.8, 1.2, 2.0))
    assert network.num_layers == 3 and network.num_paths == 12
    matches, wrong_temperature = conditional_draw_mismatch(network, x, y, g, block, temperature=0.3)
    assert not rejects(matches)
    assert rejects(wrong_temperature)


def test_path_form_and_sampled_order_parameter_at_depth_three():
    network, x, _, g = sampler_problem(seed=6, heads=HEADS, widths=(3, 2, 4, 2), variances=(0.7, 1.3, 0.9, 1.1, 1.6))
    weights = network.sample_prior(g, 40000)
    # the path form (eq-path-form) gives the layer-by-layer output (eq-forward) for every draw
    torch.testing.assert_close(
        network.forward_from_features(network.features(x), weights), network.forward(x, weights), rtol=1e-10, atol=1e-12
    )
    # under the prior, E[e_pi . e_pi' / N_1] = U_GP delta_{pi pi'} at any width (eq-gp)
    overlaps = network.sampled_order_parameter(weights, per_sample=True)
    mean, se = overlaps.mean(dim=0), overlaps.std(dim=0) / overlaps.shape[0] ** 0.5
    expected = network.gp_order_parameter * torch.eye(network.num_paths, dtype=torch.float64)
    n = network.num_paths * (network.num_paths + 1) // 2
    assert ((mean - expected).abs() / se).max() < family_z(n)
    # and the check sees a missing factor of a width in the overlap's normalisation
    assert ((mean * network.widths[1] / network.widths[0] - expected).abs() / se).max() > family_z(n)


@pytest.mark.parametrize("heads", [(2, 2), HEADS])
def test_strided_routing_gives_the_chains_of_the_einsum_routing(monkeypatch, heads):
    # Routing the data through a block by one product per (chain, head, heads-above index) on strided views is
    # the einsum's contraction in another order: a few sweeps from the same generator give the same chains.
    # Three layers with 2, 3, 2 heads exercise every split (heads below and above, both, neither).
    from attnpaths import _gibbs_blocks
    from attnpaths.sampler import PosteriorSampler

    network, x, y, _ = sampler_problem(
        seed=4, heads=heads, widths=(3, 4, 5, 2)[: len(heads) + 1], variances=1.0, num_examples=8
    )

    def run(work):
        monkeypatch.setattr(_gibbs_blocks, "STRIDED_PRODUCT_WORK", work)
        sampler = PosteriorSampler(network, y, 0.2, x=x)
        return sampler.run(torch.Generator().manual_seed(5), 2, 4, 3, progress=False)

    einsum, strided = run(float("inf")), run(0)
    torch.testing.assert_close(strided.path_input_weights, einsum.path_input_weights, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(strided.order_parameters, einsum.order_parameters, rtol=1e-9, atol=1e-12)
