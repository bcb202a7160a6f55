"""Head scores from the order parameter and theory-side pruning of heads (sec-head-scores, sec-oneshot-pruning)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_float64_array, float_eps, heads_tuple
from .paths import all_paths


def head_paths(heads) -> np.ndarray:
    """``[L, max(H), n_paths]`` bool: path ``pi`` (flat order, ``h_1`` slowest) passes through head ``(l, h)``."""
    heads = heads_tuple(heads)
    paths = np.array(all_paths(heads), dtype=int).reshape(-1, len(heads))
    return np.arange(max(heads))[None, :, None] == paths.T[:, None, :]


def _order_parameter(value, heads) -> np.ndarray:
    """``value`` as a float64 order parameter ``U [n_paths, n_paths]`` of ``heads``, or a ``ValueError`` naming ``U``.

    Symmetry and positive semidefiniteness are checked to a relative tolerance of ``sqrt(eps)`` of the dtype ``U``
    was given in (1.5e-8 for float64): an order parameter computed as ``F F^T`` with ``k`` terms per entry is off
    by at most about ``k n_paths eps`` of its largest eigenvalue in every eigenvalue (Weyl), far below that for any
    ``k n_paths`` up to ``1 / sqrt(eps)``, while a matrix that is not an order parameter (a sign lost, a
    difference of two ``U``) is off by a fraction of itself."""
    eps = float_eps(value) or float(np.finfo(np.float64).eps)
    U = as_float64_array(value, "U")
    if U.ndim != 2 or U.shape[0] != U.shape[1]:
        raise ValueError(f"U must be a square [n_paths, n_paths] matrix, got shape {U.shape}")
    heads = heads_tuple(heads)
    if math.prod(heads) != U.shape[0]:
        raise ValueError(
            f"heads={heads} gives {math.prod(heads)} paths but U is [{U.shape[0]}, {U.shape[1]}] "
            f"(one row and column per path)"
        )
    tolerance, scale = math.sqrt(eps), float(np.abs(U).max(initial=0.0))
    asymmetry = float(np.abs(U - U.T).max(initial=0.0))
    if asymmetry > tolerance * scale:
        raise ValueError(
            f"U must be symmetric (an order parameter), but its largest |U_ij - U_ji| is {asymmetry:.3g} "
            f"(of entries up to {scale:.3g}; rounding allows {tolerance:.1g} of them)"
        )
    eigenvalues = np.linalg.eigvalsh((U + U.T) / 2)
    if eigenvalues.size and eigenvalues[0] < -tolerance * float(np.abs(eigenvalues).max()):
        raise ValueError(
            f"U must be positive semidefinite (an order parameter), but its smallest eigenvalue is {eigenvalues[0]:.3g} "
            f"(of eigenvalues up to {np.abs(eigenvalues).max():.3g} in size; rounding allows {tolerance:.1g} of them)"
        )
    return U


def head_scores(U: ArrayLike, heads: int | Sequence[int], *, normalized: bool = True) -> np.ndarray:
    """Relevance of every head (sec-head-scores).

    ``score(l, h) = sum_{pi, pi'} |U_{pi pi'}| 1[pi_l = h or pi'_l = h]``, divided by the largest score when
    ``normalized``.

    Args:
        U: ``[n_paths, n_paths]`` order parameter ``U_1``: symmetric positive semidefinite (to rounding).
        heads: ``(H_1, ..., H_L)``, ``H_1 ... H_L = n_paths``.

    Returns:
        list-like ``[L, max(H)]`` float array; entry ``[l, h]`` is the score of head ``h`` of layer ``l + 1``
        (``nan`` where layer ``l + 1`` has fewer heads).

    Raises:
        ValueError: ``U`` not a finite square matrix of ``H_1 ... H_L`` rows, not symmetric or not positive
            semidefinite (beyond rounding), or ``heads`` not positive integers.
        TypeError: complex, boolean or object ``U``.
    """
    U = _order_parameter(U, heads)
    heads = heads_tuple(heads)
    magnitude = np.abs(U)
    through = head_paths(heads)
    scores = np.full((len(heads), max(heads)), np.nan)
    for layer, n_heads in enumerate(heads):
        for head in range(n_heads):
            uses = through[layer, head]
            scores[layer, head] = magnitude[uses[:, None] | uses[None, :]].sum()
    if normalized:
        scores /= np.nanmax(scores)
    return scores


def head_labels(heads: int | Sequence[int]) -> list[str]:
    """Labels ``"(l)h"`` (layer and head, 1-based) that line up with ``head_scores(U, heads).ravel()``: entry
    ``l * max(H) + h`` labels head ``h`` of layer ``l + 1``, and is ``""`` where that layer has fewer heads (where
    the score is ``nan``). With the same number of heads in every layer, every entry is a head."""
    heads = heads_tuple(heads)
    return [
        f"({layer + 1}){head + 1}" if head < n else "" for layer, n in enumerate(heads) for head in range(max(heads))
    ]


def pruning_order(scores: ArrayLike, *, prune_first: str = "lowest") -> list[tuple[int, int]]:
    """Heads ``(layer, head)`` (0-based) in the order in which they are pruned: ascending ``scores`` when
    ``prune_first="lowest"`` (the head score, sec-head-scores), descending when ``"highest"``; ties in layer-major
    order; non-finite entries (layers with fewer heads) left out.

    Args:
        scores: ``[L, max(H)]``, e.g. :func:`head_scores`.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError(f"scores must have shape [L, H], got {scores.shape}")
    if prune_first not in ("lowest", "highest"):
        raise ValueError(f"prune_first must be 'lowest' or 'highest', got {prune_first!r}")
    signed = scores if prune_first == "lowest" else -scores
    heads = [(l, h) for l in range(scores.shape[0]) for h in range(scores.shape[1]) if np.isfinite(scores[l, h])]
    return sorted(heads, key=lambda lh: (signed[lh], lh))


def prune_order_parameter(U, heads, pruned) -> np.ndarray:
    """Zero every entry of ``U`` whose row or column path uses a pruned head (sec-oneshot-pruning).

    Args:
        U: ``[n_paths, n_paths]`` order parameter (checked as by :func:`head_scores`).
        heads: ``(H_1, ..., H_L)``.
        pruned: iterable of ``(layer, head)`` pairs, 0-based.
    """
    U = _order_parameter(U, heads).copy()
    heads = heads_tuple(heads)
    through = head_paths(heads)
    drop = np.zeros(U.shape[0], dtype=bool)
    for pair in pruned:
        layer, head = pair
        if not (0 <= layer < len(heads) and 0 <= head < heads[layer]):
            raise ValueError(f"pruned heads must be 0-based (layer, head) pairs within heads={heads}, got {pair!r}")
        drop |= through[layer, head]
    U[drop, :] = 0.0
    U[:, drop] = 0.0
    return U
