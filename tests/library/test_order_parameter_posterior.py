"""The exact finite-width posterior of the order parameters (eq-exact-density), attnpaths.order_parameter_posterior."""

import math

import numpy as np
import pytest
import torch
from helpers import Z_MAX, family_z, random_attention, random_inputs, random_problem

from attnpaths.network import AttentionNetwork
from attnpaths.order_parameter_posterior import MOVES, MultivariateT, exact_action, sample_order_parameters
from attnpaths.sampler import PosteriorSampler
from attnpaths.theory import CholeskyCoordinates, architecture, solve

# N_1 >= n_1 = 4, N_2 >= n_2 = 2: the Wishart densities exist; N_a large enough for (eq-exact-density) to have
# a mode in log-Cholesky coordinates (at smaller widths the density there is a funnel towards U = 0)
WIDTHS = (10, 12, 10)
VARIANCES = (0.5, 1.5, 0.8, 2.0)
Z = family_z(10)  # 1 % family-wise over the 10 distinct entries of a 4 x 4 U

SAMPLED_SD_RTOL = 0.15
"""Relative Monte-Carlo tolerance of a sampled standard deviation of U against the prior's (64 autocorrelated
chains): a wrong degree of freedom or Hastings ratio changes the spread by more (the test's comments say how)."""
T_COVARIANCE_RTOL = 0.03
"""Relative Monte-Carlo tolerance of the covariance of 200000 draws of a multivariate t with 10 degrees of freedom:
its heavy tails make a covariance's standard error several times the Gaussian sqrt(2 / n) = 0.3 %."""


def sample(features, y, seed: int, **settings):
    """:func:`sample_order_parameters` of a 2 x 2-head network with :data:`VARIANCES` on ``(features, y)``, its
    generator seeded ``seed``, without a progress bar; ``settings``: the width, temperature, chains and moves."""
    return sample_order_parameters(
        features, y, heads=(2, 2), variances=VARIANCES, generator=torch.Generator().manual_seed(seed), progress=False,
        **settings,
    )  # fmt: skip


def test_log_jacobian_of_the_cholesky_coordinates_matches_autograd():
    coords = CholeskyCoordinates([3, 2])
    theta = torch.randn(coords.dimension, generator=torch.Generator().manual_seed(0), dtype=torch.float64)

    def distinct_entries(t):
        return torch.cat([U[tuple(torch.tril_indices(n, n))] for U, n in zip(coords.matrices(t), coords.sizes)])

    jacobian = torch.autograd.functional.jacobian(distinct_entries, theta)
    expected = torch.linalg.slogdet(jacobian).logabsdet - (3 + 2) * math.log(2)  # the constant n log 2 per block
    assert coords.log_jacobian(theta).item() == pytest.approx(expected.item(), abs=1e-10)
    batch = torch.stack([theta, 0.5 * theta])
    assert torch.allclose(coords.coordinates(coords.matrices(batch)), batch)


def hierarchical_wishart_draws(generator, num_draws, widths=WIDTHS, variances=VARIANCES):
    """``U_1`` drawn the way the network builds it: ``U_a = s_a chi^2 / N_a``, then Gaussian columns layer by
    layer (heads (2, 2), path index h_1 slowest)."""
    N1, N2, Na = widths
    _, s1, s2, sa = variances
    draws = []
    for _ in range(num_draws):
        a = torch.randn(Na, generator=generator, dtype=torch.float64)
        U_a = sa * (a @ a) / Na
        u = torch.randn(N2, 2, generator=generator, dtype=torch.float64) * torch.sqrt(s2 * U_a)
        U_2 = u.T @ u / N2
        cov = torch.kron(torch.eye(2, dtype=torch.float64), s1 * U_2)
        e = torch.randn(N1, 4, generator=generator, dtype=torch.float64) @ torch.linalg.cholesky(cov).T
        draws.append(e.T @ e / N1)
    return torch.stack(draws)


