"""``attnpaths.theory.solve``: minimiser certificate, GP limit, predictor, scalar deep-linear limit, errors."""

import math
import warnings

import numpy as np
import pytest
import scipy.optimize
import torch
from helpers import assert_rounding_close, random_problem, random_spd

from attnpaths.head_scoring import head_scores, prune_order_parameter
from attnpaths.kernels import gp_kernel, path_kernels, pc_label_overlap, renormalized_kernel
from attnpaths.theory import CertificateWarning, classification_accuracy, solve


def test_gp_predictor_equals_kernel_ridge_regression():
    xi, y = random_problem(P=30, n0=7, heads=(2, 2), seed=1)
    xt, _ = random_problem(P=12, n0=7, heads=(2, 2), seed=2)
    variances = (1.3, 0.8, 1.1, 0.9)
    T = 0.2
    sol = solve(xi, y, heads=(2, 2), width=math.inf, temperature=T, variances=variances)
    u_gp = 0.9 * 0.8 * 1.1
    # the closed form against the solver's product of the variances, taken in another order
    assert_rounding_close(sol.U, u_gp * np.eye(4), what="U_GP")
    K = gp_kernel(xi, s0=1.3, u_gp=u_gp).numpy()
    k = gp_kernel(xt, xi, s0=1.3, u_gp=u_gp).numpy()
    kappa = np.diag(gp_kernel(xt, s0=1.3, u_gp=u_gp).numpy())
    ridge = np.linalg.solve(K + T * np.eye(30), np.column_stack([y.numpy(), k.T]))
    mean, var = sol.predict(xt)
    np.testing.assert_allclose(mean, k @ ridge[:, 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var, kappa - np.einsum("ij,ji->i", k, ridge[:, 1:]), rtol=1e-9, atol=1e-12)
    assert np.all(var > 0)
    assert sol.action == math.inf and math.isfinite(sol.energy)


def test_kernel_is_weighted_sum_of_path_kernels():
    xi, _ = random_problem(P=10, n0=4, heads=(2, 2), seed=3)
    U = random_spd(4, seed=4).numpy()
    C = path_kernels(xi).numpy()
    expected = np.einsum("pq,pqab->ab", U, C) / 4
    np.testing.assert_allclose(renormalized_kernel(xi, U).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(gp_kernel(xi).numpy(), np.einsum("ppab->ab", C) / 4, rtol=1e-12)


@pytest.mark.parametrize("widths", [5, 40, (8, 30, 12)])
def test_solver_certificate_and_independence_of_the_starting_point(widths):
    xi, y = random_problem(P=40, n0=6, heads=(2, 2), seed=5)
    reference = solve(xi, y, heads=(2, 2), width=widths, temperature=0.05)
    assert reference.converged
    assert reference.gradient_norm < 1e-6
    assert reference.hessian_min_eigenvalue > 0
    for seed in (1, 2, 3):
        start = [random_spd(4, seed, scale=0.5), random_spd(2, seed + 10, scale=2.0)]
        other = solve(xi, y, heads=(2, 2), width=widths, temperature=0.05, initial=start)
        np.testing.assert_allclose(other.U, reference.U, rtol=1e-7, atol=1e-9)
        assert other.action == pytest.approx(reference.action, rel=1e-12)
    # the minimiser is not the GP point at finite width, and the action is lower there
    gp_point = [np.eye(4), np.eye(2)]
    assert not np.allclose(reference.U, gp_point[0], atol=1e-3)


def test_solution_is_a_minimum_of_the_action_along_random_directions():
    from attnpaths.action import energy, entropy_derivatives
    from attnpaths.kernels import scaled_features

    xi, y = random_problem(P=30, n0=5, heads=(2, 2), seed=8)
    sol = solve(xi, y, heads=(2, 2), width=10, temperature=0.1)
    X = scaled_features(xi)
    layers = [torch.as_tensor(U) for U in sol.U_layers]

    def action(ls):
        return entropy_derivatives(ls, sol.arch, order=0).value + energy(X, y, ls[0], 0.1).value

    assert action(layers) == pytest.approx(sol.action, rel=1e-13)
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        dirs = [(lambda D: (D + D.T) / 2)(torch.randn(U.shape, generator=g, dtype=torch.float64)) for U in layers]
        for eps in (1e-3, 1e-2):
            assert action([U + eps * D for U, D in zip(layers, dirs)]) > sol.action
            assert action([U - eps * D for U, D in zip(layers, dirs)]) > sol.action


def test_order_parameter_tends_to_gp_value_as_width_grows():
    xi, y = random_problem(P=40, n0=6, heads=(2, 2), seed=6)
    distances = []
    for N in (10, 100, 1000, 10000):
        sol = solve(xi, y, heads=(2, 2), width=N, temperature=0.05)
        distances.append(np.abs(sol.U - np.eye(4)).max())
    assert all(a > b for a, b in zip(distances, distances[1:]))
    assert distances[-1] < 0.01
    # roughly 1/N decay once in the perturbative regime
    assert distances[-2] / distances[-1] == pytest.approx(10, rel=0.3)


def test_single_path_reduces_to_scalar_deep_linear_network():
    """L = 1, H = 1, N_1 = N_a = N, unit variances: (eq-readout) gives U_a = sqrt(u), so
    S(u) = N (2 sqrt(u) - log u) + log det(u K0 + T) + y^T (u K0 + T)^{-1} y and the minimiser solves
    N (u^{-1/2} - u^{-1}) + tr((u K0 + T)^{-1} K0) - y^T (u K0 + T)^{-1} K0 (u K0 + T)^{-1} y = 0."""
    xi, y = random_problem(P=20, n0=8, heads=(1,), seed=9, signal=2.0)
    T, N = 0.05, 7
    K0 = gp_kernel(xi).numpy()
    yy = y.numpy()
    lam, Q = np.linalg.eigh(K0)
    z2 = (Q.T @ yy) ** 2

    def stationarity(u):
        d = u * lam + T
        return N * (u**-0.5 - 1 / u) + np.sum(lam / d) - np.sum(lam * z2 / d**2)

    u_star = scipy.optimize.brentq(stationarity, 1e-3, 1e3, xtol=1e-14)
    sol = solve(xi, y, heads=(1,), width=N, temperature=T)
    assert sol.U[0, 0] == pytest.approx(u_star, rel=1e-9)
    assert sol.U_a == pytest.approx(math.sqrt(u_star), rel=1e-9)
    d = u_star * lam + T
    expected_action = N * (2 * math.sqrt(u_star) - math.log(u_star)) + np.sum(np.log(d)) + np.sum(z2 / d)
    assert sol.action == pytest.approx(expected_action, rel=1e-11)


def test_uncertified_result_warns_or_raises():
    xi, y = random_problem(P=20, n0=5, heads=(2, 2), seed=1)
    with pytest.warns(CertificateWarning, match="not certified"):
        solve(xi, y, heads=(2, 2), width=5, temperature=0.05, max_iterations=1)
    with pytest.raises(RuntimeError, match="not certified"):
        solve(xi, y, heads=(2, 2), width=5, temperature=0.05, max_iterations=1, on_failure="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solve(xi, y, heads=(2, 2), width=5, temperature=0.05)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(heads=(2, 3)), "heads"),
        (dict(heads=(2, 0)), "heads"),
        (dict(temperature=0.0), "temperature"),
        (dict(temperature=-1.0), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(width=0.5), "width"),
        (dict(width=(10, 10)), "width"),
        (dict(width=(10, math.inf, 10)), "width"),
        (dict(variances=(1.0, 1.0)), "variances"),
        (dict(variances=-1.0), "variances"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    xi, y = random_problem(P=10, n0=4, heads=(2, 2))
    args = dict(heads=(2, 2), width=10, temperature=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        solve(xi, y, **args)


def test_bad_arrays_raise_value_error():
    xi, y = random_problem(P=10, n0=4, heads=(2, 2))
    with pytest.raises(ValueError, match="features"):
        solve(xi[0], y, heads=(2, 2), width=10, temperature=0.1)
    bad = xi.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="features"):
        solve(bad, y, heads=(2, 2), width=10, temperature=0.1)
    with pytest.raises(ValueError, match="targets"):
        solve(xi, y[:-1], heads=(2, 2), width=10, temperature=0.1)
    sol = solve(xi, y, heads=(2, 2), width=10, temperature=0.1)
    with pytest.raises(ValueError, match="features_test"):
        sol.predict(xi[:, :3])


def test_head_scores_and_pruning():
    U = np.array([[4.0, -2, 0.1, 0], [-2, 3, 0, 0.2], [0.1, 0, 0.5, 0], [0, 0.2, 0, 0.4]])
    scores = head_scores(U, (2, 2), normalized=False)
    # paths (h1, h2): 0=(0,0) 1=(0,1) 2=(1,0) 3=(1,1); head (layer 1, head 0) touches paths 0, 1
    mask = np.zeros((4, 4), bool)
    mask[[0, 1], :] = True
    mask[:, [0, 1]] = True
    assert scores[0, 0] == pytest.approx(np.abs(U)[mask].sum())
    assert np.nanmax(head_scores(U, (2, 2))) == 1.0  # exact on any CPU: divided by the largest score, x / x = 1
    pruned = prune_order_parameter(U, (2, 2), [(0, 1)])
    # exact on any CPU: pruning writes zeros and leaves the other entries as they are (copies)
    assert np.all(pruned[2:, :] == 0) and np.all(pruned[:, 2:] == 0)
    np.testing.assert_array_equal(pruned[:2, :2], U[:2, :2])
    with pytest.raises(ValueError, match="pruned"):
        prune_order_parameter(U, (2, 2), [(2, 0)])


def test_pc_overlap_and_accuracy():
    y = np.array([1.0, 1, -1, -1])
    K = np.outer(y, y) + 0.1 * np.eye(4)
    overlaps, eigenvalues = pc_label_overlap(K, y, 2)
    assert overlaps[0] == pytest.approx(1.0) and eigenvalues[0] > eigenvalues[1]
    assert classification_accuracy(np.array([0.5, -0.1, -2, 0.0]), y) == 0.5


# --------------------------------------------------------------------------------------------------------
# the minimiser: derivatives in log-Cholesky coordinates, trust-region steps, rounding at the minimum


def _theta_action(action):
    """S as a differentiable function of theta (autograd reference for _Action.derivatives)."""
    from attnpaths.action import entropy
    from attnpaths.kernels import kernel_from_scaled

    coords = action.coords
    P = action.X.shape[0]

    def S(theta):
        layers = coords.matrices(theta)
        G = kernel_from_scaled(action.X, layers[0], action.X) + action.temperature * torch.eye(P, dtype=torch.float64)
        return entropy(layers, action.arch) + torch.logdet(G) + action.y @ torch.linalg.solve(G, action.y)

    return S


@pytest.mark.parametrize(
    "heads, P, n0, widths",
    [((2, 2), 12, 30, (8, 30, 12)), ((2, 2), 30, 6, 5), ((3, 2, 2), 25, 9, (5, 8, 9, 4)), ((4,), 20, 3, 7)],
)
def test_action_derivatives_in_theta_match_autograd(heads, P, n0, widths):
    from torch.func import hessian, jacrev

    from attnpaths.kernels import scaled_features
    from attnpaths.theory._coordinates import _Action

    xi, y = random_problem(P=P, n0=n0, heads=heads, seed=3)
    arch = architecture_of(heads, widths)
    action = _Action(scaled_features(xi, arch.variances[0]), y, arch, 0.07)
    n = math.prod(heads)
    assert action.energy.route == ("sample" if n0 > P else "gram" if P > n0 * n else "feature")
    layers = [random_spd(arch.layer_size(l), 5 + l) for l in range(1, arch.num_layers + 1)]
    theta = action.coords.coordinates(layers)
    point = action.point(theta)
    derivatives = action.derivatives(point)
    S = _theta_action(action)
    assert point.value == pytest.approx(float(S(theta)), rel=1e-12)
    expected_hessian = hessian(S)(theta)
    assert torch.allclose(derivatives.gradient, jacrev(S)(theta), rtol=1e-9, atol=1e-9)
    # analytic against autograd: rounding on the scale of the largest entry (5e-15 of it seen; entries near zero
    # carry that scale's rounding, not their own)
    assert_rounding_close(derivatives.hessian, expected_hessian, what="Hessian in theta")


def architecture_of(heads, widths):
    from attnpaths.theory import architecture

    return architecture(heads, widths, (1.0, 1.3) + (0.7, 1.1, 0.9, 1.2)[: len(heads)])


@pytest.mark.parametrize("seed", range(6))
def test_trust_region_step_solves_its_subproblem(seed):
    """The step satisfies the optimality conditions of min g.p + p.H p / 2 over |p| <= radius:
    (H + sigma I) p = -g with H + sigma I positive semi-definite, sigma >= 0 and sigma (radius - |p|) = 0."""
    from attnpaths.theory._newton import _trust_region_step

    rng = np.random.default_rng(seed)
    d = 7
    eigenvalues = np.sort(rng.standard_normal(d) * 3 + (2.5 if seed % 2 else 0.0))
    coefficients = rng.standard_normal(d)
    if seed == 4:
        coefficients[eigenvalues == eigenvalues[0]] = 0.0  # the hard case
        eigenvalues[0] = -abs(eigenvalues[0]) - 1.0
    for radius in (1e-3, 0.3, 2.0, 50.0):
        step = _trust_region_step(coefficients, eigenvalues, radius)
        length = np.linalg.norm(step)
        assert length <= radius * (1 + 1e-6)
        # sigma from the components with a gradient: p_i = -g_i / (lambda_i + sigma)
        with_gradient = np.abs(coefficients) > 0
        sigma = np.median(-coefficients[with_gradient] / step[with_gradient] - eigenvalues[with_gradient])
        assert sigma >= -1e-8 * max(1.0, abs(eigenvalues).max())
        assert eigenvalues[0] + sigma >= -1e-6 * max(1.0, abs(eigenvalues).max())
        # (the secular equation is solved to 1e-6 of the radius, so the components agree to a few 1e-6)
        assert np.allclose(
            (eigenvalues + sigma)[with_gradient] * step[with_gradient],
            -coefficients[with_gradient],
            rtol=1e-5,
            atol=1e-9,
        )
        if sigma > 1e-8:
            assert length == pytest.approx(radius, rel=1e-5)
        # no point of a random sample inside the region has a lower model value
        model = lambda p: coefficients @ p + 0.5 * (eigenvalues * p) @ p  # noqa: E731
        trial = rng.standard_normal((500, d))
        trial *= (radius * rng.uniform(0, 1, (500, 1)) ** (1 / d)) / np.linalg.norm(trial, axis=1, keepdims=True)
        assert min(model(p) for p in trial) >= model(step) - 1e-9 * max(1.0, abs(model(step)))


def test_large_models_take_the_same_newton_step_through_cholesky():
    from attnpaths.theory._newton import _Model

    g = torch.Generator().manual_seed(2)
    A = torch.randn(12, 12, generator=g, dtype=torch.float64)
    H = A @ A.T + torch.eye(12, dtype=torch.float64)
    gradient = torch.randn(12, generator=g, dtype=torch.float64)
    by_eigen, by_cholesky = _Model(gradient, H), _Model(gradient, H, eigen_limit=0)
    assert by_cholesky.newton is not None and by_eigen.newton is None
    (p1, l1, d1), (p2, l2, d2) = by_eigen.step(1e3), by_cholesky.step(1e3)  # the Newton step
    assert torch.allclose(p1, p2, rtol=1e-9, atol=1e-12) and l1 == pytest.approx(l2) and d1 == pytest.approx(d2)
    assert by_cholesky.newton_step_size() == pytest.approx(by_eigen.newton_step_size(), rel=1e-9)
    # inside a small region: conjugate gradients reach the boundary with at least the Cauchy point's decrease
    for model in (by_cholesky, _Model(gradient, H - 8.0 * torch.eye(12, dtype=torch.float64), eigen_limit=0)):
        step, length, predicted = model.step(1e-2)
        assert length == pytest.approx(1e-2, rel=1e-9)
        g = model.gradient
        cauchy = -(1e-2 / float(torch.linalg.vector_norm(g))) * g
        assert predicted >= -float(g @ cauchy + 0.5 * cauchy @ (model.hessian @ cauchy)) * (1 - 1e-12)
    assert by_cholesky.positive_definite() and by_eigen.positive_definite()
    assert not _Model(gradient, -H, eigen_limit=0).positive_definite()


def test_minimiser_converges_where_the_action_is_known_only_to_rounding():
    """Near the minimum the decrease of S is below the rounding of its evaluation. With S perturbed by a
    deterministic error of up to 1e-11 |S| at every evaluation (far above the ulps the ratio test tolerates),
    from a start 1e-7 away from the minimum (a predicted decrease of about 3e-12, below the error), the
    iteration still reaches the gradient tolerance, judging the step by the gradient norm; the ratio test
    alone rejects every step there until the trust region collapses."""
    import zlib

    from attnpaths.kernels import scaled_features
    from attnpaths.theory import architecture
    from attnpaths.theory._coordinates import _Action
    from attnpaths.theory._newton import _newton

    xi, y = random_problem(P=40, n0=6, heads=(2, 2), seed=5)
    reference = solve(xi, y, heads=(2, 2), width=10, temperature=0.05, gradient_tolerance=1e-11)
    action = _Action(scaled_features(xi), y, architecture((2, 2), 10, 1.0), 0.05)
    exact_point = action.point

    def noisy_point(theta):
        point = exact_point(theta)
        if point is not None:  # a pseudo-random function of the point, in [-1, 1]
            point.value += 1e-11 * abs(point.value) * ((zlib.crc32(theta.numpy().tobytes()) % 2001) - 1000) / 1000
        return point

    action.point = noisy_point
    minimum = action.coords.coordinates([torch.as_tensor(U) for U in reference.U_layers])
    start = minimum + 1e-7 * torch.randn(minimum.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    point, iterations, success, message, derivatives = _newton(action, start, 1e-10, 100)
    assert success, message
    assert float(torch.linalg.vector_norm(derivatives.gradient)) < 1e-10
    assert np.abs(point.factors[0] @ point.factors[0].T - reference.U).max() < 1e-10


def test_solution_reuses_the_final_factorisation_for_predictions():
    xi, y = random_problem(P=30, n0=5, heads=(2, 2), seed=8)
    xt, _ = random_problem(P=7, n0=5, heads=(2, 2), seed=9)
    sol = solve(xi, y, heads=(2, 2), width=10, temperature=0.1)
    K = renormalized_kernel(xi, sol.U).numpy()
    k = renormalized_kernel(xt, sol.U, xi).numpy()
    mean, _ = sol.predict(xt)
    np.testing.assert_allclose(mean, k @ np.linalg.solve(K + 0.1 * np.eye(30), y.numpy()), rtol=1e-9, atol=1e-12)


def test_the_steps_for_large_hessians_find_the_same_minimum(monkeypatch):
    import attnpaths.theory._newton as theory  # the module whose Newton steps build the model

    xi, y = random_problem(P=40, n0=6, heads=(2, 2), seed=5)
    reference = solve(xi, y, heads=(2, 2), width=10, temperature=0.05)
    large = theory._Model
    monkeypatch.setattr(theory, "_Model", lambda g, H: large(g, H, eigen_limit=0))  # Cholesky and CG steps
    other = solve(xi, y, heads=(2, 2), width=10, temperature=0.05)
    assert other.converged and other.gradient_norm < 1e-8
    # two step rules reach the minimum along other Newton steps, each stopping at its own small gradient: the
    # agreement is the solver's (1e-15 seen), bounded here by the stopping point's, not only rounding
    assert_rounding_close(other.U, reference.U, rtol=1e-10, what="U of the Cholesky and CG steps")
    assert other.hessian_min_eigenvalue == pytest.approx(reference.hessian_min_eigenvalue, rel=1e-9)
