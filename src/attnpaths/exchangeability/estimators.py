"""Attention as an estimator of the conditional mean ``m_z(q) = E[v | k = q, z]`` (chapter ``exchangeability``).

The operators (ex-attn), (ex-nw) and (ex-cme) are :mod:`attnpaths.attention_operators`; here are the large-L
error (ex-mse) of (ex-attn) in model (M3) and the experiments' kernel :func:`prefix_softmax_averages`.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import as_float64_tensor, increasing_ints, nonnegative_real, positive_real
from .latent_models import factored_key_cov


def prefix_softmax_averages(scores, values, lengths) -> np.ndarray:
    """Softmax read-outs over the first ``L`` tokens, for every ``L`` in ``lengths``, in one pass (ex-attn, ex-nw).

    ``out[s, j, a] = sum_{l < L_j} softmax_l(scores[s, :L_j, a]) values[s, l]``: column ``a`` holds the scores
    of one parameter or query. The blocks of tokens between consecutive lengths are merged like a streaming
    log-sum-exp: one exponential per score, and no overflow or underflow whatever the scale of the scores.

    Args:
        scores: ``[S, L_max, A]`` float64; values: ``[S, L_max]`` float64 (scalar values);
        lengths: strictly increasing integers in ``[1, L_max]``.

    Returns:
        ``[S, len(lengths), A]``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if scores.ndim != 3 or values.shape != scores.shape[:2]:
        raise ValueError(f"scores must be [S, L, A] and values [S, L], got {scores.shape} and {values.shape}")
    lengths = increasing_ints(lengths, "lengths")
    if lengths[-1] > scores.shape[1]:
        raise ValueError(f"lengths must be at most the {scores.shape[1]} tokens of the scores, got {lengths[-1]}")
    num, _, arms = scores.shape
    out = np.empty((num, lengths.size, arms))
    run_max = np.full((num, arms), -np.inf)
    run_norm = np.zeros((num, arms))
    run_sum = np.zeros((num, arms))
    start = 0
    for j, stop in enumerate(lengths):
        block = scores[:, start:stop]
        new_max = np.maximum(run_max, block.max(axis=1))
        weights = np.exp(block - new_max[:, None, :])
        rescale = np.exp(run_max - new_max)  # 0 for the first block (run_max = -inf)
        run_norm = run_norm * rescale + weights.sum(axis=1)
        run_sum = run_sum * rescale + np.matmul(values[:, None, start:stop], weights)[:, 0]
        run_max = new_max
        out[:, j] = run_sum / run_norm
        start = stop
    return out


def tilted_key_mean(W, query, key_cov) -> np.ndarray:
    """Mean ``Sigma W^T q`` of the keys ``N(0, Sigma)`` re-weighted by ``exp(q^T W k)``, the large-L limit of
    the attention's effective key (ex-tilt). Shapes: ``W`` ``[d, d]``, ``query`` ``[d]``, ``key_cov`` ``[d, d]``;
    returns ``[d]``."""
    W, q, cov = _check_m3(W, query, key_cov)
    return cov @ W.T @ q


def _check_m3(W, query, key_cov):
    W = np.asarray(as_float64_tensor(W, "W"))
    q = np.asarray(as_float64_tensor(query, "query"))
    cov = np.asarray(as_float64_tensor(key_cov, "key_cov"))
    d = q.shape[0] if q.ndim == 1 else -1
    if q.ndim != 1 or W.shape != (d, d) or cov.shape != (d, d):
        raise ValueError(f"query must be [d], W and key_cov [d, d]; got {q.shape}, {W.shape} and {cov.shape}")
    return W, q, cov


def predicted_attention_mse(W, query, key_cov, value_noise: float, length) -> np.ndarray:
    """Large-L mean squared error of ``Attn_W(q; X)`` as an estimate of ``z^T q`` in model (M3) (ex-mse).

    ``MSE(L) = |m - q|^2 + exp(q^T W Sigma W^T q) (|m|^2 + tr Sigma + sigma_v^2) / L`` with ``m = Sigma W^T q``
    (ex-tilt), averaged over ``z ~ N(0, I)``. Derived by the delta method for self-normalised importance
    sampling [DERIVED]; the bias term is exact, the variance term is exact only as ``L -> inf``.
    With ``W = Sigma^{-1}`` the bias vanishes and the variance is ``exp(q^T Sigma^{-1} q)(|q|^2 + tr Sigma +
    sigma_v^2)/L``.

    Args:
        W: ``[d, d]``; query: ``[d]``; key_cov: ``Sigma`` ``[d, d]``; value_noise: ``sigma_v >= 0``;
        length: ``L`` (scalar or array of positive numbers).

    Returns:
        the predicted MSE, same shape as ``length``.
    """
    W, q, cov = _check_m3(W, query, key_cov)
    value_noise = nonnegative_real(value_noise, "value_noise")
    L = np.asarray(length, dtype=np.float64)
    if np.any(~np.isfinite(L)) or np.any(L <= 0):
        raise ValueError(f"length must be positive, got {length!r}")
    a = W.T @ q
    m = cov @ a
    bias_sq = float(np.sum((m - q) ** 2))
    ess_factor = math.exp(float(a @ cov @ a))
    return bias_sq + ess_factor * (float(m @ m) + float(np.trace(cov)) + value_noise**2) / L


def predicted_best_temperature(query, key_cov, value_noise: float, length, *, bounds, tolerance: float = 1e-6) -> float:
    """The temperature factor ``beta*`` that minimises the predicted error (ex-mse) of ``W = beta Sigma^{-1}``
    at sequence length ``length``, in model (M3): ``argmin_{beta in bounds} MSE(beta Sigma^{-1}, L)``.

    At ``beta = 1`` the bias of (ex-mse) vanishes; a smaller ``beta`` adds a bias but lowers the variance
    factor ``exp(beta^2 q^T Sigma^{-1} q)``, so ``beta* < 1`` at finite ``L`` and ``beta* -> 1`` as ``L -> inf``.
    Bounded scalar minimisation (``scipy.optimize.minimize_scalar``, method ``"bounded"``).

    Args:
        query: ``[d]``; key_cov: ``Sigma`` ``[d, d]``; value_noise: ``sigma_v >= 0``; length: ``L > 0``.
        bounds: ``(low, high)`` with ``0 <= low < high``, the interval searched.
        tolerance: absolute tolerance on ``beta`` (``xatol``), ``> 0``.

    Returns:
        ``beta*`` as a float.
    """
    from scipy.optimize import minimize_scalar

    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError) as err:
        raise ValueError(f"bounds must be a pair (low, high) of real numbers, got {bounds!r}") from err
    if not (np.isfinite(low) and np.isfinite(high) and 0 <= low < high):
        raise ValueError(f"bounds must satisfy 0 <= low < high, got {bounds!r}")
    tolerance = positive_real(tolerance, "tolerance")
    if np.ndim(length) != 0:
        raise ValueError(f"length must be one positive number, got {length!r}")
    _, inv_cov = factored_key_cov(key_cov, np.linalg.inv, "an invertible covariance matrix")
    predicted_attention_mse(inv_cov, query, key_cov, value_noise, length)  # checks the arguments
    result = minimize_scalar(
        lambda b: predicted_attention_mse(b * inv_cov, query, key_cov, value_noise, length),
        bounds=(low, high),
        method="bounded",
        options={"xatol": tolerance},
    )
    return float(result.x)