@pytest.mark.needs("diagnostics")
@pytest.mark.parametrize("moves", MOVES)
def test_without_information_in_the_data_the_exact_posterior_is_the_prior_of_the_network(moves, long_chain):
    # at a huge temperature the likelihood is flat: (eq-exact-density) reduces to the hierarchical Wishart prior,
    # whose mean is U_GP and whose spread the direct construction gives; the saddle-point density (no (n + 1) log det
    # terms) would give a different spread, and a wrong degree of freedom a different mean. With independence moves
    # a wrong Hastings ratio (p(theta') / p(theta) alone) would sample p q instead of p: narrower, another spread
    xi, y = random_problem(P=6, n0=3, heads=(2, 2), seed=1)
    samples = sample(xi, y, 2, width=WIDTHS, temperature=1e9, num_chains=64, num_warmup=1000, num_samples=1000,
                     thin=4, moves=moves)  # fmt: skip
    assert samples.moves == moves
    prior = hierarchical_wishart_draws(torch.Generator().manual_seed(3), 20000)
    prior_mean, prior_sd = prior.mean(0).numpy(), prior.std(0).numpy()
    U_gp = VARIANCES[1] * VARIANCES[2] * VARIANCES[3] * np.eye(4)
    assert np.allclose(prior_mean, U_gp, atol=Z_MAX * prior_sd.max() / math.sqrt(20000))
    se = np.sqrt(samples.mc_se**2 + prior_sd**2 / 20000)
    assert np.all(np.abs(samples.mean - prior_mean) <= Z * se), (samples.mean, prior_mean, se)
    sampled_sd = samples.U.reshape(-1, 4, 4).std(axis=0)
    assert np.allclose(sampled_sd, prior_sd, rtol=SAMPLED_SD_RTOL), (sampled_sd, prior_sd)
    # random-walk moves at the scale 2.38 / sqrt(D) accept about a quarter of their proposals on near-Gaussian
    # targets; on this 14-dimensional density, close to the t fitted to it, independence moves accept at least as
    # often, so the mixture's rate is at least the random walk's (in many dimensions at small N it can be lower)
    low, high = (0.1, 0.5) if moves == "random_walk" else (0.25, 0.95)
    assert samples.rhat.max() < 1.1 and low < samples.acceptance < high, samples.acceptance


def wide_network_problem():
    """``(features [12, N0, 4], y)`` of a 2 x 2-head network of width 300, where (eq-exact-density) is close to
    its Laplace approximation at T = 0.05."""
    g = torch.Generator().manual_seed(7)
    network = AttentionNetwork(random_attention(g, (2, 2), 4), width=300, variances=VARIANCES)
    x = random_inputs(g, 12, 4, 3)
    return network.features(x), torch.cat([torch.ones(6), -torch.ones(6)]).double()


@pytest.mark.needs("diagnostics")
def test_independence_moves_multiply_the_effective_sample_size_per_move_on_a_near_gaussian_posterior():
    # at large widths the posterior is close to its Laplace approximation: independence moves from a t fitted to it
    # decorrelate the chains in a few moves, a random walk in O(D) (D = 14 here); same moves, same cost per move
    features, y = wide_network_problem()
    runs = {
        moves: sample(features, y, 8, width=300, temperature=0.05, num_chains=32, num_warmup=100, num_samples=200,
                      thin=2, moves=moves)
        for moves in MOVES
    }  # fmt: skip
    rows, cols = np.triu_indices(4)
    ess = {moves: run.ess[rows, cols].min() for moves, run in runs.items()}
    assert ess["mixed"] > 4 * ess["random_walk"], ess
    # and the two kinds of chains sample one density: means within Monte-Carlo error
    se = np.sqrt(runs["mixed"].mc_se ** 2 + runs["random_walk"].mc_se ** 2)
    assert np.all(np.abs(runs["mixed"].mean - runs["random_walk"].mean) <= Z * se)


