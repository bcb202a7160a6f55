"""The action S(U) of the order parameters (eq-action, eq-entropy, eq-readout) and its derivatives.

Notation as in (eq-entropy): ``heads = (H_1, ..., H_L)``; ``widths = (N_1, ..., N_L, N_a)`` with ``N_l`` the width
of the input of layer ``l`` and ``N_a`` the readout width; ``variances = (s0, s1, ..., sL, sa)``.
The order parameters are ``U_a`` (a scalar, eliminated in closed form, eq-readout) and the symmetric positive-definite
matrices ``U_L, ..., U_1``; ``U_l`` has linear size ``n_l = H_l H_{l+1} ... H_L`` with the layer-``l`` head the
slowest index. ``U_1`` (size ``n_paths``) enters the kernel.

``S(U) = S_ent(U) + S_en(U_1)`` with

* ``S_en = log det(K(U_1) + T I) + y^T (K(U_1) + T I)^{-1} y``
* ``S_ent = N_a [U_a/sa - log U_a] + N_L [Tr U_L / (sL U_a) - log det U_L + H_L log U_a]
  + sum_{l<L} N_l [Tr(U_{l+1}^{-1} Utilde_l) / s_l - log det U_l + H_l log det U_{l+1}]``

where ``Utilde_l`` is the partial trace of ``U_l`` over the layer-``l`` head index. No constants are added
and nothing is divided by a width (the authors' code divides the loss by the largest width, which does not
move the minimum).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.linalg.lapack import dtrtri as triangular_inverse

from ._energy_routes import EnergyEvaluator, EnergyPoint, SymmetricBasis
from .attention import HeadCounts
from .kernels import kernel_from_scaled, shifted_cholesky

__all__ = [
    "Architecture",
    "EnergyEvaluator",
    "EnergyPoint",
    "EnergyTerms",
    "EntropyTerms",
    "SymmetricBasis",
    "energy",
    "entropy",
    "entropy_derivatives",
    "entropy_terms",
    "gp_order_parameters",
    "partial_trace_over_head",
    "pre_kernel_tensor",
    "readout_order_parameter",
    "symmetrized",
]


@dataclass(frozen=True)
class Architecture(HeadCounts):
    """Validated sizes of the theory: heads ``(H_1..H_L)``, widths ``(N_1..N_L, N_a)``, variances
    ``(s0, s1..sL, sa)``. Widths are all finite or all ``inf`` (the GP limit). ``num_layers`` and ``num_paths``
    come from :class:`~attnpaths.attention.HeadCounts`."""

    heads: tuple[int, ...]
    widths: tuple[float, ...]
    variances: tuple[float, ...]

    @property
    def gp_limit(self) -> bool:
        """Whether the widths are infinite (the GP limit, eq-gp)."""
        return math.isinf(self.widths[0])

    def layer_size(self, layer: int) -> int:
        """Linear size ``n_l = H_l ... H_L`` of ``U_l`` (``layer`` is 1-based)."""
        return math.prod(self.heads[layer - 1 :])


def gp_order_parameters(arch: Architecture) -> tuple[list[torch.Tensor], float]:
    """GP-limit values (eq-gp): ``U_a = sa``, ``U_l = sa * s_l * ... * s_L * I``.

    Returns:
        ``([U_1, ..., U_L], U_a)`` with ``U_l`` of shape ``[n_l, n_l]``.
    """
    s = arch.variances
    sa = s[-1]
    layers = []
    for layer in range(1, arch.num_layers + 1):
        scale = sa * math.prod(s[layer : arch.num_layers + 1])
        layers.append(torch.eye(arch.layer_size(layer), dtype=torch.float64) * scale)
    return layers, sa


def readout_order_parameter(U_L: torch.Tensor, arch: Architecture) -> torch.Tensor:
    """Closed-form ``U_a`` (eq-readout), the positive root of ``dS/dU_a = 0``:

    ``U_a = (-beta + sqrt(beta^2 + 4 gamma)) / 2``, ``beta = sa (H_L N_L / N_a - 1)``,
    ``gamma = N_L sa Tr(U_L) / (N_a sL)``.

    Args:
        U_L: ``[H_L, H_L]`` order parameter of the last layer.
    """
    H_L, N_L, N_a = arch.heads[-1], arch.widths[-2], arch.widths[-1]
    sL, sa = arch.variances[-2], arch.variances[-1]
    beta = sa * (H_L * N_L / N_a - 1.0)
    gamma = N_L * sa * torch.diagonal(U_L, dim1=-2, dim2=-1).sum(dim=-1) / (N_a * sL)
    return (-beta + torch.sqrt(beta * beta + 4.0 * gamma)) / 2.0


def partial_trace_over_head(U: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``Utilde[rho, rho'] = sum_h U[(h, rho), (h, rho')]`` with ``h`` the slowest index (eq-entropy).
    ``U`` may carry leading batch axes: ``[..., n, n] -> [..., n / H, n / H]``."""
    rest = U.shape[-1] // num_heads
    return U.reshape(*U.shape[:-2], num_heads, rest, num_heads, rest).diagonal(dim1=-4, dim2=-2).sum(dim=-1)


