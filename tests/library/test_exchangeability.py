"""Tests of attnpaths.exchangeability: estimators, latent models, E1-E4 building blocks."""

import numpy as np
import pytest
import torch
from helpers import Z_MAX
from scipy.integrate import quad
from scipy.stats import multivariate_normal

from attnpaths.attention_operators import (
    bilinear_attention,
    bilinear_attention_weights,
    cme_attention,
    gaussian_gram,
    gaussian_smoothing_attention,
)
from attnpaths.exchangeability.convergence import _cme_estimates, attention_error_vs_length, smoothing_bias_floor
from attnpaths.exchangeability.erm import (
    approximation_terms,
    attention_risk,
    attention_risk_and_gradient,
    attention_risk_gradient_hessian,
    erm_experiment,
    fit_attention,
    fit_attention_parameter,
    sample_task,
)
from attnpaths.exchangeability.estimators import predicted_attention_mse, prefix_softmax_averages, tilted_key_mean
from attnpaths.exchangeability.latent_models import (
    concept_posterior,
    gaussian_posterior,
    random_concept_means,
    sample_concept_tokens,
    sample_gaussian_tokens,
    sample_linear_key_value,
)
from attnpaths.exchangeability.representation import concept_posterior_experiment, gaussian_risk_theory
from attnpaths.exchangeability.transfer import _diag_cov, predicted_transfer_ratio, transfer_experiment
from attnpaths.statistics import loglog_slope, loglog_slope_with_se

SIGMA = np.array([[1.0, 0.3], [0.3, 0.5]])
QUERY = np.array([0.5, -0.3])


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_bilinear_attention_matches_explicit_softmax():
    rng = _rng(1)
    q, k, v, W = (
        rng.normal(size=(3, 4, 2)),
        rng.normal(size=(3, 7, 2)),
        rng.normal(size=(3, 7)),
        rng.normal(size=(2, 2)),
    )
    scores = np.einsum("btd,de,ble->btl", q, W, k)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    got = bilinear_attention(q, k, v, W).numpy()
    np.testing.assert_allclose(got, np.einsum("btl,bl->bt", weights, v), rtol=1e-12, atol=1e-14)
    w = bilinear_attention_weights(q, k, W).numpy()
    np.testing.assert_allclose(w.sum(axis=-2), 1.0, atol=1e-14)
    with pytest.raises(ValueError, match="W must have shape"):
        bilinear_attention(q, k, v, np.eye(3))


def test_prefix_softmax_averages_equal_attention_on_every_prefix():
    rng = _rng(12)
    q, k, v = rng.normal(size=2), rng.normal(size=(5, 40, 2)), rng.normal(size=(5, 40))
    Ws = np.stack([np.eye(2), 30.0 * rng.normal(size=(2, 2))])  # the second one has scores of order 100
    lengths = [1, 3, 8, 40]
    got = prefix_softmax_averages(k @ np.einsum("iab,a->bi", Ws, q), v, lengths)
    for j, L in enumerate(lengths):
        for i, W in enumerate(Ws):
            expected = bilinear_attention(q[None, None, :], k[:, :L], v[:, :L], W)[:, 0].numpy()
            np.testing.assert_allclose(got[:, j, i], expected, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="lengths"):
        prefix_softmax_averages(k @ np.eye(2), v, [8, 3])


def test_gaussian_smoothing_is_dot_product_attention_with_augmented_keys():
    rng = _rng(2)
    h = 0.4
    q, k, v = rng.normal(size=(5, 1)), rng.normal(size=(9, 1)), rng.normal(size=9)
    aug_q = np.concatenate([q, np.ones((5, 1))], axis=1)
    aug_k = np.concatenate([k, -0.5 * k**2], axis=1)
    expected = bilinear_attention(aug_q, aug_k, v, np.eye(2) / h**2).numpy()
    np.testing.assert_allclose(gaussian_smoothing_attention(q, k, v, h).numpy(), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="bandwidth"):
        gaussian_smoothing_attention(q, k, v, 0.0)


