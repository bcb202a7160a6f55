"""Log-Cholesky coordinates of the order parameters and the action in them: its value, gradient and Hessian
(eq-action), exact by the chain rule from the derivatives in ``U``."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..action import Architecture, EnergyEvaluator, SymmetricBasis, entropy_terms
from ._architecture import _layer_sizes


class CholeskyCoordinates:
    """Log-Cholesky coordinates ``theta`` of positive-definite matrices ``U_l = L_l L_l^T`` (one block per
    layer): the strictly lower entries of ``L_l`` as they are, the diagonal ones as their logarithms. Every
    ``theta`` gives positive-definite matrices, so an optimiser or sampler working in ``theta`` never leaves the
    domain of the action. ``theta`` may carry leading batch axes: ``[..., D]`` with
    ``D = sum_l n_l (n_l + 1) / 2``.
    """

    def __init__(self, sizes: list[int]):
        self.sizes = list(sizes)
        self.index = [torch.tril_indices(n, n) for n in self.sizes]
        self.counts = [idx.shape[1] for idx in self.index]
        self.dimension = sum(self.counts)
        # [count, n * n] 0/1 matrices placing the lower-triangular entries into a flattened n x n matrix
        self._placement = []
        for n, (rows, cols) in zip(self.sizes, self.index):
            place = torch.zeros(rows.numel(), n * n, dtype=torch.float64)
            place[torch.arange(rows.numel()), rows * n + cols] = 1.0
            self._placement.append(place)

    def factors(self, theta: torch.Tensor) -> list[torch.Tensor]:
        """``[L_1, ..., L_L]``, each ``[..., n_l, n_l]`` lower triangular with a positive diagonal."""
        out = []
        for part, n, (rows, cols), place in zip(
            torch.split(theta, self.counts, dim=-1), self.sizes, self.index, self._placement
        ):
            entries = torch.where(rows == cols, torch.exp(part), part)
            out.append((entries @ place).reshape(*theta.shape[:-1], n, n))
        return out

    def matrices(self, theta: torch.Tensor) -> list[torch.Tensor]:
        """``[U_1, ..., U_L]``, each ``[..., n_l, n_l]``."""
        return [chol @ chol.transpose(-1, -2) for chol in self.factors(theta)]

    def coordinates(self, U_layers: list[torch.Tensor]) -> torch.Tensor:
        """Inverse of :meth:`matrices`: ``theta [..., D]`` of positive-definite ``U_l [..., n_l, n_l]``."""
        parts = []
        for U, (rows, cols) in zip(U_layers, self.index):
            entries = torch.linalg.cholesky(U)[..., rows, cols]
            parts.append(torch.where(rows == cols, torch.log(entries), entries))
        return torch.cat(parts, dim=-1)

    def log_jacobian(self, theta: torch.Tensor) -> torch.Tensor:
        """``log |d(U_1, ..., U_L) / d theta|`` up to a constant, ``[...]``: the density of ``theta`` is that of
        the matrices (over their distinct entries) times this Jacobian.

        ``|dU / dL| = 2^n prod_i L_ii^(n - i + 1)`` (``i`` from 1) and ``dL_ii / dtheta_ii = L_ii``, so
        ``log |dU / dtheta| = sum_i (n - i + 2) theta_ii + n log 2``.
        """
        total = torch.zeros(theta.shape[:-1], dtype=theta.dtype)
        for part, n, (rows, cols) in zip(torch.split(theta, self.counts, dim=-1), self.sizes, self.index):
            powers = torch.where(rows == cols, n - rows + 1, 0).to(theta.dtype)  # rows is 0-based here
            total = total + part @ powers
        return total

    def chain_rule(self, theta, gradients, hessian_U):
        """Gradient and Hessian in ``theta`` from derivatives with respect to the full matrices.

        With ``U = L L^T``: ``dU_ab / dL_ij = delta_ai L_bj + L_aj delta_bi`` and
        ``sum_ab g_ab d^2 U_ab / dL_ij dL_kl = delta_jl (g_ik + g_ki)``; diagonal entries of ``L`` are
        ``exp(theta)``, so ``dL/dtheta = d^2 L/dtheta^2 = L_ii`` there.
        """
        jacobians, curvatures, scales, diagonal_terms = [], [], [], []
        for chol, g, n, (rows, cols) in zip(self.factors(theta), gradients, self.sizes, self.index):
            eye = torch.eye(n, dtype=torch.float64)
            jac = eye[:, None, rows] * chol[None, :, cols]  # [a, b, k] = delta_{a i_k} L_{b j_k}
            jac = (jac + jac.transpose(0, 1)).reshape(n * n, -1)
            sym = g + g.T
            curvatures.append((cols[:, None] == cols[None, :]).to(torch.float64) * sym[rows[:, None], rows[None, :]])
            on_diagonal = rows == cols
            scales.append(torch.where(on_diagonal, chol[rows, cols], torch.ones(rows.numel(), dtype=torch.float64)))
            diagonal_terms.append(
                torch.where(on_diagonal, jac.T @ g.reshape(-1), torch.zeros(rows.numel(), dtype=torch.float64))
            )
            jacobians.append(jac)
        jac = torch.block_diag(*jacobians)
        scale = torch.cat(scales)
        gradient = (jac.T @ torch.cat([g.reshape(-1) for g in gradients])) * scale
        hess_L = jac.T @ hessian_U @ jac + torch.block_diag(*curvatures)
        hess = scale[:, None] * hess_L * scale[None, :] + torch.diag(torch.cat(diagonal_terms) * scale)
        return gradient, (hess + hess.T) / 2


# --------------------------------------------------------------------------------------------------------
# the action and its Newton minimisation


class _Point:
    """The action at one ``theta``: the block-diagonal matrix of the factors ``F_l`` (``U_l = F_l F_l^T``; numpy,
    ``factors`` are views of its blocks), the energy's factorisation and the two parts of ``S``."""

    __slots__ = ("theta", "factor", "factors", "energy", "entropy", "value")

    def __init__(self, theta, factor, factors, energy_point, entropy_value):
        self.theta, self.factor, self.factors = theta, factor, factors
        self.energy, self.entropy = energy_point, entropy_value
        self.value = entropy_value + energy_point.value