def _logdet_pd(U: torch.Tensor) -> torch.Tensor:
    return 2.0 * torch.log(torch.diagonal(torch.linalg.cholesky(U), dim1=-2, dim2=-1)).sum(dim=-1)


def _trace(U: torch.Tensor) -> torch.Tensor:
    return torch.diagonal(U, dim1=-2, dim2=-1).sum(dim=-1)


def entropy(
    U_layers: list[torch.Tensor],
    arch: Architecture,
    U_a: torch.Tensor | None = None,
    factors: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """Entropic part ``S_ent`` of the action (eq-entropy). Differentiable in torch.

    Args:
        U_layers: ``[U_1, ..., U_L]``, symmetric positive definite, ``U_l`` of shape ``[..., n_l, n_l]`` (leading
            batch axes allowed, the same for every layer).
        U_a: the readout's order parameter, ``[...]``; default: its closed form (eq-readout) at ``U_L``, where ``S_ent``
            is stationary in ``U_a``.
        factors: optional lower Cholesky factors ``F_l`` of the ``U_l`` (``U_l = F_l F_l^T``, same shapes): then no
            ``U_l`` is factorised again (``log det U_l = 2 sum_i log F_ii``, and the coupling of the layers is
            ``Tr(U_{l+1}^{-1} Utilde_l) = sum_h |F_{l+1}^{-1} F_l[rows of head h]|^2``).

    Returns:
        ``[...]`` (a scalar tensor without batch axes).
    """
    L = arch.num_layers
    s, N, H = arch.variances, arch.widths, arch.heads
    U_L = U_layers[-1]
    if U_a is None:
        U_a = readout_order_parameter(U_L, arch)
    if factors is None:
        logdets = [_logdet_pd(U) for U in U_layers]
    else:
        logdets = [2.0 * torch.log(torch.diagonal(F, dim1=-2, dim2=-1)).sum(dim=-1) for F in factors]
    log_U_a = torch.log(U_a)
    value = N[-1] * (U_a / s[-1] - log_U_a)
    value = value + N[L - 1] * (_trace(U_L) / (s[L] * U_a) - logdets[L - 1] + H[L - 1] * log_U_a)
    for layer in range(1, L):  # layers 1..L-1
        if factors is None:
            reduced = partial_trace_over_head(U_layers[layer - 1], H[layer - 1])
            cross = _trace(torch.linalg.solve(U_layers[layer], reduced))
        else:
            F, G = factors[layer - 1], factors[layer]
            m = G.shape[-1]
            rows = F.reshape(*F.shape[:-2], H[layer - 1], m, F.shape[-1])  # [..., h, m, n_l]
            cross = torch.linalg.solve_triangular(G.unsqueeze(-3), rows, upper=False).square().sum(dim=(-3, -2, -1))
        value = value + N[layer - 1] * (cross / s[layer] - logdets[layer - 1] + H[layer - 1] * logdets[layer])
    return value


@dataclass(frozen=True)
class EnergyTerms:
    """The energy ``S_en`` at ``U_1`` with its derivatives with respect to the full matrix ``U_1``.

    ``gradient[a, b] = dS_en/dU_ab`` and ``hessian[a, b, c, d] = d^2 S_en / dU_ab dU_cd`` treat the ``n^2``
    entries as independent (the chain rule to any parametrisation of symmetric matrices is then exact).
    """

    value: float
    gradient: torch.Tensor | None
    hessian: torch.Tensor | None


def pre_kernel_tensor(X: torch.Tensor) -> torch.Tensor:
    """``C[p, q, a, b] = sum_i X[p,i,a] X[q,i,b]`` as a ``[P*P, n*n]`` matrix: ``K(U) = C @ vec(U)`` (eq-kernel).

    Worth storing when ``P <= N0``: it then replaces every contraction over the feature axis in :func:`energy`.
    """
    P, n0, n = X.shape
    by_sample = X.permute(0, 2, 1).reshape(P * n, n0)  # [(p,a), i]
    return (by_sample @ by_sample.T).reshape(P, n, P, n).permute(0, 2, 1, 3).reshape(P * P, n * n)


def energy(
    X: torch.Tensor,
    y: torch.Tensor,
    U1: torch.Tensor,
    temperature: float,
    order: int = 0,
    pre_kernels: torch.Tensor | None = None,
) -> EnergyTerms:
    """Energy ``S_en = log det G + y^T G^{-1} y``, ``G = K(U_1) + T I`` (eq-action), and derivatives.

    With ``C_ab = sum_i x_ia x_ib^T`` (``x_ia = X[:, i, a]``) so that ``K = sum_ab U_ab C_ab``:

    * ``dS_en/dU_ab = tr(G^{-1} C_ab) - alpha^T C_ab alpha`` with ``alpha = G^{-1} y``;
    * ``d^2 S_en/dU_ab dU_cd = -tr(G^{-1} C_cd G^{-1} C_ab) + alpha^T C_cd G^{-1} C_ab alpha
      + alpha^T C_ab G^{-1} C_cd alpha``.

    No ``P x P`` solve per pair of entries: with ``L = chol(G)``, every term contracts either the whitened
    features ``L^{-1} X`` (feature-space route, for ``P > N0``) or the products ``G^{-1} C_ab``
    (sample-space route, when ``pre_kernels`` is given).

    Args:
        X: ``[P, N0, n]`` scaled features (:func:`attnpaths.kernels.scaled_features`).
        y: ``[P]`` labels.
        U1: ``[n, n]`` order parameter.
        temperature: ``T > 0``.
        order: 0 (value), 1 (and gradient), 2 (and Hessian).
        pre_kernels: optional :func:`pre_kernel_tensor` of ``X``.
    """
    P, n0, n = X.shape
    if pre_kernels is not None:
        K = (pre_kernels @ U1.reshape(-1)).reshape(P, P)
    else:
        K = kernel_from_scaled(X, U1, X)
    chol = shifted_cholesky(K, temperature)
    alpha = torch.cholesky_solve(y.reshape(P, 1), chol).reshape(P)
    value = float(2.0 * torch.log(torch.diagonal(chol)).sum() + y @ alpha)
    if order == 0:
        return EnergyTerms(value, None, None)
    if pre_kernels is not None:
        residual = torch.cholesky_inverse(chol) - torch.outer(alpha, alpha)
        gradient = (residual.reshape(-1) @ pre_kernels).reshape(n, n)
        if order == 1:
            return EnergyTerms(value, gradient, None)
        return EnergyTerms(value, gradient, _energy_hessian_sample_space(pre_kernels, chol, alpha))
    flat = X.reshape(P, n0 * n)
    w = (flat.T @ alpha).reshape(n0, n)
    whitened = torch.linalg.solve_triangular(chol, flat, upper=False).reshape(P, n0, n)  # B = L^{-1} X
    gradient = torch.einsum("pia,pib->ab", whitened, whitened) - w.T @ w
    if order == 1:
        return EnergyTerms(value, gradient, None)
    return EnergyTerms(value, gradient, _energy_hessian_feature_space(whitened, w))


def _energy_hessian_feature_space(B: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``-T1 + T2 + T3`` of :func:`energy` through ``M[i,a,j,b] = sum_p B[p,i,a] B[p,j,b]``."""
    P, n0, n = B.shape
    flat = B.reshape(P, n0 * n)
    M = (flat.T @ flat).reshape(n0, n, n0, n)
    # T1[a,b,c,d] = sum_ij M[i,b,j,c] M[j,d,i,a], as one matrix product over (i, j)
    left = M.permute(1, 3, 0, 2).reshape(n * n, n0 * n0)  # [(b,c), (i,j)]
    right = M.permute(2, 0, 1, 3).reshape(n0 * n0, n * n)  # [(i,j), (d,a)]
    t1 = (left @ right).reshape(n, n, n, n).permute(3, 0, 1, 2)
    t2 = torch.einsum("abjc,jd->abcd", torch.einsum("ia,ibjc->abjc", w, M), w)  # sum_ij w_ia w_jd M[i,b,j,c]
    return t2 + t2.permute(2, 3, 0, 1) - t1


def _energy_hessian_sample_space(pre_kernels: torch.Tensor, chol: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """``-T1 + T2 + T3`` of :func:`energy` through ``D_ab = G^{-1} C_ab`` (``P x P`` each):
    ``T1[a,b,c,d] = tr(D_cd D_ab)`` and ``T2[a,b,c,d] = (C_ba alpha)^T G^{-1} (C_cd alpha)``."""
    P = chol.shape[0]
    n = round(pre_kernels.shape[1] ** 0.5)
    C = pre_kernels.reshape(P, P * n * n)  # [p, (q, a, b)]
    inverse = torch.cholesky_inverse(chol)
    D = (inverse @ C).reshape(P, P, n * n)  # D[p, q, ab] = (G^{-1} C_ab)_pq
    t1 = (D.transpose(0, 1).reshape(P * P, n * n).T @ D.reshape(P * P, n * n)).reshape(n, n, n, n)
    t1 = t1.permute(2, 3, 0, 1)  # tr(D_cd D_ab) indexed [a, b, c, d]
    v = pre_kernels.reshape(P, P, n * n).transpose(1, 2) @ alpha  # v[:, ab] = C_ab alpha
    t2 = (v.T @ inverse @ v).reshape(n, n, n, n).permute(1, 0, 2, 3)
    return t2 + t2.permute(2, 3, 0, 1) - t1


@dataclass(frozen=True)
class EntropyTerms:
    """``S_ent`` with its derivatives with respect to the full matrices ``U_1, ..., U_L``.

    ``gradients[l]`` is ``[n_l, n_l]``; ``hessian`` is the ``[D, D]`` matrix over the concatenated row-major
    entries of ``U_1, ..., U_L`` (``D = sum_l n_l^2``), entries treated as independent.
    """

    value: float
    gradients: list
    hessian: torch.Tensor | None


def _inverse_pair_hessian(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """``T[a, b, c, d] = left[b, c] right[d, a]``, the building block of ``d^2 (log det, trace-inverse)`` (numpy
    or torch arrays)."""
    return right.T[:, None, None, :] * left[None, :, :, None]  # (the hot path: no einsum overhead)


def entropy_derivatives(U_layers: list[torch.Tensor], arch: Architecture, order: int = 2) -> EntropyTerms:
    """Analytic gradient and Hessian of ``S_ent`` (eq-entropy) with ``U_a`` eliminated by (eq-readout).

    Derivatives at symmetric points, entries of each ``U_l`` treated as independent:

    * ``d(-log det U)/dU = -U^{-1}``, ``d^2/dU_ab dU_cd = (U^{-1})_bc (U^{-1})_da``;
    * ``d tr(A^{-1} Utilde)/dU_l = I_{H_l} (x) A^{-1}``, ``d/dA = -A^{-1} Utilde A^{-1}``;
    * the readout term: ``dS/dU_L = N_L (I / (sL U_a) - U_L^{-1})`` (``dS/dU_a = 0`` at (eq-readout)), and
      ``dU_a / d Tr U_L = c / (2 U_a + beta)`` with ``c = N_L sa / (N_a sL)``.
    """
    L, s, N, H = arch.num_layers, arch.variances, arch.widths, arch.heads
    sizes = [U.shape[0] for U in U_layers]
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + n * n)
    inverses = [torch.cholesky_inverse(torch.linalg.cholesky(U)).contiguous() for U in U_layers]
    logdets = [2.0 * torch.log(torch.diagonal(torch.linalg.cholesky(U))).sum() for U in U_layers]
    gradients = [torch.zeros_like(U) for U in U_layers]
    hess = torch.zeros(offsets[-1], offsets[-1], dtype=torch.float64) if order >= 2 else None

    def add_block(i: int, j: int, block: torch.Tensor):
        ni, nj = sizes[i], sizes[j]
        hess[offsets[i] : offsets[i + 1], offsets[j] : offsets[j + 1]] += block.reshape(ni * ni, nj * nj)

    # readout and last layer
    U_L, inv_L = U_layers[-1], inverses[-1]
    U_a = readout_order_parameter(U_L, arch)
    sL, sa, N_L, N_a, H_L = s[L], s[-1], N[L - 1], N[-1], H[L - 1]
    value = N_a * (U_a / sa - torch.log(U_a)) + N_L * (
        torch.trace(U_L) / (sL * U_a) - logdets[-1] + H_L * torch.log(U_a)
    )
    eye_L = torch.eye(sizes[-1], dtype=torch.float64)
    gradients[-1] += N_L * (eye_L / (sL * U_a) - inv_L)
    if order >= 2:
        beta = sa * (H_L * N_L / N_a - 1.0)
        dUa_dtrace = (N_L * sa / (N_a * sL)) / (2.0 * U_a + beta)
        readout_curvature = -N_L / (sL * U_a**2) * dUa_dtrace * (eye_L[:, :, None, None] * eye_L[None, None, :, :])
        add_block(L - 1, L - 1, readout_curvature + N_L * _inverse_pair_hessian(inv_L, inv_L))

    # layers 1..L-1: U_l coupled to A = U_{l+1}
    for i in range(L - 1):
        B, A_inv, B_inv, n_heads, s_l, N_l = U_layers[i], inverses[i + 1], inverses[i], H[i], s[i + 1], N[i]
        reduced = partial_trace_over_head(B, n_heads)
        W = A_inv @ reduced @ A_inv
        value = value + N_l * (torch.trace(A_inv @ reduced) / s_l - logdets[i] + n_heads * logdets[i + 1])
        eye_h = torch.eye(n_heads, dtype=torch.float64)
        gradients[i] += N_l * (torch.kron(eye_h, A_inv) / s_l - B_inv)
        gradients[i + 1] += N_l * (-W / s_l + n_heads * A_inv)
        if order >= 2:
            add_block(i, i, N_l * _inverse_pair_hessian(B_inv, B_inv))
            add_block(
                i + 1,
                i + 1,
                N_l
                * (
                    (_inverse_pair_hessian(A_inv, W) + _inverse_pair_hessian(W, A_inv)) / s_l
                    - n_heads * _inverse_pair_hessian(A_inv, A_inv)
                ),
            )
            m = sizes[i + 1]
            # d^2 / dB[(h,r),(g,q)] dA[c,d] = -delta_hg A_inv[q,c] A_inv[d,r] / s_l
            mixed = -(
                eye_h[:, None, :, None, None, None]
                * A_inv[None, None, None, :, :, None]
                * A_inv.T[None, :, None, None, None, :]
            ).reshape(sizes[i], sizes[i], m, m)
            add_block(i, i + 1, N_l * mixed / s_l)
            add_block(i + 1, i, N_l * mixed.permute(2, 3, 0, 1) / s_l)
    return EntropyTerms(float(value), gradients, hess)


def symmetrized(hessian):
    """``(H[a,b,c,d] + H[b,a,c,d] + H[a,b,d,c] + H[b,a,d,c]) / 4``: the part of an entries-independent second
    derivative that acts on symmetric matrices (a torch tensor or a numpy array)."""
    half = hessian + hessian.swapaxes(0, 1)
    return (half + half.swapaxes(2, 3)) / 4


def entropy_terms(factors, arch: Architecture, order: int = 2):
    """``S_ent`` (eq-entropy, ``U_a`` eliminated by eq-readout) at ``U_l = F_l F_l^T`` and its derivatives with respect to
    the full matrices ``U_l`` (entries treated as independent), as :func:`entropy_derivatives` computes them,
    from the factors (``log det U_l = 2 sum_i log F_ii``, ``U_l^{-1} = F_l^{-T} F_l^{-1}``).

    The matrices are small (``n_l`` is a number of paths), so the work is in numpy, whose operations cost a
    fraction of torch's dispatch on arrays of this size.

    Args:
        factors: ``[F_1, ..., F_L]`` (numpy arrays or torch tensors), lower triangular with a positive diagonal,
            ``F_l`` of shape ``[n_l, n_l]``.
        order: 0 (value), 1 (and the gradients) or 2 (and the Hessian).

    Returns:
        ``(value, [dS/dU_l] ([n_l, n_l] numpy arrays) or None, blocks or None)``: ``blocks`` lists ``((i, j), T)``
        with ``T[a, b, c, d] = d^2 S_ent / dU_i[a, b] dU_j[c, d]`` (numpy) for 0-based layers ``i <= j`` (the blocks
        ``j > i`` are their transposes; blocks of the same pair add up).
    """
    L, s, N, H = arch.num_layers, arch.variances, arch.widths, arch.heads
    factors = [F.numpy() if isinstance(F, torch.Tensor) else np.asarray(F) for F in factors]
    logdets = [2.0 * float(np.log(F.diagonal()).sum()) for F in factors]
    F_L = factors[-1]
    trace_L = float(np.einsum("ij,ij->", F_L, F_L))
    sL, sa, N_L, N_a, H_L = s[L], s[-1], N[L - 1], N[-1], H[L - 1]
    beta = sa * (H_L * N_L / N_a - 1.0)
    gamma = N_L * sa * trace_L / (N_a * sL)
    U_a = (-beta + math.sqrt(beta * beta + 4.0 * gamma)) / 2.0
    value = N_a * (U_a / sa - math.log(U_a)) + N_L * (trace_L / (sL * U_a) - logdets[-1] + H_L * math.log(U_a))
    for i in range(L - 1):
        value += N[i] * (H[i] * logdets[i + 1] - logdets[i])
    # F^{-1} of a triangular factor with a positive diagonal (LAPACK's triangular inverse); U^{-1} = F^{-T} F^{-1}
    factor_inverses = [triangular_inverse(F, lower=1)[0] for F in factors]
    if order == 0:
        for i in range(L - 1):
            # Tr(U_{l+1}^{-1} Utilde_l) = sum_h |F_{l+1}^{-1} F_l[rows of head h]|^2
            m = factors[i + 1].shape[0]
            blocks = factors[i].reshape(H[i], m, -1)
            value += N[i] * float(np.square(factor_inverses[i + 1] @ blocks).sum()) / s[i + 1]
        return value, None, None
    inverses = [Fi.T @ Fi for Fi in factor_inverses]
    gradients = [None] * L

    def add(layer, term):
        gradients[layer] = term if gradients[layer] is None else gradients[layer] + term

    last = -N_L * inverses[-1]
    last.flat[:: last.shape[0] + 1] += N_L / (sL * U_a)
    add(L - 1, last)
    couplings = []
    for i in range(L - 1):
        B_inv, A_inv, n_heads, s_l, N_l = inverses[i], inverses[i + 1], H[i], s[i + 1], N[i]
        m = A_inv.shape[0]
        U_i = factors[i] @ factors[i].T
        reduced = np.trace(U_i.reshape(n_heads, m, n_heads, m), axis1=0, axis2=2)
        W = A_inv @ reduced @ A_inv
        value += N_l * float((A_inv * reduced).sum()) / s_l
        term = -N_l * B_inv
        for h in range(n_heads):  # (N_l / s_l) I_H (x) A^{-1}
            term[h * m : (h + 1) * m, h * m : (h + 1) * m] += (N_l / s_l) * A_inv
        add(i, term)
        add(i + 1, (N_l * n_heads) * A_inv - (N_l / s_l) * W)
        couplings.append(W)
    if order == 1:
        return value, gradients, None
    blocks = []
    n = F_L.shape[0]
    last = N_L * _inverse_pair_hessian(inverses[-1], inverses[-1])
    # the curvature through U_a: d^2 / dU_aa dU_cc of N_L Tr(U_L) / (sL U_a(Tr U_L)) at dS/dU_a = 0
    dUa_dtrace = (N_L * sa / (N_a * sL)) / (2.0 * U_a + beta)
    diagonal = np.arange(n)
    last[diagonal[:, None], diagonal[:, None], diagonal, diagonal] -= N_L / (sL * U_a**2) * dUa_dtrace
    blocks.append(((L - 1, L - 1), last))
    for i in range(L - 1):
        B_inv, A_inv, W, n_heads, s_l, N_l = inverses[i], inverses[i + 1], couplings[i], H[i], s[i + 1], N[i]
        blocks.append(((i, i), N_l * _inverse_pair_hessian(B_inv, B_inv)))
        blocks.append(
            (
                (i + 1, i + 1),
                (N_l / s_l) * (_inverse_pair_hessian(A_inv, W) + _inverse_pair_hessian(W, A_inv))
                - (N_l * n_heads) * _inverse_pair_hessian(A_inv, A_inv),
            )
        )
        # d^2 / dB[(h,r),(g,q)] dA[c,d] = -delta_hg A_inv[q,c] A_inv[d,r] / s_l
        m = A_inv.shape[0]
        mixed = np.zeros((n_heads, m, n_heads, m, m, m))
        heads = np.arange(n_heads)
        mixed[heads, :, heads] = -(N_l / s_l) * _inverse_pair_hessian(
            A_inv, A_inv
        )  # [r, q, c, d] = A_inv[q,c] A_inv[d,r]
        blocks.append(((i, i + 1), mixed.reshape(n_heads * m, n_heads * m, m, m)))
    return value, gradients, blocks
