"""E1: the posterior of the latent as a sufficient, minimal and order-free representation of the tokens.

Claims [DERIVED, standard statistics] illustrated here, under ``y`` independent of ``X`` given ``z``:

* sufficiency: ``P(y | X) = int P(y | z) P(dz | X)``, so the Bayes predictor is a functional of ``P(z | X)``;
* minimality: the posterior is a function of every other sufficient statistic, so a richer statistic (all
  ``L d`` raw coordinates) cannot predict better;
* exchangeability makes ``P(z | X)`` invariant under permutations of the tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve

from .._validation import (
    as_float64_array,
    increasing_ints,
    nonnegative_real,
    numpy_generator,
    positive_int,
    positive_real,
)
from ..engine import single_threaded
from .latent_models import (
    concept_posterior,
    gaussian_posterior,
    random_concept_means,
    sample_concept_tokens,
    sample_gaussian_tokens,
)


def gaussian_risk_theory(readout, length, tau: float, sigma: float, label_noise: float):
    """Bayes risk of ``y = u^T z + sigma_y xi`` from the posterior of (M1) after ``L`` tokens (ex-risk-m1).

    ``R(L) = sigma_y^2 + |u|^2 tau^2 sigma^2 / (sigma^2 + L tau^2)``; with ``L = 1`` it is the risk of a
    predictor that only sees the first token.

    Args:
        readout: ``u`` ``[d]``; length: ``L`` (scalar or array).

    Returns:
        the risk, same shape as ``length``.
    """
    u = as_float64_array(readout, "readout")
    L = np.asarray(length, dtype=np.float64)
    return label_noise**2 + float(u @ u) * tau**2 * sigma**2 / (sigma**2 + L * tau**2)


@dataclass(frozen=True)
class GaussianRepresentationResult:
    """E1 on (M1): test risks of three predictors of ``y`` for every length ``L``.

    Arrays are ``[len(lengths)]``: ``risk_posterior`` (the posterior mean ``u^T mu_L``),
    ``risk_first_token`` (posterior from the first token only, a non-sufficient statistic),
    ``risk_flat_ls`` (least squares on all ``L d`` raw coordinates, fitted on an independent training set),
    their theory values, and the largest change of each prediction under a random permutation of the tokens
    (``perm_diff_posterior``, ``perm_diff_flat_ls``). ``sq_error_posterior``, ``sq_error_first_token`` and
    ``sq_error_flat_ls`` ``[len(lengths), num_sequences]`` are the squared test errors of each predictor on the
    same test sequences (for standard errors of the risks and of their paired differences).
    """

    lengths: np.ndarray
    risk_posterior: np.ndarray
    risk_posterior_theory: np.ndarray
    risk_first_token: np.ndarray
    risk_first_token_theory: np.ndarray
    risk_flat_ls: np.ndarray
    perm_diff_posterior: np.ndarray
    perm_diff_flat_ls: np.ndarray
    sq_error_posterior: np.ndarray
    sq_error_first_token: np.ndarray
    sq_error_flat_ls: np.ndarray


def _permute_tokens(rng, x):
    order = np.argsort(rng.random(x.shape[:2]), axis=1)
    return np.take_along_axis(x, order[:, :, None], axis=1)


def gaussian_representation_experiment(
    rng,
    *,
    lengths=(1, 4, 16, 64),
    num_sequences: int = 20000,
    readout=(1.0, -1.0, 0.5, 0.0),
    tau: float = 1.0,
    sigma: float = 2.0,
    label_noise: float = 0.1,
) -> GaussianRepresentationResult:
    """Run E1 on (M1) with ``y = u^T z + sigma_y xi`` (ex-risk-m1).

    For each ``L``, ``num_sequences`` training and ``num_sequences`` test sequences are drawn; risks are test
    mean squared errors. The least-squares fit (iii) solves the normal equations by Cholesky: the ``L d`` raw
    coordinates have covariance ``sigma^2 I + tau^2 (1 1^T) (x) I_d``, whose condition number
    ``1 + L tau^2 / sigma^2`` is small, so this is the least-squares solution up to rounding, at a fraction of the
    cost of an SVD.
    """
    numpy_generator(rng)
    lengths = increasing_ints(lengths, "lengths")
    n = positive_int(num_sequences, "num_sequences")
    u = as_float64_array(readout, "readout", ndim=1)
    tau, sigma = positive_real(tau, "tau"), positive_real(sigma, "sigma")
    label_noise = nonnegative_real(label_noise, "label_noise")
    d = u.shape[0]
    out = {k: [] for k in ("post", "first", "flat", "perm_post", "perm_flat")}
    with single_threaded(blas_only=True):
        for L in lengths:
            z_tr, x_tr = sample_gaussian_tokens(rng, n, int(L), d, tau, sigma)
            y_tr = z_tr @ u + label_noise * rng.standard_normal(n)
            z_te, x_te = sample_gaussian_tokens(rng, n, int(L), d, tau, sigma)
            y_te = z_te @ u + label_noise * rng.standard_normal(n)
            mean, _ = gaussian_posterior(x_te, tau, sigma)
            first, _ = gaussian_posterior(x_te[:, :1], tau, sigma)
            design = x_tr.reshape(n, -1)
            coef = solve(design.T @ design, design.T @ y_tr, assume_a="pos")
            flat = x_te.reshape(n, -1) @ coef
            out["post"].append((y_te - mean @ u) ** 2)
            out["first"].append((y_te - first @ u) ** 2)
            out["flat"].append((y_te - flat) ** 2)
            x_perm = _permute_tokens(rng, x_te)
            out["perm_post"].append(np.max(np.abs(gaussian_posterior(x_perm, tau, sigma)[0] - mean)))
            out["perm_flat"].append(np.max(np.abs(x_perm.reshape(n, -1) @ coef - flat)))
    sq = {k: np.array(out[k]) for k in ("post", "first", "flat")}
    return GaussianRepresentationResult(
        lengths=lengths,
        risk_posterior=sq["post"].mean(axis=1),
        risk_posterior_theory=gaussian_risk_theory(u, lengths, tau, sigma, label_noise),
        risk_first_token=sq["first"].mean(axis=1),
        risk_first_token_theory=np.full(lengths.shape, gaussian_risk_theory(u, 1, tau, sigma, label_noise)),
        risk_flat_ls=sq["flat"].mean(axis=1),
        perm_diff_posterior=np.array(out["perm_post"]),
        perm_diff_flat_ls=np.array(out["perm_flat"]),
        sq_error_posterior=sq["post"],
        sq_error_first_token=sq["first"],
        sq_error_flat_ls=sq["flat"],
    )


@dataclass(frozen=True)
class ConceptPosteriorResult:
    """E1 on (M2): classification of the concept by the posterior's mode.

    ``accuracy[i]`` and ``confidence[i]`` (mean largest posterior probability) for ``lengths[i]``;
    ``calibration_se[i] = sqrt(sum_n c_n (1 - c_n)) / N``, the standard deviation of ``accuracy - confidence``
    if the posterior is calibrated (the hits are then independent Bernoulli(``c_n``) given the confidences
    ``c_n``); ``accuracy_se[i] = sqrt(a (1 - a) / N)`` the binomial standard error of the accuracy over the
    ``N = num_sequences`` independent sequences; ``perm_diff[i]`` the largest change of the posterior under a
    permutation of the tokens; a reliability table pooled over all lengths: ``bin_confidence``,
    ``bin_accuracy``, ``bin_count`` per confidence bin (``bin_edges``); ``means`` the drawn concept means
    ``[K, d]``.
    """

    lengths: np.ndarray
    accuracy: np.ndarray
    confidence: np.ndarray
    calibration_se: np.ndarray
    accuracy_se: np.ndarray
    perm_diff: np.ndarray
    bin_edges: np.ndarray
    bin_confidence: np.ndarray
    bin_accuracy: np.ndarray
    bin_count: np.ndarray
    means: np.ndarray


def concept_posterior_experiment(
    rng,
    *,
    lengths=(1, 2, 4, 8, 16, 32),
    num_sequences: int = 20000,
    num_concepts: int = 5,
    dim: int = 3,
    sigma: float = 1.5,
    num_bins: int = 10,
) -> ConceptPosteriorResult:
    """Run E1 on (M2): the posterior (ex-post-m2), computed as attention, predicts the concept and is calibrated."""
    numpy_generator(rng)
    lengths = increasing_ints(lengths, "lengths")
    n = positive_int(num_sequences, "num_sequences")
    num_bins = positive_int(num_bins, "num_bins")
    sigma = positive_real(sigma, "sigma")
    means = random_concept_means(rng, num_concepts, dim)
    acc, conf, conf_se, perm, all_conf, all_hit = [], [], [], [], [], []
    for L in lengths:
        z, x = sample_concept_tokens(rng, n, int(L), means, sigma)
        post = concept_posterior(x, means, sigma)
        hit = post.argmax(axis=1) == z
        acc.append(hit.mean())
        top = post.max(axis=1)
        conf.append(top.mean())
        conf_se.append(np.sqrt(np.sum(top * (1.0 - top))) / n)
        perm.append(np.max(np.abs(concept_posterior(_permute_tokens(rng, x), means, sigma) - post)))
        all_conf.append(top)
        all_hit.append(hit)
    all_conf, all_hit = np.concatenate(all_conf), np.concatenate(all_hit)
    edges = np.linspace(1.0 / means.shape[0], 1.0, num_bins + 1)
    idx = np.clip(np.searchsorted(edges, all_conf, side="right") - 1, 0, num_bins - 1)
    count = np.bincount(idx, minlength=num_bins)
    with np.errstate(invalid="ignore"):
        bin_conf = np.bincount(idx, weights=all_conf, minlength=num_bins) / count
        bin_acc = np.bincount(idx, weights=all_hit.astype(float), minlength=num_bins) / count
    acc = np.array(acc)
    return ConceptPosteriorResult(
        lengths=lengths,
        accuracy=acc,
        confidence=np.array(conf),
        calibration_se=np.array(conf_se),
        accuracy_se=np.sqrt(acc * (1 - acc) / n),
        perm_diff=np.array(perm),
        bin_edges=edges,
        bin_confidence=bin_conf,
        bin_accuracy=bin_acc,
        bin_count=count,
        means=means,
    )
