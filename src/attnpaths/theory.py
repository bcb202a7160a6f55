"""Minimising the action (eq-action), predictor statistics (eq-predictor), GP limit (eq-gp), head scores.

Public entry point::

    from attnpaths.theory import solve
    sol = solve(features, y, heads=(H_1, ..., H_L), widths=N, temperature=T, variances=1.0)
    mean, var = sol.predict(features_test)

The minimiser works on log-Cholesky coordinates ``U_l = L_l L_l^T`` (``L_l`` lower triangular with a positive,
exponentiated diagonal), so every iterate is positive definite by construction and no step can produce NaN.
It is a damped Newton method with the exact Hessian: the derivatives of the energy and of the entropy with
respect to the matrices ``U_l`` are analytic (:func:`attnpaths.action.energy`,
:func:`attnpaths.action.entropy_derivatives`) and the chain rule to the Cholesky coordinates is exact.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from ._validation import as_float64_tensor, heads_tuple, positive_real
from .action import Architecture, energy, entropy_derivatives, pre_kernel_tensor, gp_order_parameters, readout_order_parameter
from .kernels import kernel_from_scaled, scaled_features
from .paths import check_num_paths


class CertificateWarning(UserWarning):
    """The minimiser stopped at a point that is not certified as a minimum of the action."""


# --------------------------------------------------------------------------------------------------------
# argument parsing


def parse_widths(widths, num_layers: int) -> tuple[float, ...]:
    """``widths``: one number for every layer, or ``(N_1, ..., N_L, N_a)``; ``inf`` gives the GP limit."""
    if isinstance(widths, numbers.Real) and not isinstance(widths, bool):
        widths = (widths,) * (num_layers + 1)
    try:
        widths = tuple(widths)
    except TypeError as err:
        raise ValueError(f"widths must be a number >= 1 or a tuple (N_1, ..., N_L, N_a), got {widths!r}") from err
    if len(widths) != num_layers + 1:
        raise ValueError(f"widths must hold L + 1 = {num_layers + 1} values (N_1, ..., N_L, N_a), got {len(widths)}")
    out = []
    for w in widths:
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or math.isnan(w) or w < 1:
            raise ValueError(f"widths must be numbers >= 1 (or inf for the GP limit), got {widths!r}")
        out.append(float(w))
    if any(math.isinf(w) for w in out) and not all(math.isinf(w) for w in out):
        raise ValueError(f"widths must be all finite or all inf (GP limit), got {widths!r}")
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


def architecture(heads, widths, variances=1.0) -> Architecture:
    """Validate and bundle ``heads``, ``widths`` and ``variances`` (see :func:`solve`)."""
    heads = heads_tuple(heads)
    return Architecture(heads, parse_widths(widths, len(heads)), parse_variances(variances, len(heads)))


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
        for part, n, (rows, cols), place in zip(torch.split(theta, self.counts, dim=-1), self.sizes, self.index,
                                                self._placement):
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
            diagonal_terms.append(torch.where(on_diagonal, jac.T @ g.reshape(-1), torch.zeros(rows.numel(), dtype=torch.float64)))
            jacobians.append(jac)
        jac = torch.block_diag(*jacobians)
        scale = torch.cat(scales)
        gradient = (jac.T @ torch.cat([g.reshape(-1) for g in gradients])) * scale
        hess_L = jac.T @ hessian_U @ jac + torch.block_diag(*curvatures)
        hess = scale[:, None] * hess_L * scale[None, :] + torch.diag(torch.cat(diagonal_terms) * scale)
        return gradient, (hess + hess.T) / 2


def _symmetric_basis(n: int) -> torch.Tensor:
    """Orthonormal basis of symmetric ``n x n`` matrices as columns of an ``[n*n, n(n+1)/2]`` matrix."""
    rows, cols = torch.triu_indices(n, n)
    basis = torch.zeros(n * n, rows.numel(), dtype=torch.float64)
    k = torch.arange(rows.numel())
    weight = torch.where(rows == cols, 1.0, 2.0**-0.5).to(torch.float64)
    basis[rows * n + cols, k] = weight
    basis[cols * n + rows, k] = weight
    return basis


# --------------------------------------------------------------------------------------------------------
# the action and its Newton minimisation


class _Action:
    """``S`` and its derivatives with respect to the full matrices ``U_1, ..., U_L``."""

    def __init__(self, X: torch.Tensor, y: torch.Tensor, arch: Architecture, temperature: float):
        self.X, self.y, self.arch, self.temperature = X, y, arch, temperature
        # with fewer examples than input features, the P x P path-pair kernels are the cheaper representation
        P, n0, n = X.shape
        self.pre_kernels = pre_kernel_tensor(X) if P <= n0 and P * P * n * n <= 5e7 else None

    def _energy(self, U1, order):
        return energy(self.X, self.y, U1, self.temperature, order=order, pre_kernels=self.pre_kernels)

    def parts(self, U_layers) -> tuple[float, float]:
        """``(S_ent, S_en)``."""
        return (
            entropy_derivatives(U_layers, self.arch, order=0).value,
            self._energy(U_layers[0], 0).value,
        )

    def derivatives(self, U_layers):
        """``(S, [dS/dU_l], d^2 S/dU dU)`` with the Hessian over the concatenated row-major entries."""
        ent = entropy_derivatives(U_layers, self.arch, order=2)
        en = self._energy(U_layers[0], 2)
        gradients = list(ent.gradients)
        gradients[0] = gradients[0] + en.gradient
        n1 = U_layers[0].shape[0] ** 2
        hess = ent.hessian.clone()
        hess[:n1, :n1] += en.hessian.reshape(n1, n1)
        return ent.value + en.value, gradients, hess

    @staticmethod
    def certificate(gradients, hess) -> tuple[float, float]:
        """Gradient norm and smallest Hessian eigenvalue of ``S`` in symmetric directions of every ``U_l``."""
        basis = torch.block_diag(*[_symmetric_basis(g.shape[0]) for g in gradients])
        grad_sym = basis.T @ torch.cat([g.reshape(-1) for g in gradients])
        hess_sym = basis.T @ hess @ basis
        return float(torch.linalg.vector_norm(grad_sym)), float(torch.linalg.eigvalsh((hess_sym + hess_sym.T) / 2)[0])


def _newton(action: _Action, coords: CholeskyCoordinates, theta, tolerance: float, max_iterations: int):
    """Damped Newton in log-Cholesky coordinates with an eigenvalue-modified Hessian and backtracking.

    Every trial point is a valid ``theta``, hence gives positive-definite ``U_l``: the action is finite at
    every point evaluated. Returns ``(theta, iterations, success, message, derivatives at theta)``.
    """
    value, gradients, hess_U = action.derivatives(coords.matrices(theta))
    for iteration in range(max_iterations + 1):
        gradient, hess = coords.chain_rule(theta, gradients, hess_U)
        if float(torch.linalg.vector_norm(gradient)) < tolerance:
            return theta, iteration, True, "gradient norm below tolerance", (gradients, hess_U)
        if iteration == max_iterations:
            break
        eigenvalues, vectors = torch.linalg.eigh(hess)
        floor = 1e-10 * max(1.0, float(eigenvalues.abs().max()))
        step = -vectors @ ((vectors.T @ gradient) / eigenvalues.abs().clamp_min(floor))
        # far from the minimum a full step could overflow exp(theta): cap its length
        step_norm = float(torch.linalg.vector_norm(step))
        if step_norm > 2.0:
            step = step * (2.0 / step_norm)
        slope = float(gradient @ step)
        # near the minimum the decrease is below rounding: accept steps within a few ulps of the action
        slack = 64 * torch.finfo(torch.float64).eps * abs(value)
        t = 1.0
        while t > 1e-12:
            trial = theta + t * step
            if sum(action.parts(coords.matrices(trial))) <= value + 1e-4 * t * slope + slack:
                break
            t /= 2
        else:
            return theta, iteration, False, "the line search could not decrease the action", (gradients, hess_U)
        theta = trial
        value, gradients, hess_U = action.derivatives(coords.matrices(theta))
    return theta, max_iterations, False, f"no convergence in {max_iterations} iterations", (gradients, hess_U)


# --------------------------------------------------------------------------------------------------------
# the solution


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
    """

    U: np.ndarray
    U_layers: list
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
    _X: torch.Tensor = field(repr=False)
    _y: torch.Tensor = field(repr=False)
    _chol: torch.Tensor = field(repr=False)
    _alpha: torch.Tensor = field(repr=False)

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

    def _scaled(self, features, name: str) -> torch.Tensor:
        X = scaled_features(features, self.arch.variances[0])
        if X.shape[1:] != self._X.shape[1:]:
            raise ValueError(f"{name} must have shape [P_test, {self._X.shape[1]}, {self._X.shape[2]}], got {tuple(X.shape)}")
        return X

    def kernel(self, features_a, features_b=None) -> np.ndarray:
        """Renormalised kernel ``K(U_1)`` (eq-kernel) between two sets of examples, ``[Pa, Pb]`` (no temperature)."""
        Xa = self._scaled(features_a, "features_a")
        Xb = Xa if features_b is None else self._scaled(features_b, "features_b")
        return kernel_from_scaled(Xa, torch.as_tensor(self.U), Xb).numpy()

    def train_kernel(self) -> np.ndarray:
        """``K(U_1)`` on the training set, ``[P, P]`` (no temperature)."""
        return kernel_from_scaled(self._X, torch.as_tensor(self.U), self._X).numpy()

    def predict(self, features_test, *, batch_size: int = 512) -> tuple[np.ndarray, np.ndarray]:
        """Predictor mean and variance (eq-predictor) on test examples.

        ``<f(x*)> = k^T (K + T I)^{-1} y`` and ``Var f(x*) = kappa - k^T (K + T I)^{-1} k`` with
        ``k_mu = K(x^mu, x*)`` and ``kappa = K(x*, x*)``.

        Args:
            features_test: ``[P_test, N0, n_paths]`` path features of the test inputs.

        Returns:
            ``(mean, variance)``, numpy arrays of length ``P_test``.
        """
        Xt = self._scaled(features_test, "features_test")
        U = torch.as_tensor(self.U)
        means, variances = [], []
        for start in range(0, Xt.shape[0], batch_size):
            xb = Xt[start : start + batch_size]
            k = kernel_from_scaled(xb, U, self._X)  # [B, P]
            kappa = torch.einsum("bip,pq,biq->b", xb, U, xb)
            solved = torch.cholesky_solve(k.T, self._chol)  # [P, B]
            means.append(k @ self._alpha)
            variances.append(kappa - (k * solved.T).sum(dim=1))
        if not means:
            return np.zeros(0), np.zeros(0)
        return torch.cat(means).numpy(), torch.cat(variances).numpy()


