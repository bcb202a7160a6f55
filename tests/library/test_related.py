"""Tests of the related-results code (R1-R5), attnpaths.related."""

import math

import numpy as np
import pytest
import torch

from attnpaths.related.bayesian_attention import (
    geometric_log_prior,
    parent_posterior,
    softmax_attention_weights,
)
from attnpaths.related.lipschitz import (
    SelfAttentionWeights,
    adversarial_tokens,
    bare_attention,
    bare_attention_jacobian,
    dot_product_self_attention,
    jacobian_spectral_norm,
    l2_self_attention,
)
from attnpaths.related.measures import measure_attention, wasserstein1_uniform
from attnpaths.related.rank_collapse import RandomSelfAttention, log_residual_ratios, relative_residual


def _rng(seed=0):
    return np.random.default_rng(seed)


def _row_softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_relative_residual_zero_for_rank_one_and_scale_free():
    x = torch.from_numpy(_rng(1).normal(size=(1, 4, 6)))
    same = x[..., :1].expand(1, 4, 6)
    assert relative_residual(same).item() == pytest.approx(0.0, abs=1e-15)
    assert relative_residual(3.0 * x).item() == pytest.approx(relative_residual(x).item(), rel=1e-14)


def test_self_attention_block_matches_row_softmax_formula():
    rng = _rng(2)
    block = RandomSelfAttention.draw(rng, 5)
    x = rng.normal(size=(5, 7))  # [d, n]
    X = x.T  # rows are tokens
    wq, wk = block.attention.Q[0].numpy(), block.attention.K[0].numpy()
    P = _row_softmax((X @ wq.T) @ (X @ wk.T).T / math.sqrt(5))
    expected = (P @ X @ block.value.numpy().T).T
    np.testing.assert_allclose(block(torch.from_numpy(x)[None])[0].numpy(), expected, rtol=1e-12)


def test_log_residual_ratios_recover_cubic_collapse():
    r = [0.9, 0.5, 0.08, 0.08**3, 0.08**9, 1e-16]
    np.testing.assert_allclose(log_residual_ratios(r), [3.0, 3.0])  # 0.9, 0.5 > 0.1 skipped; 1e-16 below floor


def test_dot_product_and_l2_attention_match_explicit_formulas():
    rng = _rng(3)
    d, n = 3, 5
    w = SelfAttentionWeights.draw(rng, d)
    X = rng.normal(size=(n, d))
    wq, wk, wv = (m.numpy() for m in (w.query, w.key, w.value))
    dp = _row_softmax((X @ wq) @ (X @ wk).T / math.sqrt(d)) @ X @ wv
    np.testing.assert_allclose(dot_product_self_attention(torch.from_numpy(X.T), w).numpy(), dp.T, rtol=1e-12)
    proj = X @ wq
    sq = ((proj[:, None, :] - proj[None, :, :]) ** 2).sum(-1)
    l2 = _row_softmax(-sq / math.sqrt(d)) @ X @ wq @ wq.T @ wv / math.sqrt(d)
    np.testing.assert_allclose(l2_self_attention(torch.from_numpy(X.T), w).numpy(), l2.T, rtol=1e-12)


def test_closed_form_jacobian_matches_autograd():
    rng = _rng(4)
    x = torch.from_numpy(rng.normal(size=(3, 6)))
    A = torch.from_numpy(rng.normal(size=(3, 3)))
    auto = torch.autograd.functional.jacobian(lambda y: bare_attention(y, A), x)  # [d, n, d, n]
    np.testing.assert_allclose(bare_attention_jacobian(x, A).numpy(), auto.permute(1, 0, 3, 2).numpy(), atol=1e-12)


def test_jacobian_spectral_norm_of_linear_map():
    M = torch.from_numpy(_rng(5).normal(size=(6, 6)))
    x = torch.zeros(2, 3, dtype=torch.float64)
    got = jacobian_spectral_norm(lambda y: (M @ y.reshape(-1)).reshape(2, 3), x)
    assert got == pytest.approx(float(torch.linalg.matrix_norm(M, ord=2)), rel=1e-12)


def test_adversarial_tokens_put_half_the_attention_on_the_outlier():
    for n in (4, 64, 512):
        x = adversarial_tokens(n, 6.0)
        P = torch.softmax(x.T @ x, dim=1)  # rows: queries
        assert P[1, 0].item() == pytest.approx(0.5, abs=1e-12)
        assert torch.linalg.norm(x, dim=0).max().item() <= 6.0 + 1e-12
    with pytest.raises(ValueError, match="num_tokens"):
        adversarial_tokens(10_000, 6.0)


def test_measure_attention_depends_only_on_the_empirical_measure():
    rng = _rng(6)
    q, atoms = rng.uniform(-1, 1, (4, 2)), rng.uniform(-1, 1, (9, 2))
    A, V = rng.normal(size=(2, 2, 2))
    out = measure_attention(q, atoms, A, V)
    np.testing.assert_allclose(measure_attention(q, np.concatenate([atoms, atoms, atoms]), A, V), out, atol=1e-14)
    np.testing.assert_allclose(measure_attention(q, atoms[::-1], A, V), out, atol=1e-14)
    # moving the atoms changes the output
    assert np.max(np.abs(measure_attention(q, atoms + 0.3, A, V) - out)) > 1e-3


def test_w1_of_a_translated_sample_is_the_translation_length():
    a = _rng(7).uniform(-1, 1, (20, 2))
    shift = np.array([0.3, -0.4])
    assert wasserstein1_uniform(a, a + shift) == pytest.approx(0.5, rel=1e-12)
    assert wasserstein1_uniform(a, a[::-1]) == pytest.approx(0.0, abs=1e-15)


def test_bayes_posterior_is_softmax_only_for_equal_norm_keys():
    rng = _rng(8)
    keys = rng.normal(size=(6, 4))
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    q = rng.normal(size=4)
    np.testing.assert_allclose(parent_posterior(q, keys, 0.7), softmax_attention_weights(q, keys, 0.7), atol=1e-14)
    uneven = keys * np.arange(1, 7)[:, None]
    assert np.max(np.abs(parent_posterior(q, uneven, 0.7) - softmax_attention_weights(q, uneven, 0.7))) > 1e-2


def test_geometric_prior_normalised_and_local():
    lp = geometric_log_prior(10, 0.5)
    assert np.exp(lp).sum() == pytest.approx(1.0)
    assert np.all(np.diff(lp) > 0)  # mass grows towards the query position (last token)
    assert np.exp(geometric_log_prior(10, 0.9))[-1] > np.exp(lp)[-1]
    with pytest.raises(ValueError, match="rate"):
        geometric_log_prior(10, 1.0)
