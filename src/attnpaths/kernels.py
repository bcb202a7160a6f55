"""Path-path kernels, the renormalised kernel K(U) and the GP kernel (eq-kernel, eq-gp).

With ``xi_pi(x)`` the path features of :func:`attnpaths.paths.path_features`:

* pre-kernels  ``C^{mu nu}_{pi pi'} = (s0/N0) xi_pi(x^mu) . xi_pi'(x^nu)``               (eq-kernel)
* renormalised ``K^{mu nu}(U) = (1/n_paths) sum_{pi pi'} U_{pi pi'} C^{mu nu}_{pi pi'}``   (eq-kernel)
* GP kernel    ``K_GP = K(U_GP)`` with ``U_GP = sa s1 ... sL I``                          (eq-gp)
"""

from __future__ import annotations

from typing import Optional  # Optional[ArrayLike]: autodoc_type_aliases cannot read ArrayLike | None

import numpy as np
import torch
from numpy.typing import ArrayLike

from ._validation import as_float64_tensor


def scaled_features(features, s0: float = 1.0) -> torch.Tensor:
    """``X^mu_{i pi} = sqrt(s0 / (N0 n_paths)) xi_pi(x^mu)_i``, shape ``[P, N0, n_paths]``.

    With these, ``K^{mu nu}(U) = sum_i sum_{pi pi'} X^mu_{i pi} U_{pi pi'} X^nu_{i pi'}``.
    """
    xi = as_float64_tensor(features, "features")
    if xi.ndim != 3:
        raise ValueError(f"features must have shape [P, N0, n_paths], got {tuple(xi.shape)}")
    _, n0, n_paths = xi.shape
    return xi * (s0 / (n0 * n_paths)) ** 0.5


def path_kernels(features_a: ArrayLike, features_b: Optional[ArrayLike] = None, *, s0: float = 1.0) -> torch.Tensor:
    """Pre-kernels ``C[pi, pi', mu, nu]`` (eq-kernel), without the ``1/n_paths`` factor.

    Args:
        features_a: ``[Pa, N0, n]`` path features.
        features_b: ``[Pb, N0, n]`` path features (default: ``features_a``).
        s0: prior variance of the input layer.

    Returns:
        ``[n, n, Pa, Pb]`` tensor.
    """
    xa = as_float64_tensor(features_a, "features_a")
    xb = xa if features_b is None else as_float64_tensor(features_b, "features_b")
    return torch.einsum("aip,biq->pqab", xa, xb) * (s0 / xa.shape[1])


def renormalized_kernel(
    features_a: ArrayLike, U: ArrayLike, features_b: Optional[ArrayLike] = None, *, s0: float = 1.0
) -> torch.Tensor:
    """``K(U)`` between two sets of examples (eq-kernel), shape ``[Pa, Pb]``.

    Args:
        features_a: ``[Pa, N0, n]`` path features ``xi``.
        U: ``[n, n]`` order parameter ``U_1``.
        features_b: ``[Pb, N0, n]`` (default: ``features_a``).
        s0: prior variance of the input layer.
    """
    xa = scaled_features(features_a, s0)
    xb = xa if features_b is None else scaled_features(features_b, s0)
    U = as_float64_tensor(U, "U")
    n = xa.shape[-1]
    if U.shape != (n, n):
        raise ValueError(f"U must have shape [{n}, {n}], got {tuple(U.shape)}")
    return kernel_from_scaled(xa, U, xb)


def kernel_from_scaled(xa: torch.Tensor, U: torch.Tensor, xb: torch.Tensor) -> torch.Tensor:
    """``K = sum_i X_a[:, i, :] U X_b[:, i, :]^T`` for already scaled features (see :func:`scaled_features`)."""
    routed = xa @ U  # [Pa, N0, n]
    return routed.reshape(routed.shape[0], -1) @ xb.reshape(xb.shape[0], -1).T


def shifted_cholesky(K: torch.Tensor, temperature: float) -> torch.Tensor:
    """Lower Cholesky factor of ``K + T I`` (``K`` ``[..., P, P]``), the matrix of the energy (eq-action) and of the
    predictor (eq-predictor)."""
    return torch.linalg.cholesky(K + temperature * torch.eye(K.shape[-1], dtype=K.dtype))


def gp_kernel(
    features_a: ArrayLike, features_b: Optional[ArrayLike] = None, *, s0: float = 1.0, u_gp: float = 1.0
) -> torch.Tensor:
    """GP-limit kernel ``K_GP = (u_gp / n) sum_pi C_{pi pi}`` (eq-gp), shape ``[Pa, Pb]``.

    ``u_gp = sa s1 ... sL`` is the GP value of the order parameter (1 when every variance is 1), see
    :func:`attnpaths.action.gp_order_parameters`.
    """
    xa = as_float64_tensor(features_a, "features_a")
    n = xa.shape[-1]
    return renormalized_kernel(xa, torch.eye(n, dtype=torch.float64) * u_gp, features_b, s0=s0)


def pc_label_overlap(kernel, y, num_components: int | None = None):
    """Overlap of the kernel's principal components with the labels (sec-hmc-pcs, Fig. 2d).

    ``overlap_k = |u_k . y| / sqrt(P)`` with ``u_k`` the unit eigenvectors of ``kernel`` ranked by eigenvalue,
    largest first (the kernel carries no temperature).

    Args:
        kernel: ``[P, P]`` symmetric kernel on the training set.
        y: ``[P]`` labels (``|y_mu| = 1``).
        num_components: how many leading components to return (default all).

    Returns:
        ``(overlaps, eigenvalues)``, numpy arrays of length ``num_components``.
    """
    K = np.asarray(as_float64_tensor(kernel, "kernel"))
    labels = np.asarray(as_float64_tensor(y, "y", labels=True))
    if K.ndim != 2 or K.shape[0] != K.shape[1] or labels.shape != (K.shape[0],):
        raise ValueError(f"kernel must be [P, P] and y [P], got {K.shape} and {labels.shape}")
    eigenvalues, vectors = np.linalg.eigh((K + K.T) / 2)
    order = np.argsort(eigenvalues)[::-1][:num_components]
    return np.abs(vectors[:, order].T @ labels) / np.sqrt(len(labels)), eigenvalues[order]