def classification_accuracy(mean, labels) -> float:
    """Fraction of examples with ``sign(<f>) == y`` (eq-predictor); an exactly zero prediction counts as wrong."""
    mean, labels = np.asarray(mean), np.asarray(labels)
    if mean.shape != labels.shape:
        raise ValueError(f"mean and labels must have the same shape, got {mean.shape} and {labels.shape}")
    return float(np.mean(np.sign(mean) == labels))


# --------------------------------------------------------------------------------------------------------
# solve


def solve(
    features,
    y,
    *,
    heads,
    widths,
    temperature: float,
    variances=1.0,
    initial=None,
    gradient_tolerance: float = 1e-8,
    max_iterations: int = 200,
    on_failure: str = "warn",
) -> TheorySolution:
    """Minimise the action S(U) (eq-action) and return the order parameters and the predictor (eq-predictor).

    Args:
        features: ``[P, N0, n_paths]`` path features ``xi_pi(x^mu)`` (numpy or torch), no normalisation;
            ``n_paths = H_1 ... H_L``, path index ``h_1`` slowest.
        y: ``[P]`` labels.
        heads: ``(H_1, ..., H_L)``.
        widths: a number (every layer) or ``(N_1, ..., N_L, N_a)``; ``float('inf')`` gives the GP limit (eq-gp).
        temperature: likelihood variance ``T > 0``.
        variances: a number or ``(s0, s1, ..., sL, sa)``.
        initial: optional starting point ``[U_1, ..., U_L]`` (positive definite); default: the GP values.
        gradient_tolerance: stop when the gradient norm in log-Cholesky coordinates is below this.
        max_iterations: Newton iteration cap.
        on_failure: ``"warn"`` (:class:`CertificateWarning`) or ``"raise"`` (``RuntimeError``) when the result
            is not certified as a minimum (not converged, or the Hessian is not positive definite).

    Returns:
        :class:`TheorySolution`.
    """
    X_raw = as_float64_tensor(features, "features")
    if X_raw.ndim != 3 or X_raw.shape[0] < 1:
        raise ValueError(f"features must have shape [P, N0, n_paths] with P >= 1, got {tuple(X_raw.shape)}")
    heads = check_num_paths(X_raw.shape[2], heads)
    arch = architecture(heads, widths, variances)
    labels = as_float64_tensor(y, "y")
    if labels.shape != (X_raw.shape[0],):
        raise ValueError(f"y must have shape [P] = [{X_raw.shape[0]}], got {tuple(labels.shape)}")
    temperature = positive_real(temperature, "temperature")
    if on_failure not in ("warn", "raise"):
        raise ValueError(f"on_failure must be 'warn' or 'raise', got {on_failure!r}")
    X = scaled_features(X_raw, arch.variances[0])

    if arch.gp_limit:
        U_layers, U_a = gp_order_parameters(arch)
        en = energy(X, labels, U_layers[0], temperature)
        return _solution(X, labels, arch, temperature, U_layers, U_a, en.value, math.inf, math.nan, math.nan, True, 0)

    action = _Action(X, labels, arch, temperature)
    coords = CholeskyCoordinates(_layer_sizes(arch))
    start = gp_order_parameters(arch)[0] if initial is None else _check_initial(initial, arch)
    theta, iterations, success, message, (gradients, hess) = _newton(
        action, coords, coords.coordinates(start), gradient_tolerance, max_iterations
    )
    U_layers = coords.matrices(theta)
    grad_norm, min_eig = action.certificate(gradients, hess)
    ent, en = action.parts(U_layers)
    U_a = float(readout_order_parameter(U_layers[-1], arch))
    converged = success and min_eig > 0
    if not converged:
        message = (
            f"the action's minimiser is not certified ({message}; gradient norm {grad_norm:.3g}, "
            f"smallest Hessian eigenvalue {min_eig:.3g}) at widths={arch.widths}, temperature={temperature}"
        )
        if on_failure == "raise":
            raise RuntimeError(message)
        warnings.warn(message, CertificateWarning, stacklevel=2)
    return _solution(X, labels, arch, temperature, U_layers, U_a, en, ent, grad_norm, min_eig, converged, iterations)


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


def _solution(X, y, arch, temperature, U_layers, U_a, energy_value, entropy_value, grad_norm, min_eig, converged, nit):
    U1 = U_layers[0]
    G = kernel_from_scaled(X, U1, X) + temperature * torch.eye(X.shape[0], dtype=torch.float64)
    chol = torch.linalg.cholesky(G)
    alpha = torch.cholesky_solve(y.reshape(-1, 1), chol).reshape(-1)
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
    )
