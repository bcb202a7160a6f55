"""Monte-Carlo prior kernel (sec-prior-kernel)."""

import pytest
import torch
from helpers import Z_MAX, random_attention

from attnpaths.checks import prior_kernel_monte_carlo
from attnpaths.kernels import gp_kernel
from attnpaths.network import AttentionNetwork


def test_prior_kernel_monte_carlo_matches_gp_kernel_and_detects_a_wrong_one():
    g = torch.Generator().manual_seed(0)
    network = AttentionNetwork(random_attention(g, (2, 2), 5, "average_pooling", divisor=1), width=4)
    x = torch.randn(5, 5, 6, generator=g, dtype=torch.float64)
    mean, se = prior_kernel_monte_carlo(
        network, x, torch.Generator().manual_seed(1), num_samples=20000, batch_size=3000
    )
    K = gp_kernel(network.features(x))
    assert ((mean - K) / se).abs().max() < Z_MAX
    assert ((mean - 1.3 * K) / se).abs().max() > Z_MAX
    with pytest.raises(ValueError, match="num_samples"):
        prior_kernel_monte_carlo(network, x, g, num_samples=1)
