"""Attention paths and path features (eq-path-features).

A path ``pi = (h_1, ..., h_L)`` picks one head per layer. Paths are flattened row-major with ``h_1``
slowest: ``index(pi) = ((h_1 H_2 + h_2) H_3 + h_3) ...``, the convention of the authors' code.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import torch

from ._validation import as_float64_tensor, heads_tuple, positive_int
from .attention import Attention, softmax_over_keys, token_readout


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


def _checked_inputs(x, attention) -> torch.Tensor:
    """``x`` as a float64 tensor ``[B, N0, T]``, or ``ValueError`` naming the expected shape."""
    x = as_float64_tensor(x, "x")
    _check_input_shape(x.shape, attention)
    return x


def _check_input_shape(shape, attention) -> None:
    if len(shape) != 3 or shape[1] != attention.input_width:
        raise ValueError(
            f"x must have shape [B, N0, T] = [B, {attention.input_width}, T] (features before tokens; "
            f"PyTorch's [B, T, D] transposed), got {tuple(shape)}"
        )


def _made_in_batches(x) -> bool:
    """Whether ``x`` is inputs made batch by batch: an object (not an array) with ``shape`` and ``batches``."""
    return callable(getattr(x, "batches", None)) and not isinstance(x, (torch.Tensor, np.ndarray))


def path_features(x, attention: Attention, *, batch_size: int = 256) -> torch.Tensor:
    """Path features ``xi_pi(x) = sum_s x_s omega_{pi, s}(x)`` (eq-path-features): the raw input routed along path pi.

    Args:
        x: ``[B, N0, T]`` input sequences: features before tokens (the authors' layout), the transpose of
            PyTorch's ``[B, T, D]`` (``tokens.transpose(1, 2)``; :func:`attnpaths.frozen_attention.theory_from_attention`
            takes PyTorch's layout). An array, or inputs made batch by batch (an object with ``shape`` and
            ``batches(batch_size)`` yielding its examples in order, e.g. the :class:`attnpaths.hmc.data.HMCBlocks`
            inputs of a large HMC data set): then only a batch of them is in memory at a time.
        attention: the network's fixed attention.
        batch_size: examples processed at once, an integer >= 1 (memory; the result depends on it through the
            rounding of the batched products only, in the last bits).

    Returns:
        float64 tensor ``[B, N0, n_paths]``, with no normalisation factor (``solve`` adds ``s0/N0``).
    """
    if _made_in_batches(x):
        _check_input_shape(tuple(x.shape), attention)  # before any batch is made
    else:
        x = _checked_inputs(x, attention)
    batch_size = positive_int(batch_size, "batch_size")
    num_examples = x.shape[0]
    if _made_in_batches(x):
        batches = (_checked_inputs(batch, attention) for batch in x.batches(batch_size))
    else:
        batches = (x[start : start + batch_size] for start in range(0, num_examples, batch_size))
    # filled batch by batch: no second copy of the result, as a concatenation of the batches would make
    features = torch.empty(num_examples, attention.input_width, attention.num_paths, dtype=torch.float64)
    start = 0
    miscount = f"x.batches(batch_size) must yield x.shape[0] = {num_examples} examples in all"
    for xb in batches:
        if start + xb.shape[0] > num_examples:
            raise ValueError(miscount)
        features[start : start + xb.shape[0]] = features_along_paths(xb, attention.matrices(xb))
        start += xb.shape[0]
    if start != num_examples:
        raise ValueError(miscount)
    return features


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


class FactoredPathFeatures:
    """The path features of :func:`path_features` (eq-path-features), computed with fewer operations: equal to
    them up to rounding (the sums are grouped differently; about 1e-14 of the largest feature seen on the
    hidden-Markov-chain task), for streams of many chunks of examples through one fixed attention.

    Two rearrangements of the scores ``A_{s t} = x_s^T W x_t`` (:meth:`attnpaths.attention.AttentionLayer.scores`):

    * the last layer's readout needs one query only (``last_token``: ``t = T - 1``; ``first_token``: ``t = 0``),
      so its scores are ``x_s^T (W x_t)`` for that ``t`` alone, softmax over the keys ``s`` (``average_pooling``
      needs every query and keeps the full scores);
    * a head whose ``W`` (W form) has numerical rank ``r <= N0 / 2`` (then ``r (2 N0 T + T^2)`` operations per
      example instead of ``N0^2 T + N0 T^2``; e.g. the hidden-Markov-chain ``same_token`` head: a rank-one feature
      block beside a ``T x T`` position block) scores through its factors ``W = L R^T`` (singular value
      decomposition, singular values above ``N0 eps`` times the largest kept): ``A_{s t} = (L^T x_s) . (R^T x_t)``.

    * a head in the query/key form (``Q``, ``K`` ``[G, N0]``, scores ``(K x_s) . (Q x_t) / sqrt(G)``) is a W-form
      head of ``W = K^T Q / sqrt(G)``, scored through the factors ``L = K^T / sqrt(G)``, ``R = Q^T`` (rank ``G``)
      or through ``W`` itself, whichever takes fewer operations for the ``T`` of the inputs
      (``G (2 N0 T + T^2)`` against ``N0^2 T + N0 T^2``; e.g. ``W`` for the one-shot model at ``N0 = 192``,
      ``G = 128``, ``T = 48``).

    With ``input_basis`` ``B`` (``[N0, d]``, orthonormal columns spanning every input token, ``d < N0``; e.g.
    :meth:`attnpaths.oneshot.sequences.SequenceEncoder.input_basis`: three copies of each pixel plus the position
    and label codes span 95 of the one-shot model's 192 features), every head scores the ``d`` coordinates
    ``x~ = B^T x`` through ``B^T W B`` (or the factors ``B^T L``, ``B^T R``): ``x^T W x = x~^T (B^T W B) x~`` where
    ``B B^T x = x`` (checked on every input: ``ValueError`` otherwise), in ``d^2 T + d T^2`` operations instead of
    ``N0^2 T + N0 T^2``. The path features are still summed from the inputs ``x`` themselves.

    Every head of a layer is scored from one matrix product of the inputs with its heads' ``W`` and factors side
    by side. The factors are computed once, here; full-rank W-form heads score through ``W``. A picklable
    callable.

    Args:
        attention: the network's fixed attention.
        input_basis: None (default), or ``[N0, d]`` with orthonormal columns (``B^T B = I`` within ``1e-10``),
            ``1 <= d <= N0``, whose span holds every input token.

    Example::

        features = FactoredPathFeatures(attention)(x)   # x [B, N0, T] -> [B, N0, n_paths]
    """

    SPAN_TOLERANCE = 1e-10
    """Largest ``|x - B B^T x|`` allowed, relative to the largest ``|x|`` of the batch, with an ``input_basis``
    (rounding leaves ~1e-16 of tokens that lie in the span)."""

    def __init__(self, attention: Attention, *, input_basis=None):
        if not isinstance(attention, Attention):
            raise ValueError(f"attention must be an Attention (attnpaths.attention), got {type(attention).__name__}")
        self.attention = attention
        self.input_basis = None if input_basis is None else _checked_basis(input_basis, attention.input_width)
        # for each layer, for each head: the factors (L [N0, r], R [N0, r]) of a W-form head of low rank, else None
        self.factors = [
            [_low_rank_factors(W) for W in layer.W] if layer.W is not None else [None] * layer.num_heads
            for layer in attention.layers
        ]
        # for each layer, for each head: (W [N0, N0], factors or None); a query/key head's W = K^T Q / sqrt(G) and
        # factors (K^T / sqrt(G), Q^T)
        self._options = []
        for layer, factors in zip(attention.layers, self.factors):
            if layer.W is not None:
                self._options.append(list(zip(layer.W, factors)))
            else:
                scale = 1.0 / math.sqrt(layer.Q.shape[1])
                self._options.append(
                    [
                        (K.T @ Q * scale, ((K.T * scale).contiguous(), Q.T.contiguous()))
                        for Q, K in zip(layer.Q, layer.K)
                    ]
                )
        if self.input_basis is not None:  # the heads on the basis' coordinates: B^T W B, (B^T L, B^T R)
            B = self.input_basis
            self._options = [
                [
                    (B.T @ W @ B, None if f is None else ((B.T @ f[0]).contiguous(), (B.T @ f[1]).contiguous()))
                    for W, f in layer
                ]
                for layer in self._options
            ]

    @property
    def ranks(self) -> list[list[int | None]]:
        """The rank ``r`` of each factored head and ``None`` for the others, one list per layer with an entry per head."""
        return [[None if f is None else f[0].shape[1] for f in layer] for layer in self.factors]

    def __call__(self, x, *, batch_size: int = 256) -> torch.Tensor:
        """``[B, N0, T]`` inputs -> ``[B, N0, n_paths]`` path features (as :func:`path_features`, up to rounding).

        Args:
            x: ``[B, N0, T]`` input sequences (features before tokens).
            batch_size: examples processed at once, an integer >= 1 (memory only).
        """
        attention = self.attention
        x = _checked_inputs(x, attention)
        batch_size = positive_int(batch_size, "batch_size")
        chunks = []
        for start in range(0, x.shape[0], batch_size):
            xb = x[start : start + batch_size].contiguous()
            scored = xb if self.input_basis is None else self._coordinates(xb)  # [B, N0 or d, T]
            tokens = scored.transpose(1, 2)  # [B, T, N0 or d], a view: the batched products read it transposed
            matrices = [
                softmax_over_keys(self._scores(self._heads(l, xb.shape[-1]), scored, tokens))
                for l in range(len(attention.layers) - 1)
            ]
            matrices.append(self._readout(scored, tokens))
            # xi[b, i, p] = sum_s x[b, i, s] omega[b, p, s] (eq-path-features)
            chunks.append(torch.bmm(xb, path_attention(matrices).transpose(1, 2)))
        return torch.cat(chunks, dim=0) if chunks else x.new_zeros((0, x.shape[1], attention.num_paths))

    def _coordinates(self, x: torch.Tensor) -> torch.Tensor:
        """``B^T x`` ``[B, d, T]`` of inputs ``x`` ``[B, N0, T]``, or ``ValueError`` where a token is off the span."""
        basis = self.input_basis
        coordinates = torch.matmul(basis.T, x)
        off = float((x - torch.matmul(basis, coordinates)).abs().max()) if x.numel() else 0.0
        if off > self.SPAN_TOLERANCE * (float(x.abs().max()) if x.numel() else 0.0):
            raise ValueError(
                f"x must lie in the span of input_basis (|x - B B^T x| <= {self.SPAN_TOLERANCE:g} of the largest "
                f"|x|), got {off:.3g} off it"
            )
        return coordinates

    def _heads(self, l: int, T: int) -> list[tuple[torch.Tensor, tuple | None]]:
        """Layer ``l``'s heads for inputs of ``T`` tokens: ``(W, None)`` where ``W`` takes fewer operations than
        the factors (or there are none), else ``(W, (L, R))`` (on the basis' ``d`` coordinates, if any)."""
        N0 = self.attention.input_width if self.input_basis is None else self.input_basis.shape[1]
        return [
            (W, None if f is None or f[0].shape[1] * (2 * N0 + T) >= N0 * (N0 + T) else f) for W, f in self._options[l]
        ]

    @staticmethod
    def _scores(chosen, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """``[B, H, T, T]`` scores of one layer's heads as ``chosen`` by :meth:`_heads` (``x`` ``[B, N0, T]``,
        ``tokens`` its ``[B, T, N0]`` transpose), the factored heads through their factors."""
        factors = [f for _, f in chosen]
        # one product x^T [W_h for the dense heads | L_h, R_h for the factored ones]: [B, T, sum of widths]
        blocks = [W if f is None else torch.cat(f, dim=1) for W, f in chosen]
        right = torch.cat(blocks, dim=1)
        products = torch.bmm(tokens, right.expand(x.shape[0], *right.shape))
        heads, offset = [], 0
        for block, f in zip(blocks, factors):
            part = products[..., offset : offset + block.shape[1]]
            offset += block.shape[1]
            if f is None:  # A = (x^T W) x
                heads.append(torch.bmm(part, x))
            else:  # A = (x^T L) (x^T R)^T
                rank = f[0].shape[1]
                heads.append(torch.bmm(part[..., :rank], part[..., rank:].transpose(1, 2)))
        return torch.stack(heads, dim=1)

    def _readout(self, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The last layer's attention vectors ``[B, H_L, T]`` after the token readout."""
        layer, readout = self.attention.layers[-1], self.attention.readout
        if readout == "average_pooling":
            heads = self._heads(len(self.attention.layers) - 1, x.shape[-1])
            return token_readout(softmax_over_keys(self._scores(heads, x, tokens)), readout)
        query = x[:, :, -1 if readout == "last_token" else 0]  # [B, N0]
        if self.input_basis is not None:  # on the basis' coordinates: x~_s^T (B^T W B) x~_t
            W = torch.stack([W for W, _ in self._options[-1]])
            scores = torch.bmm(torch.einsum("hij,bj->bhi", W, query), x)  # [B, H, T]
        elif layer.W is not None:  # A_s = x_s^T (W x_t) for the one query t
            weighted = torch.einsum("hij,bj->bhi", layer.W, query)  # [B, H, N0]
            scores = torch.bmm(weighted, x)  # [B, H, T]
        else:
            keys = torch.einsum("hgi,bis->bhgs", layer.K, x)
            queries = torch.einsum("hgi,bi->bhg", layer.Q, query)
            scores = torch.einsum("bhgs,bhg->bhs", keys, queries) / math.sqrt(layer.Q.shape[1])
        return torch.softmax(scores, dim=-1)


def _checked_basis(basis, n0: int) -> torch.Tensor:
    """``basis`` as a float64 tensor ``[N0, d]`` with orthonormal columns, or ``ValueError`` naming it."""
    basis = as_float64_tensor(basis, "input_basis")
    if basis.ndim != 2 or basis.shape[0] != n0 or not 1 <= basis.shape[1] <= n0:
        raise ValueError(
            f"input_basis must have shape [N0, d] = [{n0}, d] with 1 <= d <= {n0}, got {tuple(basis.shape)}"
        )
    gap = float((basis.T @ basis - torch.eye(basis.shape[1], dtype=torch.float64)).abs().max())
    if gap > 1e-10:
        raise ValueError(f"input_basis must have orthonormal columns (B^T B = I within 1e-10), got {gap:.3g} off")
    return basis.contiguous()


def _low_rank_factors(W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(L [N0, r], R [N0, r])`` with ``W = L R^T`` up to rounding when that makes the scores cheaper
    (``r (2 N0 + T) < N0 (N0 + T)`` for every ``T >= 1``, i.e. ``r <= N0 / 2``), else ``None``."""
    n0 = W.shape[0]
    u, s, vh = torch.linalg.svd(W)
    if s.numel() == 0 or s[0] == 0:
        return W.new_zeros((n0, 0)), W.new_zeros((n0, 0))
    rank = int((s > s[0] * n0 * torch.finfo(torch.float64).eps).sum())
    if 2 * rank > n0:
        return None
    return u[:, :rank] * s[:rank], vh[:rank].T.contiguous()
