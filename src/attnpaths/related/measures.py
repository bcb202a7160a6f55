"""R4: attention as an operator on probability measures (Vuckovic, Baratin, Tachet des Combes 2020, 2021).

For a measure ``mu`` on token space and a query ``q`` (rel-meas):
``Gamma(mu)(q) = int exp(q^T A x) V x dmu(x) / int exp(q^T A x) dmu(x)``.
For an empirical measure ``mu = (1/n) sum_j delta_{x_j}`` this is softmax attention over the tokens ``x_j``, so
the output depends on the tokens only through ``mu``: duplicating every token changes nothing. [SRC] on a
compact domain the operator is Lipschitz; [SRC-2] in the 1-Wasserstein distance ``W1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from .._validation import as_float64_array, as_float64_tensor, increasing_ints, numpy_generator, positive_int
from ..attention_operators import bilinear_attention


def measure_attention(queries, atoms, A, V) -> np.ndarray:
    """``Gamma(mu)(q)`` (rel-meas) for the uniform empirical measure on ``atoms``.

    Args:
        queries: ``[Q, d]``; atoms: ``[n, d]``; A, V: ``[d, d]``.

    Returns:
        ``[Q, d]``.
    """
    atoms = as_float64_array(atoms, "atoms")
    V = as_float64_array(V, "V")
    out = bilinear_attention(
        as_float64_tensor(queries, "queries")[None],
        as_float64_tensor(atoms, "atoms")[None],
        torch.from_numpy(atoms @ V.T)[None],
        as_float64_tensor(A, "A"),
    )
    return out[0].numpy()


def wasserstein1_uniform(a, b) -> float:
    """Exact ``W1`` between the uniform empirical measures on ``a`` ``[n, d]`` and ``b`` ``[n, d]`` (optimal
    matching with Euclidean cost, ``scipy.optimize.linear_sum_assignment``)."""
    a, b = as_float64_array(a, "a"), as_float64_array(b, "b")
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"a and b must both have shape [n, d], got {a.shape} and {b.shape}")
    cost = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=-1)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


@dataclass(frozen=True)
class MeasureResult:
    """R4. ``duplication_diff``: the largest change of ``Gamma`` when every token is duplicated (over all sizes and
    trials); ``ratio_max[i]`` and ``ratio_mean[i]`` the largest and the mean of
    ``max_q |Gamma(mu)(q) - Gamma(nu)(q)| / W1(mu, nu)`` over ``num_trials`` pairs of independent uniform samples
    of ``num_atoms[i]`` points in ``[-1, 1]^2``; ``w1_mean[i]`` and ``delta_mean[i]`` the mean ``W1`` and mean
    output change; ``w1[i, t]`` and ``delta[i, t]`` the values of trial ``t`` (independent trials)."""

    num_atoms: np.ndarray
    duplication_diff: float
    ratio_max: np.ndarray
    ratio_mean: np.ndarray
    w1_mean: np.ndarray
    delta_mean: np.ndarray
    w1: np.ndarray
    delta: np.ndarray


def measure_lipschitz_experiment(
    rng, *, num_atoms=(8, 32, 128, 512), num_trials: int = 30, num_queries: int = 16
) -> MeasureResult:
    """Duplication invariance and the ``W1``-Lipschitz ratio of (rel-meas) on ``[-1, 1]^2`` as ``n`` grows.

    ``A`` and ``V`` are drawn once (Gaussian, rescaled to spectral norm 1); each trial draws two independent
    uniform samples ``mu``, ``nu`` of ``n`` points and ``num_queries`` queries uniform in the square.
    """
    numpy_generator(rng)
    ns = increasing_ints(num_atoms, "num_atoms")
    trials, nq = positive_int(num_trials, "num_trials"), positive_int(num_queries, "num_queries")
    d = 2
    A, V = (m / np.linalg.norm(m, 2) for m in rng.standard_normal((2, d, d)))
    dup, w1, delta = 0.0, np.zeros((ns.size, trials)), np.zeros((ns.size, trials))
    for i, n in enumerate(ns):
        for t in range(trials):
            q = rng.uniform(-1, 1, (nq, d))
            mu, nu = rng.uniform(-1, 1, (2, int(n), d))
            out_mu = measure_attention(q, mu, A, V)
            dup = max(dup, float(np.max(np.abs(measure_attention(q, np.concatenate([mu, mu]), A, V) - out_mu))))
            delta[i, t] = float(np.max(np.linalg.norm(measure_attention(q, nu, A, V) - out_mu, axis=1)))
            w1[i, t] = wasserstein1_uniform(mu, nu)
    ratio = delta / w1
    return MeasureResult(
        num_atoms=ns,
        duplication_diff=dup,
        ratio_max=ratio.max(axis=1),
        ratio_mean=ratio.mean(axis=1),
        w1_mean=w1.mean(axis=1),
        delta_mean=delta.mean(axis=1),
        w1=w1,
        delta=delta,
    )
