"""Softmax attention with fixed query/key parameters (sec-model-network) and token readouts.

Attention at every layer is computed from the *raw* input sequence ``x`` (never from the output of the
previous layer), with query/key parameters that are fixed, not learned and not integrated over.

Conventions used throughout the package:

* an input batch is a tensor ``x`` of shape ``[B, N0, T]`` (column ``x[b, :, t]`` is token ``t``);
* an attention matrix ``Omega[b, h, s, t]`` has the key index ``s`` first and the query index ``t``
  second, and is normalised over the key index: ``Omega[b, h, :, t].sum() == 1``;
* token ``t``'s output is ``sum_s x_s Omega_{s t}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ._validation import as_float64_tensor

#: Token readouts applied to the last layer's attention matrix (sec-model-network; ``omega^(L,h)`` of eq-forward).
READOUTS = ("last_token", "first_token", "average_pooling")


def softmax_over_keys(scores: torch.Tensor) -> torch.Tensor:
    """Normalise attention scores over the key index (sec-model-network).

    Args:
        scores: ``[..., T_key, T_query]`` scores ``A_{s t}``.

    Returns:
        ``Omega`` of the same shape with ``Omega[..., :, t]`` summing to one for every query ``t``.
    """
    return torch.softmax(scores, dim=-2)


def token_readout(omega: torch.Tensor, readout: str) -> torch.Tensor:
    """Reduce the last layer's attention matrix to one attention vector per head (sec-model-network).

    Args:
        omega: ``[..., T, T]`` attention matrices (key, query).
        readout: ``"last_token"`` (query = last token), ``"first_token"`` (query = first token) or
            ``"average_pooling"`` (mean over all query tokens).

    Returns:
        ``[..., T]`` attention vector ``omega_s`` over the key index.
    """
    if readout == "last_token":
        return omega[..., :, -1]
    if readout == "first_token":
        return omega[..., :, 0]
    if readout == "average_pooling":
        return omega.mean(dim=-1)
    raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")


class HeadCounts:
    """A base of the classes that hold (as a field or a property) their heads per layer ``heads = (H_1, ...,
    H_L)``: the sizes that follow from them."""

    @property
    def num_layers(self) -> int:
        """Number of attention layers ``L``."""
        return len(self.heads)

    @property
    def num_paths(self) -> int:
        """Number of attention paths ``H_1 * ... * H_L`` (eq-path-features)."""
        return math.prod(self.heads)


@dataclass(frozen=True)
class AttentionLayer:
    """The fixed query/key parameters of the heads of one attention layer (sec-model-network).

    Exactly one of the two forms is given:

    * bilinear ("W") form, ``W`` of shape ``[H, N0, N0]``: ``A_{s t} = x_s^T W x_t``;
    * query/key form, ``Q`` and ``K`` of shape ``[H, G, N0]``: ``A_{s t} = (K x_s).(Q x_t) / sqrt(G)``.
    """

    W: torch.Tensor | None = None
    Q: torch.Tensor | None = None
    K: torch.Tensor | None = None

    def __post_init__(self):
        if self.W is not None:
            if self.Q is not None or self.K is not None:
                raise ValueError("AttentionLayer takes either W or (Q, K), not both")
            W = as_float64_tensor(self.W, "W")
            if W.ndim == 2:
                W = W.unsqueeze(0)
            if W.ndim != 3 or W.shape[1] != W.shape[2]:
                raise ValueError(f"W must have shape [H, N0, N0], got {tuple(self.W.shape)}")
            object.__setattr__(self, "W", W)
        else:
            if self.Q is None or self.K is None:
                raise ValueError("AttentionLayer needs W, or both Q and K")
            Q = as_float64_tensor(self.Q, "Q")
            K = as_float64_tensor(self.K, "K")
            if Q.ndim != 3 or Q.shape != K.shape:
                raise ValueError(f"Q and K must both have shape [H, G, N0], got {tuple(Q.shape)} and {tuple(K.shape)}")
            object.__setattr__(self, "Q", Q)
            object.__setattr__(self, "K", K)

    @property
    def num_heads(self) -> int:
        """Number of heads ``H`` of the layer."""
        return (self.W if self.W is not None else self.Q).shape[0]

    @property
    def input_width(self) -> int:
        """Width ``N0`` of the raw input that the scores read."""
        return (self.W if self.W is not None else self.Q).shape[-1]

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """Attention scores ``A[b, h, s, t]`` (key ``s``, query ``t``), shape ``[B, H, T, T]``."""
        x = x.to(torch.float64)
        if self.W is not None:
            return torch.einsum("bis,hij,bjt->bhst", x, self.W, x)
        keys = torch.einsum("hgi,bis->bhgs", self.K, x)
        queries = torch.einsum("hgi,bit->bhgt", self.Q, x)
        return torch.einsum("bhgs,bhgt->bhst", keys, queries) / math.sqrt(self.Q.shape[1])

    def matrices(self, x: torch.Tensor) -> torch.Tensor:
        """Attention matrices ``Omega[b, h, s, t]``, shape ``[B, H, T, T]``, softmax over keys."""
        return softmax_over_keys(self.scores(x))


@dataclass(frozen=True)
class Attention(HeadCounts):
    """The attention of a whole network: one :class:`AttentionLayer` per layer and a token readout.

    ``heads`` is ``(H_1, ..., H_L)``; the number of attention paths is ``H_1 * ... * H_L``.

    ``num_layers`` and ``num_paths`` come from :class:`~attnpaths.attention.HeadCounts`.
    """

    layers: tuple[AttentionLayer, ...]
    readout: str = "last_token"

    def __post_init__(self):
        layers = tuple(self.layers)
        if not layers:
            raise ValueError("layers must hold at least one AttentionLayer")
        widths = {layer.input_width for layer in layers}
        if len(widths) != 1:
            raise ValueError(f"every layer must act on the same raw input width N0, got {sorted(widths)}")
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}, got {self.readout!r}")
        object.__setattr__(self, "layers", layers)

    @property
    def heads(self) -> tuple[int, ...]:
        """Heads per layer ``(H_1, ..., H_L)``."""
        return tuple(layer.num_heads for layer in self.layers)

    @property
    def input_width(self) -> int:
        """Width ``N0`` of the raw input."""
        return self.layers[0].input_width

    def matrices(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Per-layer attention computed from the raw input ``x`` ``[B, N0, T]``.

        Returns:
            ``[Omega_1, ..., Omega_{L-1}, omega_L]`` with ``Omega_l`` of shape ``[B, H_l, T, T]`` and the
            last layer already reduced by the token readout, ``omega_L`` of shape ``[B, H_L, T]``.
        """
        x = as_float64_tensor(x, "x")
        if x.ndim != 3 or x.shape[1] != self.input_width:
            raise ValueError(f"x must have shape [B, {self.input_width}, T], got {tuple(x.shape)}")
        out = [layer.matrices(x) for layer in self.layers]
        out[-1] = token_readout(out[-1], self.readout)
        return out