def test_batched_cme_estimates_equal_cme_attention():
    rng = _rng(13)
    keys, values, queries = rng.normal(size=(4, 30)), rng.normal(size=(4, 30)), np.linspace(-1.0, 1.0, 5)
    got = _cme_estimates(keys, values, queries, 0.4, 0.02)
    expected = cme_attention(np.broadcast_to(queries[None, :, None], (4, 5, 1)), keys[..., None], values, 0.4, 0.02)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-9, atol=1e-12)


def test_cme_attention_is_kernel_ridge_regression():
    rng = _rng(3)
    q, k, v = rng.normal(size=(4, 1)), rng.normal(size=(12, 1)), rng.normal(size=12)
    h, lam = 0.5, 0.01
    G = gaussian_gram(k, k, h).numpy()
    g = gaussian_gram(k, q, h).numpy()
    expected = v @ np.linalg.solve(G + 12 * lam * np.eye(12), g)
    np.testing.assert_allclose(cme_attention(q, k, v, h, lam).numpy(), expected, rtol=1e-9)
    # with a vanishing ridge it interpolates the values at (well-separated) keys
    spread = np.linspace(-3.0, 3.0, 12)[:, None]
    np.testing.assert_allclose(cme_attention(spread, spread, v, 0.3, 1e-12).numpy(), v, atol=1e-9)


def test_gaussian_posterior_matches_joint_gaussian_conditioning():
    tau, sigma, L, d = 1.3, 0.7, 5, 2
    _, x = sample_gaussian_tokens(_rng(4), 3, L, d, tau, sigma)
    mean, var = gaussian_posterior(x, tau, sigma)
    # coordinatewise: z and (x_1..x_L) jointly Gaussian
    cov_zx = tau**2 * np.ones(L)
    cov_xx = tau**2 * np.ones((L, L)) + sigma**2 * np.eye(L)
    expected_mean = np.einsum("l,nld->nd", np.linalg.solve(cov_xx, cov_zx), x)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-12)
    np.testing.assert_allclose(var, tau**2 - cov_zx @ np.linalg.solve(cov_xx, cov_zx), rtol=1e-12)


