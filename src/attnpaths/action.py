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
from scipy.linalg.blas import dsyrk as symmetric_rank_k
from scipy.linalg.lapack import dtrtri as triangular_inverse

from .gram import GramStatistics, equivalent_problem
from .kernels import kernel_from_scaled


@dataclass(frozen=True)
class Architecture:
    """Validated sizes of the theory: heads ``(H_1..H_L)``, widths ``(N_1..N_L, N_a)``, variances
    ``(s0, s1..sL, sa)``. Widths are all finite or all ``inf`` (the GP limit)."""

    heads: tuple[int, ...]
    widths: tuple[float, ...]
    variances: tuple[float, ...]

    @property
    def num_layers(self) -> int:
        """Number of attention layers ``L``."""
        return len(self.heads)

    @property
    def num_paths(self) -> int:
        """Number of attention paths ``H_1 * ... * H_L``."""
        return math.prod(self.heads)

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
    eye = torch.eye(P, dtype=X.dtype)
    if pre_kernels is not None:
        G = (pre_kernels @ U1.reshape(-1)).reshape(P, P) + temperature * eye
    else:
        G = kernel_from_scaled(X, U1, X) + temperature * eye
    chol = torch.linalg.cholesky(G)
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
    """``T[a, b, c, d] = left[b, c] right[d, a]``, the building block of ``d^2 (log det, trace-inverse)``."""
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


# --------------------------------------------------------------------------------------------------------
# the solver's representation: derivatives in an orthonormal basis of symmetric matrices


