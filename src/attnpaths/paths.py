"""Attention paths and path features (eq-path-features).

A path ``pi = (h_1, ..., h_L)`` picks one head per layer. Paths are flattened row-major with ``h_1``
slowest: ``index(pi) = ((h_1 H_2 + h_2) H_3 + h_3) ...``, the convention of the authors' code.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from numpy.typing import ArrayLike

from ._validation import as_float64_tensor, heads_tuple, positive_int
from .attention import Attention


def path_index(path, heads) -> int:
    """Flat index of ``path = (h_1, ..., h_L)`` (0-based heads) for ``heads = (H_1, ..., H_L)``."""
    heads = heads_tuple(heads)
    if len(path) != len(heads) or any(not 0 <= h < H for h, H in zip(path, heads)):
        raise ValueError(f"path must hold one 0-based head per layer within {heads}, got {tuple(path)}")
    index = 0
    for h, H in zip(path, heads):
        index = index * H + h
    return index


def all_paths(heads: int | Sequence[int]) -> list[tuple[int, ...]]:
    """Every path ``(h_1, ..., h_L)`` (0-based) in flat-index order."""
    return list(itertools.product(*(range(H) for H in heads_tuple(heads))))


def path_attention(matrices: list[torch.Tensor]) -> torch.Tensor:
    """Path attention vectors ``omega_{pi, s}`` (eq-path-features), built backwards from the last layer.

    Args:
        matrices: ``[Omega_1, ..., Omega_{L-1}, omega_L]`` as returned by
            :meth:`Attention.matrices <attnpaths.attention.Attention.matrices>`: ``Omega_l`` of shape
            ``[B, H_l, T, T]`` (key, query) and ``omega_L`` of shape ``[B, H_L, T]``.

    Returns:
        ``[B, n_paths, T]`` with ``n_paths = H_1 ... H_L`` in flat path order.
    """
    vectors = matrices[-1]  # [B, paths of layers l+1..L, T]; index s_{l}
    for omega in reversed(matrices[:-1]):
        # new[b, h_l, rho, s] = sum_{s'} Omega_l[b, h_l, s, s'] vectors[b, rho, s']; h_l is the slowest index.
        combined = torch.einsum("bhst,brt->bhrs", omega, vectors)
        vectors = combined.reshape(combined.shape[0], -1, combined.shape[-1])
    return vectors


def path_features(x: ArrayLike, attention: Attention, *, batch_size: int = 256) -> torch.Tensor:
    """Path features ``xi_pi(x) = sum_s x_s omega_{pi, s}(x)`` (eq-path-features): the raw input routed along path pi.

    Args:
        x: ``[B, N0, T]`` input sequences: features before tokens (the authors' layout), the transpose of
            PyTorch's ``[B, T, D]`` (``tokens.transpose(1, 2)``; :func:`attnpaths.frozen_attention.theory_from_attention`
            takes PyTorch's layout).
        attention: the network's fixed attention.
        batch_size: examples processed at once, an integer >= 1 (memory only; the result does not depend on it).

    Returns:
        float64 tensor ``[B, N0, n_paths]``, with no normalisation factor (``solve`` adds ``s0/N0``).
    """
    x = as_float64_tensor(x, "x")
    if x.ndim != 3 or x.shape[1] != attention.input_width:
        raise ValueError(
            f"x must have shape [B, N0, T] = [B, {attention.input_width}, T] (features before tokens; "
            f"PyTorch's [B, T, D] transposed), got {tuple(x.shape)}"
        )
    batch_size = positive_int(batch_size, "batch_size")
    chunks = []
    for start in range(0, x.shape[0], batch_size):
        xb = x[start : start + batch_size]
        chunks.append(features_along_paths(xb, attention.matrices(xb)))
    return torch.cat(chunks, dim=0) if chunks else x.new_zeros((0, x.shape[1], attention.num_paths))


def features_along_paths(x: torch.Tensor, matrices: list[torch.Tensor]) -> torch.Tensor:
    """Path features ``xi_pi(x) = sum_s x_s omega_{pi, s}`` (eq-path-features) from given attention matrices.

    Args:
        x: ``[B, N0, T]`` float64 input sequences.
        matrices: as for :func:`path_attention`, for the same ``B`` examples and ``T`` tokens.

    Returns:
        ``[B, N0, n_paths]`` in flat path order.
    """
    return torch.einsum("bis,bps->bip", x, path_attention(matrices))


def check_num_paths(n_paths: int, heads) -> tuple[int, ...]:
    """Check that ``n_paths == prod(heads)``; return ``heads`` as a tuple."""
    heads = heads_tuple(heads)
    if math.prod(heads) != n_paths:
        raise ValueError(f"heads={heads} gives {math.prod(heads)} paths but features hold {n_paths} paths (last axis)")
    return heads
