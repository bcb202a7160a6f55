"""The effective sample size of the mean of many entries at once (:func:`attnpaths.sampler.effective_sample_size`).

The estimator is ArviZ's ``ess(method="mean")`` (Vehtari, Gelman, Simpson, Carpenter & Buerkner 2021, eqs. 10-13,
https://doi.org/10.1214/20-BA1221): split chains, autocovariances by FFT combined over the chains, summed in pairs
with Geyer's initial positive and then initial monotone sequence, capped at ``M log10(M)`` for ``M`` draws.
Written here because ArviZ evaluates it one entry at a time in Python, milliseconds an entry, where a sampled
width of the one-shot chapter has thousands of test episodes; here the transforms and the sequences run over all
entries at once, with ArviZ's number for every entry up to rounding.
"""

from __future__ import annotations

import numpy as np
from scipy.fft import next_fast_len

CHUNK_NUMBERS = 1 << 23
"""At most this many numbers (``entries x split chains x padded draws``) are transformed at once (64 MiB of
complex spectra and as much of autocovariances), so that long chains of many entries hold neither all their
spectra nor a copy of all their draws."""


def split_chain_ess(draws: np.ndarray) -> np.ndarray:
    """ESS of the mean of every entry of ``draws`` ``[C, S >= 4, K]``: ``[K]``.

    Each chain is split into its first and last ``S // 2`` draws (``m = 2 C`` split chains of ``n`` draws); with
    the autocovariances ``acov_c(t)`` of each split chain, ``W = mean_c acov_c(0) n / (n - 1)``, ``var+ = W (n - 1)
    / n + var_c(mean of chain c)`` and ``rho(t) = 1 - (W - mean_c acov_c(t)) / var+`` (``rho(0) = 1``), the pairs
    ``rho(2j) + rho(2j + 1)`` (up to lag ``n - 2``) are summed up to the first non-positive one (Geyer's initial
    positive sequence; the even term of that pair is added where it is positive or its pair is not negative), each
    made no larger than the one before (initial monotone sequence): ``tau = -1 + 2 sum_j pair_j + rho_even``,
    ``ESS = M / max(tau, 1 / log10 M)`` for ``M = m n``. An entry constant over its draws gets ``M``; one whose
    autocovariances overflow gets NaN. The draws must be finite (the caller checks).
    """
    C, S, K = draws.shape
    if K == 0:
        return np.empty(0)
    half = S // 2
    padded = next_fast_len(2 * half)
    chunk = max(1, CHUNK_NUMBERS // (2 * C * padded))

    def split_chains(entries: slice) -> np.ndarray:  # [k, m, n], the first halves of the chains first
        split = np.concatenate([draws[:, :half, entries], draws[:, S - half :, entries]], axis=0)
        return np.ascontiguousarray(np.moveaxis(split, -1, 0))

    # a chunk of entries at a time: neither the split chains nor their spectra are ever held for every entry
    return np.concatenate([_ess(split_chains(slice(k, k + chunk)), padded) for k in range(0, K, chunk)])


def _ess(x: np.ndarray, padded: int) -> np.ndarray:
    """:func:`split_chain_ess` of split chains ``x`` ``[K, m, n]``."""
    K, m, n = x.shape
    total = m * n
    centred = x - x.mean(axis=-1, keepdims=True)
    spectrum = np.fft.rfft(centred, n=padded, axis=-1)
    spectrum *= np.conjugate(spectrum)
    acov = np.fft.irfft(spectrum, n=padded, axis=-1)[..., :n] / n  # [K, m, n]
    mean_var = acov[:, :, 0].mean(axis=1) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus = var_plus + x.mean(axis=-1).var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # constant entries (var+ = 0) are set apart below
        rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]  # [K, n]
    rho[:, 0] = 1.0
    # the pairs the initial positive sequence looks at: j = 0 .. last_pair, pair j = rho(2j) + rho(2j + 1)
    last_pair = max((n - 3) // 2, 0)
    pairs = rho[:, 0 : 2 * last_pair + 2 : 2] + rho[:, 1 : 2 * last_pair + 2 : 2]  # [K, last_pair + 1]
    # the sequence stops at the first pair j < last_pair that is not positive (or at last_pair); j_end is where it
    # stopped: the pairs before it are summed, and its even term is kept if positive (or if its pair is >= 0)
    not_positive = np.concatenate([~(pairs[:, :last_pair] > 0), np.ones((K, 1), dtype=bool)], axis=1)
    j_end = not_positive.argmax(axis=1)  # the first True: at the latest, last_pair
    monotone = np.minimum.accumulate(pairs, axis=1)
    before = np.arange(pairs.shape[1])[None, :] < j_end[:, None]
    summed = np.where(before, monotone, 0.0).sum(axis=1)
    rows = np.arange(K)
    even = rho[rows, 2 * j_end]
    kept = (even > 0) | (pairs[rows, j_end] >= 0)  # at j_end = 0 the even term is rho(0) = 1
    tau = -1.0 + 2.0 * summed + np.where(kept, even, 0.0)
    tau = np.maximum(tau, 1.0 / np.log10(total))
    ess = total / tau
    # as ArviZ: NaN where an autocorrelation the sequences read is NaN (squares that overflow)
    read = np.arange(n)[None, :] < np.minimum(2 * j_end + 2, n)[:, None]
    ess[np.isnan(np.where(read, rho, 0.0)).any(axis=1)] = np.nan
    constant = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) < np.finfo(float).resolution
    return np.where(constant, float(total), ess)
