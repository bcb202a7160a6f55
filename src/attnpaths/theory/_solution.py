"""The theory's answer: the minimiser of the action and the predictor it implies (eq-action, eq-predictor)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .._validation import check_memory, positive_int
from ..action import Architecture
from ..kernels import kernel_from_scaled, scaled_features, shifted_cholesky

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
            self._cache["chol"] = shifted_cholesky(kernel_from_scaled(X, torch.as_tensor(self.U), X), self.temperature)
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

    def predict_mean(self, features_test) -> np.ndarray:
        """The predictor's mean alone (eq-predictor), ``[P_test]``, from :attr:`mean_weights`:
        ``<f(x*)> = sum_{i,a} X_ia(x*) v_ia``, about ``P_test N0 n_paths`` products and no kernel (the mean of
        :meth:`predict`, which also forms ``k`` for the variance, up to rounding).

        Args:
            features_test: ``[P_test, N0, n_paths]`` path features of the test inputs.
        """
        Xt = self._scaled(features_test, "features_test")
        return (Xt.reshape(Xt.shape[0], -1) @ self.mean_weights.reshape(-1)).numpy()

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