class SymmetricBasis:
    """Orthonormal basis of the symmetric ``n x n`` matrices: ``E_k = e_a e_a^T`` for ``a = b`` and
    ``(e_a e_b^T + e_b e_a^T) / sqrt(2)`` for ``a < b``, ``(a, b) = (rows[k], cols[k])`` in the order of
    ``torch.triu_indices(n, n)``. The coordinates of a symmetric ``D`` are ``d_k = <E_k, D> = c_k D_ab`` with
    ``c_k = 1`` on the diagonal and ``sqrt(2)`` off it; ``size = n (n + 1) / 2``. ``position[a, b]`` (``[n, n]``) is
    the ``k`` of the entry ``(a, b)`` (or ``(b, a)``), ``entry_weights[a, b]`` its ``c_k``; ``flat_positions`` holds
    the positions of ``(a_k, b_k)`` and ``(b_k, a_k)`` in a flattened ``n x n`` matrix (numpy).
    """

    def __init__(self, n: int):
        self.n = n
        self.rows, self.cols = torch.triu_indices(n, n)
        self.size = self.rows.numel()
        self.diagonal = self.rows == self.cols
        self.weights = torch.where(
            self.diagonal, torch.ones((), dtype=torch.float64), torch.full((), 2.0**0.5, dtype=torch.float64)
        )
        position = torch.zeros(n, n, dtype=torch.long)
        position[self.rows, self.cols] = torch.arange(self.size)
        position[self.cols, self.rows] = torch.arange(self.size)
        self.position = position
        self.entry_weights = self.weights[position]
        self._entries = None
        rows, cols = self.rows.numpy(), self.cols.numpy()
        self.flat_positions = (rows * n + cols, cols * n + rows)

    def coordinates(self, D: torch.Tensor) -> torch.Tensor:
        """``[..., n, n]`` symmetric -> ``[..., size]``; for the gradient of a function of symmetric matrices
        with the entries treated as independent, the gradient in these coordinates."""
        return D[..., self.rows, self.cols] * self.weights

    def matrix(self, d: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`coordinates` for a gradient: ``g_ab = g_ba = d_k / c_k``, ``[n, n]``."""
        return d[self.position] / self.entry_weights

    def project(self, hessian, other: SymmetricBasis | None = None):
        """``[n, n, n', n']`` second derivatives (entries independent; numpy or torch) -> ``[size, other.size]`` in
        this basis and ``other`` (default: this one): ``H_kl = sum E_k[a,b] H[a,b,c,d] E'_l[c,d]
        = c_k c'_l (H[a,b,c,d] + H[b,a,c,d] + H[a,b,d,c] + H[b,a,d,c]) / 4``, gathered without forming the
        symmetrised tensor."""
        other = self if other is None else other
        (ab, ba), (cd, dc) = self.flat_positions, other.flat_positions
        flat = hessian.reshape(self.n * self.n, other.n * other.n)
        rows = flat[ab] + flat[ba]
        weights = np.outer(self.weights.numpy(), other.weights.numpy()) / 4
        if isinstance(hessian, torch.Tensor):
            weights = torch.from_numpy(weights)
        return (rows[:, cd] + rows[:, dc]) * weights

    def entries(self, hessian: torch.Tensor, other: SymmetricBasis | None = None) -> torch.Tensor:
        """Inverse of :meth:`project`: the symmetrised ``[n, n, n', n']`` entries of a Hessian given in the bases,
        ``H[a,b,c,d] = H[b,a,c,d] = H[a,b,d,c] = H_kl / (c_k c_l)``."""
        if other is None and self._entries is not None:
            index, weights = self._entries
        else:
            other_ = self if other is None else other
            index = self.position.reshape(self.n, self.n, 1, 1) * other_.size + other_.position
            weights = self.entry_weights.reshape(self.n, self.n, 1, 1) * other_.entry_weights
            if other is None:
                self._entries = (index, weights)
        return torch.take(hessian, index) / weights


def symmetrized(hessian):
    """``(H[a,b,c,d] + H[b,a,c,d] + H[a,b,d,c] + H[b,a,d,c]) / 4``: the part of an entries-independent second
    derivative that acts on symmetric matrices (a torch tensor or a numpy array)."""
    half = hessian + hessian.swapaxes(0, 1)
    return (half + half.swapaxes(2, 3)) / 4


def _pair(left, right):
    """``T[a, b, c, d] = left[b, c] right[d, a]`` (as :func:`_inverse_pair_hessian`; numpy or torch arrays)."""
    return right.T[:, None, None, :] * left[None, :, :, None]


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
    last = N_L * _pair(inverses[-1], inverses[-1])
    # the curvature through U_a: d^2 / dU_aa dU_cc of N_L Tr(U_L) / (sL U_a(Tr U_L)) at dS/dU_a = 0
    dUa_dtrace = (N_L * sa / (N_a * sL)) / (2.0 * U_a + beta)
    diagonal = np.arange(n)
    last[diagonal[:, None], diagonal[:, None], diagonal, diagonal] -= N_L / (sL * U_a**2) * dUa_dtrace
    blocks.append(((L - 1, L - 1), last))
    for i in range(L - 1):
        B_inv, A_inv, W, n_heads, s_l, N_l = inverses[i], inverses[i + 1], couplings[i], H[i], s[i + 1], N[i]
        blocks.append(((i, i), N_l * _pair(B_inv, B_inv)))
        blocks.append(
            ((i + 1, i + 1), (N_l / s_l) * (_pair(A_inv, W) + _pair(W, A_inv)) - (N_l * n_heads) * _pair(A_inv, A_inv))
        )
        # d^2 / dB[(h,r),(g,q)] dA[c,d] = -delta_hg A_inv[q,c] A_inv[d,r] / s_l
        m = A_inv.shape[0]
        mixed = np.zeros((n_heads, m, n_heads, m, m, m))
        heads = np.arange(n_heads)
        mixed[heads, :, heads] = -(N_l / s_l) * _pair(A_inv, A_inv)  # [r, q, c, d] = A_inv[q,c] A_inv[d,r]
        blocks.append(((i, i + 1), mixed.reshape(n_heads * m, n_heads * m, m, m)))
    return value, gradients, blocks


@dataclass(frozen=True)
class EnergyPoint:
    """``S_en`` at one ``U_1``: the value and what its derivatives reuse (``chol = chol(K + T I)``,
    ``alpha = (K + T I)^{-1} y``)."""

    value: float
    chol: torch.Tensor
    alpha: torch.Tensor


def _lower_gram(A: np.ndarray) -> np.ndarray:
    """``A A^T`` (``A`` of shape ``[R, K]``, C- or Fortran-ordered) as a C-ordered ``[R, R]`` array of which only
    the lower triangle is computed (BLAS ``dsyrk``: half the products of a full matrix product); the strict upper
    triangle holds zeros. The lower triangle is what Cholesky reads."""
    # dsyrk takes Fortran-ordered operands; its upper triangle in Fortran order is the lower one in C order
    if A.flags.c_contiguous:
        return symmetric_rank_k(1.0, A.T, trans=1, lower=0).T
    return symmetric_rank_k(1.0, np.asfortranarray(A), trans=0, lower=0).T


def _gram(A: np.ndarray) -> np.ndarray:
    """``A A^T`` (numpy in and out), the whole matrix, by torch's matrix product (faster than numpy's here)."""
    A = torch.from_numpy(A)
    return (A @ A.T).numpy()


def _filled(lower: np.ndarray) -> np.ndarray:
    """The symmetric matrix (or stack of matrices, last two axes) whose lower triangle is ``lower``'s."""
    return np.tril(lower) + np.swapaxes(np.tril(lower, -1), -1, -2)