class _Derivatives:
    """Gradient and Hessian of ``S`` at a :class:`_Point` in ``theta``, with what the certificate needs: the
    gradient and the Hessian with respect to the coordinates ``u`` of the ``U_l`` in the orthonormal bases of
    symmetric matrices (:class:`attnpaths.action.SymmetricBasis`, layer after layer)."""

    __slots__ = ("gradient", "hessian", "gradient_u", "hessian_u")

    def __init__(self, gradient, hessian, gradient_u, hessian_u):
        self.gradient, self.hessian, self.gradient_u, self.hessian_u = gradient, hessian, gradient_u, hessian_u


class _Action:
    """``S`` on log-Cholesky coordinates ``theta``, with its exact gradient and Hessian there.

    The layers are the diagonal blocks of one block-diagonal matrix ``U = F F^T``. The derivatives with respect to
    the coordinates ``u`` of the ``U_l`` in orthonormal bases of symmetric matrices (``U_l = sum_k u_k E_k``,
    :class:`attnpaths.action.SymmetricBasis`; :meth:`attnpaths.action.EnergyEvaluator.derivatives_in_basis`, and
    :func:`attnpaths.action.entropy_terms` projected on the bases) are carried to ``theta`` by the chain rule
    (:meth:`CholeskyCoordinates.chain_rule`, here with the Jacobian ``J = du / dtheta`` applied through ``F``):
    ``dU / dtheta_t = s_t (e_i f_j^T + f_j e_i^T)`` (``(i, j)`` the entry of ``theta_t``, ``f_j`` the ``j``-th column
    of ``F``, ``s_t = F_ii`` on the diagonal, else 1), so ``J[k, t] = c_k s_t (delta(a_k, i) F[b_k, j]
    + F[a_k, j] delta(b_k, i))`` (``E_k`` on the entry ``(a_k, b_k)``, ``c_k`` its weight), and
    ``d^2 S / dtheta_t dtheta_v = (J^T H_u J)_tv + 2 s_t s_v delta(j_t, j_v) g[i_t, i_v]
    (+ dS/dtheta_t if t = v is diagonal)``, ``dS/dtheta = J^T g_u``, with ``g`` the gradient with respect to the
    entries of ``U``.
    """

    def __init__(
        self,
        X: torch.Tensor | None,
        y: torch.Tensor | None,
        arch: Architecture,
        temperature: float,
        evaluator: EnergyEvaluator | None = None,
    ):
        self.X, self.y, self.arch, self.temperature = X, y, arch, temperature
        self.energy = EnergyEvaluator(X, y, temperature) if evaluator is None else evaluator
        self.sizes = sizes = _layer_sizes(arch)
        self.coords = CholeskyCoordinates(sizes)
        self.bases = [self.energy.basis] + [SymmetricBasis(n) for n in sizes[1:]]
        self.offsets = [0]
        for n in sizes:
            self.offsets.append(self.offsets[-1] + n)
        n = self.total = self.offsets[-1]
        i = torch.cat([rows + o for (rows, _), o in zip(self.coords.index, self.offsets)]).numpy()
        j = torch.cat([cols + o for (_, cols), o in zip(self.coords.index, self.offsets)]).numpy()
        self.on_diagonal = i == j
        self.entry = i * n + j  # theta_t -> F[i_t, j_t]
        self.same_column = (j[:, None] == j[None, :]).astype(np.float64)
        self.row_pairs = i[:, None] * n + i[None, :]
        # the bases: layer l's coordinates in u[starts[l]:starts[l+1]]; every entry (c, d) of U by its coordinate
        # (M, a zero appended to u, off the layers' blocks) and 2 / c_k (0 off the blocks), for _times_jacobian
        self.starts = [0]
        for basis in self.bases:
            self.starts.append(self.starts[-1] + basis.size)
        self.coordinate_of_entry = np.full(n * n, self.starts[-1])
        self.entry_factor = np.zeros(n * n)
        for basis, offset, start in zip(self.bases, self.offsets, self.starts):
            block = np.arange(offset, offset + basis.n)
            entries = (block[:, None] * n + block[None, :]).reshape(-1)
            self.coordinate_of_entry[entries] = start + basis.position.numpy().reshape(-1)
            self.entry_factor[entries] = 2.0 / basis.entry_weights.numpy().reshape(-1)

    def point(self, theta: torch.Tensor) -> _Point | None:
        """The action at ``theta``; None where it is not finite (``K + T I`` numerically singular)."""
        values = theta.numpy()
        F = np.zeros(self.total * self.total)
        F[self.entry] = np.where(self.on_diagonal, np.exp(values), values)
        F = F.reshape(self.total, self.total)
        factors = [F[o:e, o:e] for o, e in zip(self.offsets, self.offsets[1:])]
        energy_point = self.energy.point(torch.from_numpy(np.ascontiguousarray(factors[0])))
        if energy_point is None:
            return None
        entropy_value = entropy_terms(factors, self.arch, order=0)[0]
        if not math.isfinite(entropy_value):
            return None
        return _Point(theta, F, factors, energy_point, entropy_value)

    def parts(self, U_layers) -> tuple[float, float]:
        """``(S_ent, S_en)`` at ``[U_1, ..., U_L]``."""
        point = self.point(self.coords.coordinates(U_layers))
        return point.entropy, point.energy.value

    def _times_jacobian(self, Y: np.ndarray, F: np.ndarray, scale: np.ndarray):
        """``(Y J, Q)`` for ``Y`` ``[R, M]`` (columns: coordinates ``u``), ``J = du / dtheta`` ``[M, D]`` at the factor
        ``F`` ``[n, n]`` (``scale``: ``s_t``): ``(Y J)[r, t] = s_t sum_d Q[r, i_t, d] F[d, j_t]`` with
        ``Q[r, c, d] = 2 Y[r, k(c, d)] / c_k`` (0 off the layers' blocks), ``n^3`` operations per row instead of
        the ``M D`` of a dense ``J``. ``Q / 2`` is ``Y``'s rows as (entries-independent) derivatives w.r.t. ``U``."""
        R, n = Y.shape[0], self.total
        Q = np.concatenate([Y, np.zeros((R, 1))], axis=1)[:, self.coordinate_of_entry] * self.entry_factor
        return (Q.reshape(R * n, n) @ F).reshape(R, n * n)[:, self.entry] * scale, Q

    def derivatives(self, point: _Point) -> _Derivatives:
        """Gradient and Hessian of ``S`` at ``point``."""
        s = self.starts
        en_gradient, en_hessian = self.energy.derivatives_in_basis(point.energy, order=2)
        _, gradients, terms = entropy_terms(point.factors, self.arch, order=2)
        # numpy: the arrays are small (a fraction of torch's cost per operation)
        gradient_u = np.concatenate(
            [g.reshape(-1)[basis.flat_positions[0]] * basis.weights.numpy() for g, basis in zip(gradients, self.bases)]
        )
        gradient_u[: s[1]] += en_gradient.numpy()
        hessian_u = np.zeros((s[-1], s[-1]))
        hessian_u[: s[1], : s[1]] = en_hessian.numpy()
        for (i, j), block in terms:
            projected = self.bases[i].project(block, self.bases[j])
            hessian_u[s[i] : s[i + 1], s[j] : s[j + 1]] += projected
            if i != j:
                hessian_u[s[j] : s[j + 1], s[i] : s[i + 1]] += projected.T
        F = point.factor
        scale = np.where(self.on_diagonal, F.reshape(-1)[self.entry], 1.0)
        gradient, Q = self._times_jacobian(gradient_u[None], F, scale)
        gradient, g = gradient[0], Q[0] / 2  # g: dS / dU (entries)
        right = self._times_jacobian(hessian_u, F, scale)[0]  # H_u J
        hessian = self._times_jacobian(np.ascontiguousarray(right.T), F, scale)[0]  # (H_u J)^T J = J^T H_u J
        hessian += (2.0 * self.same_column) * g[self.row_pairs] * np.outer(scale, scale)
        hessian.flat[:: hessian.shape[0] + 1] += np.where(self.on_diagonal, gradient, 0.0)
        return _Derivatives(
            torch.from_numpy(gradient), torch.from_numpy((hessian + hessian.T) / 2), gradient_u, hessian_u
        )

    def certificate(self, derivatives: _Derivatives) -> tuple[float, float]:
        """Gradient norm and smallest Hessian eigenvalue of ``S`` in symmetric directions of every ``U_l``
        (the orthonormal bases of :class:`attnpaths.action.SymmetricBasis`)."""
        H = derivatives.hessian_u
        return float(np.linalg.norm(derivatives.gradient_u)), float(np.linalg.eigvalsh((H + H.T) / 2)[0])
