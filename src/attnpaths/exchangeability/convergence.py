"""E2: attention as a consistent estimator of ``E[v | k = q, z]`` as the sequence length ``L`` grows.

* :func:`attention_error_vs_length` (M3): RMSE of ``Attn_W(q; X) - z^T q`` for several ``W`` (ex-attn),
  against the derived large-L formula (ex-mse) [DERIVED];
* :func:`bandwidth_experiment` (M4): Gaussian-kernel softmax attention (ex-nw) with the bandwidth tuned per
  ``L``; the textbook rates are ``h* ~ L^{-1/5}`` and ``MSE* ~ L^{-4/5}`` for one-dimensional keys;
* :func:`cme_vs_softmax_experiment` (M4): kernel conditional-mean attention (ex-cme) with a ridge
  ``lambda = c L^{-1/2}`` against softmax attention with a fixed bandwidth, which keeps an ``O(h^2)`` bias.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from .._validation import as_float64_array, positive_real
from ._checks import check_rng, int_grid, nonnegative, positive_int, real_grid
from .estimators import bilinear_attention, cme_attention, gaussian_smoothing_attention, predicted_attention_mse
from .latent_models import sample_linear_key_value, sample_sine_key_value

#: Sequences are drawn in chunks of at most this many tokens, to bound memory.
_TOKENS_PER_CHUNK = 1 << 20


def _chunks(num_sequences: int, length: int):
    size = max(1, _TOKENS_PER_CHUNK // length)
    for start in range(0, num_sequences, size):
        yield min(size, num_sequences - start)


@dataclass(frozen=True)
class LengthConvergenceResult:
    """E2 on (M3). ``rmse[i, j]``: root mean squared error of ``Attn_{W_i}(q; X)`` against ``z^T q`` over
    ``num_sequences`` sequences of length ``lengths[j]``; ``rmse_predicted[i, j]`` the square root of (ex-mse);
    ``bias_floor[i] = |(Sigma W_i^T - I) q|``, the large-L limit of the RMSE."""

    lengths: np.ndarray
    W: np.ndarray
    rmse: np.ndarray
    rmse_predicted: np.ndarray
    bias_floor: np.ndarray


def attention_error_vs_length(rng, W, *, lengths, num_sequences: int, key_cov, query,
                              value_noise: float, progress: bool = False) -> LengthConvergenceResult:
    """RMSE of bilinear attention (ex-attn) as an estimate of ``m_z(q) = z^T q`` in (M3), for every ``W``.

    All parameters ``W`` are evaluated on the same sequences (a fresh ``z`` and fresh tokens per sequence).

    Args:
        rng: ``numpy.random.Generator``.
        W: ``[n_W, d, d]`` attention parameters to compare.
        lengths: increasing sequence lengths ``L``; num_sequences: sequences per length.
        key_cov: ``Sigma`` ``[d, d]``; query: ``q`` ``[d]``; value_noise: ``sigma_v``.
        progress: show a tqdm bar over lengths.
    """
    check_rng(rng)
    W = as_float64_array(W, "W")
    q = as_float64_array(query, "query")
    cov = as_float64_array(key_cov, "key_cov")
    if q.ndim != 1 or W.ndim != 3 or W.shape[1:] != (q.size, q.size) or cov.shape != (q.size, q.size):
        raise ValueError(f"W must be [n_W, d, d], key_cov [d, d] and query [d]; got {W.shape}, {cov.shape}, {q.shape}")
    lengths = int_grid(lengths, "lengths")
    s = positive_int(num_sequences, "num_sequences")
    value_noise = nonnegative(value_noise, "value_noise")
    sq_err = np.zeros((W.shape[0], lengths.size))
    qt = torch.from_numpy(q[None, None, :])
    for j, L in enumerate(tqdm(lengths, desc="E2 lengths", disable=not progress)):
        for size in _chunks(s, int(L)):
            z, keys, values = sample_linear_key_value(rng, size, int(L), cov, value_noise)
            target = z @ q
            keys_t, values_t = torch.from_numpy(keys), torch.from_numpy(values)
            for i in range(W.shape[0]):
                est = bilinear_attention(qt, keys_t, values_t, torch.from_numpy(W[i]))[:, 0].numpy()
                sq_err[i, j] += np.sum((est - target) ** 2)
    predicted = np.stack([predicted_attention_mse(w, q, cov, value_noise, lengths) for w in W])
    floor = np.array([np.linalg.norm(cov @ w.T @ q - q) for w in W])
    return LengthConvergenceResult(lengths=lengths, W=W, rmse=np.sqrt(sq_err / s), rmse_predicted=np.sqrt(predicted),
                                   bias_floor=floor)


@dataclass(frozen=True)
class BandwidthResult:
    """E2b on (M4). ``mse[j, b]``: mean squared error of Gaussian-kernel attention (ex-nw) with bandwidth
    ``bandwidths[b]`` against ``sin(z q)`` at length ``lengths[j]``; ``h_star[j]``, ``mse_star[j]`` its minimiser
    on the grid and the minimum."""

    lengths: np.ndarray
    bandwidths: np.ndarray
    mse: np.ndarray
    h_star: np.ndarray
    mse_star: np.ndarray


def bandwidth_experiment(rng, *, lengths, bandwidths, num_sequences: int, query: float, value_noise: float,
                         progress: bool = False) -> BandwidthResult:
    """Bandwidth-tuned Gaussian-kernel attention (ex-nw) in (M4): the optimal bandwidth and error versus ``L``.

    All bandwidths are evaluated on the same sequences.
    """
    check_rng(rng)
    lengths = int_grid(lengths, "lengths")
    hs = real_grid(bandwidths, "bandwidths")
    s = positive_int(num_sequences, "num_sequences")
    q = float(as_float64_array(query, "query"))
    value_noise = nonnegative(value_noise, "value_noise")
    sq_err = np.zeros((lengths.size, hs.size))
    qt = torch.tensor([[[q]]], dtype=torch.float64)
    for j, L in enumerate(tqdm(lengths, desc="E2b lengths", disable=not progress)):
        for size in _chunks(s, int(L)):
            z, keys, values = sample_sine_key_value(rng, size, int(L), value_noise)
            target = np.sin(z * q)
            keys_t, values_t = torch.from_numpy(keys[..., None]), torch.from_numpy(values)
            for b, h in enumerate(hs):
                est = gaussian_smoothing_attention(qt, keys_t, values_t, float(h))[:, 0].numpy()
                sq_err[j, b] += np.sum((est - target) ** 2)
    mse = sq_err / s
    best = mse.argmin(axis=1)
    return BandwidthResult(lengths=lengths, bandwidths=hs, mse=mse, h_star=hs[best],
                           mse_star=mse[np.arange(lengths.size), best])


def smoothing_bias_floor(queries, bandwidth: float, z_low: float = 0.5, z_high: float = 2.0,
                         num_nodes: int = 64) -> float:
    """Large-L limit of the MSE of fixed-bandwidth Gaussian-kernel attention (ex-nw) in (M4) [DERIVED].

    As ``L -> inf`` the weights ``exp(-(q - k)^2 / (2 h^2))`` tilt ``k ~ N(0, 1)`` to ``N(m, s^2)`` with
    ``m = q / (1 + h^2)``, ``s^2 = h^2 / (1 + h^2)``, so the estimate tends to ``sin(z m) exp(-z^2 s^2 / 2)``
    (ex-floor); the floor is its mean squared distance to ``sin(z q)``, averaged over ``z ~ U[z_low, z_high]``
    (Gauss-Legendre quadrature with ``num_nodes`` nodes) and over the queries.
    """
    qs = as_float64_array(queries, "queries").reshape(-1)
    h = positive_real(bandwidth, "bandwidth")
    if not (np.isfinite(z_low) and np.isfinite(z_high) and z_low < z_high):
        raise ValueError(f"z_low < z_high must be finite, got z_low={z_low!r}, z_high={z_high!r}")
    nodes, weights = np.polynomial.legendre.leggauss(positive_int(num_nodes, "num_nodes"))
    z = 0.5 * (z_high - z_low) * nodes + 0.5 * (z_high + z_low)
    m, s2 = qs[:, None] / (1 + h * h), h * h / (1 + h * h)
    limit = np.sin(z * m) * np.exp(-0.5 * z * z * s2)
    sq = (limit - np.sin(z * qs[:, None])) ** 2
    return float(np.mean(sq @ weights) / 2.0)  # weights integrate over [-1, 1]; the U density halves it


@dataclass(frozen=True)
class CmeComparisonResult:
    """E2c on (M4). Mean squared errors over ``num_sequences`` sequences and the query grid ``queries``:
    ``mse_cme[j]`` of CME attention (ex-cme) with ``lambda = ridge_scale / sqrt(L)`` and ``mse_softmax[j]`` of
    Gaussian-kernel softmax attention (ex-nw), both with the same fixed bandwidth, at length ``lengths[j]``."""

    lengths: np.ndarray
    queries: np.ndarray
    mse_cme: np.ndarray
    mse_softmax: np.ndarray


def cme_vs_softmax_experiment(rng, *, lengths, num_sequences: int, queries, bandwidth: float,
                              ridge_scale: float, value_noise: float, progress: bool = False) -> CmeComparisonResult:
    """Kernel CME attention (consistent: ``lambda -> 0``) against fixed-bandwidth softmax attention (biased)."""
    check_rng(rng)
    lengths = int_grid(lengths, "lengths")
    s = positive_int(num_sequences, "num_sequences")
    qs = as_float64_array(queries, "queries")
    if qs.ndim != 1 or qs.size == 0:
        raise ValueError(f"queries must be a non-empty 1-D array of scalar queries, got shape {qs.shape}")
    h = positive_real(bandwidth, "bandwidth")
    c = positive_real(ridge_scale, "ridge_scale")
    value_noise = nonnegative(value_noise, "value_noise")
    qt = torch.from_numpy(qs[None, :, None])
    mse_cme, mse_soft = [], []
    for L in tqdm(lengths, desc="E2c lengths", disable=not progress):
        err_cme = err_soft = 0.0
        for _ in range(s):
            z, keys, values = sample_sine_key_value(rng, 1, int(L), value_noise)
            target = np.sin(z[:, None] * qs[None, :])
            keys_t, values_t = torch.from_numpy(keys[..., None]), torch.from_numpy(values)
            est_cme = cme_attention(qt, keys_t, values_t, h, c / np.sqrt(L)).numpy()
            est_soft = gaussian_smoothing_attention(qt, keys_t, values_t, h).numpy()
            err_cme += np.sum((est_cme - target) ** 2)
            err_soft += np.sum((est_soft - target) ** 2)
        mse_cme.append(err_cme / (s * qs.size))
        mse_soft.append(err_soft / (s * qs.size))
    return CmeComparisonResult(lengths=lengths, queries=qs, mse_cme=np.array(mse_cme), mse_softmax=np.array(mse_soft))
