"""The action (eq-action, eq-entropy, eq-readout): closed forms, GP stationarity, analytic derivatives against
autograd and finite differences."""

import math

import numpy as np
import pytest
import torch
from helpers import assert_rounding_close, random_problem, random_spd
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
def test_entropy_from_cholesky_factors_equals_entropy_from_the_matrices(heads, widths, variances):
    # a batch of points: the factors' route (log det from the diagonal, the layers' coupling by triangular solves)
    arch = architecture(heads, widths, variances)
    batch = [_random_layers(arch, seed) for seed in (3, 7)]
    U_layers = [torch.stack([point[l] for point in batch]) for l in range(arch.num_layers)]
    factors = [torch.linalg.cholesky(U) for U in U_layers]
    U_a = torch.tensor([0.7, 1.9], dtype=torch.float64)
    for readout in (None, U_a):
        expected = entropy(U_layers, arch, readout)
        assert torch.allclose(entropy(U_layers, arch, readout, factors=factors), expected, rtol=1e-12, atol=1e-12)


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


# --------------------------------------------------------------------------------------------------------
# the solver's representation (EnergyEvaluator, entropy_terms, SymmetricBasis)


def test_symmetric_basis_is_orthonormal_and_projects_hessians():
    from attnpaths.action import SymmetricBasis, symmetrized

    def dense(basis):  # the basis matrices E_k as columns
        out = torch.zeros(basis.n**2, basis.size, dtype=torch.float64)
        for k, (a, b) in enumerate(zip(basis.rows.tolist(), basis.cols.tolist())):
            E = torch.zeros(basis.n, basis.n, dtype=torch.float64)
            E[a, b] = E[b, a] = 1.0 if a == b else 2.0**-0.5
            out[:, k] = E.reshape(-1)
        return out

    basis, other = SymmetricBasis(3), SymmetricBasis(2)
    dense_other = dense(other)
    dense = dense(basis)
    # the gathers and weights of the basis against products with its dense matrices: equal up to rounding (the
    # squares of 2**-0.5 are not exactly 1/2), on the scale of the largest entry where an entry is zero
    assert_rounding_close(dense.T @ dense, torch.eye(basis.size, dtype=torch.float64), what="E^T E")
    g = torch.Generator().manual_seed(0)
    H = torch.randn(3, 3, 2, 2, generator=g, dtype=torch.float64)
    projected = basis.project(H, other)
    assert_rounding_close(projected, dense.T @ H.reshape(9, 4) @ dense_other, what="projected Hessian")
    assert_rounding_close(basis.entries(projected, other), symmetrized(H), what="entries of the projection")
    S = random_spd(3, seed=1)
    assert_rounding_close(basis.coordinates(S), dense.T @ S.reshape(-1), what="coordinates")
    assert_rounding_close(basis.matrix(basis.coordinates(S)), S, what="matrix of the coordinates")


