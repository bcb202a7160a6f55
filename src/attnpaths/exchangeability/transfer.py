"""E4: from masked pretraining to a downstream task, a condition-number proxy [DERIVED].

This is a proxy for the paper's condition number, whose definition could not be checked. In (M3) with
``Sigma = diag(1, 1/kappa)``, masked-value prediction sees the latent only through ``z^T k`` with
``k ~ N(0, Sigma)``: an error ``delta`` in the recovered ``z`` costs ``delta^T Sigma delta`` in pretraining but
``(u^T delta)^2`` downstream for ``y = u^T z``, so the worst-case amplification is ``kappa(Sigma)``.

The attention is frozen at the population pretraining minimiser ``W = Sigma^{-1}``; the representation is
``r(X) = [Attn(sqrt(lambda_i) e_i; X)]_i`` (ex-rep), one query per eigen-direction; a linear least-squares
head is fitted on half of the sequences and tested on the other half.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import increasing_reals, int_at_least, nonnegative_real, numpy_generator
from .estimators import predicted_attention_mse


def _diag_cov(kappa: float) -> np.ndarray:
    return np.diag([1.0, 1.0 / kappa])


def predicted_transfer_ratio(condition_numbers, value_noise: float) -> np.ndarray:
    """Weak-over-strong downstream excess predicted by the large-L error (ex-mse) [DERIVED].

    With ``Sigma = diag(1, 1/kappa)`` and ``W = Sigma^{-1}``, the estimate of ``z_i`` is ``r_i / sqrt(lambda_i)``
    with variance ``e (lambda_i + tr Sigma + sigma_v^2) / (L lambda_i)``; the ratio of the two variances is
    ``kappa (1/kappa + tr Sigma + sigma_v^2) / (1 + tr Sigma + sigma_v^2)`` (independent of ``L``).
    """
    kappas = increasing_reals(condition_numbers, "condition_numbers")
    value_noise = nonnegative_real(value_noise, "value_noise")
    out = []
    for kappa in kappas:
        cov = _diag_cov(kappa)
        W = np.linalg.inv(cov)
        var = [
            predicted_attention_mse(W, np.sqrt(cov[i, i]) * np.eye(2)[i], cov, value_noise, 1.0) / cov[i, i]
            for i in range(2)
        ]
        out.append(var[1] / var[0])
    return np.array(out)


@dataclass(frozen=True)
class TransferResult:
    """E4. For each ``condition_numbers[c]``: ``downstream_excess[c, j]`` the test mean squared error of the
    linear head's prediction of ``z_j`` (j = 0 strong, j = 1 weak direction), ``ratio[c]`` weak / strong,
    ``ratio_predicted[c]`` from (ex-mse), and ``pretrain_excess[c]`` the masked-prediction excess
    ``E[(Attn_W(k_1; X_{2:L}) - z^T k_1)^2]``. The per-sequence squared errors behind them,
    ``downstream_sq[c, i, j]`` on the held-out half and ``pretrain_sq[c, i]`` on all sequences, give standard
    errors; every ``kappa`` uses the same draws, so differences across ``kappa`` are paired."""

    condition_numbers: np.ndarray
    downstream_excess: np.ndarray
    ratio: np.ndarray
    ratio_predicted: np.ndarray
    pretrain_excess: np.ndarray
    downstream_sq: np.ndarray
    pretrain_sq: np.ndarray


def transfer_experiment(
    rng,
    *,
    condition_numbers=(1, 2, 4, 8, 16),
    length: int = 512,
    num_sequences: int = 3000,
    value_noise: float = 0.5,
    label_noise: float = 0.05,
) -> TransferResult:
    """Run E4: downstream excess in the strong and weak directions and the pretraining excess versus ``kappa``.

    Every ``kappa`` uses the same standard-normal draws (common random numbers): whitened keys ``g_l``, latents
    ``z``, value noise ``eps_l`` and label noise ``xi``, with keys ``k_l = Sigma^{1/2} g_l``. With
    ``W = Sigma^{-1}`` the scores do not depend on ``kappa``: the representation query ``sqrt(lambda_i) e_i``
    scores token ``l`` by ``g_{l,i}``, and the masked query ``k_1`` by ``g_1^T g_l``. The values
    ``v_l = sum_i z_i sqrt(lambda_i) g_{l,i} + sigma_v eps_l`` are linear in the draws, so every attention
    read-out is ``sum_i z_i sqrt(lambda_i) A_i + sigma_v E`` with the weighted sums ``A_i = sum_l a_l g_{l,i}``
    and ``E = sum_l a_l eps_l``, computed once (ex-attn, ex-rep). The comparison across ``kappa`` is then
    paired, and costs one pass over the tokens.
    """
    numpy_generator(rng)
    kappas = increasing_reals(condition_numbers, "condition_numbers")
    L, n = int_at_least(length, "length", 2), int_at_least(num_sequences, "num_sequences", 8)
    value_noise = nonnegative_real(value_noise, "value_noise")
    label_noise = nonnegative_real(label_noise, "label_noise")
    half = n // 2
    z = rng.standard_normal((n, 2))
    g = rng.standard_normal((n, 2, L))  # whitened keys, coordinate-major
    eps = rng.standard_normal((n, L))
    xi = rng.standard_normal((n, 2))
    # scores of the three queries: the representation queries (coordinates of g) and the masked query k_1
    scores = np.concatenate([g, np.einsum("nd,ndl->nl", g[:, :, 0], g)[:, None, :]], axis=1)  # [n, 3, L]
    scores[:, 2, 0] = -np.inf  # the masked query does not attend to its own token
    scores -= scores.max(axis=2, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=2, keepdims=True)
    mixed_keys = np.matmul(weights, g.transpose(0, 2, 1))  # [n, 3, 2]: A_i per query
    mixed_noise = np.einsum("nql,nl->nq", weights, eps)  # [n, 3]: E per query
    down, pre = [], []
    for kappa in kappas:
        root = np.sqrt(np.diag(_diag_cov(kappa)))  # sqrt(lambda_i)
        readout = np.einsum("ni,nqi->nq", z * root, mixed_keys) + value_noise * mixed_noise  # [n, 3]
        design = np.column_stack([np.ones(n), readout[:, :2]])
        y = z + label_noise * xi
        coef, *_ = np.linalg.lstsq(design[:half], y[:half], rcond=None)
        down.append((design[half:] @ coef - z[half:]) ** 2)
        masked_target = np.sum(z * root * g[:, :, 0], axis=1)  # z^T k_1
        pre.append((readout[:, 2] - masked_target) ** 2)
    down_sq, pre_sq = np.array(down), np.array(pre)
    down = down_sq.mean(axis=1)
    return TransferResult(
        condition_numbers=kappas,
        downstream_excess=down,
        ratio=down[:, 1] / down[:, 0],
        ratio_predicted=predicted_transfer_ratio(kappas, value_noise),
        pretrain_excess=pre_sq.mean(axis=1),
        downstream_sq=down_sq,
        pretrain_sq=pre_sq,
    )