@pytest.mark.needs("diagnostics")
def test_a_precision_target_stops_the_chains_at_a_look_where_u_meets_it_keeping_the_full_runs_first_draws():
    from attnpaths.experiments.sampling import PrecisionTarget

    features, y = wide_network_problem()
    arguments = dict(width=300, temperature=0.05, num_chains=16, num_warmup=40, num_samples=150, thin=2)
    full = sample(features, y, 8, **arguments)
    target = PrecisionTarget(0.015, min_draws=10)
    stopped = sample(features, y, 8, stop=target, **arguments)
    kept = stopped.U.shape[1]
    assert kept in target.checkpoints(150), kept
    np.testing.assert_array_equal(stopped.U, full.U[:, :kept])  # determinism: the same chains; a prefix of them
    np.testing.assert_allclose(stopped.mean, full.U[:, :kept].mean(axis=(0, 1)), rtol=1e-12)  # summation order
    assert kept < 150 and target.relative_errors(torch.from_numpy(full.U[:, :kept]))[0].max() <= 0.015
    assert 0 < stopped.acceptance < 1
    never = sample(features, y, 8, stop=PrecisionTarget(1e-6, min_draws=10), **arguments)
    np.testing.assert_array_equal(never.U, full.U)  # determinism: the same chains, never stopped


def test_multivariate_t_proposal_draws_and_density():
    # log density against scipy's (same up to a constant), and draws with the t's covariance nu / (nu - 2) S
    from scipy.stats import multivariate_t

    g = torch.Generator().manual_seed(9)
    D, nu = 3, 10
    A = torch.randn(D, D, generator=g, dtype=torch.float64)
    factor = torch.linalg.cholesky(A @ A.T + D * torch.eye(D, dtype=torch.float64))
    centre = torch.randn(D, generator=g, dtype=torch.float64)
    t = MultivariateT(centre, factor, nu)
    points = torch.randn(5, D, generator=g, dtype=torch.float64) * 3
    reference = multivariate_t(centre.numpy(), (factor @ factor.T).numpy(), df=nu).logpdf(points.numpy())
    ours = t.log_density(points).numpy()
    assert np.allclose(ours - ours[0], reference - reference[0], atol=1e-12)
    draws = t.sample(200000, g)
    expected = (factor @ factor.T).numpy() * nu / (nu - 2)
    assert np.allclose(
        np.cov(draws.numpy().T), expected, rtol=T_COVARIANCE_RTOL, atol=T_COVARIANCE_RTOL * np.abs(expected).max()
    )
    assert np.allclose(draws.mean(0).numpy(), centre.numpy(), atol=0.02 * float(factor.diagonal().max()))


@pytest.mark.needs("diagnostics")
def test_exact_mean_matches_the_networks_gibbs_samples_and_differs_from_the_saddle_point(long_chain):
    g = torch.Generator().manual_seed(4)
    network = AttentionNetwork(random_attention(g, (2, 2), 4), width=WIDTHS, variances=VARIANCES)
    x = random_inputs(g, 8, 4, 3)
    y = torch.cat([torch.ones(4), -torch.ones(4)]).double()
    features = network.features(x)
    temperature = 0.05
    exact = sample(features, y, 5, width=WIDTHS, temperature=temperature, num_chains=32, num_warmup=300,
                   num_samples=300, thin=4)  # fmt: skip
    gibbs = PosteriorSampler(network, y, temperature, features=features).run(
        torch.Generator().manual_seed(6), 200, 2500, num_chains=4, progress=False
    )
    diagnostics = gibbs.diagnostics(features)
    U_gibbs = gibbs.order_parameter().numpy()
    sd = gibbs.order_parameters.flatten(0, 1).std(dim=0).numpy()
    se = np.sqrt(sd**2 / diagnostics["order_parameter_ess"].numpy() + exact.mc_se**2)
    assert np.all(np.abs(U_gibbs - exact.mean) <= Z * se), (U_gibbs, exact.mean, se)
    # the saddle point is a different (N -> infinity) quantity: the exact mean resolves its O(1/N) distance
    saddle = solve(features, y, heads=(2, 2), width=WIDTHS, temperature=temperature, variances=VARIANCES)
    assert np.any(np.abs(saddle.U - exact.mean) > Z * exact.mc_se), (saddle.U, exact.mean, exact.mc_se)