@pytest.mark.parametrize("heads, widths, variances", ARCHITECTURES)
def test_entropy_terms_from_factors_equal_entropy_derivatives(heads, widths, variances):
    from attnpaths.action import entropy_terms

    arch = architecture(heads, widths, variances)
    U_layers = _random_layers(arch, seed=11)
    sizes = [U.shape[0] for U in U_layers]
    factors = [torch.linalg.cholesky(U) for U in U_layers]
    reference = entropy_derivatives(U_layers, arch, order=2)
    value0, _, _ = entropy_terms(factors, arch, order=0)
    value, gradients, blocks = entropy_terms(factors, arch, order=2)
    assert value0 == pytest.approx(reference.value, rel=1e-13) and value == pytest.approx(reference.value, rel=1e-13)
    for g, expected in zip(gradients, reference.gradients):
        assert torch.allclose(torch.from_numpy(g), expected, rtol=1e-12, atol=1e-12)
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + n * n)
    assembled = torch.zeros_like(reference.hessian)
    for (i, j), block in blocks:
        assert i <= j
        rows, cols = slice(offsets[i], offsets[i + 1]), slice(offsets[j], offsets[j + 1])
        block = torch.from_numpy(block)
        assembled[rows, cols] += block.reshape(sizes[i] ** 2, sizes[j] ** 2)
        if i != j:
            assembled[cols, rows] += block.reshape(sizes[i] ** 2, sizes[j] ** 2).T
    proj = _sym_projector(sizes)
    assert torch.allclose(proj @ assembled @ proj, proj @ reference.hessian @ proj, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("P, n0, n", [(9, 4, 3), (5, 11, 2), (12, 30, 4), (40, 7, 16), (320, 3, 2)])
def test_energy_evaluator_matches_autograd_on_both_routes(P, n0, n):
    from attnpaths.action import EnergyEvaluator, symmetrized

    xi, y = random_problem(P=P, n0=n0, heads=(n,), seed=P)
    X = scaled_features(xi)
    U = random_spd(n, seed=5)
    T = 0.05

    def f(flat):
        G = kernel_from_scaled(X, flat.reshape(n, n), X) + T * torch.eye(P, dtype=torch.float64)
        return torch.logdet(G) + y @ torch.linalg.solve(G, y)

    flat = U.reshape(-1)
    expected_gradient = jacrev(f)(flat).reshape(n, n)
    expected_hessian = symmetrized(hessian(f)(flat).reshape(n, n, n, n))
    scale = float(expected_hessian.abs().max())
    for route in ("sample", "feature", "gram"):
        evaluator = EnergyEvaluator(X, y, T, route=route)
        point = evaluator.point(torch.linalg.cholesky(U))
        assert point.value == pytest.approx(float(f(flat)), rel=1e-12)
        gradient, none = evaluator.derivatives(point, order=1)
        assert none is None and torch.allclose(gradient, expected_gradient, rtol=1e-10, atol=1e-10)
        gradient, second = evaluator.derivatives(point, order=2)
        assert torch.allclose(gradient, expected_gradient, rtol=1e-10, atol=1e-10)
        # analytic against autograd, through solves with the P x P matrix G (T = 0.05): rounding on the scale of the
        # largest entry, amplified by G's condition and P (1.6e-13 of the scale seen at P = 320), hence rtol 1e-10
        assert_rounding_close(
            symmetrized(second), expected_hessian, scale=scale, rtol=1e-10, what=f"{route} route Hessian"
        )
    # the route with fewer operations: sample space for few examples and many features, the Gram matrix of the
    # features for many more examples than features (P = 320 > D = n0 n = 6), else features
    expected = "sample" if (P, n0) in [(5, 11), (12, 30)] else "gram" if (P, n0) == (320, 3) else "feature"
    assert EnergyEvaluator(X, y, T).route == expected
    with pytest.raises(ValueError, match="route"):
        EnergyEvaluator(X, y, T, route="pairs")


def test_lower_gram_fills_the_triangle_that_cholesky_reads():
    """The feature route's kernel and ``M`` come from BLAS syrk, which computes only the lower triangle of
    ``A A^T`` (for C- and Fortran-ordered ``A``); Cholesky must read nothing else: NaN above the diagonal leaves
    the factor unchanged. ``_filled`` restores the whole symmetric matrix."""
    from attnpaths._energy_routes import _filled, lower_gram

    A = np.random.default_rng(0).standard_normal((23, 7))
    for operand in (A, np.asfortranarray(A), A[:, ::2]):
        G = lower_gram(operand)
        assert G.flags.c_contiguous and G.shape == (23, 23)
        assert np.allclose(np.tril(G), np.tril(operand @ operand.T), rtol=1e-14, atol=1e-14)
        assert np.allclose(_filled(G), operand @ operand.T, rtol=1e-14, atol=1e-14)
    full = torch.from_numpy(A @ A.T + np.eye(23))
    spoiled = full.clone()
    rows, cols = torch.triu_indices(23, 23, 1)
    spoiled[rows, cols] = math.nan
    factor, info = torch.linalg.cholesky_ex(spoiled)
    # determinism: cholesky and cholesky_ex are one LAPACK factorisation of the same lower triangle (a NaN read
    # from above the diagonal would show)
    assert int(info) == 0 and torch.equal(factor, torch.linalg.cholesky(full))
    stack = np.stack([np.tril(G), np.tril(2 * G)])
    # exact on any CPU: _filled copies entries and adds zeros, and doubling is exact in floating point
    assert np.array_equal(_filled(stack)[1], 2 * _filled(G))


def test_energy_evaluator_has_no_point_where_the_energy_is_not_finite():
    from attnpaths.action import EnergyEvaluator

    xi, y = random_problem(P=6, n0=3, heads=(2,), seed=0)
    for route in ("sample", "feature"):
        evaluator = EnergyEvaluator(scaled_features(xi), y, 1e-320, route=route)
        assert evaluator.point(torch.eye(2, dtype=torch.float64)) is not None
        # K = 0: y^T (1e-320 I)^{-1} y overflows
        assert evaluator.point(torch.zeros(2, 2, dtype=torch.float64)) is None
