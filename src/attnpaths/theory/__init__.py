"""Minimising the action (eq-action), predictor statistics (eq-predictor), GP limit (eq-gp), head scores.

Public entry point::

    from attnpaths.theory import solve
    sol = solve(features, targets, heads=(H_1, ..., H_L), width=N, temperature=T, variances=1.0)
    mean, var = sol.predict(features_test)

With many more examples than ``D = N0 n_paths`` features the energy takes the Gram route (``attnpaths.gram``):
after one pass over the features every Newton step costs the same whatever ``P``, and the features can be streamed::

    stats = GramStatistics()
    for features, y in chunks:
        stats.update(features, y)
    sol = solve_from_statistics(stats, heads=(H_1, ..., H_L), width=N, temperature=T)

The minimiser works on log-Cholesky coordinates ``U_l = L_l L_l^T`` (``L_l`` lower triangular with a positive,
exponentiated diagonal), so every iterate is positive definite by construction and no step can produce NaN.
It is a trust-region Newton method with the exact Hessian: the derivatives of the energy and of the entropy
with respect to the matrices ``U_l`` are analytic (:class:`attnpaths.action.EnergyEvaluator`,
:func:`attnpaths.action.entropy_terms`) and the chain rule to the Cholesky coordinates is exact.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional  # Optional[ArrayLike]: autodoc_type_aliases cannot read ArrayLike | None

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._validation import as_float64_tensor, check_memory, heads_tuple, positive_int, positive_real, real_scalar
from ..action import (
    Architecture,
    EnergyEvaluator,
    SymmetricBasis,
    energy,
    entropy_terms,
    gp_order_parameters,
    readout_order_parameter,
)
from ..gram import DEFAULT_BLOCK_SIZE, GramStatistics
from ..kernels import kernel_from_scaled, scaled_features
from ..paths import check_num_paths


class CertificateWarning(UserWarning):
    """The minimiser stopped at a point that is not certified as a minimum of the action."""


# --------------------------------------------------------------------------------------------------------
# argument parsing


def parse_widths(width, num_layers: int) -> tuple[float, ...]:
    """``width``: one number for every layer, or ``(N_1, ..., N_L, N_a)``; ``inf`` gives the GP limit."""
    width = real_scalar(width)
    if isinstance(width, numbers.Real) and not isinstance(width, bool):
        width = (width,) * (num_layers + 1)
    expected = "a number >= 1 or a tuple (N_1, ..., N_L, N_a) of them"
    if isinstance(width, (str, bytes)):  # iterable, but its characters are not widths
        raise ValueError(f"width must be {expected}, got {width!r} (a string)")
    try:
        width = tuple(width)
    except TypeError as err:
        raise ValueError(f"width must be {expected}, got {width!r}") from err
    if len(width) != num_layers + 1:
        raise ValueError(f"width must hold L + 1 = {num_layers + 1} values (N_1, ..., N_L, N_a), got {len(width)}")
    out = []
    for w in width:
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or math.isnan(w) or w < 1:
            raise ValueError(f"width must be numbers >= 1 (or inf for the GP limit), got {width!r}")
        out.append(float(w))
    if any(math.isinf(w) for w in out) and not all(math.isinf(w) for w in out):
        raise ValueError(f"width must be all finite or all inf (GP limit), got {width!r}")
    return tuple(out)


def parse_variances(variances, num_layers: int) -> tuple[float, ...]:
    """``variances``: one number, or ``(s0, s1, ..., sL, sa)``, all > 0 (prior variances, not std)."""
    if isinstance(variances, numbers.Real) and not isinstance(variances, bool):
        variances = (variances,) * (num_layers + 2)
    try:
        variances = tuple(variances)
    except TypeError as err:
        raise ValueError(f"variances must be a number > 0 or a tuple (s0, ..., sL, sa), got {variances!r}") from err
    if len(variances) != num_layers + 2:
        raise ValueError(
            f"variances must hold L + 2 = {num_layers + 2} values (s0, s1, ..., sL, sa), got {len(variances)}"
        )
    return tuple(positive_real(v, "variances") for v in variances)


def architecture(heads, width, variances=1.0) -> Architecture:
    """Validate and bundle ``heads``, ``width`` (the per-layer widths) and ``variances`` (see :func:`solve`)."""
    heads = heads_tuple(heads)
    return Architecture(heads, parse_widths(width, len(heads)), parse_variances(variances, len(heads)))


# --------------------------------------------------------------------------------------------------------
# log-Cholesky coordinates: U_l = L_l L_l^T, L_l lower triangular, diagonal exp(theta), off-diagonal theta


def _layer_sizes(arch: Architecture) -> list[int]:
    return [arch.layer_size(layer) for layer in range(1, arch.num_layers + 1)]


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


def _trust_region_step(coefficients: np.ndarray, eigenvalues: np.ndarray, radius: float) -> np.ndarray:
    """Minimiser of ``g.p + p.H p / 2`` over ``|p| <= radius``, in the eigenbasis of ``H``
    (``coefficients = V^T g``): ``p = -(H + sigma I)^{-1} g`` with the smallest ``sigma >= max(0, -lambda_min)``
    that keeps ``|p| <= radius`` (the secular equation ``1/|p(sigma)| = 1/radius``, solved by Newton's
    method), plus a multiple of the lowest eigenvector in the "hard case" where ``g`` has no component along it.
    """
    lowest = eigenvalues[0]
    g2 = coefficients * coefficients
    if lowest > 0:
        step = -coefficients / eigenvalues
        if float(step @ step) <= radius * radius:
            return step
    sigma_min = max(0.0, -lowest)
    # hard case: no gradient along the lowest eigenvectors and the step at sigma_min is inside the region
    scale = max(1.0, float(np.abs(eigenvalues).max()))
    degenerate = eigenvalues - lowest <= 1e-12 * scale
    if float(g2[degenerate].sum()) <= 1e-30 * max(float(g2.sum()), 1e-300):
        shifted = eigenvalues[~degenerate] + sigma_min
        step = np.zeros_like(coefficients)
        step[~degenerate] = -coefficients[~degenerate] / shifted
        missing = radius * radius - float(step @ step)
        if missing >= 0:
            step[np.flatnonzero(degenerate)[0]] += math.sqrt(missing)
            return step
    sigma = sigma_min + 1e-12 * scale
    for _ in range(100):
        shifted = eigenvalues + sigma
        norm2 = float((g2 / shifted**2).sum())
        norm = math.sqrt(norm2)
        if abs(norm - radius) <= 1e-6 * radius:
            break
        derivative = float((g2 / shifted**3).sum())  # -d|p|^2/dsigma / 2
        new_sigma = sigma + (norm2 / derivative) * (norm - radius) / radius
        sigma = new_sigma if new_sigma > sigma_min else (sigma + sigma_min) / 2
    step = -coefficients / (eigenvalues + sigma)
    norm = math.sqrt(float(step @ step))
    return step * (radius / norm) if norm > radius else step


def _steihaug(gradient: torch.Tensor, hessian: torch.Tensor, radius: float) -> torch.Tensor:
    """Truncated conjugate gradients for ``min g.p + p.H p / 2`` over ``|p| <= radius`` (Steihaug): CG on
    ``H p = -g`` from ``p = 0``, stopped at the boundary of the region or along a direction of non-positive
    curvature (followed to the boundary), or at a residual below ``min(0.5, sqrt|g|) |g|``."""

    def to_boundary(p, d):
        pd, dd, pp = float(p @ d), float(d @ d), float(p @ p)
        return p + ((-pd + math.sqrt(pd * pd + dd * (radius * radius - pp))) / dd) * d

    p = torch.zeros_like(gradient)
    r = gradient.clone()
    d = -r
    rr = float(r @ r)
    stop = min(0.5, math.sqrt(math.sqrt(rr))) * math.sqrt(rr)
    for _ in range(gradient.numel()):
        Hd = hessian @ d
        curvature = float(d @ Hd)
        if curvature <= 0:
            return to_boundary(p, d)
        alpha = rr / curvature
        following = p + alpha * d
        if float(torch.linalg.vector_norm(following)) >= radius:
            return to_boundary(p, d)
        p = following
        r = r + alpha * Hd
        rr_next = float(r @ r)
        if math.sqrt(rr_next) < stop:
            break
        d = -r + (rr_next / rr) * d
        rr = rr_next
    return p


class _Model:
    """The quadratic model ``g.p + p.H p / 2`` of one iteration and its trust-region steps: the exact minimiser
    in the region through the eigendecomposition of ``H`` (:func:`_trust_region_step`) while ``H`` is small;
    a large ``H`` is factored by Cholesky (a Newton step inside the region needs nothing more), else the step
    comes from truncated conjugate gradients (:func:`_steihaug`), which need only products with ``H``."""

    def __init__(self, gradient: torch.Tensor, hessian: torch.Tensor, eigen_limit: int = 400):
        self.gradient, self.hessian = gradient, hessian
        self.eigen = None
        self.newton = None
        self.large = gradient.numel() > eigen_limit
        if self.large:
            chol, info = torch.linalg.cholesky_ex(hessian)
            if int(info) == 0:
                self.newton = -torch.cholesky_solve(gradient[:, None], chol)[:, 0]

    def step(self, radius: float) -> tuple[torch.Tensor, float, float]:
        """``(step, its length, predicted decrease)`` for the region of radius ``radius``."""
        if self.large:
            if self.newton is not None and float(torch.linalg.vector_norm(self.newton)) <= radius:
                step = self.newton
            else:
                step = _steihaug(self.gradient, self.hessian, radius)
            predicted = -float(self.gradient @ step + 0.5 * step @ (self.hessian @ step))
            return step, float(torch.linalg.vector_norm(step)), predicted
        if self.eigen is None:
            eigenvalues, vectors = np.linalg.eigh(self.hessian.numpy())
            self.eigen = (eigenvalues, vectors, vectors.T @ self.gradient.numpy())
        lam, V, coefficients = self.eigen
        step = _trust_region_step(coefficients, lam, radius)
        predicted = -float(coefficients @ step + 0.5 * (lam * step) @ step)
        return torch.from_numpy(V @ step), math.sqrt(float(step @ step)), predicted

    def positive_definite(self) -> bool:
        if self.large:
            return self.newton is not None
        if self.eigen is None:
            self.step(math.inf)
        return bool(self.eigen[0][0] > 0)

    def newton_step_size(self) -> float:
        """Largest entry of the Newton step ``-H^{-1} g`` (``inf`` where ``H`` is not positive definite)."""
        if not self.positive_definite():
            return math.inf
        if self.newton is not None:
            return float(self.newton.abs().max())
        lam, V, coefficients = self.eigen
        return float(np.abs(V @ (coefficients / lam)).max())


def _newton(
    action: _Action,
    theta,
    tolerance: float,
    max_iterations: int,
    radius: float = 2.0,
    refine: float = 1e-12,
    *,
    initial_given: bool = True,
):
    """Trust-region Newton method in log-Cholesky coordinates with the exact Hessian.

    Each iteration minimises the quadratic model of ``S`` within a ball of radius ``radius`` around ``theta``
    (:func:`_trust_region_step`, which also follows directions of negative curvature) and accepts the step when
    ``S`` decreases by at least a tenth of the model's prediction. Near the minimum the decrease of ``S`` falls
    below the rounding of its evaluation: a step whose predicted decrease is below that level, from a
    positive-definite model, is accepted when it lowers the gradient norm. The radius doubles after a step that
    reached it with a good prediction and shrinks to a quarter of a step whose prediction was poor. Every trial
    point is a valid ``theta``, hence gives positive-definite ``U_l``. The iteration stops at a gradient norm
    below ``tolerance``; where the Newton step from there still moves some coordinate by more than ``refine``, it
    first takes one more step and keeps it if it lowers the gradient norm (so that the result does not depend on
    how far below the tolerance the last step happened to land).

    Returns:
        ``(point, iterations, success, message, derivatives at the point)``.
    """
    point = action.point(theta)
    if point is None:
        if initial_given:
            raise ValueError(
                f"initial must give a finite action (K(U_1) + T I positive definite at "
                f"temperature={action.temperature!r})"
            )
        U_1 = action.coords.matrices(theta)[0]
        raise ValueError(_infinite_start(float(U_1[0, 0]), action.temperature))
    derivatives = action.derivatives(point)
    eps = torch.finfo(torch.float64).eps
    converged = None
    for iteration in range(max_iterations + 1):
        gradient_norm = float(torch.linalg.vector_norm(derivatives.gradient))
        model = _Model(derivatives.gradient, derivatives.hessian)
        if gradient_norm < tolerance:
            # one more step where the minimum is still farther than ``refine`` and the step lowers the gradient
            # (a saddle point stops here too: the certificate tells)
            if converged is not None or not model.newton_step_size() > refine or iteration == max_iterations:
                return point, iteration, True, "gradient norm below tolerance", derivatives
            converged = (point, iteration, derivatives)
        if iteration == max_iterations:
            break
        # rounding of S: a few ulps are accepted on any step; below ``noise`` a change of S is not resolved
        slack = 64 * eps * abs(point.value)
        noise = 1e-10 * max(1.0, abs(point.value))
        trial_derivatives = None
        while True:
            step, length, predicted = model.step(radius)
            trial = action.point(point.theta + step)
            decrease = -math.inf if trial is None else point.value - trial.value
            if decrease >= 0.1 * predicted - slack:
                break
            if trial is not None and predicted < noise and decrease > -noise and model.positive_definite():
                trial_derivatives = action.derivatives(trial)
                if float(torch.linalg.vector_norm(trial_derivatives.gradient)) < gradient_norm:
                    break
                trial_derivatives = None
            radius = 0.25 * length
            if converged is not None:  # the refining step was not resolved: the point below the tolerance stands
                point, iteration, derivatives = converged
                return point, iteration, True, "gradient norm below tolerance", derivatives
            if radius < 1e-12:
                return point, iteration, False, "the trust region collapsed: no step decreases the action", derivatives
        if predicted > noise and decrease > 0.75 * predicted and length > 0.99 * radius:
            radius *= 2.0
        elif predicted > noise and decrease < 0.25 * predicted:
            radius = 0.25 * length
        point = trial
        derivatives = action.derivatives(point) if trial_derivatives is None else trial_derivatives
        if converged is not None and not float(torch.linalg.vector_norm(derivatives.gradient)) < gradient_norm:
            point, iteration, derivatives = converged
            return point, iteration, True, "gradient norm below tolerance", derivatives
    return point, max_iterations, False, f"no convergence in {max_iterations} iterations", derivatives


# --------------------------------------------------------------------------------------------------------
# the solution

_NO_TRAINING_SET = (
    "{what} is not available: this solution was found from GramStatistics (solve_from_statistics), "
    "which hold no training examples; solve(features, y, ...) keeps them"
)


@dataclass(frozen=True)
class TheorySolution:
    """Minimiser of the action and the predictor it implies (eq-action, eq-predictor).

    Attributes:
        U: ``[n_paths, n_paths]`` order parameter ``U_1`` of the kernel (path order ``h_1`` slowest).
        U_layers: ``[U_1, ..., U_L]``, ``U_l`` of shape ``[n_l, n_l]`` (numpy arrays).
        U_a: scalar readout order parameter (eq-readout).
        action: ``S`` exactly as in (eq-action) at the minimum (``inf`` in the GP limit, where the entropy diverges).
        energy, entropy: the two parts of the action (``entropy`` is ``inf`` in the GP limit).
        gradient_norm: norm of the gradient of ``S`` in symmetric directions at the returned point.
        hessian_min_eigenvalue: smallest eigenvalue of the Hessian of ``S`` restricted to symmetric
            directions (positive at a strict minimum); ``nan`` in the GP limit.
        converged: the solver's stopping rule was met and the Hessian is positive definite.
        iterations: Newton iterations used.
        route: the energy's route (:class:`attnpaths.action.EnergyEvaluator`): ``"sample"`` or ``"feature"`` (the
            ``[P, P]`` kernel is factored; in the GP limit ``"feature"`` stands for the kernel formed directly) or
            ``"gram"`` (more examples than ``D = N0 n_paths`` features: the solution holds ``r <= D`` equivalent
            rows, ``attnpaths.gram``, and no ``[P, P]`` matrix; :attr:`kernel_cholesky` and
            :attr:`dual_weights` are then computed when first asked for).
    """

    U: np.ndarray
    U_layers: list[np.ndarray]
    U_a: float
    action: float
    energy: float
    entropy: float
    gradient_norm: float
    hessian_min_eigenvalue: float
    converged: bool
    iterations: int
    arch: Architecture
    temperature: float
    _X: torch.Tensor | None = field(repr=False)
    _y: torch.Tensor | None = field(repr=False)
    _chol: torch.Tensor = field(repr=False)
    _alpha: torch.Tensor = field(repr=False)
    route: str = "feature"
    _rows: torch.Tensor | None = field(default=None, repr=False)
    _raw: tuple | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False, init=False)

    @property
    def heads(self) -> tuple[int, ...]:
        """Heads per layer ``(H_1, ..., H_L)``."""
        return self.arch.heads

    @property
    def widths(self) -> tuple[float, ...]:
        """Widths ``(N_1, ..., N_L, N_a)`` (all ``inf`` in the GP limit)."""
        return self.arch.widths

    @property
    def variances(self) -> tuple[float, ...]:
        """Prior variances ``(s0, s1, ..., sL, sa)``."""
        return self.arch.variances

    @property
    def has_training_set(self) -> bool:
        """Whether the solution holds its training examples (False when found from ``GramStatistics``)."""
        return self._X is not None or self._raw is not None

    @property
    def training_features(self) -> torch.Tensor:
        """``[P, N0, n_paths]`` the scaled training features the kernel is built from
        (:func:`attnpaths.kernels.scaled_features`). On the ``"gram"`` route the solution keeps the features it was
        given (no copy) and scales them on every call; from ``GramStatistics`` there are none (``ValueError``)."""
        if self._X is not None:
            return self._X
        if self._raw is None:
            raise ValueError(_NO_TRAINING_SET.format(what="training_features"))
        raw, scale = self._raw
        return raw * scale

    @property
    def training_labels(self) -> torch.Tensor:
        """``[P]`` the training labels ``y`` (``ValueError`` for a solution found from ``GramStatistics``)."""
        if self._y is None:
            raise ValueError(_NO_TRAINING_SET.format(what="training_labels"))
        return self._y

    @property
    def kernel_cholesky(self) -> torch.Tensor:
        """``[P, P]`` lower Cholesky factor of ``K(U) + T I`` at the solution (eq-predictor). On the ``"gram"``
        route it is formed (and kept) on the first call: ``P^2`` numbers."""
        if self.route != "gram":
            return self._chol
        if "chol" not in self._cache:
            if self._raw is None:
                raise ValueError(_NO_TRAINING_SET.format(what="kernel_cholesky"))
            P = self._raw[0].shape[0]
            check_memory(8.0 * 2 * P * P, f"kernel_cholesky with P = {P} examples (two [P, P] float64 matrices)")
            X = self.training_features
            G = kernel_from_scaled(X, torch.as_tensor(self.U), X) + self.temperature * torch.eye(P, dtype=torch.float64)
            self._cache["chol"] = torch.linalg.cholesky(G)
        return self._cache["chol"]

    @property
    def mean_weights(self) -> torch.Tensor:
        """``[N0, n_paths]`` the predictor's mean in feature space (eq-predictor): ``<f(x)> = sum_{i,a} X_ia(x) v_ia``
        with ``v = W U``, ``W = sum_mu alpha_mu X^mu`` (``X`` the scaled features,
        :func:`attnpaths.kernels.scaled_features`; ``alpha`` of :attr:`dual_weights`, or on the ``"gram"`` route
        the same ``W`` from the equivalent rows)."""
        if "mean_weights" not in self._cache:
            rows = self._predictor_rows
            W = (self._alpha @ rows.reshape(rows.shape[0], -1)).reshape(rows.shape[1:])
            self._cache["mean_weights"] = W @ torch.as_tensor(self.U)
        return self._cache["mean_weights"]

    @property
    def dual_weights(self) -> torch.Tensor:
        """``[P]`` ``alpha = (K(U) + T I)^{-1} y``: the predictor is ``f(x) = k(x)^T alpha`` (eq-predictor). On the
        ``"gram"`` route it is computed on the first call, without a ``[P, P]`` matrix, from ``T alpha = y - K alpha``
        ``= y - F v`` (``v`` of :attr:`mean_weights`, ``F`` the training features flattened)."""
        if self.route != "gram":
            return self._alpha
        if "alpha" not in self._cache:
            if self._raw is None:
                raise ValueError(_NO_TRAINING_SET.format(what="dual_weights"))
            raw, scale = self._raw
            v = (self.mean_weights * scale).reshape(-1)
            fitted = torch.cat([raw[s : s + 8192].reshape(-1, v.numel()) @ v for s in range(0, raw.shape[0], 8192)])
            self._cache["alpha"] = (self._y - fitted) / self.temperature
        return self._cache["alpha"]

    @property
    def _predictor_rows(self) -> torch.Tensor:
        """The ``[R, N0, n_paths]`` scaled rows that ``_chol`` and ``_alpha`` belong to: the training features, or on
        the ``"gram"`` route the equivalent rows (``R = r <= D``)."""
        return self._X if self._rows is None else self._rows

    def _scaled(self, features, name: str) -> torch.Tensor:
        X = scaled_features(features, self.arch.variances[0])
        shape = self._predictor_rows.shape
        if X.shape[1:] != shape[1:]:
            raise ValueError(f"{name} must have shape [P_test, {shape[1]}, {shape[2]}], got {tuple(X.shape)}")
        return X

    def kernel(self, features_a, features_b=None) -> np.ndarray:
        """Renormalised kernel ``K(U_1)`` (eq-kernel) between two sets of examples, ``[Pa, Pb]`` (no temperature)."""
        Xa = self._scaled(features_a, "features_a")
        Xb = Xa if features_b is None else self._scaled(features_b, "features_b")
        return kernel_from_scaled(Xa, torch.as_tensor(self.U), Xb).numpy()

    def train_kernel(self) -> np.ndarray:
        """``K(U_1)`` on the training set, ``[P, P]`` (no temperature)."""
        X = self.training_features
        return kernel_from_scaled(X, torch.as_tensor(self.U), X).numpy()

    def predict(self, features_test, *, batch_size: int = 512) -> tuple[np.ndarray, np.ndarray]:
        """Predictor mean and variance (eq-predictor) on test examples.

        ``<f(x*)> = k^T (K + T I)^{-1} y`` and ``Var f(x*) = kappa - k^T (K + T I)^{-1} k`` with
        ``k_mu = K(x^mu, x*)`` and ``kappa = K(x*, x*)``. On the ``"gram"`` route the training examples are the
        ``r <= D`` equivalent rows ``R`` (``attnpaths.gram``), with the same mean and variance:
        ``<f(x*)> = f*^T A F^T (K + T I)^{-1} y`` and ``k^T (K + T I)^{-1} k = f*^T A F^T (K + T I)^{-1} F A f*``
        (``f*`` the flattened test features, ``A = I_N0 (x) U``) depend on the data through ``F^T F = R^T R`` and
        ``F^T y = R^T y~`` only; no ``[P, P]`` or ``[P, P_test]`` matrix is formed.

        Args:
            features_test: ``[P_test, N0, n_paths]`` path features of the test inputs (the path axis is checked
                against the training features' ``n_paths`` only: see :func:`solve` on ``heads``).
            batch_size: test examples per batch, an integer >= 1 (memory only; the result does not depend on it).

        Returns:
            ``(mean, variance)``, numpy arrays of length ``P_test``.
        """
        batch_size = positive_int(batch_size, "batch_size")
        Xt = self._scaled(features_test, "features_test")
        U = torch.as_tensor(self.U)
        rows = self._predictor_rows
        means, variances = [], []
        for start in range(0, Xt.shape[0], batch_size):
            xb = Xt[start : start + batch_size]
            k = kernel_from_scaled(xb, U, rows)  # [B, P] (or [B, r] on the gram route)
            kappa = torch.einsum("bip,pq,biq->b", xb, U, xb)
            solved = torch.cholesky_solve(k.T, self._chol)  # [P, B]
            means.append(k @ self._alpha)
            variances.append(kappa - (k * solved.T).sum(dim=1))
        if not means:
            return np.zeros(0), np.zeros(0)
        return torch.cat(means).numpy(), torch.cat(variances).numpy()


def _infinite_start(u: float, temperature: float, gp_limit: bool = False) -> str:
    """The error where the action is not finite at the GP values ``U_1 = u I``: the default starting point of the
    minimisation, or the solution itself in the GP limit."""
    where = "in the GP limit at U" if gp_limit else "at the starting point U"
    return (
        f"the action is not finite {where} = the GP values (U_1 = {u:g} I): the kernel K(U_1) + T I is "
        f"numerically singular or overflows at temperature={temperature!r}; try a larger temperature (or "
        f"features of a smaller scale)"
    )


ROUTES = (None, "sample", "feature", "gram")
"""The values of :func:`solve`'s ``route``."""


def _default_route(P: int, n0: int, n: int, arch: Architecture) -> str:
    """The route :func:`solve` takes: per Hessian, :meth:`attnpaths.action.EnergyEvaluator.cheaper_route`; in the
    GP limit (one evaluation, no Hessian) the Gram route where ``1.2 P D^2 + 4 D^3 + r^2 D`` (its Gram matrix,
    eigendecomposition and kernel of ``r = min(P, D)`` rows) is below the ``P^2 D`` of the ``[P, P]`` kernel."""
    if not arch.gp_limit:
        return EnergyEvaluator.cheaper_route(P, n0, n)
    D, r = n0 * n, min(P, n0 * n)
    return "gram" if 1.2 * P * D * D + 4.0 * D**3 + r * r * D < P * P * D else "feature"


SOLVER_OVERHEAD_BYTES = 192 * 2**20
"""Bytes that a solve needs beyond the arrays counted by ``_solver_memory``: 64 MiB of address space beyond
the resident peak (VmPeak over VmHWM: the allocator's arenas, the BLAS and LAPACK code and their workspaces, all
counted by ``RLIMIT_AS``), 96 MiB for the heap's fragmentation (glibc keeps freed blocks below its 32 MiB mmap
threshold in the heap: ``[P, P]`` matrices of ``P < 2048`` raise the peak of one solve by up to three of them,
92 MiB seen at ``P = 2000`` between runs of the same solve) and a 32 MiB margin."""


def _solver_memory(P: int, n0: int, n: int, arch: Architecture, route: str | None = None) -> tuple[float, str]:
    """Bytes that :func:`solve` needs at its peak for ``P`` examples of ``[N0, n_paths] = [n0, n]`` path features,
    about, and the route's description (``route``: ``"sample"``, ``"feature"``, ``"gram"``; default
    :func:`_default_route`). ``D = n0 n``, ``m = n (n + 1) / 2``.

    Measured, as the growth of ``VmHWM`` (resident) and ``VmPeak`` (virtual, what ``RLIMIT_AS`` limits) of a fresh
    process over a forced solve (``P`` from 500 to 4000, ``N0`` from 60 to 500, ``n = 4``; the fits are within
    15 MiB of the smallest peak of each; e.g. 93, 264 and 474 MiB resident at ``P`` = 1000, 2000, 3000 and
    ``N0 = 231``, where three ``[P, P]`` matrices are 23, 92 and 206 MiB): the feature-space route
    ``5.1 P^2 + 5.0 P D + 2.2 D^2`` float64 numbers (the current point's Cholesky factor with the trial point's
    kernel, its shifted copy and factor held at once, and ``[P, D]`` products of the features); the sample-space
    route the same and its three ``[P, P, m]`` stores of the basis kernels; the GP limit ``4 P^2 + P D``; the Gram
    route ``14 D^2`` and a block of ``attnpaths.gram.DEFAULT_BLOCK_SIZE`` examples (the Gram matrix, its
    eigenvectors and the ``r <= D`` equivalent rows, then the contraction on those rows: a ``P = D`` solve). The
    estimate rounds each coefficient up to the next integer or more (``6 P^2``: one ``[P, P]`` matrix beyond the
    five held at once, 20 % at large ``P``) and adds :data:`SOLVER_OVERHEAD_BYTES`: a solve under the estimate
    fits, with a few tens of MiB to spare at its worst measured peak."""
    route = _default_route(P, n0, n, arch) if route is None else route
    D, m = n0 * n, n * (n + 1) // 2
    if route == "gram":
        # the contraction on r <= D rows (the sample-space one keeps its stores), the Gram matrix, its copy while a
        # chunk is added and the equivalent rows, and two blocks of examples (the buffer and the one being filled)
        stores = 3 * D * D * m if EnergyEvaluator.cheaper_route(D, n0, n, direct_only=True) == "sample" else 0
        numbers = 18 * D * D + stores + 2 * DEFAULT_BLOCK_SIZE * D
        what = (
            f"solve with P = {P} examples (gram route: eighteen [D, D] float64 matrices, D = N0 n_paths = {D}, "
            f"for the features [P, N0, n_paths] = [{P}, {n0}, {n}])"
        )
        return 8.0 * numbers + SOLVER_OVERHEAD_BYTES, what
    if arch.gp_limit:
        route, kernels, numbers = "GP-limit", "five", 5 * P * P + 2 * P * D
    else:
        route, kernels = route + "-space", "six"
        numbers = 6 * P * P + 6 * P * D + 3 * D * D
        if route == "sample-space":
            numbers += 3 * P * P * m
    what = (
        f"solve with P = {P} examples ({route} route: {kernels} [P, P] float64 matrices and the features "
        f"[P, N0, n_paths] = [{P}, {n0}, {n}])"
    )
    return 8.0 * numbers + SOLVER_OVERHEAD_BYTES, what


def classification_accuracy(mean, labels) -> float:
    """Fraction of examples with ``sign(<f>) == y`` (eq-predictor); an exactly zero prediction counts as wrong."""
    mean, labels = np.asarray(mean), np.asarray(labels)
    if mean.shape != labels.shape:
        raise ValueError(f"mean and labels must have the same shape, got {mean.shape} and {labels.shape}")
    return float(np.mean(np.sign(mean) == labels))


# --------------------------------------------------------------------------------------------------------
# solve


def solve(
    features: ArrayLike,
    targets: ArrayLike,
    *,
    heads: int | Sequence[int],
    width: float | Sequence[float],
    temperature: float,
    variances: float | Sequence[float] = 1.0,
    initial: Optional[Sequence[ArrayLike]] = None,
    gradient_tolerance: float = 1e-8,
    max_iterations: int = 200,
    on_failure: str = "warn",
    route: str | None = None,
) -> TheorySolution:
    """Minimise the action S(U) (eq-action) and return the order parameters and the predictor (eq-predictor).

    Args:
        features: ``[P, N0, n_paths]`` path features ``xi_pi(x^mu)`` (numpy or torch), no normalisation;
            ``n_paths = H_1 ... H_L``, path index ``h_1`` slowest.
        targets: ``[P]`` the training targets (real numbers, e.g. ``+-1`` labels as floats; booleans are refused).
        heads: ``(H_1, ..., H_L)``. Only ``H_1 ... H_L == n_paths`` can be checked: the features carry the
            paths in one flat axis, so heads with the same product (``(4,)`` and ``(2, 2)``) are
            indistinguishable from them, and the caller must give the heads the features were built with.
        width: the theory's width ``N``, a number (every layer) or ``(N_1, ..., N_L, N_a)``; ``float('inf')`` gives
            the GP limit (eq-gp).
        temperature: likelihood variance ``T > 0``.
        variances: a number or ``(s0, s1, ..., sL, sa)``.
        initial: optional starting point ``[U_1, ..., U_L]`` (positive definite); default: the GP values.
        gradient_tolerance: stop when the gradient norm in log-Cholesky coordinates is below this (finite, > 0).
        max_iterations: Newton iteration cap (an integer >= 1).
        on_failure: ``"warn"`` (:class:`CertificateWarning`) or ``"raise"`` (``RuntimeError``) when the result
            is not certified as a minimum (not converged, or the Hessian is not positive definite).
        route: the energy's route, ``"sample"``, ``"feature"``, ``"gram"`` or None (the one with fewer operations:
            the Gram route, whose cost does not grow with ``P`` after one pass over the features, where there are
            enough more examples than ``D = N0 n_paths`` features; :class:`attnpaths.action.EnergyEvaluator`). The
            routes agree up to rounding.

    Returns:
        :class:`TheorySolution`.

    Raises:
        ValueError: an argument out of its range; also where the action is not finite at the starting point.
        TypeError: complex, boolean or object ``features`` or ``targets``.
        MemoryError: before any large allocation, where the solver's arrays (about six ``[P, P]`` float64
            matrices; on the Gram route some ``[D, D]``) would not fit in the available memory.
    """
    X_raw = as_float64_tensor(features, "features")
    if X_raw.ndim != 3 or X_raw.shape[0] < 1:
        raise ValueError(f"features must have shape [P, N0, n_paths] with P >= 1, got {tuple(X_raw.shape)}")
    heads = check_num_paths(X_raw.shape[2], heads)
    arch = architecture(heads, width, variances)
    labels = as_float64_tensor(targets, "targets", labels=True)
    if labels.shape != (X_raw.shape[0],):
        raise ValueError(f"targets must have shape [P] = [{X_raw.shape[0]}], got {tuple(labels.shape)}")
    options = _options(temperature, gradient_tolerance, max_iterations, on_failure)
    temperature = options[0]
    if route not in ROUTES:
        raise ValueError(f"route must be 'sample', 'feature', 'gram' or None, got {route!r}")
    P, n0, n = X_raw.shape
    route = _default_route(P, n0, n, arch) if route is None else route
    check_memory(*_solver_memory(P, n0, n, arch, route))
    scale = (arch.variances[0] / (n0 * n)) ** 0.5  # scaled_features, validated above

    if route == "gram":  # the statistics of the raw features, scaled by the evaluator: no scaled copy of the features
        statistics = GramStatistics.of_checked(X_raw, labels)
        evaluator = EnergyEvaluator.from_statistics(statistics, temperature, s0=arch.variances[0])
        return _minimise(evaluator, arch, initial, options, {"_y": labels, "_raw": (X_raw, scale)})

    X = X_raw * scale
    if arch.gp_limit:
        U_layers, U_a = gp_order_parameters(arch)
        try:
            en = energy(X, labels, U_layers[0], temperature)
        except torch.linalg.LinAlgError:
            en = None
        if en is None or not math.isfinite(en.value):
            raise ValueError(_infinite_start(float(U_layers[0][0, 0]), temperature, gp_limit=True))
        return _solution(X, labels, arch, temperature, U_layers, U_a, en.value, math.inf, math.nan, math.nan, True, 0)
    return _minimise(
        EnergyEvaluator(X, labels, temperature, route=route), arch, initial, options, {"_X": X, "_y": labels}
    )


def solve_from_statistics(
    statistics: GramStatistics,
    *,
    heads: int | Sequence[int] | None = None,
    width: float | Sequence[float],
    temperature: float,
    variances: float | Sequence[float] = 1.0,
    initial: Optional[Sequence[ArrayLike]] = None,
    gradient_tolerance: float = 1e-8,
    max_iterations: int = 200,
    on_failure: str = "warn",
) -> TheorySolution:
    """:func:`solve` from the data's sufficient statistics instead of its features (eq-action, eq-predictor): the
    Gram matrix ``F^T F``, ``F^T y``, ``y^T y`` and ``P`` of ``attnpaths.gram.GramStatistics``, accumulated
    over chunks of examples, so that ``P`` is limited by time, not memory.

    The action, the order parameters, the certificate and the predictor (:meth:`TheorySolution.predict`) are those
    of :func:`solve` on the same examples with ``route="gram"`` (equal to the other routes up to rounding); the
    solution holds no training examples (:attr:`TheorySolution.training_features`, ``training_labels``,
    ``kernel_cholesky`` and ``dual_weights`` raise ``ValueError``).

    Args:
        statistics: ``attnpaths.gram.GramStatistics`` of ``P >= 1`` examples of raw (unscaled) path features
            ``[P, N0, n_paths]``.
        heads: as in :func:`solve`; may be left out where the statistics record their heads
            (:attr:`attnpaths.gram.GramStatistics.heads`), and must equal them where given.
        width, temperature, variances, initial, gradient_tolerance, max_iterations, on_failure: as in
            :func:`solve`.

    Returns:
        :class:`TheorySolution` (``route == "gram"``).
    """
    if not isinstance(statistics, GramStatistics):
        raise ValueError(f"statistics must be a GramStatistics (attnpaths.gram), got {type(statistics).__name__}")
    if statistics.num_examples < 1:
        raise ValueError(f"statistics must hold P >= 1 examples, got {statistics.num_examples}")
    heads = check_num_paths(statistics.num_paths, _recorded_heads(statistics, heads))
    arch = architecture(heads, width, variances)
    options = _options(temperature, gradient_tolerance, max_iterations, on_failure)
    check_memory(*_solver_memory(statistics.num_examples, statistics.input_width, statistics.num_paths, arch, "gram"))
    evaluator = EnergyEvaluator.from_statistics(statistics, options[0], s0=arch.variances[0])
    return _minimise(evaluator, arch, initial, options, {})


def _recorded_heads(statistics: GramStatistics, heads):
    """``heads`` checked against the heads that ``statistics`` record: the same paths in another order of layers
    (``(2, 3)`` for a ``(3, 2)`` model) have the same number of paths but another theory."""
    if heads is None:
        if statistics.heads is None:
            raise ValueError("heads must be given: these statistics do not record the heads of their features")
        return statistics.heads
    if statistics.heads is not None and heads_tuple(heads) != statistics.heads:
        raise ValueError(f"heads must be the statistics' recorded heads {statistics.heads}, got {heads_tuple(heads)}")
    return heads


def _options(temperature, gradient_tolerance, max_iterations, on_failure) -> tuple:
    several = (isinstance(temperature, (list, tuple)) and len(temperature) > 1) or (
        isinstance(temperature, (np.ndarray, torch.Tensor)) and temperature.ndim > 0 and len(temperature) > 1
    )
    if isinstance(temperature, str) or several:
        raise ValueError(
            f"temperature must be one real number > 0 here, got {temperature!r}: a grid of temperatures or 'auto' "
            "(the one of smallest action) is chosen by attnpaths.theory_from_attention, theory_from_statistics "
            "and rank_heads"
        )
    temperature = positive_real(temperature, "temperature")
    gradient_tolerance = positive_real(gradient_tolerance, "gradient_tolerance")
    max_iterations = positive_int(max_iterations, "max_iterations")
    if on_failure not in ("warn", "raise"):
        raise ValueError(f"on_failure must be 'warn' or 'raise', got {on_failure!r}")
    return temperature, gradient_tolerance, max_iterations, on_failure


def _minimise(evaluator: EnergyEvaluator, arch: Architecture, initial, options, training: dict) -> TheorySolution:
    """The minimisation of :func:`solve` on the energy ``evaluator`` (the GP limit: the GP values); ``training``
    holds the solution's training set (``_X``, ``_y``, ``_raw``: :class:`TheorySolution`)."""
    temperature, gradient_tolerance, max_iterations, on_failure = options
    gram = evaluator.route == "gram"
    extra = {"route": evaluator.route, "rows": evaluator.X if gram else None, **training}
    if arch.gp_limit:
        U_layers, U_a = gp_order_parameters(arch)
        point = evaluator.point(torch.linalg.cholesky(U_layers[0]))
        if point is None:
            raise ValueError(_infinite_start(float(U_layers[0][0, 0]), temperature, gp_limit=True))
        return _solution(
            None,
            None,
            arch,
            temperature,
            U_layers,
            U_a,
            point.value,
            math.inf,
            math.nan,
            math.nan,
            True,
            0,
            factorization=(point.chol, point.alpha),
            **extra,
        )
    action = _Action(None, None, arch, temperature, evaluator=evaluator)
    start = gp_order_parameters(arch)[0] if initial is None else _check_initial(initial, arch)
    point, iterations, success, message, derivatives = _newton(
        action,
        action.coords.coordinates(start),
        gradient_tolerance,
        max_iterations,
        initial_given=initial is not None,
    )
    U_layers = [torch.from_numpy(F @ F.T) for F in point.factors]
    grad_norm, min_eig = action.certificate(derivatives)
    ent, en = point.entropy, point.energy.value
    U_a = float(readout_order_parameter(U_layers[-1], arch))
    converged = success and min_eig > 0
    if not converged:
        message = (
            f"the action's minimiser is not certified ({message}; gradient norm {grad_norm:.3g}, "
            f"smallest Hessian eigenvalue {min_eig:.3g}) at widths={arch.widths}, temperature={temperature}"
        )
        if on_failure == "raise":
            raise RuntimeError(message)
        warnings.warn(message, CertificateWarning, stacklevel=3)
    return _solution(
        None,
        None,
        arch,
        temperature,
        U_layers,
        U_a,
        en,
        ent,
        grad_norm,
        min_eig,
        converged,
        iterations,
        factorization=(point.energy.chol, point.energy.alpha),
        **extra,
    )


def _check_initial(initial, arch: Architecture) -> list[torch.Tensor]:
    sizes = _layer_sizes(arch)
    if len(initial) != arch.num_layers:
        raise ValueError(f"initial must hold L = {arch.num_layers} matrices [U_1, ..., U_L], got {len(initial)}")
    out = []
    for layer, (U, n) in enumerate(zip(initial, sizes), start=1):
        U = as_float64_tensor(U, f"initial[{layer - 1}]")
        if U.shape != (n, n) or not torch.allclose(U, U.T):
            raise ValueError(f"initial[{layer - 1}] (U_{layer}) must be a symmetric [{n}, {n}] matrix")
        if torch.linalg.eigvalsh(U)[0] <= 0:
            raise ValueError(f"initial[{layer - 1}] (U_{layer}) must be positive definite")
        out.append(U)
    return out


def _solution(
    X,
    y,
    arch,
    temperature,
    U_layers,
    U_a,
    energy_value,
    entropy_value,
    grad_norm,
    min_eig,
    converged,
    nit,
    factorization=None,
    *,
    route="feature",
    rows=None,
    _X=None,
    _y=None,
    _raw=None,
):
    X = _X if X is None else X
    y = _y if y is None else y
    U1 = U_layers[0]
    if factorization is None:
        G = kernel_from_scaled(X, U1, X) + temperature * torch.eye(X.shape[0], dtype=torch.float64)
        chol = torch.linalg.cholesky(G)
        alpha = torch.cholesky_solve(y.reshape(-1, 1), chol).reshape(-1)
    else:
        chol, alpha = factorization
    return TheorySolution(
        U=U1.numpy().copy(),
        U_layers=[U.numpy().copy() for U in U_layers],
        U_a=float(U_a),
        action=energy_value + entropy_value,
        energy=energy_value,
        entropy=entropy_value,
        gradient_norm=grad_norm,
        hessian_min_eigenvalue=min_eig,
        converged=converged,
        iterations=int(nit),
        arch=arch,
        temperature=temperature,
        _X=X,
        _y=y,
        _chol=chol,
        _alpha=alpha,
        route=route,
        _rows=rows,
        _raw=_raw,
    )