def test_exact_action_is_the_saddle_point_action_plus_the_wishart_terms():
    xi, y = random_problem(P=10, n0=4, heads=(2, 2), seed=2)
    arch = architecture((2, 2), WIDTHS, VARIANCES)
    sol = solve(xi, y, heads=(2, 2), width=WIDTHS, temperature=0.1, variances=VARIANCES)
    from attnpaths.kernels import scaled_features

    X = scaled_features(torch.as_tensor(xi), VARIANCES[0])
    U_layers = [torch.as_tensor(U)[None] for U in sol.U_layers]
    U_a = torch.tensor([sol.U_a], dtype=torch.float64)
    value = exact_action(X, y, arch, 0.1, U_layers, U_a).item()
    # the sampler's route: the Cholesky factors of its coordinates, no U_l factorised again
    factors = [torch.linalg.cholesky(U) for U in U_layers]
    assert exact_action(X, y, arch, 0.1, U_layers, U_a, factors=factors).item() == pytest.approx(value, rel=1e-12)
    logdets = [torch.linalg.slogdet(U[0]).logabsdet.item() for U in U_layers]
    wishart = (4 + 1) * logdets[0] + (2 + 1) * logdets[1] + 2 * math.log(sol.U_a)
    assert value == pytest.approx(sol.action + wishart, rel=1e-10)


def test_invalid_arguments_raise_value_errors_naming_them():
    xi, y = random_problem(P=6, n0=3, heads=(2, 2))
    kwargs = dict(heads=(2, 2), temperature=0.1, generator=torch.Generator().manual_seed(0), progress=False)
    with pytest.raises(ValueError, match="width must be finite"):
        sample_order_parameters(xi, y, width=math.inf, **kwargs)
    with pytest.raises(ValueError, match="N_1 = 3 must be at least n_1 = 4"):
        sample_order_parameters(xi, y, width=3, **kwargs)
    with pytest.raises(RuntimeError, match="no mode"):
        sample_order_parameters(xi, y, width=(5, 3, 2), **{**kwargs, "temperature": 1e9})
    with pytest.raises(ValueError, match="num_chains"):
        sample_order_parameters(xi, y, width=5, num_chains=1, **kwargs)
    with pytest.raises(ValueError, match="generator"):
        sample_order_parameters(xi, y, width=5, **{**kwargs, "generator": 0})
    with pytest.raises(ValueError, match="moves must be one of"):
        sample_order_parameters(xi, y, width=5, moves="hamiltonian", **kwargs)


