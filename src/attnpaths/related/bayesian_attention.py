"""R5: softmax attention as a posterior expectation over which token is the query's "parent"
(Singh and Buckley 2023, "Attention as implicit structural inference").

Model [DERIVED instance]: a parent index ``j`` with prior ``pi_j``, and a query ``q | j ~ N(k_j, sigma^2 I)``.
By Bayes' rule (rel-bayes) ``P(j | q) = pi_j N(q; k_j, sigma^2 I) / sum_m pi_m N(q; k_m, sigma^2 I)``.
With a uniform prior and keys of equal norm this is ``softmax_j(q^T k_j / sigma^2)``, and attention is the
posterior mean of the values, ``E[v_j | q]``. A geometric prior over the distance to the query position,
``pi_j ~ rho (1 - rho)^{i - j}``, adds the bias ``(i - j) log(1 - rho)`` to the scores and shrinks the effective
context window ``exp(H(P(. | q)))`` as ``rho`` grows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from .._validation import (
    as_float64_array,
    increasing_reals,
    numpy_generator,
    positive_int,
    positive_real,
    probability,
)
from ..attention import softmax_over_keys


def parent_posterior(query, keys, noise: float, log_prior=None) -> np.ndarray:
    """Posterior over the parent index (rel-bayes), computed with Gaussian densities and Bayes' rule.

    Args:
        query: ``[d]``; keys: ``[n, d]``; noise: ``sigma > 0``; log_prior: ``[n]`` (default uniform).

    Returns:
        ``[n]`` posterior probabilities.
    """
    q, k = as_float64_array(query, "query"), as_float64_array(keys, "keys")
    if q.ndim != 1 or k.ndim != 2 or k.shape[1] != q.size:
        raise ValueError(f"query must be [d] and keys [n, d], got {q.shape} and {k.shape}")
    sigma = positive_real(noise, "noise")
    prior = np.full(k.shape[0], -np.log(k.shape[0])) if log_prior is None else as_float64_array(log_prior, "log_prior")
    if prior.shape != (k.shape[0],):
        raise ValueError(f"log_prior must have shape [{k.shape[0]}], got {prior.shape}")
    log_lik = np.atleast_1d(multivariate_normal.logpdf(q[None, :] - k, mean=np.zeros(q.size), cov=sigma**2))
    log_joint = prior + log_lik
    return np.exp(log_joint - logsumexp(log_joint))


def softmax_attention_weights(query, keys, noise: float) -> np.ndarray:
    """``softmax_j(q^T k_j / sigma^2)`` via :func:`attnpaths.attention.softmax_over_keys`, shape ``[n]``."""
    q, k = as_float64_array(query, "query"), as_float64_array(keys, "keys")
    sigma = positive_real(noise, "noise")
    return softmax_over_keys(torch.from_numpy(k @ q / sigma**2)[:, None])[:, 0].numpy()


def geometric_log_prior(num_tokens: int, rate: float) -> np.ndarray:
    """``log pi_j`` with ``pi_j ~ rho (1 - rho)^{n - 1 - j}`` (query at the last position), normalised; shape ``[n]``."""
    n = positive_int(num_tokens, "num_tokens")
    rate = probability(rate, "rate", open_interval=True)
    log_pi = (n - 1 - np.arange(n)) * np.log1p(-rate)
    return log_pi - logsumexp(log_pi)


@dataclass(frozen=True)
class BayesianAttentionResult:
    """R5. ``max_weight_diff`` and ``max_output_diff``: largest difference between the Bayes posterior (rel-bayes)
    and softmax attention, and between the posterior mean of the values and the attention output, over all
    trials; ``rates`` and ``window[i]``: mean effective window ``exp(H)`` under the geometric prior with rate
    ``rates[i]``; ``window_uniform``: the same under the uniform prior; ``window_trials[t, i]`` and
    ``window_uniform_trials[t]`` the windows of trial ``t`` (independent trials, each under every prior)."""

    max_weight_diff: float
    max_output_diff: float
    rates: np.ndarray
    window: np.ndarray
    window_uniform: float
    window_trials: np.ndarray
    window_uniform_trials: np.ndarray


def _entropy(p):
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0))


def bayesian_attention_experiment(
    rng,
    *,
    num_tokens: int = 16,
    dim: int = 8,
    key_norm: float = 2.0,
    noise: float = 1.0,
    num_trials: int = 200,
    rates=(0.01, 0.03, 0.1, 0.3, 0.6, 0.9),
) -> BayesianAttentionResult:
    """Compare Bayes' rule with softmax attention on equal-norm keys; sweep the geometric prior's rate."""
    numpy_generator(rng)
    n, d, trials = (
        positive_int(v, k) for v, k in ((num_tokens, "num_tokens"), (dim, "dim"), (num_trials, "num_trials"))
    )
    r, sigma = positive_real(key_norm, "key_norm"), positive_real(noise, "noise")
    rates = increasing_reals(rates, "rates")
    priors = [geometric_log_prior(n, float(rho)) for rho in rates]
    w_diff = o_diff = 0.0
    windows, uniform = np.zeros((trials, rates.size)), np.zeros(trials)
    for t in range(trials):
        keys = rng.standard_normal((n, d))
        keys *= r / np.linalg.norm(keys, axis=1, keepdims=True)
        values = rng.standard_normal((n, d))
        query = keys[rng.integers(n)] + sigma * rng.standard_normal(d)
        post = parent_posterior(query, keys, sigma)
        attn = softmax_attention_weights(query, keys, sigma)
        w_diff = max(w_diff, float(np.max(np.abs(post - attn))))
        o_diff = max(o_diff, float(np.max(np.abs(post @ values - attn @ values))))
        uniform[t] = np.exp(_entropy(post))
        for i, lp in enumerate(priors):
            windows[t, i] = np.exp(_entropy(parent_posterior(query, keys, sigma, lp)))
    return BayesianAttentionResult(
        max_weight_diff=w_diff,
        max_output_diff=o_diff,
        rates=rates,
        window=windows.mean(axis=0),
        window_uniform=float(uniform.mean()),
        window_trials=windows,
        window_uniform_trials=uniform,
    )
