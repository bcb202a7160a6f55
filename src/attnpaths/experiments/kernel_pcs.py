"""The renormalised kernel ``K(U)`` (eq-kernel) at a given order parameter ``U`` (flat path order): the mean
predictor it implies (eq-predictor), its principal components against the labels (Fig. 2d), the kernels of the
appendix figures, and centred kernel-target alignment."""

from __future__ import annotations

import numpy as np
import torch

from .._validation import as_float64_array, positive_int, positive_real, square_matrix
from ..kernels import (
    gp_kernel,
    kernel_from_scaled,
    path_kernels,
    pc_label_overlap,
    renormalized_kernel,
    scaled_features,
    shifted_cholesky,
)
from .path_data import PathData
from .sweep import TheorySweep


def mean_predictor(features, y, features_test, U, temperature: float) -> np.ndarray:
    """Mean predictor (eq-predictor) with a GIVEN order parameter ``U`` (flat order), not the minimiser of the action:
    ``<f(x*)> = k^T (K(U) + T I)^{-1} y`` with the renormalised kernel (eq-kernel).

    Args:
        features: ``[P, N0, n]`` training path features; y: ``[P]``; features_test: ``[B, N0, n]``;
        U: ``[n, n]``.

    Returns:
        ``[B]``.
    """
    temperature = positive_real(temperature, "temperature")
    U = torch.as_tensor(square_matrix(U, "U"))
    K = renormalized_kernel(features, U)
    k = renormalized_kernel(features_test, U, features)
    labels = torch.as_tensor(y, dtype=torch.float64)
    if labels.shape != (K.shape[0],):
        raise ValueError(f"y must have shape [{K.shape[0]}], got {tuple(labels.shape)}")
    chol = shifted_cholesky(K, temperature)
    return (k @ torch.cholesky_solve(labels[:, None], chol))[:, 0].numpy()


def predictor_variance(
    features, y, features_test, U, temperature: float, *, sweep: TheorySweep | None = None, split: str = "test"
) -> np.ndarray:
    """Predictor variance (eq-predictor) with a GIVEN order parameter ``U`` (flat order):
    ``Var f(x*) = kappa - k^T (K(U) + T I)^{-1} k`` with ``k_mu = K(x^mu, x*)``, ``kappa = K(x*, x*)`` and the
    renormalised kernel (eq-kernel). At the minimiser of the action it is the theory's variance
    (:meth:`attnpaths.theory.TheorySolution.predict`); at ``U = I`` the GP limit's (eq-gp).

    Args:
        features: ``[P, N0, n]`` training path features; y: ``[P]`` (only its length is checked: the variance
            does not depend on the labels); features_test: ``[B, N0, n]``; U: ``[n, n]``.
        sweep: optional :class:`~.sweep.TheorySweep` of these training data in which ``U`` is a minimiser at
            ``temperature``: its variance there (:attr:`~.sweep.TheorySweep.variances`, those of the solution's own
            factorisation, equal to this computation up to rounding) is returned, and no kernel is formed.
        split: the sweep's evaluation split whose features are ``features_test``.

    Returns:
        ``[B]``.
    """
    temperature = positive_real(temperature, "temperature")
    if sweep is not None:
        return _swept_variance(sweep, square_matrix(U, "U"), temperature, split, len(features_test))
    U = torch.as_tensor(square_matrix(U, "U"))
    K, k, kappa = _feature_kernels(scaled_features(features), scaled_features(features_test), U)
    if torch.as_tensor(y).shape != (K.shape[0],):
        raise ValueError(f"y must have shape [{K.shape[0]}], got {tuple(torch.as_tensor(y).shape)}")
    chol = shifted_cholesky(K, temperature)
    return (kappa - (k * torch.cholesky_solve(k.T, chol).T).sum(dim=1)).numpy()


PRE_KERNEL_NUMBERS = 2**25
"""The most numbers (256 MiB of float64) :func:`predictor_moments` holds as pre-kernels; above it, and where the
paths outnumber the input features, it forms each draw's kernels from the features instead."""


