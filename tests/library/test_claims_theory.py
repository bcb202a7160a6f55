"""Power tests of the claims of the chapter ``theory`` (T1-T4), on small random problems.

Each check function of :mod:`attnpaths.theory.claims` must hold (or at least not be contradicted) on a correct
input and come out contradicted on a deliberately wrong one.
"""

import warnings

import numpy as np
import pytest
import torch
from helpers import random_attention, random_problem

from attnpaths.checks import prior_kernel_monte_carlo
from attnpaths.claims import Outcome
from attnpaths.kernels import gp_kernel
from attnpaths.network import AttentionNetwork
from attnpaths.theory import CertificateWarning, solve
from attnpaths.theory.claims import (
    certificate_verdict,
    local_slopes,
    monotone_approach_verdict,
    prior_kernel_verdict,
    width_exponent_verdict,
)


@pytest.fixture(scope="module")
def problem():
    return random_problem(P=30, n0=6, heads=(2, 2), seed=5)


def _distance(problem, widths):
    xi, y = problem
    sols = [solve(xi, y, heads=(2, 2), width=float(w), temperature=0.1) for w in widths]
    return sols, np.array([np.abs(s.U - np.eye(4)).max() for s in sols])


def test_t1_certificate_against_an_unconverged_solve(problem):
    xi, y = problem
    sols, _ = _distance(problem, [10, 1000])
    good = certificate_verdict([10, 1000], [s.gradient_norm for s in sols], [s.hessian_min_eigenvalue for s in sols])
    assert good.outcome is Outcome.HOLDS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificateWarning)
        stopped = solve(xi, y, heads=(2, 2), width=10.0, temperature=0.1, max_iterations=1)
    bad = certificate_verdict([10], [stopped.gradient_norm], [stopped.hessian_min_eigenvalue])
    assert bad.outcome is Outcome.CONTRADICTED, bad.sentence()


def test_t2_monotone_approach_against_shuffled_widths(problem):
    widths = [3, 30, 300, 3000]
    _, dist = _distance(problem, widths)
    assert monotone_approach_verdict(widths, dist).outcome is Outcome.HOLDS
    shuffled = [30, 3, 3000, 300]  # the distances attributed to the wrong widths
    assert monotone_approach_verdict(shuffled, dist).outcome is Outcome.CONTRADICTED


def test_t3_one_over_n_against_a_wrong_exponent(problem):
    widths = [1e4, 1e5, 1e6]
    _, dist = _distance(problem, widths)
    slopes = local_slopes(widths, dist)
    assert abs(slopes[-1] + 1) < abs(slopes[0] + 1)  # the correction to the slope -1 shrinks with N
    assert width_exponent_verdict(widths, dist).outcome is Outcome.HOLDS
    assert width_exponent_verdict(widths, dist, expected=-0.5).outcome is Outcome.CONTRADICTED
    assert width_exponent_verdict(widths, dist**0.5).outcome is Outcome.CONTRADICTED  # a 1/sqrt(N) approach
    with pytest.raises(ValueError, match="widths"):
        local_slopes([10, 5], [1.0, 2.0])


def test_t4_prior_kernel_against_a_wrong_normalisation():
    g = torch.Generator().manual_seed(0)
    attention = random_attention(g, (2, 2), 5, "average_pooling", divisor=1)
    x = torch.randn(4, 5, 6, generator=g, dtype=torch.float64)
    means, ses = [], []
    for width in (3, 20):
        network = AttentionNetwork(attention, width=width)
        mean, se = prior_kernel_monte_carlo(
            network, x, torch.Generator().manual_seed(width), num_samples=20000, batch_size=5000
        )
        means.append(mean.numpy())
        ses.append(se.numpy())
    K = gp_kernel(AttentionNetwork(attention, width=3).features(x)).numpy()
    good = prior_kernel_verdict([3, 20], means, ses, K)
    assert good.outcome is not Outcome.CONTRADICTED, good.sentence()
    bad = prior_kernel_verdict([3, 20], means, ses, 1.25 * K)  # a normalisation off by a factor 5/4
    assert bad.outcome is Outcome.CONTRADICTED, bad.sentence()
    with pytest.raises(ValueError, match="mc_means"):
        prior_kernel_verdict([3], means, ses, K)
