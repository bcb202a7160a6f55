"""E3: empirical risk minimisation of the attention parameter ``W`` in model (M3).

Objectives [DERIVED; the paper's exact objectives could not be checked]:

* supervised (ex-erm-sup): ``min_W (1/N) sum_i (Attn_W(q_i; X_i) - y_i)^2`` with ``q_i ~ N(0, Sigma)`` and
  ``y_i = z_i^T q_i + sigma_y xi_i``;
* masked-value prediction (ex-erm-ssl): hide ``v_1``, use ``k_1`` as the query over tokens ``2..L``:
  ``min_W (1/N) sum_i (Attn_W(k_{i1}; X_{i,2:L}) - v_{i1})^2``.

Both have the same population minimiser as ``L -> inf``, ``W = Sigma^{-1}`` (ex-tilt); at finite ``L`` the
minimiser ``W*_L`` is a softened (higher-temperature) version of it.

The gradient used by L-BFGS is (ex-grad): ``d Attn / dW = sum_l a_l (v_l - Attn) q k_l^T``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize
from tqdm import tqdm

from .._validation import as_float64_array
from ..attention import softmax_over_keys
from ._checks import as_tensor, check_rng, int_grid, nonnegative, positive_int
from .latent_models import sample_linear_key_value

MODES = ("supervised", "masked")


@dataclass(frozen=True)
class AttentionRegressionData:
    """``N`` regression examples for attention: ``queries`` ``[N, d]``, ``keys`` ``[N, L, d]``,
    ``values`` ``[N, L]`` (the context) and ``targets`` ``[N]``, all float64 tensors."""

    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    targets: torch.Tensor

    def __post_init__(self):
        for name in ("queries", "keys", "values", "targets"):
            object.__setattr__(self, name, as_tensor(getattr(self, name), name))
        if self.keys.ndim != 3:
            raise ValueError(f"keys must have shape [N, L, d], got {tuple(self.keys.shape)}")
        n, L, d = self.keys.shape
        if self.queries.shape != (n, d) or self.values.shape != (n, L) or self.targets.shape != (n,):
            raise ValueError(
                f"expected queries [N, d], keys [N, L, d], values [N, L], targets [N]; got {tuple(self.queries.shape)}, "
                f"{tuple(self.keys.shape)}, {tuple(self.values.shape)}, {tuple(self.targets.shape)}"
            )


def sample_task(rng, mode: str, num_sequences: int, length: int, key_cov, value_noise: float,
                label_noise: float = 0.1) -> AttentionRegressionData:
    """Draw ``N`` examples of the supervised (ex-erm-sup) or masked (ex-erm-ssl) task on (M3).

    ``length`` is the number of tokens drawn per sequence: the supervised context has ``L`` tokens and an
    extra query ``q ~ N(0, Sigma)``; the masked context has ``L - 1`` tokens (token 1 is the query).
    ``label_noise`` is used by the supervised task only.
    """
    check_rng(rng)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    n, L = positive_int(num_sequences, "num_sequences"), positive_int(length, "length")
    label_noise = nonnegative(label_noise, "label_noise")
    if mode == "masked":
        if L < 2:
            raise ValueError(f"length must be >= 2 for the masked task, got {L}")
        _, keys, values = sample_linear_key_value(rng, n, L, key_cov, value_noise)
        data = (keys[:, 0], keys[:, 1:], values[:, 1:], values[:, 0])
    else:
        z, keys, values = sample_linear_key_value(rng, n, L, key_cov, value_noise)
        cov = as_float64_array(key_cov, "key_cov")
        queries = rng.standard_normal((n, cov.shape[0])) @ np.linalg.cholesky(cov).T
        targets = np.einsum("nd,nd->n", queries, z) + label_noise * rng.standard_normal(n)
        data = (queries, keys, values, targets)
    return AttentionRegressionData(*(torch.from_numpy(np.ascontiguousarray(a)) for a in data))


def attention_risk_and_gradient(W, data: AttentionRegressionData):
    """Empirical risk ``(1/N) sum_i (Attn_W(q_i; X_i) - y_i)^2`` and its gradient in ``W`` (ex-grad).

    Args:
        W: ``[d, d]``; data: the examples.

    Returns:
        ``(risk, gradient)``: a float and a ``[d, d]`` numpy array.
    """
    W = as_tensor(W, "W")
    d = data.keys.shape[-1]
    if W.shape != (d, d):
        raise ValueError(f"W must have shape [{d}, {d}], got {tuple(W.shape)}")
    # (ex-attn) with one query per sequence, written with batched products (this is the hot loop of the fits)
    scores = torch.bmm(data.keys, (data.queries @ W).unsqueeze(-1))  # [N, L, 1]: q^T W k_l
    a = softmax_over_keys(scores)[..., 0]  # [N, L]
    out = (a * data.values).sum(-1)
    resid = out - data.targets
    coeff = a * (data.values - out[:, None]) * resid[:, None]  # [N, L]
    grad = data.queries.T @ torch.bmm(coeff.unsqueeze(1), data.keys)[:, 0] * (2.0 / resid.shape[0])
    return float(resid.pow(2).mean()), grad.numpy()


def attention_risk(W, data: AttentionRegressionData) -> float:
    """Empirical risk of ``W`` on ``data`` (ex-erm-sup / ex-erm-ssl)."""
    return attention_risk_and_gradient(W, data)[0]


def fit_attention_parameter(data: AttentionRegressionData, *, initial=None, max_iter: int = 500,
                            gradient_tol: float = 1e-9, relative_tol: float = 1e-14) -> np.ndarray:
    """Minimise the empirical risk over ``W`` by L-BFGS from ``initial`` (default ``W = 0``), until every
    gradient entry is below ``gradient_tol`` or the relative decrease of the risk is below ``relative_tol``.

    Returns:
        the fitted ``W`` ``[d, d]``.
    """
    d = data.keys.shape[-1]
    w0 = np.zeros(d * d) if initial is None else as_float64_array(initial, "initial").reshape(-1)
    if w0.size != d * d:
        raise ValueError(f"initial must have shape [{d}, {d}], got {np.shape(initial)}")
    max_iter = positive_int(max_iter, "max_iter")

    def objective(flat):
        risk, grad = attention_risk_and_gradient(flat.reshape(d, d), data)
        return risk, grad.reshape(-1)

    fit = minimize(objective, w0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter, "gtol": gradient_tol, "ftol": relative_tol})
    return fit.x.reshape(d, d)


@dataclass(frozen=True)
class ErmResult:
    """E3 for one objective (``mode``).

    * ``W_reference[j]`` ``[d, d]``: ``W*_L``, the minimiser of the risk on the ``test_size`` test sequences of
      length ``lengths[j]`` (so that every excess below is >= 0 up to the optimiser's tolerance);
    * ``approximation[j] = |W*_L - Sigma^{-1}|_F`` and ``temperature[j] = <W*_L, Sigma^{-1}> / |Sigma^{-1}|^2``
      (the ``c_L`` of ``W*_L ~ c_L Sigma^{-1}``);
    * ``excess[j, k, r] = R(W_hat_N) - R(W*_L)`` on the test set, for ``N = sample_sizes[k]``, repetition ``r``;
      ``excess_mean[j, k]`` its mean over repetitions.
    """

    mode: str
    lengths: np.ndarray
    sample_sizes: np.ndarray
    W_reference: np.ndarray
    approximation: np.ndarray
    temperature: np.ndarray
    excess: np.ndarray
    excess_mean: np.ndarray


def erm_experiment(rng, mode: str, *, lengths, sample_sizes, repetitions: int, test_size: int, key_cov,
                   value_noise: float, label_noise: float = 0.1, progress: bool = False) -> ErmResult:
    """Run E3: approximation term ``|W*_L - Sigma^{-1}|`` and excess test risk of ERM versus ``N`` and ``L``.

    For each ``L`` a large test set is drawn and ``W*_L`` is fitted on it; the excess risk of ``W_hat_N``
    (fitted on ``N`` fresh sequences) is ``R_test(W_hat_N) - R_test(W*_L)``. Taking the reference minimiser on
    the test set itself pairs the two risks: the excess is a non-negative quadratic form in
    ``W_hat_N - W*_L`` instead of a difference of two noisy risks (the per-example loss is heavy-tailed,
    because queries in the tails of ``N(0, Sigma)`` have a tiny effective sample size). The price is an
    in-sample optimism of ``R_test(W*_L)`` of order ``1 / test_size``.
    """
    check_rng(rng)
    lengths = int_grid(lengths, "lengths", minimum=2)
    sizes = int_grid(sample_sizes, "sample_sizes")
    reps = positive_int(repetitions, "repetitions")
    cov = as_float64_array(key_cov, "key_cov")
    target = np.linalg.inv(cov)
    w_ref, excess = [], np.zeros((lengths.size, sizes.size, reps))
    test_size = positive_int(test_size, "test_size")
    bar = tqdm(total=lengths.size * (1 + sizes.size * reps), desc=f"E3 {mode} fits", disable=not progress)
    for j, L in enumerate(lengths):
        task = dict(mode=mode, length=int(L), key_cov=cov, value_noise=value_noise, label_noise=label_noise)
        test = sample_task(rng, num_sequences=test_size, **task)
        w_star = fit_attention_parameter(test)
        bar.update()
        risk_star = attention_risk(w_star, test)
        for k, n in enumerate(sizes):
            for r in range(reps):
                w_hat = fit_attention_parameter(sample_task(rng, num_sequences=int(n), **task))
                excess[j, k, r] = attention_risk(w_hat, test) - risk_star
                bar.update()
        w_ref.append(w_star)
    bar.close()
    w_ref = np.array(w_ref)
    return ErmResult(
        mode=mode, lengths=lengths, sample_sizes=sizes, W_reference=w_ref,
        approximation=np.linalg.norm(w_ref - target, axis=(1, 2)),
        temperature=np.einsum("jab,ab->j", w_ref, target) / np.sum(target**2),
        excess=excess, excess_mean=excess.mean(axis=2),
    )
