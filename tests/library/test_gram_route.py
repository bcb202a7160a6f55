"""The Gram route of the energy (``attnpaths.gram``, ``EnergyEvaluator(route="gram")``): the action, its
derivatives, the minimiser and the predictor from ``F^T F``, ``F^T y``, ``y^T y`` and ``P`` only, equal to the
``P x P`` routes up to rounding; the streamed statistics; the errors of bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers import assert_rounding_close, random_problem, random_spd

from attnpaths.action import EnergyEvaluator
from attnpaths.gram import GramStatistics, equivalent_problem
from attnpaths.kernels import scaled_features
from attnpaths.theory import solve, solve_from_statistics

ROUTE_RTOL = 1e-10
"""Relative tolerance between two routes of one solve: both solves stop at the same minimum to rounding (the
solver refines below its gradient tolerance); the routes differ by the order of their sums, rounding of 1e-16
relative per operation that the minimiser amplifies by the conditioning of the minimum and the ``P``-term sums
(``P <= 60``); at most 3e-14 (U), 6e-14 (the predictor) and 4.4e-13 (the GP limit's energy, a sum of terms of
opposite signs) is seen, so 1e-10 leaves a wide margin and still catches any real error (a missing constant or
factor moves a result by a fraction of itself)."""


def _problem(P, n0, heads, seed):
    """Random features with a label signal on path 0 (:func:`helpers.random_problem`)."""
    return random_problem(P=P, n0=n0, heads=heads, seed=seed)


# --------------------------------------------------------------------------------------------------------
# the energy and its derivatives


@pytest.mark.parametrize(
    "P, n0, n", [(5, 3, 2), (7, 3, 2), (30, 3, 2), (11, 3, 4), (13, 3, 4), (40, 3, 4), (3, 4, 1), (25, 4, 1)]
)
def test_gram_route_energy_and_derivatives_equal_the_other_routes(P, n0, n):
    """At a random ``U``: the value, the gradient and the Hessian in the symmetric basis, for ``P`` below, just
    above and well above ``D = n0 n``."""
    xi, y = random_problem(P=P, n0=n0, heads=(n,), seed=P + n)
    X = scaled_features(xi)
    factor = torch.linalg.cholesky(random_spd(n, seed=3))
    T = 0.05
    gram = EnergyEvaluator(X, y, T, route="gram")
    assert gram.route == "gram" and gram.X.shape[0] <= min(P, n0 * n) and gram.num_examples == P
    # the r-example problem's contraction: sample space for one path (m = 1), else feature space; both are covered
    assert gram.contraction == ("sample" if n == 1 else "feature")
    point = gram.point(factor)
    gradient, hessian = gram.derivatives_in_basis(point, order=2)
    for route in ("sample", "feature"):
        other = EnergyEvaluator(X, y, T, route=route)
        reference = other.point(factor)
        expected_gradient, expected_hessian = other.derivatives_in_basis(reference, order=2)
        # rounding: log det and y^T G^{-1} y as P logarithms and a P-term sum against r logarithms, the eigenvalues
        # of F^T F and the constant (P - r) log T + (y^T y - |y~|^2) / T; the two terms have opposite signs, so the
        # value carries the rounding of the larger (seen 3e-14 of the value)
        assert point.value == pytest.approx(reference.value, rel=1e-10)
        # rounding through the solves with G (T = 0.05: condition up to 1e3) on the scale of the largest entry;
        # seen 1.1e-13 (gradient) and 2e-14 (Hessian)
        assert_rounding_close(gradient, expected_gradient, rtol=1e-10, what=f"gradient against the {route} route")
        assert_rounding_close(hessian, expected_hessian, rtol=1e-10, what=f"Hessian against the {route} route")


def test_the_equivalent_rows_reproduce_the_statistics():
    """``R^T R = F^T F`` and ``R^T y~ = F^T y`` (the identities the route rests on), also for rank-deficient
    features (a duplicated feature, a zero feature): there ``r`` is the numerical rank."""
    xi, y = random_problem(P=40, n0=5, heads=(2,), seed=1)
    xi[:, 4, :] = xi[:, 3, :]  # duplicated feature: rank 8 of D = 10
    xi[:, 2, 1] = 0.0  # a zero feature: rank 7
    F = scaled_features(xi).reshape(40, -1)
    gram, b = (F.T @ F).numpy(), (F.T @ y).numpy()
    problem = equivalent_problem(gram, b, float(y @ y), 40, 5, 2, 0.1)
    R = problem.features.reshape(problem.features.shape[0], -1).numpy()
    assert R.shape == (7, 10)
    # rounding on the scale of F^T F's largest entry (an eigendecomposition: ~D eps of the norm); seen 2e-15
    assert_rounding_close(R.T @ R, gram, what="R^T R")
    assert_rounding_close(R.T @ problem.targets.numpy(), b, what="R^T y~")
    # all features zero: one zero row; the energy is then the constant P log T + y^T y / T
    zero = equivalent_problem(np.zeros((10, 10)), np.zeros(10), 3.0, 40, 5, 2, 0.1)
    assert zero.features.shape == (1, 5, 2) and not zero.features.any()
    # exact on any CPU: 39 log(0.1) + 3 / 0.1 is the same two operations on both sides
    assert zero.offset == 39 * math.log(0.1) + 3.0 / 0.1


def test_rank_deficient_features_give_the_same_solve():
    xi, y = random_problem(P=60, n0=6, heads=(2, 2), seed=2)
    xi[:, 5, :] = xi[:, 4, :] - xi[:, 3, :]  # a dependent feature: F^T F is singular
    kw = dict(heads=(2, 2), width=10, temperature=0.05, gradient_tolerance=1e-10)
    gram, feature = solve(xi, y, route="gram", **kw), solve(xi, y, route="feature", **kw)
    assert gram.converged and feature.converged and gram._rows.shape[0] == 20  # rank 20 of D = 24
    assert_rounding_close(gram.U, feature.U, rtol=ROUTE_RTOL, what="U")  # rounding: see ROUTE_RTOL
    assert gram.action == pytest.approx(feature.action, rel=ROUTE_RTOL)  # rounding: see ROUTE_RTOL


# --------------------------------------------------------------------------------------------------------
# the solve and the predictor


@pytest.mark.parametrize(
    "heads, n0, P",
    [
        ((1,), 6, 5),
        ((1,), 6, 7),
        ((1,), 6, 40),
        ((2,), 5, 9),
        ((2,), 5, 11),
        ((2,), 5, 50),
        ((2, 2), 4, 15),
        ((2, 2), 4, 17),
        ((2, 2), 4, 60),
    ],
)
@pytest.mark.parametrize("widths", [8, math.inf])
def test_gram_route_solve_equals_the_other_routes(heads, n0, P, widths):
    """``U``, the action (the energy in the GP limit), the certificate and the predictor's mean and variance
    against the sample- and feature-space routes, for ``P`` just below, just above and well above ``D``."""
    xi, y = _problem(P, n0, heads, seed=P)
    test = _problem(23, n0, heads, seed=100 + P)[0]
    kw = dict(heads=heads, width=widths, temperature=0.05, gradient_tolerance=1e-10)
    gram = solve(xi, y, route="gram", **kw)
    assert gram.route == "gram" and gram.converged
    mean, variance = gram.predict(test, batch_size=5)
    for route in ("sample", "feature"):
        other = solve(xi, y, route=route, **kw)
        assert other.converged
        # rounding: see ROUTE_RTOL
        assert_rounding_close(gram.U, other.U, rtol=ROUTE_RTOL, what=f"U against the {route} route")
        assert gram.energy == pytest.approx(other.energy, rel=ROUTE_RTOL)
        if not math.isinf(widths):
            assert gram.action == pytest.approx(other.action, rel=ROUTE_RTOL)
            # the certificate from the same derivatives: rounding of the Hessian (see the first test); seen 9e-14
            assert gram.hessian_min_eigenvalue == pytest.approx(other.hessian_min_eigenvalue, rel=ROUTE_RTOL)
            assert gram.gradient_norm < 1e-10 and other.gradient_norm < 1e-10
        other_mean, other_variance = other.predict(test)
        # rounding: as U (the predictor is smooth in U and in the factorisation); an entry near zero carries the
        # rounding of its terms, on the scale of the largest entry
        assert_rounding_close(mean, other_mean, rtol=ROUTE_RTOL, what=f"mean against the {route} route")
        assert_rounding_close(variance, other_variance, rtol=ROUTE_RTOL, what=f"variance against the {route} route")


def test_the_gram_solution_keeps_no_p_by_p_matrix_and_its_attributes_still_work():
    xi, y = _problem(120, 3, (2, 2), seed=4)
    kw = dict(heads=(2, 2), width=6, temperature=0.1)
    gram, feature = solve(xi, y, route="gram", **kw), solve(xi, y, route="feature", **kw)
    D = 3 * 4
    assert gram._rows.shape == (D, 3, 4) and gram._chol.shape == (D, D) and gram._alpha.shape == (D,)
    assert gram._X is None  # no scaled copy of the features
    # the P-space attributes, computed on demand: rounding as in the solve (see ROUTE_RTOL)
    assert_rounding_close(gram.dual_weights, feature.dual_weights, rtol=ROUTE_RTOL, what="dual weights")
    assert_rounding_close(gram.kernel_cholesky, feature.kernel_cholesky, rtol=ROUTE_RTOL, what="kernel Cholesky")
    assert_rounding_close(gram.training_features, feature.training_features, what="training features")
    assert_rounding_close(gram.mean_weights, feature.mean_weights, rtol=ROUTE_RTOL, what="mean weights")
    # the mean in feature space: <f(x)> = sum_ia X_ia(x) v_ia; rounding of two sums of D terms
    test = _problem(9, 3, (2, 2), seed=5)[0]
    direct = (scaled_features(test).reshape(9, -1) @ gram.mean_weights.reshape(-1)).numpy()
    assert_rounding_close(gram.predict(test)[0], direct, what="mean from the mean weights")
    assert torch.equal(gram.training_labels, feature.training_labels)  # exact on any CPU: the same labels


def test_the_default_route_is_gram_only_with_many_more_examples_than_features():
    assert EnergyEvaluator.cheaper_route(8000, 231, 4) == "gram"
    assert EnergyEvaluator.cheaper_route(924, 231, 4) == "feature"  # P = D: nothing to gain
    assert EnergyEvaluator.cheaper_route(500, 231, 4) == "feature"
    assert EnergyEvaluator.cheaper_route(12, 30, 4) == "sample"
    assert EnergyEvaluator.cheaper_route(8000, 231, 4, direct_only=True) == "feature"
    costs = EnergyEvaluator.route_costs(10**5, 231, 4)
    # at P = 10^5 the Gram route's cost is the one-off F^T F, spread over ten Hessians, and the D-sized steps
    assert costs["gram"] < 1e-3 * costs["feature"] and math.isinf(costs["sample"])
    xi, y = _problem(200, 3, (2,), seed=6)
    assert solve(xi, y, heads=(2,), width=5, temperature=0.1).route == "gram"
    assert solve(xi, y, heads=(2,), width=math.inf, temperature=0.1).route == "gram"
    assert solve(xi[:5], y[:5], heads=(2,), width=5, temperature=0.1).route in ("sample", "feature")


# --------------------------------------------------------------------------------------------------------
# streaming


def test_streamed_statistics_equal_the_unstreamed_ones_and_give_the_same_solve():
    xi, y = _problem(103, 4, (2, 2), seed=7)
    one = GramStatistics(block_size=16).update(xi, y)
    cuts = [0, 1, 17, 40, 41, 88, 103]  # chunks that straddle the blocks of 16, one of a single example
    streamed = GramStatistics(block_size=16)
    for a, b in zip(cuts, cuts[1:]):
        streamed.update(xi[a:b], y[a:b])
    assert streamed.num_examples == one.num_examples == 103 and streamed.dimension == 16
    # determinism: the examples enter the same blocks of 16 (copied into one buffer) in the same order whatever
    # the chunks, so the sums are the same BLAS calls on the same numbers
    assert np.array_equal(streamed.gram, one.gram)
    assert np.array_equal(streamed.features_targets, one.features_targets)
    assert streamed.targets_norm2 == one.targets_norm2
    F = xi.reshape(103, -1)
    # against one product over all examples: another summation order, rounding on the scale of the largest entry
    assert_rounding_close(one.gram, (F.T @ F).numpy(), what="Gram matrix")
    assert_rounding_close(one.features_targets, (F.T @ y).numpy(), what="F^T y")
    assert one.targets_norm2 == pytest.approx(float(y @ y), rel=1e-14)  # rounding: a sum of 103 squares
    # merged halves: the same sums grouped differently, equal up to rounding
    merged = GramStatistics(16).update(xi[:50], y[:50]).merge(GramStatistics(16).update(xi[50:], y[50:]))
    assert merged.num_examples == 103
    assert_rounding_close(merged.gram, one.gram, what="merged Gram matrix")
    assert_rounding_close(merged.features_targets, one.features_targets, what="merged F^T y")

    kw = dict(heads=(2, 2), width=8, temperature=0.05)
    stats = GramStatistics()  # the block size solve uses
    for a, b in zip(cuts, cuts[1:]):
        stats.update(xi[a:b], y[a:b])
    from_statistics, from_features = solve_from_statistics(stats, **kw), solve(xi, y, route="gram", **kw)
    # determinism: the same statistics (same blocks) and then the same computation
    assert np.array_equal(from_statistics.U, from_features.U) and from_statistics.action == from_features.action
    test = _problem(11, 4, (2, 2), seed=8)[0]
    assert all(np.array_equal(a, b) for a, b in zip(from_statistics.predict(test), from_features.predict(test)))
    gp = solve_from_statistics(stats, heads=(2, 2), width=math.inf, temperature=0.05)
    assert gp.energy == pytest.approx(
        solve(xi, y, heads=(2, 2), width=math.inf, temperature=0.05, route="feature").energy, rel=ROUTE_RTOL
    )  # rounding: see ROUTE_RTOL
    for name in ("training_features", "training_labels", "kernel_cholesky", "dual_weights"):
        with pytest.raises(ValueError, match=rf"^{name} is not available: this solution was found from GramStatistics"):
            getattr(from_statistics, name)
    assert not from_statistics.has_training_set and from_features.has_training_set


# --------------------------------------------------------------------------------------------------------
# bad input


def test_bad_input_is_refused_naming_the_argument():
    xi, y = _problem(10, 3, (2,), seed=9)
    stats = GramStatistics()
    with pytest.raises(ValueError, match=r"^features must contain only finite values"):
        stats.update(torch.where(torch.arange(10)[:, None, None] == 3, math.nan, xi), y)
    with pytest.raises(ValueError, match=r"^features must contain only finite values"):
        stats.update(xi * torch.tensor([1.0, math.inf]), y)
    with pytest.raises(ValueError, match=r"^targets must contain only finite values"):
        stats.update(xi, torch.where(torch.arange(10) == 2, math.inf, y))
    with pytest.raises(ValueError, match=r"^targets must have shape \[B\] = \[10\]"):
        stats.update(xi, y[:9])
    with pytest.raises(ValueError, match=r"^features must have shape \[B, N0, n_paths\]"):
        stats.update(xi[0], y[:1])
    assert stats.num_examples == 0  # a refused chunk adds nothing
    empty = GramStatistics().update(xi[:0], y[:0])  # a chunk of no examples adds nothing, and fixes the shape
    assert empty.num_examples == 0 and empty.dimension == 6
    with pytest.raises(ValueError, match=r"^statistics must hold P >= 1 examples, got 0"):
        solve_from_statistics(empty, heads=(2,), width=5, temperature=0.1)
    stats.update(xi, y)
    reference = stats.gram
    stats.update(xi[:0], y[:0])
    assert np.array_equal(stats.gram, reference) and stats.num_examples == 10
    with pytest.raises(
        ValueError,
        match=r"^features must have shape \[B, N0, n_paths\] = \[B, 3, 2\] like the "
        r"earlier chunks, got \(4, 3, 4\)",
    ):
        stats.update(_problem(4, 3, (2, 2), seed=0)[0], y[:4])
    with pytest.raises(ValueError, match=r"^other must hold features .* same N0 and n_paths"):
        stats.merge(GramStatistics().update(*_problem(4, 5, (2,), seed=0)))
    with pytest.raises(ValueError, match=r"^other must be a GramStatistics"):
        stats.merge(xi)
    with pytest.raises(ValueError, match=r"^block_size must be an integer >= 1"):
        GramStatistics(block_size=0)
    with pytest.raises(ValueError, match=r"^statistics must hold P >= 1 examples, got 0"):
        solve_from_statistics(GramStatistics(), heads=(2,), width=5, temperature=0.1)
    with pytest.raises(ValueError, match=r"^statistics must be a GramStatistics"):
        solve_from_statistics(xi, heads=(2,), width=5, temperature=0.1)
    for temperature in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match=r"^temperature must be a finite real number > 0"):
            solve_from_statistics(stats, heads=(2,), width=5, temperature=temperature)
        with pytest.raises(ValueError, match=r"^temperature must be a finite real number > 0"):
            solve(xi, y, heads=(2,), width=5, temperature=temperature, route="gram")
    with pytest.raises(ValueError, match=r"^heads=\(2, 2\) gives 4 paths but features hold 2 paths"):
        solve_from_statistics(stats, heads=(2, 2), width=5, temperature=0.1)
    with pytest.raises(ValueError, match=r"^targets must have shape \[P\] = \[10\]"):
        solve(xi, y[:8], heads=(2,), width=5, temperature=0.1, route="gram")
    with pytest.raises(ValueError, match=r"^features must have shape \[P, N0, n_paths\] with P >= 1"):
        solve(xi[:0], y[:0], heads=(2,), width=5, temperature=0.1, route="gram")
    with pytest.raises(ValueError, match=r"^route must be 'sample', 'feature', 'gram' or None, got 'pairs'"):
        solve(xi, y, heads=(2,), width=5, temperature=0.1, route="pairs")


def test_features_that_overflow_name_the_temperature_on_the_gram_route():
    xi, y = _problem(30, 3, (2,), seed=10)
    for widths, where in ((5, "at the starting point U"), (math.inf, "in the GP limit at U")):
        with pytest.raises(
            ValueError,
            match=rf"^the action is not finite {where} = the GP values .* "
            r"temperature=1e-10; try a larger temperature",
        ):
            solve(xi * 1e200, y, heads=(2,), width=widths, temperature=1e-10, route="gram")  # F^T F overflows


# --------------------------------------------------------------------------------------------------------
# an update interrupted part-way


@pytest.mark.parametrize("failing_block", [1, 2, 5])
def test_an_update_interrupted_between_blocks_changes_nothing(monkeypatch, failing_block):
    """A chunk of 70 examples after 10 (blocks of 16: it completes five blocks) is interrupted when its
    ``failing_block``-th block is added (the first mixes the 10 earlier examples with the chunk's, the second comes
    after the buffer has wrapped over those 10, the fifth is the chunk's last): the statistics are those before the
    chunk, and the same chunk given again, then the rest, gives the bits of a stream never interrupted."""
    xi, y = _problem(100, 3, (2, 2), seed=11)
    cuts = [0, 10, 80, 100]
    uninterrupted = GramStatistics(block_size=16)
    for a, b in zip(cuts, cuts[1:]):
        uninterrupted.update(xi[a:b], y[a:b])

    stats = GramStatistics(block_size=16).update(xi[:10], y[:10])
    before = (stats.gram, stats.features_targets, stats.targets_norm2)
    add_block, calls = GramStatistics._add_block, []

    def interrupted(self, *args, **kwargs):
        calls.append(None)
        if len(calls) == failing_block:
            raise KeyboardInterrupt
        return add_block(self, *args, **kwargs)

    monkeypatch.setattr(GramStatistics, "_add_block", interrupted)
    with pytest.raises(KeyboardInterrupt):
        stats.update(xi[10:80], y[10:80])
    monkeypatch.setattr(GramStatistics, "_add_block", add_block)
    assert stats.num_examples == 10
    assert np.array_equal(stats.gram, before[0]) and np.array_equal(stats.features_targets, before[1])
    assert stats.targets_norm2 == before[2]
    stats.update(xi[10:80], y[10:80]).update(xi[80:], y[80:])
    assert stats.num_examples == 100
    # determinism: the same blocks of the same examples, added in the same order
    assert np.array_equal(stats.gram, uninterrupted.gram)
    assert np.array_equal(stats.features_targets, uninterrupted.features_targets)
    assert stats.targets_norm2 == uninterrupted.targets_norm2
