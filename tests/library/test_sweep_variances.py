"""The sweep keeps the predictor's variance of its solutions, and kernel_pcs reuses it instead of a second kernel."""

import numpy as np
import pytest
import torch

from attnpaths.experiments import kernel_pcs
from attnpaths.experiments.path_data import path_data
from attnpaths.experiments.sweep import theory_sweep
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.networks import four_path_network
from attnpaths.theory import solve


@pytest.fixture(scope="module")
def small_data():
    generator = torch.Generator().manual_seed(3)
    train, test = HMCTask().sample(20, generator), HMCTask().sample(40, generator)
    return path_data(four_path_network(train), train, test)


def test_a_sweep_keeps_the_variance_of_each_solution(small_data):
    curve = theory_sweep(small_data, [5, 50], [0.1, 0.2], progress=False)
    for k, width in enumerate((5, 50)):
        for j, T in enumerate((0.1, 0.2)):
            sol = solve(small_data.features, small_data.y, heads=small_data.network.heads, width=width, temperature=T)
            mean, variance = sol.predict(small_data.features_test)
            assert np.array_equal(curve.means["test"][k, j], mean)
            assert np.array_equal(curve.variances["test"][k, j], variance)
            assert np.array_equal(curve.variance_at(width, T), variance)
    with pytest.raises(ValueError, match="split must be one of"):
        curve.variance_at(5, 0.1, split="train")


def test_predictor_variance_reuses_a_sweep_and_forms_no_kernel(small_data, monkeypatch):
    curve = theory_sweep(small_data, [5, 50], [0.1], progress=False)
    d = small_data
    U = curve.U[curve.index(50), 0]
    fresh = kernel_pcs.predictor_variance(d.features, d.y, d.features_test, U, 0.1)

    def no_kernel(*args, **kwargs):
        raise AssertionError("a kernel was formed again")

    monkeypatch.setattr(kernel_pcs, "renormalized_kernel", no_kernel)
    reused = kernel_pcs.predictor_variance(d.features, d.y, d.features_test, U, 0.1, sweep=curve)
    assert np.array_equal(reused, curve.variances["test"][1, 0])
    np.testing.assert_allclose(reused, fresh, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="U must be one of the sweep's minimisers"):
        kernel_pcs.predictor_variance(d.features, d.y, d.features_test, U + 1e-3, 0.1, sweep=curve)


@pytest.mark.parametrize("route", ["sample", "feature", "gram"])
def test_the_mean_alone_is_the_predictors_mean_without_a_kernel(small_data, route, monkeypatch):
    from attnpaths.theory import _solution

    d = small_data
    for width in (5, float("inf")):
        sol = solve(d.features, d.y, heads=d.network.heads, width=width, temperature=0.1, route=route)
        mean, _ = sol.predict(d.features_test)
        with monkeypatch.context() as patched:

            def no_kernel(*args, **kwargs):
                raise AssertionError("a kernel was formed")

            patched.setattr(_solution, "kernel_from_scaled", no_kernel)
            alone = sol.predict_mean(d.features_test)
        # the same sums in another order (features times weights, not kernel times dual weights): rounding only
        np.testing.assert_allclose(alone, mean, rtol=1e-10, atol=1e-12 * np.abs(mean).max())
    with pytest.raises(ValueError, match="features_test must have shape"):
        sol.predict_mean(d.features_test[:, :, :2])


def test_a_sweep_without_variances_has_the_same_means_and_says_it_holds_no_variances(small_data):
    full = theory_sweep(small_data, [5, 50], [0.1, 0.2], progress=False)
    lean = theory_sweep(small_data, [5, 50], [0.1, 0.2], variances=False, gp_limit=True, progress=False)
    assert lean.variances == {} and lean.gp.variances == {}
    np.testing.assert_allclose(lean.means["test"], full.means["test"], rtol=1e-10, atol=1e-12)
    assert np.array_equal(lean.accuracy["test"], full.accuracy["test"])
    assert np.array_equal(lean.U, full.U)
    with pytest.raises(ValueError, match="holds no variances"):
        lean.variance_at(5, 0.1)


@pytest.mark.parametrize("route", ["pre-kernels", "features"])
def test_the_moments_over_many_draws_are_the_predictors_at_each_draw(small_data, route, monkeypatch):
    """``predictor_moments`` forms the pre-kernels once and contracts them with each ``U``: the same sums in
    another order, so equal to the one-``U`` functions within rounding (relative 1e-10: a few hundred products
    of numbers of order one, then a solve with ``K + T I`` whose condition number at ``T = 0.1`` is below 1e3)."""
    d = small_data
    if route == "features":  # the route of large pre-kernels: each draw's kernels from the features
        monkeypatch.setattr(kernel_pcs, "PRE_KERNEL_NUMBERS", 0)
    generator = torch.Generator().manual_seed(5)
    A = torch.randn(3, 4, 4, generator=generator, dtype=torch.float64)
    draws = A @ A.transpose(1, 2) / 4 + 0.1 * torch.eye(4, dtype=torch.float64)
    means, variances = kernel_pcs.predictor_moments(d.features, d.y, d.features_test, draws, 0.1)
    assert means.shape == variances.shape == (3, len(d.y_test))
    for s, U in enumerate(draws):
        mean = kernel_pcs.mean_predictor(d.features, d.y, d.features_test, U, 0.1)
        variance = kernel_pcs.predictor_variance(d.features, d.y, d.features_test, U, 0.1)
        np.testing.assert_allclose(means[s], mean, rtol=1e-10, atol=1e-12 * np.abs(mean).max())
        np.testing.assert_allclose(variances[s], variance, rtol=1e-10, atol=1e-12 * variance.max())
    assert not np.allclose(means[0], means[1])  # each draw has its own predictor
    with pytest.raises(ValueError, match=r"U must have shape \[S >= 1, 4, 4\]"):
        kernel_pcs.predictor_moments(d.features, d.y, d.features_test, draws[0], 0.1)
    with pytest.raises(ValueError, match=r"U must have shape \[S >= 1, 4, 4\], got \(0, 4, 4\)"):
        kernel_pcs.predictor_moments(d.features, d.y, d.features_test, draws[:0], 0.1)
    with pytest.raises(ValueError, match=r"features_test must have shape \[B, \d+, 4\] as features"):
        kernel_pcs.predictor_moments(d.features, d.y, d.features_test[..., :2], draws, 0.1)
    with pytest.raises(ValueError, match=r"y must have shape \[20\]"):
        kernel_pcs.predictor_moments(d.features, d.y[:5], d.features_test, draws, 0.1)