class EnergyEvaluator:
    """``S_en = log det G + y^T G^{-1} y``, ``G = K(U_1) + T I`` (eq-action), for one data set, with its gradient
    and Hessian (those of :func:`energy`, ``T1``, ``T2``, ``T3`` there) through one of three routes:

    * sample space (few examples): the kernels of the symmetric basis directions (:class:`SymmetricBasis`),
      ``S_k = K(E_k)`` (``[P, P]`` each, stored once), give ``K = sum_k u_k S_k`` and, in that basis,
      ``d^2 S_en / du_k du_l = -tr(G^{-1} S_k G^{-1} S_l) + 2 (S_k alpha)^T G^{-1} (S_l alpha)``;
    * feature space (more examples than input features): with ``B = chol(G)^{-1} X`` and
      ``M[i,a,j,b] = sum_p B[p,i,a] B[p,j,b]``, ``tr(G^{-1} C_ab G^{-1} C_cd) = sum_ij M[i,a,j,d] M[i,b,j,c]``,
      a Gram matrix over the pairs ``(i, j)``; ``M`` is symmetric, so only its lower triangle is formed (as that
      of the kernel ``G``: BLAS ``dsyrk``, half a matrix product);
    * Gram (more examples than ``D = N0 n`` features, ``attnpaths.gram``): ``K`` has rank at most ``D``, and
      ``S_en(X, y) = S_en(R, y~) + (P - r) log T + (y^T y - |y~|^2) / T`` for the ``r <= D`` rows ``R``
      (``R^T R = F^T F``, ``F = X`` flattened to ``[P, D]``) and targets ``y~`` (``R^T y~ = F^T y``) of
      ``attnpaths.gram.equivalent_problem``: the derivatives are those of the ``r``-example problem, taken by
      the sample- or feature-space contraction; after the one-off ``F^T F`` (``P D^2``) no step depends on ``P``.

    Args:
        X: ``[P, N0, n]`` scaled features (:func:`attnpaths.kernels.scaled_features`).
        y: ``[P]`` labels.
        temperature: ``T > 0``.
        route: ``"sample"``, ``"feature"``, ``"gram"`` or None (the one with fewer operations,
            :meth:`cheaper_route`; sample space only while its stored kernels hold at most ``max_stored`` numbers).

    Attributes:
        route: the route taken; ``contraction``: ``"sample"`` or ``"feature"``, the contraction of the
            derivatives (on the Gram route, that of the ``r``-example problem).
        X, y: the features and labels the contraction works on: the given ones, or on the Gram route the
            equivalent rows ``[r, N0, n]`` and targets ``[r]`` (``attnpaths.gram.EquivalentProblem``; None
            where the statistics are not finite: then no point is finite).
        offset: the constant added to the contraction's energy (0 off the Gram route).
        problem: the Gram route's ``attnpaths.gram.EquivalentProblem`` (None off it, or where the statistics
            are not finite).
        num_examples: ``P``; input_width: ``N0``; num_paths: ``n``.
    """

    ROUTES = ("sample", "feature", "gram")
    """The routes of :class:`EnergyEvaluator`."""

    def __init__(
        self, X: torch.Tensor, y: torch.Tensor, temperature: float, route: str | None = None, max_stored: float = 5e7
    ):
        P, n0, n = X.shape
        if route is None:
            route = self.cheaper_route(P, n0, n, max_stored)
        if route not in self.ROUTES:
            raise ValueError(f"route must be 'sample', 'feature', 'gram' or None, got {route!r}")
        if route == "gram":
            statistics = GramStatistics.of_checked(X, y)
            problem = equivalent_problem(*statistics.scaled(n0 * n), P, n0, n, temperature)  # X is scaled already
            self._setup_gram(problem, P, n0, n, temperature, max_stored)
        else:
            self._setup(X, y, temperature, route, max_stored)
            self.route, self.offset, self.problem = route, 0.0, None
            self.num_examples = P

    @classmethod
    def from_statistics(
        cls, statistics: GramStatistics, temperature: float, s0: float = 1.0, max_stored: float = 5e7
    ) -> EnergyEvaluator:
        """The Gram route from accumulated statistics of the raw features (no features needed).

        Args:
            statistics: ``attnpaths.gram.GramStatistics`` of ``P >= 1`` examples.
            temperature: ``T > 0``.
            s0: the input layer's prior variance (the scaling of :func:`attnpaths.kernels.scaled_features`).
        """
        P, n0, n = statistics.num_examples, statistics.input_width, statistics.num_paths
        problem = equivalent_problem(*statistics.scaled(s0), P, n0, n, temperature)
        evaluator = cls.__new__(cls)
        evaluator._setup_gram(problem, P, n0, n, temperature, max_stored)
        return evaluator

    def _setup_gram(self, problem, P: int, n0: int, n: int, temperature: float, max_stored: float) -> None:
        self.problem = problem
        if problem is None:  # statistics that overflow: no finite point
            self.X = self.y = None
            self.temperature, self.basis, self.contraction = float(temperature), SymmetricBasis(n), "feature"
            self.input_width, self.num_paths = n0, n
        else:
            rows = problem.features
            self._setup(
                rows,
                problem.targets,
                temperature,
                self.cheaper_route(rows.shape[0], n0, n, max_stored, direct_only=True),
                max_stored,
            )
        self.route, self.offset, self.num_examples = "gram", 0.0 if problem is None else problem.offset, P

    def _setup(self, X: torch.Tensor, y: torch.Tensor, temperature: float, contraction: str, max_stored: float):
        """The sample- or feature-space contraction on ``X`` ``[R, N0, n]``, ``y`` ``[R]``."""
        R, n0, n = X.shape
        self.X, self.y, self.temperature = X, y, float(temperature)
        self.basis = SymmetricBasis(n)
        m = self.basis.size
        self.contraction = contraction
        self.input_width, self.num_paths = n0, n
        self._buffers = None
        if contraction == "sample":
            by_path = X.permute(2, 0, 1).reshape(n * R, n0)
            # (C_ab)_pq for a <= b, one row block of the symmetric product at a time: [k, p, q] in basis order
            picked = torch.cat(
                [
                    (by_path[a * R : (a + 1) * R] @ by_path[a * R :].T).reshape(R, n - a, R).transpose(0, 1)
                    for a in range(n)
                ]
            )
            directions = (picked + picked.transpose(1, 2)) * (self.basis.weights / 2)[:, None, None]
            self.directions = directions.permute(1, 2, 0).reshape(R * R, m).contiguous()  # [(p, q), k] = S_k[p, q]
        else:
            self.flat = X.reshape(R, n0 * n)
            # the pairs (i, j) of input features with j < i: the blocks of M below its diagonal blocks
            self._later, self._earlier = np.tril_indices(n0, -1)
            self._basis_rows, self._basis_cols = self.basis.rows.numpy(), self.basis.cols.numpy()

    @staticmethod
    def route_costs(P: int, n0: int, n: int, max_stored: float = 5e7, iterations: int = 10) -> dict[str, float]:
        """Operations per Hessian of each route for ``P`` examples of ``n0`` features on ``n`` paths (``D = n0 n``,
        ``m = n (n + 1) / 2``):

        * sample space ``2 P^3 m + 2 P^2 m^2`` (``inf`` where its stored kernels, ``P^2 m`` numbers, exceed
          ``max_stored``);
        * feature space ``3 P^2 n0 n + 1.2 P D^2 + 1.2 n0^2 n^4`` (the factors 1.2 weigh its symmetric products,
          of which only a triangle is computed, at a lower rate than a full matrix product);
        * Gram: the cheaper of the two at ``r = min(P, D)`` examples, plus the one-off ``P D^2`` of ``F^T F`` (a
          triangle: weighed 1.2 as above) and ``4 D^3`` of its eigendecomposition, shared by ``iterations``
          Hessians (a solve takes about ten).
        """

        def direct(p):
            m = n * (n + 1) // 2
            sample = 2.0 * p**3 * m + 2.0 * p * p * m * m if p * p * m <= max_stored else math.inf
            feature = 3.0 * p * p * n0 * n + 1.2 * p * (n0 * n) ** 2 + 1.2 * n0 * n0 * n**4
            return sample, feature

        D = n0 * n
        sample, feature = direct(P)
        gram = min(direct(min(P, D))) + (1.2 * P * D * D + 4.0 * D**3) / iterations
        return {"sample": sample, "feature": feature, "gram": gram}

    @staticmethod
    def cheaper_route(P: int, n0: int, n: int, max_stored: float = 5e7, *, direct_only: bool = False) -> str:
        """The route with fewer operations per Hessian (:meth:`route_costs`) for ``P`` examples of ``n0`` features
        on ``n`` paths; ties go to the sample space, then the feature space; ``direct_only`` leaves the Gram
        route out."""
        costs = EnergyEvaluator.route_costs(P, n0, n, max_stored)
        if direct_only:
            costs.pop("gram")
        return min(costs, key=lambda route: (costs[route], EnergyEvaluator.ROUTES.index(route)))

    def point(self, factor: torch.Tensor) -> EnergyPoint | None:
        """``S_en`` at ``U_1 = factor factor^T``; None where ``G`` is not numerically positive definite or the
        energy is not finite. On the Gram route, ``chol`` and ``alpha`` are those of the ``r``-example problem."""
        if self.X is None:
            return None
        R = self.X.shape[0]
        if self.contraction == "sample":
            u = self.basis.coordinates(factor @ factor.T)
            G = (self.directions @ u).reshape(R, R)
        else:
            G = torch.from_numpy(_lower_gram((self.X @ factor).reshape(R, -1).numpy()))
        G.diagonal().add_(self.temperature)
        chol, info = torch.linalg.cholesky_ex(G)
        if int(info) != 0:
            return None
        alpha = torch.cholesky_solve(self.y.reshape(R, 1), chol).reshape(R)
        value = float(2.0 * torch.log(torch.diagonal(chol)).sum() + self.y @ alpha) + self.offset
        if not math.isfinite(value):
            return None
        return EnergyPoint(value, chol, alpha)

    def derivatives(self, point: EnergyPoint, order: int = 2):
        """Derivatives of ``S_en`` at ``point`` with respect to the entries of ``U_1`` (treated as independent):
        ``(gradient [n, n], hessian [n, n, n, n])`` (the Hessian for ``order`` 2, else None; symmetrised as
        :func:`symmetrized`)."""
        gradient, hessian = self.derivatives_in_basis(point, order)
        return self.basis.matrix(gradient), None if hessian is None else self.basis.entries(hessian)

    def derivatives_in_basis(self, point: EnergyPoint, order: int = 2):
        """Derivatives of ``S_en`` at ``point`` with respect to the coordinates ``u`` of ``U_1`` in the evaluator's
        :class:`SymmetricBasis` ``basis`` (``U_1 = sum_k u_k E_k``): ``(gradient [m], hessian [m, m])``,
        ``m = n (n + 1) / 2`` (the Hessian for ``order`` 2, else None)."""
        if self.contraction == "sample":
            return self._sample_space(point, order)
        return self._feature_space(point, order)

    def _sample_space(self, point, order):
        P, m = self.X.shape[0], self.basis.size
        inverse = torch.cholesky_inverse(point.chol)
        by_row = self.directions.reshape(P, P * m)
        v = (point.alpha @ by_row).reshape(P, m)  # v[:, k] = S_k alpha
        if order < 2:
            return inverse.reshape(-1) @ self.directions - point.alpha @ v, None
        if self._buffers is None:  # reused: fresh large arrays cost page faults on every call
            self._buffers = (torch.empty(P, P * m, dtype=torch.float64), torch.empty(P, P, m, dtype=torch.float64))
        D, transposed = self._buffers
        torch.matmul(inverse, by_row, out=D)  # D[p, (q, k)] = (G^{-1} S_k)[p, q]
        # tr(G^{-1} S_k) from the diagonal of D_k
        gradient = D.reshape(P, P, m).diagonal(dim1=0, dim2=1).sum(dim=-1) - point.alpha @ v
        transposed.copy_(D.reshape(P, P, m).transpose(0, 1))
        t1 = D.reshape(P * P, m).T @ transposed.reshape(P * P, m)
        whitened = torch.linalg.solve_triangular(point.chol, v, upper=False)
        hessian = 2.0 * (whitened.T @ whitened) - t1
        return gradient, (hessian + hessian.T) / 2

    def _feature_space(self, point, order):
        P, n0, n = self.X.shape
        (ab, _), weights = self.basis.flat_positions, self.basis.weights.numpy()
        B = torch.linalg.solve_triangular(point.chol, self.flat, upper=False).numpy()  # [P, (i, a)]
        w = (point.alpha @ self.flat).numpy().reshape(n0, n)
        if order < 2:
            by_path = B.reshape(P * n0, n)
            return torch.from_numpy((by_path.T @ by_path - w.T @ w).reshape(-1)[ab] * weights), None
        # M[i,a,j,b], lower triangle in ((i, a), (j, b)): every block j < i and the lower half of the blocks j = i
        M = _lower_gram(B.T).reshape(n0, n, n0, n)
        inputs = np.arange(n0)
        diagonal = _filled(M[inputs, :, inputs, :])  # [i, a, b] = M[i,a,i,b]
        gradient = (diagonal.sum(axis=0) - w.T @ w).reshape(-1)[ab] * weights
        # tr(G^{-1} C_ab G^{-1} C_cd) = sum_ij M[i,a,j,d] M[i,b,j,c] = W[(a,d),(b,c)], a Gram matrix over the pairs
        # (i, j): with R_ij[x, y] = M[i,x,j,y] for i > j (the pairs i < j are their transposes) and the symmetric
        # D_i = R_ii, W = Z + Z with the indices of each pair swapped, Z = sum_i vec(D_i) vec(D_i)^T / 2
        # + sum_{i > j} vec(R_ij) vec(R_ij)^T
        stacked = np.concatenate(
            [diagonal.reshape(n0, n * n) * 0.5**0.5, M[self._later, :, self._earlier, :].reshape(-1, n * n)]
        )
        Z = _gram(stacked.T)
        # sum_ij w[i,a] M[i,b,j,c] w[j,d] = sum_p V[p,a,b] V[p,d,c] = C[(b,a),(c,d)], V[p,a,b] = sum_i w[i,a] B[p,i,b]
        V = (B.reshape(P, n0, n).transpose(0, 2, 1).reshape(P * n, n0) @ w).reshape(P, n * n)  # [p, (b, a)]
        t2 = self.basis.project(_gram(V.T))  # (the projection symmetrises (a, b): the order of C's pair is moot)
        # the projection of W[(a,d),(b,c)]: Z in both index orders of each pair, and Z's swapped part as t1^T
        rows, cols = self._basis_rows, self._basis_cols
        t1 = 0.0
        for a, b in ((rows, cols), (cols, rows)):
            for c, d in ((rows, cols), (cols, rows)):
                t1 = t1 + Z[a[:, None] * n + d[None, :], b[:, None] * n + c[None, :]]
        t1 *= np.outer(weights, weights) / 4
        return torch.from_numpy(gradient), torch.from_numpy(t2 + t2.T - t1 - t1.T)
