"""R1: rank collapse of pure self-attention and what skip connections change (Dong, Cordonnier, Loukas 2021).

A pure self-attention network (SAN) layer maps tokens ``x`` ``[B, d, n]`` (token ``t`` is column ``t``) to
``W_V x Omega`` with ``Omega = softmax_over_keys((W_K x_s) . (W_Q x_t) / sqrt(d))``; the skip-connected layer
maps ``x`` to ``x + W_V x Omega``. The distance to rank one is the relative residual (sec-r1)
``r(x) = |x - xbar 1^T|_F / |x|_F`` with ``xbar`` the mean token. [SRC] the pure SAN output converges doubly
exponentially to rank one; [SRC-2] the bound ``|res(SAN(X))| <= c |res(X)|^(3^L)`` implies successive
log-residual ratios ``log r_{l+1} / log r_l -> 3`` as ``r -> 0``.

After each layer the tokens are rescaled to Frobenius norm ``sqrt(d n)`` (one positive scalar per layer,
which changes neither the rank nor the relative residual) so that the attention scores stay of order one.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import as_float64_array, as_float64_tensor, numpy_generator, positive_int
from ..attention import AttentionLayer
from .lipschitz import SelfAttentionWeights


def relative_residual(x) -> torch.Tensor:
    """``|x - xbar 1^T|_F / |x|_F`` (sec-r1) for tokens ``x`` ``[..., d, n]``; returns ``[...]``."""
    x = as_float64_tensor(x, "x")
    if x.ndim < 2:
        raise ValueError(f"x must have shape [..., d, n], got {tuple(x.shape)}")
    res = x - x.mean(dim=-1, keepdim=True)
    return torch.linalg.matrix_norm(res) / torch.linalg.matrix_norm(x)


@dataclass(frozen=True)
class RandomSelfAttention:
    """One random single-head self-attention layer: :class:`~attnpaths.attention.AttentionLayer` (query/key form)
    plus ``W_V``."""

    attention: AttentionLayer
    value: torch.Tensor  # [d, d]

    @classmethod
    def draw(cls, rng, width: int) -> RandomSelfAttention:
        """``W_Q, W_K, W_V`` with i.i.d. ``N(0, 1/d)`` entries."""
        weights = SelfAttentionWeights.draw(rng, width)
        return cls(AttentionLayer(Q=weights.query[None], K=weights.key[None]), weights.value)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``W_V x Omega`` for ``x`` ``[B, d, n]``."""
        omega = self.attention.matrices(x)[:, 0]  # [B, n, n], key index first
        return torch.einsum("ij,bjs,bst->bit", self.value, x, omega)


def _rescale(x: torch.Tensor) -> torch.Tensor:
    return x * (np.sqrt(x.shape[-1] * x.shape[-2]) / torch.linalg.matrix_norm(x, keepdim=True))


@dataclass(frozen=True)
class RankCollapseResult:
    """R1. ``residual_pure[r, l]`` and ``residual_skip[r, l]``: relative residual (sec-r1) after ``l`` layers
    (``l = 0`` is the input) in repetition ``r``, without and with skip connections (same weights)."""

    residual_pure: np.ndarray
    residual_skip: np.ndarray


def rank_collapse_experiment(
    rng, *, num_tokens: int = 32, width: int = 64, depth: int = 12, repetitions: int = 5
) -> RankCollapseResult:
    """Propagate Gaussian tokens ``[width, num_tokens]`` through ``depth`` random layers, with and without skips."""
    numpy_generator(rng)
    n, d = positive_int(num_tokens, "num_tokens"), positive_int(width, "width")
    depth, reps = positive_int(depth, "depth"), positive_int(repetitions, "repetitions")
    pure, skip = np.zeros((reps, depth + 1)), np.zeros((reps, depth + 1))
    for r in range(reps):
        x_pure = torch.from_numpy(rng.standard_normal((1, d, n)))
        x_skip = x_pure.clone()
        pure[r, 0] = skip[r, 0] = relative_residual(x_pure).item()
        for layer in range(1, depth + 1):
            block = RandomSelfAttention.draw(rng, d)
            x_pure = _rescale(block(x_pure))
            x_skip = _rescale(x_skip + block(x_skip))
            pure[r, layer] = relative_residual(x_pure).item()
            skip[r, layer] = relative_residual(x_skip).item()
    return RankCollapseResult(residual_pure=pure, residual_skip=skip)


def log_residual_ratios(residuals, *, below: float = 0.1, above: float = 1e-12) -> np.ndarray:
    """Successive ratios ``log r_{l+1} / log r_l`` over the layers where ``r_l <= below`` (the asymptotic
    regime of the bound) and ``r_{l+1} >= above`` (not yet at machine precision).

    Args:
        residuals: ``[depth + 1]`` relative residuals of one network.

    Returns:
        ``[m]`` ratios (possibly empty); doubly exponential collapse with exponent 3 gives values near 3.
    """
    r = as_float64_array(residuals, "residuals")
    if r.ndim != 1 or np.any(r < 0):
        raise ValueError(f"residuals must be a 1-D array of non-negative numbers, got shape {r.shape}")
    if not 0 < above < below < 1:
        raise ValueError(f"need 0 < above < below < 1, got above={above!r}, below={below!r}")
    keep = (r[:-1] <= below) & (r[:-1] > 0) & (r[1:] >= above)
    return np.log(r[1:][keep]) / np.log(r[:-1][keep])


def network_log_ratios(residuals, *, below: float = 0.1, above: float = 1e-12) -> list[np.ndarray]:
    """:func:`log_residual_ratios` (sec-r1) of each row of ``residuals`` ``[networks, depth + 1]``, one network per
    row (e.g. ``RankCollapseResult.residual_pure``): one ``[m_r]`` array per network, in row order (``m_r`` may be
    0)."""
    rows = as_float64_array(residuals, "residuals", ndim=2)
    return [log_residual_ratios(row, below=below, above=above) for row in rows]


def first_layer_below(residuals, threshold: float = 1e-10) -> np.ndarray:
    """The first layer at which each network's relative residual (sec-r1) is below ``threshold``.

    Args:
        residuals: ``[networks, depth + 1]`` relative residuals (layer 0 is the input).
        threshold: a number in ``(0, 1)``.

    Returns:
        ``[networks]`` integer layers; ``depth + 1`` for a network that never goes below ``threshold``.
    """
    r = as_float64_array(residuals, "residuals", ndim=2)
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not 0 < threshold < 1:
        raise ValueError(f"threshold must be a number in (0, 1), got {threshold!r}")
    below = r < threshold
    return np.where(below.any(axis=1), np.argmax(below, axis=1), r.shape[1])
