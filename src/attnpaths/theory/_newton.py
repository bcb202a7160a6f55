"""The trust-region Newton minimiser of the action in log-Cholesky coordinates, with the exact Hessian."""

from __future__ import annotations

import math

import numpy as np
import torch

from ._coordinates import _Action


def _infinite_start(u: float, temperature: float, gp_limit: bool = False) -> str:
    """The error where the action is not finite at the GP values ``U_1 = u I``: the default starting point of the
    minimisation, or the solution itself in the GP limit."""
    where = "in the GP limit at U" if gp_limit else "at the starting point U"
    return (
        f"the action is not finite {where} = the GP values (U_1 = {u:g} I): the kernel K(U_1) + T I is "
        f"numerically singular or overflows at temperature={temperature!r}; try a larger temperature (or "
        f"features of a smaller scale)"
    )


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
