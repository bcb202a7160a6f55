"""Theory scores of a trained model's heads that measure what pruning removes (sec-pruning-theory-scores).

The paper's head score (eq-head-score) reads only the order parameter ``U``, which depends on the frozen
attention and the data, never on the trained value weights. The scores here ask the theory what happens when a
head goes (eq-removal-score, eq-action-change, eq-action-gate, eq-loo-score), or apply the paper's score to the
trained path weights (eq-trained-overlap). Each is an importance (the larger, the later the head is pruned),
``[L, max(H)]`` with ``nan`` beyond a layer's heads.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .._validation import as_float64_tensor, positive_int
from ..head_models import head_model
from ..head_scoring import head_paths, head_scores
from ..kernels import kernel_from_scaled, scaled_features, shifted_cholesky
from ..paths import all_paths
from ..theory import CertificateWarning, TheorySolution, solve

#: The theory scores, in the chapter's order (``"theory"``: the paper's head score, eq-head-score).
THEORY_SCORES = ("theory", "theory_removal", "theory_action", "theory_gate", "theory_loo", "theory_trained")


def _per_head(heads, score) -> np.ndarray:
    """``[L, max(H)]`` of ``score(keep)`` for each head, ``keep`` the float64 ``[n_paths]`` indicator of the
    paths that avoid it (``nan`` beyond a layer's heads)."""
    through = head_paths(heads)
    out = np.full(through.shape[:2], np.nan)
    for l, H in enumerate(heads):
        for h in range(H):
            out[l, h] = score(torch.from_numpy((~through[l, h]).astype(np.float64)))
    return out


def removal_scores(solution: TheorySolution, features, y) -> np.ndarray:
    """Loss increase of the theory's predictor on held-out examples when a head's paths leave its kernel, the
    predictor's weights kept (eq-removal-score):

        f_h(x) = sum_mu K_h(x, x^mu) alpha_mu,   alpha = (K + T I)^{-1} y,   K_h = K(D_h U D_h),
        r_h = <(f_h(x) - y)^2> - <(f(x) - y)^2>,

    ``D_h`` the diagonal indicator of the paths that avoid head ``h``.

    Args:
        solution: the theory at its minimum on the training examples.
        features: ``[P', N0, n_paths]`` path features of the held-out examples; y: ``[P']`` their labels.

    Returns:
        float64 ``[L, max(H)]``.
    """
    X = scaled_features(features, solution.variances[0])
    labels = as_float64_tensor(y, "y", labels=True)
    if labels.shape != X.shape[:1]:
        raise ValueError(f"y must have shape [{X.shape[0]}], got {tuple(labels.shape)}")
    U = torch.as_tensor(solution.U)
    alpha = solution.dual_weights
    # f(x) = K(x, X) alpha = sum_{pi pi'} U_{pi pi'} A[x, pi, pi'] with A[x, pi, pi'] = sum_i X[x, i, pi] v[i, pi'],
    # v = sum_mu alpha_mu X^mu: every head's predictor from one [P', n, n] array, not a [P', P] kernel per head
    train = solution.training_features
    v = (alpha @ train.reshape(train.shape[0], -1)).reshape(train.shape[1:])  # [N0, n]
    routed = (X.transpose(1, 2) @ v).reshape(X.shape[0], -1)  # [P', n n]

    def loss(keep):
        f = routed @ (U * keep[:, None] * keep[None, :]).reshape(-1)
        return float(((f - labels) ** 2).mean())

    return _per_head(solution.heads, loss) - loss(torch.ones(U.shape[0], dtype=torch.float64))


def loo_scores(solution: TheorySolution) -> np.ndarray:
    """Closed-form leave-one-out error of the theory's predictor without a head, minus that with every head
    (eq-loo-score): with ``G = K + T I``, the prediction for ``x^mu`` from the others misses ``y^mu`` by
    ``[G^{-1} y]_mu / [G^{-1}]_{mu mu}``, so

        LOO(U) = (1/P) sum_mu ([G^{-1} y]_mu / [G^{-1}]_{mu mu})^2,     l_h = LOO(D_h U D_h) - LOO(U).

    Returns:
        float64 ``[L, max(H)]``.
    """
    U = torch.as_tensor(solution.U)
    X, y, T = solution.training_features, solution.training_labels, solution.temperature

    def loo(keep):
        inverse = torch.cholesky_inverse(
            shifted_cholesky(kernel_from_scaled(X, U * keep[:, None] * keep[None, :], X), T)
        )
        return float(((inverse @ y) / torch.diagonal(inverse)).pow(2).mean())

    return _per_head(solution.heads, loo) - loo(torch.ones(U.shape[0], dtype=torch.float64))


def action_gate_gradients(solution: TheorySolution) -> np.ndarray:
    """First-order change of the minimal action when a head goes (eq-action-gate): a gate ``g_h`` multiplies the
    features of the head's paths; at the minimum the action is stationary in ``U``, so

        dS*/dg_h = tr(G^{-1} dK) - alpha^T dK alpha,     dK = K(M_h U + U M_h),  M_h = I - D_h,

    and ``S*(g_h = 0) - S*(1) ~ -dS*/dg_h``, the score returned.

    Returns:
        float64 ``[L, max(H)]``.
    """
    U = torch.as_tensor(solution.U)
    X, chol, alpha = solution.training_features, solution.kernel_cholesky, solution.dual_weights
    P, n0, n = X.shape
    # dK = sum_i X_i M X_i^T is linear in M = dU: tr(G^{-1} dK) - alpha^T dK alpha = sum_{ab} M_ab Q_ab with
    # Q = sum_i X_i^T G^{-1} X_i - w^T w, w = alpha^T X_i (rows i): one [n, n] matrix, not a [P, P] kernel per head
    whitened = torch.linalg.solve_triangular(chol, X.reshape(P, n0 * n), upper=False).reshape(P * n0, n)
    w = (alpha @ X.reshape(P, n0 * n)).reshape(n0, n)
    Q = whitened.T @ whitened - w.T @ w

    def gradient(keep):
        through = 1.0 - keep
        return float((Q * (through[:, None] * U + U * through[None, :])).sum())

    return -_per_head(solution.heads, gradient)


def action_changes(
    features, y, solution: TheorySolution, *, max_iterations: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """``Delta S_h = min S(without h) - min S`` (eq-action-change): the theory solved again on the paths that
    avoid head ``h`` (a network with ``H_l - 1`` heads in layer ``l``), at the solution's widths, variances and
    temperature, started from the minimum with the head's entries taken out.

    Args:
        features: ``[P, N0, n_paths]`` the path features ``solution`` was solved on; y: ``[P]``.
        solution: the theory at its minimum.

    Returns:
        ``(scores [L, max(H)], certified [L, max(H)] bool)``: a head whose solve does not certify a minimum gets
        its uncertified value, marked ``False``.
    """
    max_iterations = positive_int(max_iterations, "max_iterations")
    xi = as_float64_tensor(features, "features")
    heads = solution.heads
    through = head_paths(heads)
    scores = np.full(through.shape[:2], np.nan)
    certified = np.zeros(through.shape[:2], dtype=bool)
    for l, H in enumerate(heads):
        if H < 2:
            continue
        for h in range(H):
            reduced = heads[:l] + (H - 1,) + heads[l + 1 :]
            # started from the minimum with the head's rows and columns taken out: a few Newton steps
            initial = [U[np.ix_(keep, keep)] for U, keep in zip(solution.U_layers, _layer_paths_avoiding(heads, l, h))]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CertificateWarning)
                without = solve(
                    xi[:, :, torch.from_numpy(~through[l, h])],
                    y,
                    heads=reduced,
                    width=solution.widths,
                    temperature=solution.temperature,
                    variances=solution.variances,
                    initial=initial,
                    max_iterations=max_iterations,
                    on_failure="warn",
                )
            scores[l, h] = without.action - solution.action
            certified[l, h] = without.converged
    return scores, certified


def _layer_paths_avoiding(heads, layer: int, head: int) -> list[np.ndarray]:
    """For each ``U_l`` (indexed by the partial paths ``(h_l, ..., h_L)``), the indices of those that avoid head
    ``head`` of layer ``layer`` (0-based)."""
    out = []
    for l in range(len(heads)):
        partial = np.array(all_paths(heads[l:]))
        out.append(np.flatnonzero(partial[:, layer - l] != head) if layer >= l else np.arange(len(partial)))
    return out


def trained_path_scores(model) -> np.ndarray:
    """The paper's head score (eq-head-score) applied to the trained model's own path-weight overlaps
    (eq-trained-overlap): ``U^trained_{pi pi'} = w_pi . w_pi' / N0`` with the path weights ``w_pi`` of
    :meth:`~attnpaths.head_models.FrozenHeadModel.path_weights`.

    Args:
        model: a trained model without biases, or its :class:`~attnpaths.head_models.FrozenHeadModel`.

    Returns:
        float64 ``[L, max(H)]``, normalised to a largest score of 1.
    """
    view = head_model(model)
    w = view.path_weights()
    return head_scores((w @ w.T / view.input_width).numpy(), view.heads)
