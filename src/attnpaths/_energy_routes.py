"""The energy's routes for the solver (eq-action): :class:`EnergyEvaluator` (the energy ``S_en`` and its
derivatives in the orthonormal basis of symmetric matrices, :class:`SymmetricBasis`, by the sample-space,
feature-space or Gram contraction) and :class:`EnergyPoint`. :mod:`attnpaths.action` gathers them with the
action's other terms."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.linalg.blas import dsyrk as symmetric_rank_k

from .gram import GramStatistics, equivalent_problem


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


@dataclass(frozen=True)
class EnergyPoint:
    """``S_en`` at one ``U_1``: the value and what its derivatives reuse (``chol = chol(K + T I)``,
    ``alpha = (K + T I)^{-1} y``)."""

    value: float
    chol: torch.Tensor
    alpha: torch.Tensor


def lower_gram(A: np.ndarray) -> np.ndarray:
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
    and Hessian (those of :func:`attnpaths.action.energy`, ``T1``, ``T2``, ``T3`` there) through one of three routes:

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
            G = torch.from_numpy(lower_gram((self.X @ factor).reshape(R, -1).numpy()))
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
        :func:`attnpaths.action.symmetrized`)."""
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
        M = lower_gram(B.T).reshape(n0, n, n0, n)
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
