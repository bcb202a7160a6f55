"""Monte-Carlo prior kernel (sec-prior-kernel) and the width sweep."""

import math

import numpy as np
import pytest
import torch

from attnpaths.attention import Attention, AttentionLayer
from attnpaths.checks import prior_kernel_monte_carlo
from attnpaths.kernels import gp_kernel
from attnpaths.network import AttentionNetwork
from attnpaths.sweeps import gp_accuracy, width_sweep

from helpers import Z_MAX, random_problem


def _attention(g, n0=5):
    return Attention(
        (AttentionLayer(W=torch.randn(2, n0, n0, generator=g, dtype=torch.float64)),
         AttentionLayer(W=torch.randn(2, n0, n0, generator=g, dtype=torch.float64))),
        readout="average_pooling",
    )


def test_prior_kernel_monte_carlo_matches_gp_kernel_and_detects_a_wrong_one():
    g = torch.Generator().manual_seed(0)
    network = AttentionNetwork(_attention(g), widths=4)
    x = torch.randn(5, 5, 6, generator=g, dtype=torch.float64)
    mean, se = prior_kernel_monte_carlo(network, x, torch.Generator().manual_seed(1), num_samples=20000, batch_size=3000)
    K = gp_kernel(network.features(x))
    assert ((mean - K) / se).abs().max() < Z_MAX
    assert ((mean - 1.3 * K) / se).abs().max() > Z_MAX
    with pytest.raises(ValueError, match="num_samples"):
        prior_kernel_monte_carlo(network, x, g, num_samples=1)


def test_width_sweep_reports_the_solutions_and_their_accuracy():
    xi, y = random_problem(P=30, n0=6, heads=(2, 2), seed=3)
    xt, yt = random_problem(P=40, n0=6, heads=(2, 2), seed=4)
    points = width_sweep(xi, y, xt, yt, heads=(2, 2), widths=[5, 500, math.inf], temperature=0.1, progress=False)
    assert [p.width for p in points] == [5, 500, math.inf]
    for p in points:
        mean, _ = p.solution.predict(xt)
        assert p.accuracy == np.mean(np.sign(mean) == yt.numpy())
        assert p.summary()["U"].shape == (4, 4)
    assert points[-1].accuracy == gp_accuracy(xi, y, xt, yt, heads=(2, 2), temperature=0.1)
    with pytest.raises(ValueError, match="widths"):
        width_sweep(xi, y, xt, yt, heads=(2, 2), widths=[], temperature=0.1)