def test_concept_posterior_attention_equals_bayes_rule():
    rng = _rng(5)
    means, sigma = random_concept_means(rng, 4, 3), 1.2
    _, x = sample_concept_tokens(rng, 6, 7, means, sigma)
    log_lik = np.array([[multivariate_normal.logpdf(xs, mean=m, cov=sigma**2).sum() for m in means] for xs in x])
    expected = np.exp(log_lik - log_lik.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    post = concept_posterior(x, means, sigma)
    np.testing.assert_allclose(post, expected, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(concept_posterior(x[:, ::-1], means, sigma), post, atol=1e-13)


def test_tilted_key_mean_matches_importance_weighted_keys():
    rng = _rng(6)
    W = np.array([[0.8, -0.2], [0.1, 1.1]])
    keys = rng.multivariate_normal(np.zeros(2), SIGMA, size=400_000)
    w = np.exp(keys @ W.T @ QUERY)
    np.testing.assert_allclose((w @ keys) / w.sum(), tilted_key_mean(W, QUERY, SIGMA), atol=0.01)


def test_predicted_mse_exact_for_uniform_attention():
    # W = 0 is the uniform average, for which (ex-mse) is exact: |q|^2 + (tr Sigma + sigma_v^2) / L
    rng, L, s, sigma_v = _rng(7), 8, 40_000, 0.5
    z, keys, values = sample_linear_key_value(rng, s, L, SIGMA, sigma_v)
    est = bilinear_attention(QUERY[None, None, :], keys, values, np.zeros((2, 2)))[:, 0].numpy()
    mse = np.mean((est - z @ QUERY) ** 2)
    predicted = predicted_attention_mse(np.zeros((2, 2)), QUERY, SIGMA, sigma_v, L)
    assert predicted == pytest.approx(QUERY @ QUERY + (np.trace(SIGMA) + sigma_v**2) / L)
    assert mse == pytest.approx(predicted, rel=0.03)


def test_desired_parameter_has_no_bias_and_wrong_parameters_do():
    inv = np.linalg.inv(SIGMA)
    big = 1e12
    assert predicted_attention_mse(inv, QUERY, SIGMA, 0.5, big) == pytest.approx(0.0, abs=1e-10)
    assert predicted_attention_mse(2 * inv, QUERY, SIGMA, 0.5, big) == pytest.approx(QUERY @ QUERY)
    assert np.sqrt(predicted_attention_mse(np.eye(2), QUERY, SIGMA, 0.5, big)) == pytest.approx(
        np.linalg.norm(SIGMA @ QUERY - QUERY)
    )


def test_attention_error_vs_length_is_deterministic_and_beats_wrong_parameter():
    kwargs = dict(lengths=[16, 256], num_sequences=300, key_cov=SIGMA, query=QUERY, value_noise=0.5)
    W = np.stack([np.linalg.inv(SIGMA), np.eye(2)])
    a = attention_error_vs_length(_rng(8), W, **kwargs)
    b = attention_error_vs_length(_rng(8), W, **kwargs)
    np.testing.assert_array_equal(a.rmse, b.rmse)  # determinism: the same computation from the same seed, twice
    assert a.rmse[0, 1] < a.rmse[0, 0]  # consistent estimator: error falls with L
    assert a.rmse[0, 1] < a.rmse[1, 1]  # the wrong geometry keeps a bias floor
    with pytest.raises(ValueError, match="rng"):
        attention_error_vs_length(0, W, **kwargs)
    with pytest.raises(ValueError, match="lengths"):
        attention_error_vs_length(_rng(), W, **{**kwargs, "lengths": [256, 16]})


@pytest.mark.parametrize("mode", ["supervised", "masked"])
def test_risk_gradient_matches_autograd(mode):
    data = sample_task(_rng(9), mode, 50, 6, SIGMA, 0.5)
    W = torch.tensor([[0.7, 0.2], [-0.1, 1.3]], dtype=torch.float64, requires_grad=True)
    weights = torch.softmax(torch.einsum("nd,de,nle->nl", data.queries, W, data.keys), dim=-1)
    risk = ((weights * data.values).sum(-1) - data.targets).pow(2).mean()
    risk.backward()
    got_risk, got_grad = attention_risk_and_gradient(W.detach(), data)
    assert got_risk == pytest.approx(risk.item(), rel=1e-12)
    np.testing.assert_allclose(got_grad, W.grad.numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("mode", ["supervised", "masked"])
def test_risk_hessian_matches_autograd(mode):
    data = sample_task(_rng(14), mode, 40, 7, SIGMA, 0.5)

    def risk(flat):
        weights = torch.softmax(torch.einsum("nd,de,nle->nl", data.queries, flat.reshape(2, 2), data.keys), dim=-1)
        return ((weights * data.values).sum(-1) - data.targets).pow(2).mean()

    W = torch.tensor([0.7, 0.2, -0.1, 1.3], dtype=torch.float64)
    got_risk, got_grad, got_hess = attention_risk_gradient_hessian(W.reshape(2, 2), data)
    assert got_risk == pytest.approx(risk(W).item(), rel=1e-12)
    np.testing.assert_allclose(got_grad.reshape(-1), torch.autograd.functional.jacobian(risk, W).numpy(), atol=1e-13)
    np.testing.assert_allclose(got_hess, torch.autograd.functional.hessian(risk, W).numpy(), rtol=1e-9, atol=1e-12)


def test_fit_sandwich_covariance_matches_the_spread_of_refits():
    # the influence-function covariance of W over draws of the examples, against 60 independent refits
    fits = [
        fit_attention(sample_task(_rng(100 + i), "supervised", 300, 16, SIGMA, 0.5), influence=True) for i in range(60)
    ]
    spread = np.var([f.W.reshape(-1) for f in fits], axis=0, ddof=1)
    sandwich = np.mean([np.diag(f.covariance) for f in fits], axis=0)
    # the variance of 60 draws has a relative standard error of about sqrt(2 / 59) = 0.18 (more for heavy tails)
    assert np.all(spread / sandwich > 0.5) and np.all(spread / sandwich < 2.0), spread / sandwich


def test_loglog_slope_with_se_is_the_delta_method():
    lengths = np.array([8.0, 32.0, 128.0, 512.0])
    approx = 3.0 * lengths**-0.4
    slope, se = loglog_slope_with_se(lengths, approx, np.diag((0.01 * approx) ** 2))
    assert slope == pytest.approx(-0.4)
    log_l = np.log(lengths)
    assert se == pytest.approx(0.01 / np.sqrt(np.sum((log_l - log_l.mean()) ** 2)))
    # perfectly correlated errors of equal relative size shift every point alike: the slope does not move
    _, se_corr = loglog_slope_with_se(lengths, approx, 1e-4 * np.outer(approx, approx))
    assert se_corr == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="cov"):
        loglog_slope_with_se(lengths, approx, np.eye(3))


def test_approximation_terms_delta_method():
    W = np.stack([2.0 * np.eye(2), 1.5 * np.eye(2)])
    cov = np.zeros((2, 4, 2, 4))
    cov[0, 0, 0, 0] = cov[0, 3, 0, 3] = 0.01  # variance 0.01 on the diagonal entries of the first fit
    dist, dcov = approximation_terms(W, cov, np.eye(2))
    np.testing.assert_allclose(dist, [np.sqrt(2.0), np.sqrt(0.5)])
    # the gradient of |W - I|_F at W = 2I is (1, 0, 0, 1) / sqrt(2): variance (0.01 + 0.01) / 2
    np.testing.assert_allclose(dcov, [[0.01, 0.0], [0.0, 0.0]], atol=1e-15)
    with pytest.raises(ValueError, match="equals the target"):
        approximation_terms(W, cov, 2.0 * np.eye(2))


def test_erm_experiment_holds_the_reference_out_of_the_test_set():
    kwargs = dict(
        lengths=[4, 16],
        sample_sizes=[30],
        repetitions=2,
        test_size=300,
        reference_size=400,
        key_cov=SIGMA,
        value_noise=0.5,
    )
    res = erm_experiment(_rng(21), "masked", **kwargs)
    assert res.W_reference.shape == (2, 2, 2) and res.reference_cov.shape == (2, 4, 2, 4)
    assert res.excess.shape == (2, 1, 2) and np.all(np.isfinite(res.excess))
    assert np.all(res.approximation_se > 0) and np.all(res.temperature_se > 0)
    # the reference set comes first from the generator and is fitted alone: refitting it reproduces W*_L
    rng = _rng(21)
    reference = sample_task(rng, "masked", 400, 16, SIGMA, 0.5)
    prefix = type(reference)(reference.queries, reference.keys[:, :3], reference.values[:, :3], reference.targets)
    np.testing.assert_allclose(fit_attention_parameter(prefix), res.W_reference[0], atol=1e-8)
    with pytest.raises(ValueError, match="reference_size"):
        erm_experiment(_rng(21), "masked", **{**kwargs, "reference_size": 0})


def test_fit_reaches_a_stationary_point_below_the_desired_parameter_risk():
    data = sample_task(_rng(10), "supervised", 400, 8, SIGMA, 0.5)
    W = fit_attention_parameter(data)
    _, grad = attention_risk_and_gradient(W, data)
    assert np.max(np.abs(grad)) < 1e-6
    assert attention_risk(W, data) <= attention_risk(np.linalg.inv(SIGMA), data)
    with pytest.raises(ValueError, match="mode"):
        sample_task(_rng(), "contrastive", 10, 8, SIGMA, 0.5)


def test_masked_task_uses_first_token_as_query():
    rng_a, rng_b = _rng(11), _rng(11)
    data = sample_task(rng_a, "masked", 5, 6, SIGMA, 0.5)
    _, keys, values = sample_linear_key_value(rng_b, 5, 6, SIGMA, 0.5)
    # determinism: sample_task draws with sample_linear_key_value from the same seed; the queries are copied keys
    np.testing.assert_array_equal(data.queries.numpy(), keys[:, 0])
    np.testing.assert_array_equal(data.targets.numpy(), values[:, 0])
    assert data.keys.shape == (5, 5, 2)


def test_transfer_experiment_equals_direct_attention_on_the_same_draws():
    n, L, value_noise, label_noise, kappas = 40, 16, 0.5, 0.05, [1.0, 4.0]
    result = transfer_experiment(
        _rng(16), condition_numbers=kappas, length=L, num_sequences=n, value_noise=value_noise, label_noise=label_noise
    )
    rng = _rng(16)  # the experiment's draws, in its order
    z, g, eps, xi = (
        rng.standard_normal((n, 2)),
        rng.standard_normal((n, 2, L)),
        rng.standard_normal((n, L)),
        rng.standard_normal((n, 2)),
    )
    for c, kappa in enumerate(kappas):
        cov = _diag_cov(kappa)
        keys = np.einsum("ndl,d->nld", g, np.sqrt(np.diag(cov)))
        values = np.einsum("nld,nd->nl", keys, z) + value_noise * eps
        W = np.linalg.inv(cov)
        rep = bilinear_attention(np.broadcast_to(np.sqrt(cov), (n, 2, 2)), keys, values, W).numpy()
        design = np.column_stack([np.ones(n), rep])
        coef, *_ = np.linalg.lstsq(design[: n // 2], (z + label_noise * xi)[: n // 2], rcond=None)
        down = np.mean((design[n // 2 :] @ coef - z[n // 2 :]) ** 2, axis=0)
        masked = bilinear_attention(keys[:, :1], keys[:, 1:], values[:, 1:], W)[:, 0].numpy()
        np.testing.assert_allclose(result.downstream_excess[c], down, rtol=1e-10)
        assert result.pretrain_excess[c] == pytest.approx(
            np.mean((masked - np.einsum("nd,nd->n", keys[:, 0], z)) ** 2), rel=1e-10
        )


def test_concept_posterior_is_calibrated_within_its_standard_error():
    res = concept_posterior_experiment(_rng(17), lengths=[1, 4], num_sequences=4000)
    assert np.all(res.calibration_se > 0) and np.all(res.calibration_se < 0.5 / np.sqrt(4000) + 1e-12)
    assert np.all(np.abs(res.accuracy - res.confidence) < Z_MAX * res.calibration_se)


def test_risk_theory_and_transfer_ratio_limits():
    u = np.array([1.0, -1.0, 0.5, 0.0])
    assert gaussian_risk_theory(u, 1, 1.0, 2.0, 0.1) == pytest.approx(0.01 + 2.25 * 0.8)
    assert gaussian_risk_theory(u, 1e12, 1.0, 2.0, 0.1) == pytest.approx(0.01)
    ratio = predicted_transfer_ratio([1, 2, 4, 8, 16], 0.5)
    assert ratio[0] == pytest.approx(1.0)
    assert np.all(np.diff(ratio) > 0) and ratio[-1] < 16


def test_loglog_slope_recovers_power_law():
    x = np.array([1.0, 2.0, 8.0, 32.0])
    assert loglog_slope(x, 3.0 * x**-0.5) == pytest.approx(-0.5)
    with pytest.raises(ValueError, match="positive"):
        loglog_slope(x, -x)


def test_smoothing_bias_floor_matches_quadrature():
    h, qs = 0.3, np.array([-1.0, 0.4, 1.5])

    def integrand(z, q):  # limit sin(z m) exp(-z^2 s^2 / 2) of Gaussian-kernel attention vs sin(z q), z ~ U[0.5, 2]
        m, s2 = q / (1 + h * h), h * h / (1 + h * h)
        return (np.sin(z * m) * np.exp(-z * z * s2 / 2) - np.sin(z * q)) ** 2 / 1.5

    expected = np.mean([quad(integrand, 0.5, 2.0, args=(q,))[0] for q in qs])
    assert smoothing_bias_floor(qs, h) == pytest.approx(expected, rel=1e-10)
    assert smoothing_bias_floor(qs, 1e-4) < 1e-12 < smoothing_bias_floor(qs, 0.1) < smoothing_bias_floor(qs, 0.3)
