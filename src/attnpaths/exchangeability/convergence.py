"""E2: attention as a consistent estimator of ``E[v | k = q, z]`` as the sequence length ``L`` grows: bilinear
attention (ex-attn) in (M3), Gaussian-kernel (ex-nw) and CME attention (ex-cme) in (M4).

Every experiment draws each sequence once, at the largest length, and evaluates every shorter length ``L`` on
its first ``L`` tokens: by exchangeability that prefix is a sequence of length ``L``, and the lengths share
their random numbers, which makes the comparisons across ``L`` less noisy than independent draws would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_solve
from tqdm import tqdm

from .._validation import (
    as_float64_array,
    finite_real,
    increasing_ints,
    increasing_reals,
    nonnegative_real,
    numpy_generator,
    positive_int,
    positive_real,
)
from ..engine import single_threaded
from .estimators import predicted_attention_mse, prefix_softmax_averages
from .latent_models import sample_linear_key_value, sample_sine_key_value

#: Sequences are processed in chunks of at most this many scores (sequences x tokens x parameters), to bound memory.
_SCORES_PER_CHUNK = 1 << 22


def _chunks(num_sequences: int, length: int, arms: int = 1):
    size = max(1, _SCORES_PER_CHUNK // (length * arms))
    for start in range(0, num_sequences, size):
        yield min(size, num_sequences - start)


def _mean_and_se(sq):
    """Mean over the sequences (axis 0) of per-sequence squared errors ``sq`` and its standard error."""
    count = sq.shape[0]
    mean = sq.sum(axis=0) / count
    var = np.maximum((sq**2).sum(axis=0) / count - mean**2, 0.0) * count / max(count - 1, 1)
    return mean, np.sqrt(var / count)


@dataclass(frozen=True)
class LengthConvergenceResult:
    """E2 on (M3). ``rmse[i, j]``: root mean squared error of ``Attn_{W_i}(q; X)`` against ``z^T q`` over
    ``num_sequences`` sequences of length ``lengths[j]``; ``rmse_se[i, j]`` its standard error (delta method:
    the standard error of the mean squared error divided by ``2 rmse``); ``rmse_predicted[i, j]`` the square
    root of (ex-mse); ``bias_floor[i] = |(Sigma W_i^T - I) q|``, the large-L limit of the RMSE. ``mse[i, j]``
    is the mean squared error itself and ``mse_cov[i, j, i', j']`` the covariance of the estimates ``mse[i, j]``
    and ``mse[i', j']`` over draws of the sequences (all parameters and lengths share the sequences, so their
    errors are correlated: this gives the standard errors of slopes in ``L`` and of paired differences between
    parameters)."""

    lengths: np.ndarray
    W: np.ndarray
    mse: np.ndarray
    mse_cov: np.ndarray
    rmse: np.ndarray
    rmse_se: np.ndarray
    rmse_predicted: np.ndarray
    bias_floor: np.ndarray


def attention_error_vs_length(
    rng, W, *, lengths, num_sequences: int, key_cov, query, value_noise: float, progress: bool = False
) -> LengthConvergenceResult:
    """RMSE of bilinear attention (ex-attn) as an estimate of ``m_z(q) = z^T q`` in (M3), for every ``W``.

    Each sequence (a fresh ``z`` and fresh tokens) is drawn at the largest length; every length ``L`` uses its
    first ``L`` tokens, and every parameter ``W`` the same sequences. The score of token ``l`` under ``W_i`` is
    ``k_l^T (W_i^T q)``, so one product with the ``[d, n_W]`` matrix of the ``W_i^T q`` scores every parameter.

    Args:
        rng: ``numpy.random.Generator``.
        W: ``[n_W, d, d]`` attention parameters to compare.
        lengths: increasing sequence lengths ``L``; num_sequences: sequences per length.
        key_cov: ``Sigma`` ``[d, d]``; query: ``q`` ``[d]``; value_noise: ``sigma_v``.
        progress: show a tqdm bar over chunks of sequences.
    """
    numpy_generator(rng)
    W = as_float64_array(W, "W")
    q = as_float64_array(query, "query")
    cov = as_float64_array(key_cov, "key_cov")
    if q.ndim != 1 or W.ndim != 3 or W.shape[1:] != (q.size, q.size) or cov.shape != (q.size, q.size):
        raise ValueError(f"W must be [n_W, d, d], key_cov [d, d] and query [d]; got {W.shape}, {cov.shape}, {q.shape}")
    lengths = increasing_ints(lengths, "lengths")
    s = positive_int(num_sequences, "num_sequences")
    value_noise = nonnegative_real(value_noise, "value_noise")
    longest = int(lengths[-1])
    query_dirs = np.einsum("iab,a->bi", W, q)  # column i: W_i^T q, so that score_l = k_l^T W_i^T q
    n_w, n_l = W.shape[0], lengths.size
    sums = np.zeros(n_w * n_l)
    cross = np.zeros((n_w * n_l, n_w * n_l))
    with single_threaded(blas_only=True):
        for size in tqdm(list(_chunks(s, longest, n_w)), desc="E2 sequences", disable=not progress):
            z, keys, values = sample_linear_key_value(rng, size, longest, cov, value_noise)
            est = prefix_softmax_averages(keys @ query_dirs, values, lengths)  # [size, n_L, n_W]
            sq = ((est - (z @ q)[:, None, None]) ** 2).transpose(0, 2, 1).reshape(size, -1)  # [size, n_W n_L]
            sums += sq.sum(axis=0)
            cross += sq.T @ sq
    mean = sums / s
    cov_mean = (cross / s - np.outer(mean, mean)) * s / max(s - 1, 1) / s  # covariance of the means
    mse = mean.reshape(n_w, n_l)
    mse_se = np.sqrt(np.maximum(np.diag(cov_mean), 0.0)).reshape(n_w, n_l)
    rmse = np.sqrt(mse)
    predicted = np.stack([predicted_attention_mse(w, q, cov, value_noise, lengths) for w in W])
    return LengthConvergenceResult(
        lengths=lengths,
        W=W,
        mse=mse,
        mse_cov=cov_mean.reshape(n_w, n_l, n_w, n_l),
        rmse=rmse,
        rmse_se=mse_se / (2.0 * rmse),
        rmse_predicted=np.sqrt(predicted),
        bias_floor=np.array([np.linalg.norm(cov @ w.T @ q - q) for w in W]),
    )


@dataclass(frozen=True)
class BandwidthResult:
    """E2b on (M4). ``mse[j, b]``: mean squared error of Gaussian-kernel attention (ex-nw) with bandwidth
    ``bandwidths[b]`` against ``sin(z q)`` at length ``lengths[j]``, ``mse_se[j, b]`` its standard error;
    ``h_star[j]``, ``mse_star[j]`` its minimiser on the grid and the minimum; ``sq_error[s, j, b]`` the squared
    error of sequence ``s`` (the sequences are independent; resampling them gives bootstrap standard errors)."""

    lengths: np.ndarray
    bandwidths: np.ndarray
    mse: np.ndarray
    mse_se: np.ndarray
    h_star: np.ndarray
    mse_star: np.ndarray
    sq_error: np.ndarray


def bandwidth_experiment(
    rng, *, lengths, bandwidths, num_sequences: int, query: float, value_noise: float, progress: bool = False
) -> BandwidthResult:
    """Bandwidth-tuned Gaussian-kernel attention (ex-nw) in (M4): the optimal bandwidth and error versus ``L``.

    All bandwidths and lengths are evaluated on the same sequences (prefixes of the longest).
    """
    numpy_generator(rng)
    lengths = increasing_ints(lengths, "lengths")
    hs = increasing_reals(bandwidths, "bandwidths")
    s = positive_int(num_sequences, "num_sequences")
    q = float(as_float64_array(query, "query"))
    value_noise = nonnegative_real(value_noise, "value_noise")
    longest = int(lengths[-1])
    inv_two_h2 = 0.5 / hs**2
    per_sequence = []
    for size in tqdm(list(_chunks(s, longest, hs.size)), desc="E2b sequences", disable=not progress):
        z, keys, values = sample_sine_key_value(rng, size, longest, value_noise)
        scores = -((keys - q) ** 2)[..., None] * inv_two_h2  # [size, L, n_h]
        per_sequence.append((prefix_softmax_averages(scores, values, lengths) - np.sin(z * q)[:, None, None]) ** 2)
    sq = np.concatenate(per_sequence)
    mse, mse_se = _mean_and_se(sq)
    h_star, mse_star = grid_minimum(mse, hs)
    return BandwidthResult(
        lengths=lengths, bandwidths=hs, mse=mse, mse_se=mse_se, h_star=h_star, mse_star=mse_star, sq_error=sq
    )


def grid_minimum(mse, bandwidths):
    """Minimiser and minimum over the bandwidth grid of each row of ``mse`` ``[..., n_h]``: returns
    ``(h_star, mse_star)``, both ``[...]``."""
    mse = np.asarray(mse, dtype=np.float64)
    best = mse.argmin(axis=-1)
    return np.asarray(bandwidths)[best], np.take_along_axis(mse, best[..., None], axis=-1)[..., 0]


def smoothing_bias_floor(
    queries, bandwidth: float, z_low: float = 0.5, z_high: float = 2.0, num_nodes: int = 64
) -> float:
    """Large-L limit of the MSE of fixed-bandwidth Gaussian-kernel attention (ex-nw) in (M4) [DERIVED].

    As ``L -> inf`` the weights ``exp(-(q - k)^2 / (2 h^2))`` tilt ``k ~ N(0, 1)`` to ``N(m, s^2)`` with
    ``m = q / (1 + h^2)``, ``s^2 = h^2 / (1 + h^2)``, so the estimate tends to ``sin(z m) exp(-z^2 s^2 / 2)``
    (sec-e2); the floor is its mean squared distance to ``sin(z q)``, averaged over ``z ~ U[z_low, z_high]``
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
    ``mse_cme[j]`` of CME attention (ex-cme) with ``lambda = ridge_scale L^ridge_exponent`` and ``mse_softmax[j]``
    of Gaussian-kernel softmax attention (ex-nw), both with the same fixed bandwidth, at length ``lengths[j]``;
    ``mse_cme_se`` and ``mse_softmax_se`` their standard errors over sequences; ``sq_error_cme[s, j]`` and
    ``sq_error_softmax[s, j]`` the error of sequence ``s`` (mean over the queries; the sequences are
    independent replicates)."""

    lengths: np.ndarray
    queries: np.ndarray
    mse_cme: np.ndarray
    mse_softmax: np.ndarray
    mse_cme_se: np.ndarray
    mse_softmax_se: np.ndarray
    sq_error_cme: np.ndarray
    sq_error_softmax: np.ndarray


#: CME attention factorises at most this many Gram-matrix entries at once (sequences x L x L).
_GRAM_ENTRIES_PER_CHUNK = 1 << 23


def _cme_estimates(keys, values, queries, bandwidth: float, ridge: float) -> np.ndarray:
    """CME attention (ex-cme) ``[S, Q]``: ``alpha^T g(q)`` with ``(G + L lambda I) alpha = v`` for the keys and values
    ``[S, L]`` and the queries ``[Q]``, one Cholesky factorisation per sequence whatever the number of queries."""
    length = keys.shape[1]
    out = np.empty((keys.shape[0], queries.size))
    step = max(1, _GRAM_ENTRIES_PER_CHUNK // (length * length))
    scale = -0.5 / bandwidth**2
    for start in range(0, keys.shape[0], step):
        k, v = keys[start : start + step], values[start : start + step]
        gram = np.exp(scale * (k[:, :, None] - k[:, None, :]) ** 2)
        gram[:, np.arange(length), np.arange(length)] += length * ridge
        chol = np.linalg.cholesky(gram)
        alpha = cho_solve((chol, True), v[..., None])[..., 0]
        cross = np.exp(scale * (k[:, :, None] - queries[None, None, :]) ** 2)  # [s, L, Q]
        out[start : start + step] = np.matmul(alpha[:, None, :], cross)[:, 0]
    return out


def cme_vs_softmax_experiment(
    rng,
    *,
    lengths,
    num_sequences: int,
    queries,
    bandwidth: float,
    ridge_scale: float,
    value_noise: float,
    ridge_exponent: float = -0.5,
    progress: bool = False,
) -> CmeComparisonResult:
    """Kernel CME attention (consistent when ``lambda -> 0``) against fixed-bandwidth softmax attention (biased).

    The ridge is ``lambda = ridge_scale * L**ridge_exponent`` (default ``L^{-1/2}``). Both estimators see the
    same sequences, and every length uses the first ``L`` tokens of the longest.
    """
    numpy_generator(rng)
    lengths = increasing_ints(lengths, "lengths")
    s = positive_int(num_sequences, "num_sequences")
    qs = as_float64_array(queries, "queries", ndim=1, nonempty=True)
    h = positive_real(bandwidth, "bandwidth")
    c = positive_real(ridge_scale, "ridge_scale")
    ridge_exponent = finite_real(ridge_exponent, "ridge_exponent")
    value_noise = nonnegative_real(value_noise, "value_noise")
    z, keys, values = sample_sine_key_value(rng, s, int(lengths[-1]), value_noise)
    target = np.sin(z[:, None] * qs[None, :])  # [S, Q]
    scores = -0.5 * (keys[:, :, None] - qs[None, None, :]) ** 2 / (h * h)  # [S, L, Q]
    soft = prefix_softmax_averages(scores, values, lengths)  # [S, n_L, Q]
    per_seq_soft = np.mean((soft - target[:, None, :]) ** 2, axis=2)  # [S, n_L]: mean over the queries
    per_seq_cme = np.empty_like(per_seq_soft)
    with single_threaded(blas_only=True):
        for j, L in enumerate(tqdm(lengths, desc="E2c lengths", disable=not progress)):
            est = _cme_estimates(keys[:, :L], values[:, :L], qs, h, c * float(L) ** ridge_exponent)
            per_seq_cme[:, j] = np.mean((est - target) ** 2, axis=1)
    cme, cme_se = _mean_and_se(per_seq_cme)
    soft_mse, soft_se = _mean_and_se(per_seq_soft)
    return CmeComparisonResult(
        lengths=lengths,
        queries=qs,
        mse_cme=cme,
        mse_softmax=soft_mse,
        mse_cme_se=cme_se,
        mse_softmax_se=soft_se,
        sq_error_cme=per_seq_cme,
        sq_error_softmax=per_seq_soft,
    )
