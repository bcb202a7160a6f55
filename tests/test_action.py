"""The action (eq-action, eq-entropy, eq-readout): closed forms, GP stationarity, analytic derivatives against
autograd and finite differences."""

import math

import pytest
import torch
from torch.func import hessian, jacrev

from attnpaths.action import (
    energy,
    entropy,
    entropy_derivatives,
    gp_order_parameters,
    pre_kernel_tensor,
    readout_order_parameter,
)
from attnpaths.kernels import kernel_from_scaled, scaled_features
from attnpaths.theory import architecture

from helpers import random_problem, random_spd

ARCHITECTURES = [
    ((2, 2), (10, 20, 7), (1.0, 1.3, 0.7, 1.1)),
    ((3, 2, 2), (5, 8, 9, 4), (1.0, 2.0, 1.0, 0.5, 1.5)),
    ((1,), (7, 3), (1.0, 2.0, 3.0)),
    ((4,), (50, 50), 1.0),
]


def _symmetrised_entropy(arch, sizes):
    def f(flat):
        mats, start = [], 0
        for n in sizes:
            block = flat[start : start + n * n].reshape(n, n)
            mats.append((block + block.T) / 2)
            start += n * n
        return entropy(mats, arch)

    return f


def _random_layers(arch, seed):
    return [random_spd(arch.layer_size(l), seed + l) for l in range(1, arch.num_layers + 1)]


def _sym_projector(sizes):
    blocks = []
    for n in sizes:
        eye = torch.eye(n * n, dtype=torch.float64)
        perm = torch.arange(n * n).reshape(n, n).T.reshape(-1)
        blocks.append((eye + eye[perm]) / 2)
    return torch.block_diag(*blocks)


@pytest.mark.parametrize("heads, widths, variances", ARCHITECTURES)
def test_entropy_is_stationary_at_gp_values_for_any_widths(heads, widths, variances):
    arch = architecture(heads, widths, variances)
    U_layers, U_a = gp_order_parameters(arch)
    assert float(readout_order_parameter(U_layers[-1], arch)) == pytest.approx(U_a, rel=1e-12)
    terms = entropy_derivatives(U_layers, arch, order=1)
    for g in terms.gradients:
        assert torch.allclose(g, torch.zeros_like(g), atol=1e-10 * max(arch.widths))


@pytest.mark.parametrize("heads, widths, variances", ARCHITECTURES)
def test_readout_order_parameter_solves_its_stationarity_equation(heads, widths, variances):
    arch = architecture(heads, widths, variances)
    U_L = random_spd(heads[-1], seed=3)
    U_a = float(readout_order_parameter(U_L, arch))
    assert U_a > 0
    H_L, N_L, N_a = heads[-1], arch.widths[-2], arch.widths[-1]
    sL, sa = arch.variances[-2], arch.variances[-1]
    tr = float(torch.trace(U_L))

    def S_of_Ua(u):  # the U_a-dependent part of S_ent, U_a treated as free
        return N_a * (u / sa - math.log(u)) + N_L * (tr / (sL * u) + H_L * math.log(u))

    h = 1e-6 * U_a
    derivative = (S_of_Ua(U_a + h) - S_of_Ua(U_a - h)) / (2 * h)
    assert abs(derivative) < 1e-6 * (N_a + N_L)
    # and it is the minimum in U_a, not a maximum
    assert S_of_Ua(U_a) < S_of_Ua(1.1 * U_a) and S_of_Ua(U_a) < S_of_Ua(0.9 * U_a)


def test_readout_order_parameter_equals_sa_at_gp_last_layer():
    arch = architecture((3,), (17, 5), (1.0, 2.0, 0.7))
    U_L = torch.eye(3, dtype=torch.float64) * 0.7 * 2.0
    assert float(readout_order_parameter(U_L, arch)) == pytest.approx(0.7, rel=1e-13)


@pytest.mark.parametrize("heads, widths, variances", ARCHITECTURES)
def test_entropy_derivatives_match_autograd(heads, widths, variances):
    arch = architecture(heads, widths, variances)
    U_layers = _random_layers(arch, seed=11)
    sizes = [U.shape[0] for U in U_layers]
    f = _symmetrised_entropy(arch, sizes)
    flat = torch.cat([U.reshape(-1) for U in U_layers])
    terms = entropy_derivatives(U_layers, arch, order=2)
    proj = _sym_projector(sizes)
    grad = torch.cat([g.reshape(-1) for g in terms.gradients])
    assert terms.value == pytest.approx(float(f(flat)), rel=1e-12)
    assert torch.allclose(proj @ grad, jacrev(f)(flat), rtol=1e-10, atol=1e-10)
    assert torch.allclose(proj @ terms.hessian @ proj, hessian(f)(flat), rtol=1e-9, atol=1e-9)


def test_energy_derivatives_match_autograd_on_both_contraction_routes():
    for P, n0, n in [(9, 4, 3), (5, 11, 2)]:
        xi, y = random_problem(P=P, n0=n0, heads=(n,), seed=P)
        X = scaled_features(xi)
        U = random_spd(n, seed=5)

        def f(flat):
            G = kernel_from_scaled(X, flat.reshape(n, n), X) + 0.05 * torch.eye(P, dtype=torch.float64)
            return torch.logdet(G) + y @ torch.linalg.solve(G, y)

        expected_hessian = hessian(f)(U.reshape(-1))
        for pre_kernels in (None, pre_kernel_tensor(X)):
            terms = energy(X, y, U, 0.05, order=2, pre_kernels=pre_kernels)
            assert terms.value == pytest.approx(float(f(U.reshape(-1))), rel=1e-12)
            assert torch.allclose(terms.gradient.reshape(-1), jacrev(f)(U.reshape(-1)), atol=1e-10)
            assert torch.allclose(terms.hessian.reshape(n * n, n * n), expected_hessian, atol=1e-10)


def test_action_gradient_matches_finite_differences():
    """Central differences of S = S_ent + S_en along random symmetric directions of every U_l."""
    xi, y = random_problem(P=16, n0=5, heads=(2, 2), seed=2)
    X = scaled_features(xi)
    arch = architecture((2, 2), (12, 15, 9), 1.0)
    U_layers = _random_layers(arch, seed=21)
    T = 0.1

    def action(layers):
        return entropy_derivatives(layers, arch, order=0).value + energy(X, y, layers[0], T).value

    ent = entropy_derivatives(U_layers, arch, order=1)
    en = energy(X, y, U_layers[0], T, order=1)
    gradients = [g.clone() for g in ent.gradients]
    gradients[0] += en.gradient
    g = torch.Generator().manual_seed(7)
    for _ in range(3):
        directions = []
        for U in U_layers:
            D = torch.randn(U.shape, generator=g, dtype=torch.float64)
            directions.append((D + D.T) / 2)
        h = 1e-5
        plus = action([U + h * D for U, D in zip(U_layers, directions)])
        minus = action([U - h * D for U, D in zip(U_layers, directions)])
        numeric = (plus - minus) / (2 * h)
        analytic = sum(float((G * D).sum()) for G, D in zip(gradients, directions))
        assert numeric == pytest.approx(analytic, rel=1e-6, abs=1e-6)
