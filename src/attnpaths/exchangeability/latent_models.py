"""The exchangeable latent-variable models (M1)-(M4) of chapter ``exchangeability`` and their posteriors.

Every model draws a latent ``z`` per sequence and then i.i.d. tokens given ``z`` (the de Finetti form of an
exchangeable sequence); the models are the book's concrete choices [DERIVED], not the paper's assumptions.

* (M1) ``z ~ N(0, tau^2 I_d)``, ``x_l = z + sigma eps_l``; posterior (ex-post-m1)
  ``N(mu_L, s_L^2 I)``, ``mu_L = tau^2 sum_l x_l / (sigma^2 + L tau^2)``, ``s_L^2 = tau^2 sigma^2 / (sigma^2 + L tau^2)``.
* (M2) ``z`` uniform on ``{1..K}``, ``x_l = mu_z + sigma eps_l``; posterior (ex-post-m2)
  ``P(z = j | X) = softmax_j(mu_j^T sum_l x_l / sigma^2 - L |mu_j|^2 / (2 sigma^2))``.
* (M3) ``z ~ N(0, I_d)``, keys ``k_l ~ N(0, Sigma)``, values ``v_l = z^T k_l + sigma_v eps_l``; ``m_z(q) = z^T q``.
* (M4) ``z ~ U[z_low, z_high]``, keys ``k_l ~ N(0, 1)``, values ``v_l = sin(z k_l) + sigma_v eps_l``;
  ``m_z(q) = sin(z q)``.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import as_float64_array, nonnegative_real, numpy_generator, positive_int, positive_real
from ..attention_operators import bilinear_attention_weights


def sample_gaussian_tokens(rng, num_sequences: int, length: int, dim: int, tau: float, sigma: float):
    """Draw from (M1).

    Returns:
        ``z`` ``[N, d]`` and tokens ``x`` ``[N, L, d]``.
    """
    numpy_generator(rng)
    n, L, d = (positive_int(v, k) for v, k in ((num_sequences, "num_sequences"), (length, "length"), (dim, "dim")))
    tau, sigma = positive_real(tau, "tau"), positive_real(sigma, "sigma")
    z = tau * rng.standard_normal((n, d))
    x = z[:, None, :] + sigma * rng.standard_normal((n, L, d))
    return z, x


def gaussian_posterior(x, tau: float, sigma: float):
    """Posterior of (M1) given the tokens (ex-post-m1).

    Args:
        x: ``[N, L, d]`` tokens; tau, sigma: the prior and noise scales.

    Returns:
        posterior mean ``mu_L`` ``[N, d]`` and posterior variance ``s_L^2`` (a float, the same for all ``N``).
    """
    x = as_float64_array(x, "x", ndim=3)
    tau, sigma = positive_real(tau, "tau"), positive_real(sigma, "sigma")
    L = x.shape[1]
    denom = sigma**2 + L * tau**2
    return tau**2 * x.sum(axis=1) / denom, tau**2 * sigma**2 / denom


def random_concept_means(rng, num_concepts: int, dim: int) -> np.ndarray:
    """Concept means ``mu_j ~ N(0, I_d)`` for (M2), shape ``[K, d]``."""
    numpy_generator(rng)
    return rng.standard_normal((positive_int(num_concepts, "num_concepts"), positive_int(dim, "dim")))


def sample_concept_tokens(rng, num_sequences: int, length: int, means, sigma: float):
    """Draw from (M2) with concept means ``means`` ``[K, d]``.

    Returns:
        ``z`` ``[N]`` (integers in ``0..K-1``) and tokens ``x`` ``[N, L, d]``.
    """
    numpy_generator(rng)
    means = as_float64_array(means, "means", ndim=2)
    n, L = positive_int(num_sequences, "num_sequences"), positive_int(length, "length")
    sigma = positive_real(sigma, "sigma")
    z = rng.integers(0, means.shape[0], size=n)
    x = means[z][:, None, :] + sigma * rng.standard_normal((n, L, means.shape[1]))
    return z, x


def concept_posterior(x, means, sigma: float) -> np.ndarray:
    """Posterior ``P(z = j | X)`` of (M2), computed as softmax attention (ex-post-m2).

    The query is ``(sum_l x_l, L)``, the keys are the augmented concept means ``(mu_j, -|mu_j|^2 / 2)`` and
    ``W = I / sigma^2``: the attention weights over the ``K`` keys are the posterior.

    Args:
        x: ``[N, L, d]`` tokens; means: ``[K, d]``; sigma: token noise.

    Returns:
        ``[N, K]`` posterior probabilities.
    """
    x = as_float64_array(x, "x")
    means = as_float64_array(means, "means")
    if x.ndim != 3 or means.ndim != 2 or x.shape[2] != means.shape[1]:
        raise ValueError(f"x must be [N, L, d] and means [K, d] with the same d, got {x.shape} and {means.shape}")
    sigma = positive_real(sigma, "sigma")
    query = np.concatenate([x.sum(axis=1), np.full((x.shape[0], 1), float(x.shape[1]))], axis=1)[:, None, :]
    keys = np.concatenate([means, -0.5 * np.sum(means**2, axis=1, keepdims=True)], axis=1)
    W = np.eye(keys.shape[1]) / sigma**2
    weights = bilinear_attention_weights(torch.from_numpy(query), torch.from_numpy(keys), torch.from_numpy(W))
    return weights[..., 0].numpy()  # [N, K]


def factored_key_cov(key_cov, factor, requirement: str):
    """``(Sigma, factor(Sigma))`` for the key covariance ``Sigma`` ``[d, d]`` of (M3), e.g. with ``factor`` the
    Cholesky factorisation or the inverse; a ``ValueError`` says that ``key_cov`` must be ``requirement`` when
    ``factor`` fails."""
    cov = as_float64_array(key_cov, "key_cov")
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(f"key_cov must be a square [d, d] matrix, got {cov.shape}")
    try:
        return cov, factor(cov)
    except np.linalg.LinAlgError as err:
        raise ValueError(f"key_cov must be {requirement}") from err


def sample_linear_key_value(rng, num_sequences: int, length: int, key_cov, value_noise: float):
    """Draw from (M3): ``z ~ N(0, I_d)``, ``k_l ~ N(0, Sigma)``, ``v_l = z^T k_l + sigma_v eps_l``.

    Returns:
        ``z`` ``[S, d]``, keys ``[S, L, d]``, values ``[S, L]``.
    """
    numpy_generator(rng)
    cov, chol = factored_key_cov(key_cov, np.linalg.cholesky, "symmetric positive definite")
    s, L = positive_int(num_sequences, "num_sequences"), positive_int(length, "length")
    sigma_v = nonnegative_real(value_noise, "value_noise")
    d = cov.shape[0]
    z = rng.standard_normal((s, d))
    keys = rng.standard_normal((s, L, d)) @ chol.T
    values = np.einsum("sld,sd->sl", keys, z) + sigma_v * rng.standard_normal((s, L))
    return z, keys, values


def sample_sine_key_value(
    rng, num_sequences: int, length: int, value_noise: float, z_low: float = 0.5, z_high: float = 2.0
):
    """Draw from (M4): ``z ~ U[z_low, z_high]``, ``k_l ~ N(0, 1)``, ``v_l = sin(z k_l) + sigma_v eps_l``.

    Returns:
        ``z`` ``[S]``, keys ``[S, L]``, values ``[S, L]``.
    """
    numpy_generator(rng)
    s, L = positive_int(num_sequences, "num_sequences"), positive_int(length, "length")
    sigma_v = nonnegative_real(value_noise, "value_noise")
    if not (np.isfinite(z_low) and np.isfinite(z_high) and z_low < z_high):
        raise ValueError(f"z_low < z_high must be finite, got z_low={z_low!r}, z_high={z_high!r}")
    z = rng.uniform(z_low, z_high, size=s)
    keys = rng.standard_normal((s, L))
    values = np.sin(z[:, None] * keys) + sigma_v * rng.standard_normal((s, L))
    return z, keys, values