def predictor_moments(features, y, features_test, U, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """The mean and the variance of the predictor (eq-predictor) at each of several GIVEN order parameters: row
    ``s`` is :func:`mean_predictor` and :func:`predictor_variance` at ``U[s]``, equal to them up to rounding.

    The pre-kernels ``C_{pi pi'}`` (eq-kernel) of the training set, of the test against the training examples and
    of each test example with itself are formed once; each ``K(U) = (1/n) sum_{pi pi'} U_{pi pi'} C_{pi pi'}``
    then costs ``n^2 P (P + B)`` products instead of the ``N0 n P (P + B)`` of forming it from the features,
    which makes the many draws of an exact density (eq-exact-density) affordable. The pre-kernels hold
    ``n^2 (P + 1) (P + B)`` numbers; where that is over :data:`PRE_KERNEL_NUMBERS`, or ``n >= N0`` (no saving),
    each draw's kernels are formed from the features, as :func:`mean_predictor` does. The route depends on the
    shapes alone.

    Args:
        features: ``[P, N0, n]`` training path features; y: ``[P]``; features_test: ``[B, N0, n]``;
        U: ``[S, n, n]``, ``S >= 1``.

    Returns:
        ``(means, variances)``, each ``[S, B]``.
    """
    temperature = positive_real(temperature, "temperature")
    train, test = scaled_features(features), scaled_features(features_test)
    P, N0, n = train.shape
    if test.shape[1:] != (N0, n):
        raise ValueError(f"features_test must have shape [B, {N0}, {n}] as features, got {tuple(test.shape)}")
    U = torch.as_tensor(as_float64_array(U, "U"))
    if U.ndim != 3 or U.shape[0] < 1 or U.shape[1:] != (n, n):
        raise ValueError(f"U must have shape [S >= 1, {n}, {n}], got {tuple(U.shape)}")
    labels = torch.as_tensor(y, dtype=torch.float64)
    if labels.shape != (P,):
        raise ValueError(f"y must have shape [{P}], got {tuple(labels.shape)}")
    means, variances = [], []
    for K, k, kappa in _kernels_at_draws(train, test, U):  # [P, P], [B, P], [B]
        chol = shifted_cholesky(K, temperature)
        means.append((k @ torch.cholesky_solve(labels[:, None], chol))[:, 0])
        variances.append(kappa - (k * torch.cholesky_solve(k.T, chol).T).sum(dim=1))
    return torch.stack(means).numpy(), torch.stack(variances).numpy()


def _feature_kernels(train: torch.Tensor, test: torch.Tensor, U: torch.Tensor):
    """``K(U)`` from scaled features (:func:`~attnpaths.kernels.scaled_features`): of the training set
    ``[P, P]``, of the test against the training examples ``[B, P]`` and of each test example with itself ``[B]``."""
    return (
        kernel_from_scaled(train, U, train),
        kernel_from_scaled(test, U, train),
        torch.einsum("bip,pq,biq->b", test, U, test),
    )


def _kernels_at_draws(train: torch.Tensor, test: torch.Tensor, U: torch.Tensor):
    """:func:`_feature_kernels` at each draw ``U[s]``, from the pre-kernels where they save work and fit."""
    (P, N0, n), B = train.shape, test.shape[0]
    if n >= N0 or n * n * (P + 1) * (P + B) > PRE_KERNEL_NUMBERS:
        yield from (_feature_kernels(train, test, U_s) for U_s in U)
        return
    # K(U) = sum_{pi pi'} U_{pi pi'} X_pi . X_pi' with the scaled features X, which carry the 1 / (N0 n): one
    # product of the flattened U with the path kernels of X (eq-kernel), whose factor s0 / N0 is 1 at s0 = N0
    train_kernels = path_kernels(train, train, s0=N0).reshape(n * n, -1)  # [n^2, P P]
    cross_kernels = path_kernels(test, train, s0=N0).reshape(n * n, -1)  # [n^2, B P]
    self_kernels = torch.einsum("bip,biq->pqb", test, test).reshape(n * n, -1)  # [n^2, B]
    for U_s in U.reshape(-1, n * n):
        yield (U_s @ train_kernels).reshape(P, P), (U_s @ cross_kernels).reshape(B, P), U_s @ self_kernels


def _swept_variance(sweep: TheorySweep, U: np.ndarray, temperature: float, split: str, size: int) -> np.ndarray:
    j = sweep.temperature_index(temperature)
    hits = [k for k in range(sweep.widths.size) if np.array_equal(sweep.U[k, j], U)]
    if not hits:
        raise ValueError(f"U must be one of the sweep's minimisers at temperature={temperature}, got another matrix")
    variance = sweep.variance_at(sweep.widths[hits[0]], temperature, split)
    if variance.shape != (size,):
        raise ValueError(f"features_test must hold the {variance.shape[0]} examples of split {split!r}, got {size}")
    return variance


def pc_overlaps(data: PathData, U_flat, num_components: int = 30) -> dict:
    """Overlap of the training kernel's PCs with the labels (Fig. 2d): ``K(U_flat)`` vs ``K_GP``.

    Returns:
        a dict with ``"finite_width": [k]``, ``"gp": [k]``, ``"eigenvalues_finite_width": [k]``,
        ``"eigenvalues_gp": [k]`` and ``"first_pc_mean_direction": (fw, gp)``; the last is ``|u_1 . 1| / sqrt(P)``, the cosine between the
        leading PC and the all-examples direction.
    """
    num_components = positive_int(num_components, "num_components")
    K_fw = renormalized_kernel(data.features, torch.as_tensor(square_matrix(U_flat, "U_flat")))
    K_gp = gp_kernel(data.features)
    fw, fw_eig = pc_label_overlap(K_fw, data.y, num_components)
    gp, gp_eig = pc_label_overlap(K_gp, data.y, num_components)
    ones = torch.ones_like(data.y)
    mean_direction = (float(pc_label_overlap(K_fw, ones, 1)[0][0]), float(pc_label_overlap(K_gp, ones, 1)[0][0]))
    return {
        "finite_width": fw,
        "gp": gp,
        "eigenvalues_finite_width": fw_eig,
        "eigenvalues_gp": gp_eig,
        "first_pc_mean_direction": mean_direction,
    }


def label_fraction(overlaps, k: int) -> float:
    """Fraction of ``|y|^2`` carried by the first ``k`` PCs: ``sum_{j<k} overlap_j^2`` (overlaps of
    :func:`pc_overlaps`, normalised by ``sqrt(P)``)."""
    overlaps = as_float64_array(overlaps, "overlaps")
    k = positive_int(k, "k")
    return float(np.sum(overlaps[:k] ** 2))


def appendix_kernels(data: PathData, U_flat, examples=None) -> dict[str, np.ndarray]:
    """The kernels of the authors' PLOT_kernels.py on a subset of training examples (no temperature):
    same-path pre-kernels ``C_pi,pi`` (eq-kernel, without ``1/n_paths``) keyed by path name in figure order, ``"GP"``
    and ``"FW"`` (``K(U_flat)``).

    Args:
        examples: training example indices (default: 0-24 and 75-99, 25 of each class, as in the script).
    """
    if examples is None:
        P = data.features.shape[0]
        examples = list(range(0, min(25, P // 2))) + list(range(P - min(25, P // 2), P))
    xi = data.features[list(examples)]
    C = path_kernels(xi)
    out = {data.network.path_names[i]: C[i, i].numpy() for i in data.network.plot_order}
    out["GP"] = gp_kernel(xi).numpy()
    out["FW"] = renormalized_kernel(xi, torch.as_tensor(square_matrix(U_flat, "U_flat"))).numpy()
    return out


def centered_alignment(kernel, y) -> float:
    """Centred kernel-target alignment ``<K_c, y y^T>_F / (||K_c||_F |y|^2)`` with ``K_c = H K H``,
    ``H = I - 1 1^T / P`` (Cortes, Mohri and Rostamizadeh 2012): 1 when the centred kernel is proportional to
    ``y y^T``, near 0 when it ignores the labels."""
    K = square_matrix(kernel, "kernel")
    y = as_float64_array(y, "y")
    if y.shape != (K.shape[0],):
        raise ValueError(f"y must have shape [{K.shape[0]}], got {y.shape}")
    Kc = K - K.mean(axis=0) - K.mean(axis=1)[:, None] + K.mean()
    norm = np.linalg.norm(Kc) * (y @ y)
    return float(y @ Kc @ y / norm) if norm > 0 else 0.0


def kernel_alignments(kernels: dict, y) -> dict[str, float]:
    """:func:`centered_alignment` of every kernel of ``kernels`` (``{name: [P, P]}``, e.g. those of
    :func:`appendix_kernels`) with the labels ``y`` (``[P]``) of the same examples: ``{name: alignment}``."""
    return {name: centered_alignment(K, y) for name, K in kernels.items()}
