"""R2-R3: Lipschitz behaviour of self-attention.

Tokens are columns: ``x`` ``[d, n]``. Maps (all softmaxes are :func:`attnpaths.attention.softmax_over_keys`):

* dot-product (DP) self-attention (sec-r2): ``f(x) = W_V^T x Omega``, ``Omega = softmax_over_keys(
  (W_K^T x_s) . (W_Q^T x_t) / sqrt(d))`` (an :class:`attnpaths.attention.AttentionLayer` in query/key form);
* L2 self-attention (rel-l2) of Kim, Papamakarios, Mnih (2021) with tied ``W_Q = W_K``: scores
  ``-|W_Q^T x_t - W_Q^T x_s|^2 / sqrt(d)`` and values ``(W_Q W_Q^T W_V)^T x_s / sqrt(d)``;
* the bare map of Castin, Ablin, Peyre (2024) (sec-r3): ``f(x)_t = sum_s Omega_{st} x_s`` with scores
  ``x_t^T A x_s`` (query ``t``, key ``s``), whose Jacobian is available in closed form (rel-jac).

[SRC] DP attention is not Lipschitz on an unbounded domain, L2 attention is; on a compact set the Lipschitz
constant of (sec-r3) grows at most like ``sqrt(n)``, and the growth is attained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import (
    as_float64_tensor,
    increasing_ints,
    increasing_reals,
    numpy_generator,
    positive_int,
    positive_real,
)
from ..attention import AttentionLayer, softmax_over_keys


@dataclass(frozen=True)
class SelfAttentionWeights:
    """``W_Q``, ``W_K``, ``W_V`` ``[d, d]`` of one head (``W_K`` unused by L2 attention, which ties it to ``W_Q``)."""

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor

    @classmethod
    def draw(cls, rng, width: int) -> SelfAttentionWeights:
        """I.i.d. ``N(0, 1/d)`` entries."""
        numpy_generator(rng)
        d = positive_int(width, "width")
        return cls(*(torch.from_numpy(rng.standard_normal((d, d)) / math.sqrt(d)) for _ in range(3)))


def dot_product_self_attention(x, weights: SelfAttentionWeights) -> torch.Tensor:
    """(sec-r2) for tokens ``x`` ``[d, n]``; returns ``[d, n]``. Differentiable in ``x``."""
    layer = AttentionLayer(Q=weights.query.T[None], K=weights.key.T[None])
    omega = layer.matrices(x[None])[0, 0]
    return weights.value.T @ x @ omega


def l2_self_attention(x, weights: SelfAttentionWeights) -> torch.Tensor:
    """(rel-l2) for tokens ``x`` ``[d, n]``; returns ``[d, n]``. Differentiable in ``x``."""
    d = x.shape[0]
    proj = weights.query.T @ x  # [d, n]
    sq = (proj.unsqueeze(-1) - proj.unsqueeze(-2)).pow(2).sum(0)  # [n(key), n(query)], symmetric
    omega = softmax_over_keys(-sq / math.sqrt(d))
    value_map = (weights.query @ weights.query.T @ weights.value).T / math.sqrt(d)
    return value_map @ x @ omega


def jacobian_spectral_norm(fn, x) -> float:
    """Spectral norm of the Jacobian of ``vec(fn(x))`` in ``vec(x)`` (automatic differentiation)."""
    x = as_float64_tensor(x, "x")
    jac = torch.autograd.functional.jacobian(fn, x).reshape(x.numel(), x.numel())
    return float(torch.linalg.matrix_norm(jac, ord=2))


@dataclass(frozen=True)
class ScalingResult:
    """R2. ``dot_product[i]`` and ``l2[i]``: the largest Jacobian spectral norm over ``num_draws`` random inputs
    (one token at the origin) and weights, for inputs scaled by ``scales[i]``; ``dot_product_draws[k, i]`` and
    ``l2_draws[k, i]`` the norms of draw ``k`` (independent draws, each followed over all scales)."""

    scales: np.ndarray
    dot_product: np.ndarray
    l2: np.ndarray
    dot_product_draws: np.ndarray
    l2_draws: np.ndarray


def input_scaling_experiment(
    rng, *, scales=(1, 2, 4, 8, 16, 32), num_tokens: int = 6, width: int = 3, num_draws: int = 30
) -> ScalingResult:
    """Jacobian norms of (sec-r2) and (rel-l2) on inputs ``t x`` with one token at 0, as ``t`` grows.

    The same draws (inputs and weights) are used for every scale.
    """
    numpy_generator(rng)
    scales = increasing_reals(scales, "scales")
    n, d = positive_int(num_tokens, "num_tokens"), positive_int(width, "width")
    draws = positive_int(num_draws, "num_draws")
    dp, l2 = np.zeros((draws, scales.size)), np.zeros((draws, scales.size))
    for k in range(draws):
        weights = SelfAttentionWeights.draw(rng, d)
        x = torch.from_numpy(rng.standard_normal((d, n)))
        x[:, 0] = 0.0
        for i, t in enumerate(scales):
            dp[k, i] = jacobian_spectral_norm(lambda y: dot_product_self_attention(y, weights), t * x)
            l2[k, i] = jacobian_spectral_norm(lambda y: l2_self_attention(y, weights), t * x)
    return ScalingResult(
        scales=scales, dot_product=dp.max(axis=0), l2=l2.max(axis=0), dot_product_draws=dp, l2_draws=l2
    )


def bare_attention(x, A) -> torch.Tensor:
    """(sec-r3): ``f(x)_t = sum_s softmax_s(x_t^T A x_s) x_s`` for ``x`` ``[d, n]``, ``A`` ``[d, d]``."""
    scores = x.T @ A @ x  # [t(query), s(key)]
    return x @ softmax_over_keys(scores.T)


def bare_attention_jacobian(x, A) -> torch.Tensor:
    """Closed-form Jacobian of (sec-r3) (rel-jac), shape ``[n, d, n, d]`` (output token ``t``, coordinate;
    input token ``k``, coordinate), with ``P_tk = Omega_{kt}`` and ``f_t`` the outputs:

    ``J_tk = P_tk (I + (x_k - f_t) x_t^T A) + delta_tk sum_m P_tm (x_m - f_t) x_m^T A^T``.
    """
    x = as_float64_tensor(x, "x")
    A = as_float64_tensor(A, "A")
    d, n = x.shape
    if A.shape != (d, d):
        raise ValueError(f"A must have shape [{d}, {d}], got {tuple(A.shape)}")
    P = softmax_over_keys((x.T @ A @ x).T).T  # [t, k]
    f = x @ P.T  # [d, t]
    diff = x.T[None, :, :] - f.T[:, None, :]  # [t, k, d]: x_k - f_t
    xa = x.T @ A  # [t, d]: x_t^T A
    eye = torch.eye(d, dtype=torch.float64)
    jac = P[:, None, :, None] * (eye[None, :, None, :] + diff.permute(0, 2, 1)[..., None] * xa[:, None, None, :])
    cov = torch.einsum("tm,tma,mb->tab", P, diff, x.T @ A.T)  # sum_m P_tm (x_m - f_t) x_m^T A^T
    idx = torch.arange(n)
    jac[idx, :, idx, :] += cov
    return jac


def adversarial_tokens(num_tokens: int, radius: float) -> torch.Tensor:
    """Tokens ``[2, n]`` in the disk of radius ``R`` on which (sec-r3) with ``A = I`` has a Jacobian of order
    ``sqrt(n)`` [DERIVED construction]: ``n - 1`` tokens at ``c = (R/2, 0)`` and one outlier ``p`` on the circle
    ``|p| = R`` with ``c . p = R^2/4 + log(n - 1)``, i.e. ``p = (a, sqrt(R^2 - a^2))`` with
    ``a = R/2 + 2 log(n - 1)/R``, so that each clustered token puts exactly half of its attention on ``p``.
    Each of the ``n - 1`` clustered outputs then moves at rate O(1) with ``p``: a Jacobian column of norm
    of order ``sqrt(n)``.

    Requires ``log(n - 1) <= R^2 / 4`` (the outlier exists in the disk).
    """
    n = positive_int(num_tokens, "num_tokens")
    R = positive_real(radius, "radius")
    if n < 2 or math.log(n - 1) > R * R / 4:
        raise ValueError(f"num_tokens must satisfy 2 <= n and log(n - 1) <= radius^2 / 4, got n={n}, radius={R}")
    x = torch.zeros(2, n, dtype=torch.float64)
    x[0, :] = R / 2
    a = R / 2 + 2 * math.log(n - 1) / R
    x[0, 0], x[1, 0] = a, math.sqrt(max(R * R - a * a, 0.0))
    return x


def random_disk_tokens(rng, num_tokens: int, radius: float) -> torch.Tensor:
    """``n`` tokens uniform in the disk of radius ``R``, shape ``[2, n]``."""
    numpy_generator(rng)
    n = positive_int(num_tokens, "num_tokens")
    R = positive_real(radius, "radius")
    r = R * np.sqrt(rng.random(n))
    phi = 2 * np.pi * rng.random(n)
    return torch.from_numpy(np.stack([r * np.cos(phi), r * np.sin(phi)]))


@dataclass(frozen=True)
class SequenceLengthResult:
    """R3. Jacobian spectral norms of (sec-r3) with ``A = I`` at each ``num_tokens[i]``: ``adversarial[i]`` on
    :func:`adversarial_tokens`, ``random[i]`` the mean over ``repetitions`` uniform draws in the disk and
    ``random_draws[r, i]`` the norm of draw ``r`` (independent draws)."""

    num_tokens: np.ndarray
    adversarial: np.ndarray
    random: np.ndarray
    random_draws: np.ndarray


def sequence_length_experiment(
    rng, *, num_tokens=(4, 8, 16, 32, 64, 128, 256, 512), radius: float = 6.0, repetitions: int = 3
) -> SequenceLengthResult:
    """Lipschitz constant (Jacobian norm at a point) of (sec-r3) versus ``n``: adversarial and random inputs."""
    numpy_generator(rng)
    ns = increasing_ints(num_tokens, "num_tokens", 2)
    reps = positive_int(repetitions, "repetitions")
    eye = torch.eye(2, dtype=torch.float64)

    def norm(x):
        n = x.shape[1]
        return float(torch.linalg.matrix_norm(bare_attention_jacobian(x, eye).reshape(2 * n, 2 * n), ord=2))

    adv = [norm(adversarial_tokens(int(n), radius)) for n in ns]
    rnd = np.array([[norm(random_disk_tokens(rng, int(n), radius)) for _ in range(reps)] for n in ns]).T  # [reps, n]
    return SequenceLengthResult(num_tokens=ns, adversarial=np.array(adv), random=rnd.mean(axis=0), random_draws=rnd)
