"""Attention as an operator on queries, keys and values, ``[..., Q, d]``, ``[..., L, d]``, ``[..., L]``: the
forms that the second paper's estimators and the related results compare (chapters ``exchangeability`` and
``related``). Every softmax is :func:`attnpaths.attention.softmax_over_keys` (over the key index).

* (ex-attn)   ``Attn_W(q; X) = sum_l softmax_l(q^T W k_l) v_l``                         bilinear attention
* (ex-nw)     ``sum_l softmax_l(-|q - k_l|^2 / (2 h^2)) v_l``                             Gaussian smoothing
* (ex-cme)    ``v^T (G + L lambda I)^{-1} g(q)``, ``G_ij = kappa(k_i, k_j)``, ``g_i = kappa(k_i, q)``  CME attention
"""

from __future__ import annotations

import torch

from ._validation import as_float64_tensor, positive_real
from .attention import softmax_over_keys
from .kernels import shifted_cholesky


def _keys_queries(queries, keys, name_q: str = "queries", name_k: str = "keys"):
    q = as_float64_tensor(queries, name_q)
    k = as_float64_tensor(keys, name_k)
    if q.ndim < 2 or k.ndim < 2 or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{name_q} [..., Q, d] and {name_k} [..., L, d] must share the key dimension d, "
            f"got {tuple(q.shape)} and {tuple(k.shape)}"
        )
    return q, k


def _apply_weights(weights: torch.Tensor, values) -> torch.Tensor:
    """``out[..., t(, :)] = sum_l weights[..., l, t] values[..., l(, :)]``."""
    v = as_float64_tensor(values, "values")
    if v.ndim == weights.ndim - 1:  # scalar values [..., L]
        return torch.einsum("...lt,...l->...t", weights, v)
    if v.ndim == weights.ndim:  # vector values [..., L, dv]
        return torch.einsum("...lt,...le->...te", weights, v)
    raise ValueError(f"values must have shape [..., L] or [..., L, dv], got {tuple(v.shape)}")


def bilinear_attention_weights(queries, keys, W) -> torch.Tensor:
    """Softmax attention weights ``omega[..., l, t] = softmax_l(q_t^T W k_l)`` (ex-attn).

    Args:
        queries: ``[..., Q, d]``.
        keys: ``[..., L, d]`` (batch dimensions broadcast against those of ``queries``).
        W: ``[d, d]`` bilinear query-key matrix (``W_Q W_K^T``, temperature absorbed).

    Returns:
        ``[..., L, Q]`` weights, summing to one over the key index ``l``.
    """
    q, k = _keys_queries(queries, keys)
    W = as_float64_tensor(W, "W")
    if W.shape != (q.shape[-1], q.shape[-1]):
        raise ValueError(f"W must have shape [{q.shape[-1]}, {q.shape[-1]}], got {tuple(W.shape)}")
    scores = torch.einsum("...td,de,...le->...lt", q, W, k)
    return softmax_over_keys(scores)


def bilinear_attention(queries, keys, values, W) -> torch.Tensor:
    """Attention read-out ``Attn_W(q_t; X) = sum_l softmax_l(q_t^T W k_l) v_l`` (ex-attn).

    Args:
        queries: ``[..., Q, d]``; keys: ``[..., L, d]``; values: ``[..., L]`` or ``[..., L, dv]``;
        W: ``[d, d]``.

    Returns:
        ``[..., Q]`` (scalar values) or ``[..., Q, dv]``.
    """
    return _apply_weights(bilinear_attention_weights(queries, keys, W), values)


def gaussian_smoothing_attention(queries, keys, values, bandwidth: float) -> torch.Tensor:
    """Softmax attention with scores ``-|q - k_l|^2 / (2 h^2)``: the Nadaraya-Watson estimator (ex-nw).

    Up to a query-only term, which cancels in the softmax, the score is the dot product of the augmented
    query ``(q, 1) / h^2`` with the augmented key ``(k, -|k|^2 / 2)``: the same attention as (ex-attn).

    Args:
        queries: ``[..., Q, d]``; keys: ``[..., L, d]``; values: ``[..., L]`` or ``[..., L, dv]``;
        bandwidth: ``h > 0``.

    Returns:
        ``[..., Q]`` or ``[..., Q, dv]``.
    """
    h = positive_real(bandwidth, "bandwidth")
    q, k = _keys_queries(queries, keys)
    sq_dist = (k.unsqueeze(-2) - q.unsqueeze(-3)).pow(2).sum(-1)  # [..., L, Q]
    return _apply_weights(softmax_over_keys(-sq_dist / (2.0 * h * h)), values)


def gaussian_gram(a, b, bandwidth: float) -> torch.Tensor:
    """Gaussian kernel ``kappa(a_i, b_j) = exp(-|a_i - b_j|^2 / (2 h^2))``, shape ``[..., Na, Nb]``."""
    h = positive_real(bandwidth, "bandwidth")
    a, b = _keys_queries(a, b, "a", "b")
    return torch.exp(-(a.unsqueeze(-2) - b.unsqueeze(-3)).pow(2).sum(-1) / (2.0 * h * h))


def cme_attention(queries, keys, values, bandwidth: float, ridge: float) -> torch.Tensor:
    """Kernel conditional-mean-embedding (CME) attention ``v^T (G + L lambda I)^{-1} g(q)`` (ex-cme).

    This is kernel ridge regression of the values on the keys with a Gaussian kernel; its weights
    ``(G + L lambda I)^{-1} g(q)`` are neither positive nor normalised, unlike softmax weights.

    Args:
        queries: ``[..., Q, d]``; keys: ``[..., L, d]``; values: ``[..., L]``;
        bandwidth: kernel bandwidth ``h > 0``; ridge: ``lambda > 0``.

    Returns:
        ``[..., Q]``.
    """
    lam = positive_real(ridge, "ridge")
    q, k = _keys_queries(queries, keys)
    v = as_float64_tensor(values, "values")
    if v.shape != k.shape[:-1]:
        raise ValueError(f"values must have shape {tuple(k.shape[:-1])} (one scalar per key), got {tuple(v.shape)}")
    length = k.shape[-2]
    chol = shifted_cholesky(gaussian_gram(k, k, bandwidth), length * lam)
    cross = gaussian_gram(k, q, bandwidth)  # [..., L, Q]
    weights = torch.cholesky_solve(cross, chol)  # [..., L, Q]
    return torch.einsum("...lt,...l->...t", weights, v)