def test_mode_is_reached_from_starts_closer_than_the_rounding_of_the_density_resolves():
    # near the mode the predicted decrease of -log p falls below the rounding of its value (~800 here): a step
    # that raises it by a few ulps must still be taken (the start of the mode search is the saddle point, which
    # lies that close). Starts 1e-7 .. 4e-7 from the mode, where the decrease is ~1e-13 against ulps of ~1e-13.
    from attnpaths.kernels import scaled_features
    from attnpaths.order_parameter_posterior import _mode, _Target

    features, y = wide_network_problem()
    arch = architecture((2, 2), 300, VARIANCES)
    target = _Target(arch, 0.05, X=scaled_features(features, arch.variances[0]), y=y)
    saddle = solve(features, y, heads=(2, 2), width=300, temperature=0.05, variances=VARIANCES)
    mode, _ = _mode(target, target.theta(saddle.U_layers, saddle.U_a))
    directions = torch.randn(12, mode.numel(), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    for k, direction in enumerate(directions):
        start = mode + (1e-7 * (1 + k % 4)) * direction / direction.norm()
        theta, _ = _mode(target, start)
        assert float((theta - mode).abs().max()) < 1e-9


@pytest.mark.parametrize("P", [5, 40])
def test_the_density_from_gram_statistics_is_the_density_from_the_examples(P):
    # the D x D route (determinant lemma and Woodbury on Gram = F^T F) is an identity, not an approximation: the
    # same log density at every U, below D = 12 examples (Gram singular) and above
    from attnpaths.gram import GramStatistics
    from attnpaths.kernels import scaled_features
    from attnpaths.order_parameter_posterior import _Target

    xi, y = random_problem(P=P, n0=3, heads=(2, 2), seed=4)
    arch = architecture((2, 2), 7, VARIANCES)
    stats = GramStatistics().update(xi, y)
    gram, b, yy = stats.scaled(arch.variances[0])
    by_examples = _Target(arch, 0.05, X=scaled_features(torch.as_tensor(xi), arch.variances[0]), y=torch.as_tensor(y))
    by_statistics = _Target(arch, 0.05, statistics=(torch.from_numpy(gram), torch.from_numpy(b), yy, P))
    theta = torch.randn(6, by_examples.dimension, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    expected = by_examples.log_density(theta)
    assert torch.allclose(by_statistics.log_density(theta), expected, rtol=1e-11, atol=0.0), (
        by_statistics.log_density(theta) - expected
    )


@pytest.mark.needs("diagnostics")
def test_sampling_from_gram_statistics_takes_the_statistics_in_place_of_the_examples():
    from attnpaths.gram import GramStatistics

    xi, y = random_problem(P=30, n0=3, heads=(2, 2), seed=4)
    stats = GramStatistics().update(xi, y)
    settings = dict(heads=(2, 2), width=7, temperature=0.05, num_chains=4, num_warmup=4, num_samples=4, thin=1)
    settings["progress"] = False
    runs = [
        sample_order_parameters(xi, y, generator=torch.Generator().manual_seed(6), **settings),
        sample_order_parameters(statistics=stats, generator=torch.Generator().manual_seed(6), **settings),
    ]
    # one density, one generator: the same chains up to the rounding of the two routes
    assert np.allclose(runs[0].U, runs[1].U, rtol=1e-8, atol=0.0)
    for given in (dict(features=xi, targets=y, statistics=stats), dict(), dict(features=xi)):
        with pytest.raises(ValueError, match="give"):
            sample_order_parameters(**given, generator=torch.Generator().manual_seed(6), **settings)


def test_the_predictive_mean_averages_the_predictor_of_each_draw():
    # per chain, the mean over its draws of the predictor's mean k^T (K(U_1) + T I)^{-1} y: checked against the
    # P x P kernel formed directly
    from attnpaths.gram import GramStatistics
    from attnpaths.order_parameter_posterior import predictive_means

    xi, y = random_problem(P=30, n0=3, heads=(2, 2), seed=4)
    test, _ = random_problem(P=9, n0=3, heads=(2, 2), seed=8)
    stats = GramStatistics().update(xi, y)
    generator = torch.Generator().manual_seed(9)
    A = torch.randn(2, 3, 4, 4, generator=generator, dtype=torch.float64)
    U = A @ A.transpose(-1, -2) + 0.5 * torch.eye(4, dtype=torch.float64)
    means = predictive_means(stats, U, test, temperature=0.05, variances=VARIANCES[0], batch_size=4)
    X, X_test = (torch.as_tensor(v) * math.sqrt(VARIANCES[0] / 12) for v in (xi, test))
    expected = np.zeros((2, 9))
    for c in range(2):
        for s in range(3):
            K = torch.einsum("pia,ac,qic->pq", X, U[c, s], X) + 0.05 * torch.eye(30, dtype=torch.float64)
            k = torch.einsum("pia,ac,qic->pq", X_test, U[c, s], X)
            expected[c] += (k @ torch.linalg.solve(K, torch.as_tensor(y))).numpy() / 3
    assert np.allclose(means, expected, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="U must have shape"):
        predictive_means(stats, U[0], test, temperature=0.05)
    with pytest.raises(ValueError, match="features_test"):
        predictive_means(stats, U, test[:, :2], temperature=0.05)
