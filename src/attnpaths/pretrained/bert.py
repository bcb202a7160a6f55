"""A BERT encoder in plain torch, float64 by default, read from a ``safetensors`` file: every layer's attention
probabilities, the hidden states and the mean-pooled sentence embedding.

The computation is that of ``transformers.BertModel`` in evaluation mode (post-LayerNorm blocks): the embedding
``LN(word[ids] + position[t] + token_type[0])``; per layer ``a = LN(h + W_o concat_h(A_h V_h))`` with
``A_h = softmax(Q_h K_h^T / sqrt(d))`` over the unmasked keys, then ``h' = LN(a + W_2 gelu(W_1 a))`` (exact, erf
GELU). The sentence embedding is the mean of the last hidden states over the real tokens (the ``1_Pooling`` of a
sentence-transformers checkpoint), optionally normalised to unit length (what sentence-transformers returns).

A head mask ``[L, H]`` (1 keeps a head, 0 prunes it) multiplies each head's attention probabilities before they
weigh the values, as ``head_mask`` of ``transformers`` 4.x does; the attention returned is the probabilities
before that product (rows summing to one).

:class:`BertEncoder` is also an :class:`attnpaths.head_models.HeadModel` on ``tokens`` int64 ``[B, T, 2]`` (the
ids and the attention mask stacked on the last axis, :func:`stack_tokens`), its output a linear readout of the
sentence embedding (:meth:`BertEncoder.with_readout`).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import torch
import torch.nn.functional as F

from .._optional import require
from ..head_models import check_mask


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder (the keys of a checkpoint's ``config.json`` of the same names)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_attention_heads "
                f"({self.num_attention_heads})"
            )

    @classmethod
    def from_json(cls, path: Path | str) -> BertConfig:
        """The configuration in ``config.json`` at ``path``; ``ValueError`` naming the file and key for an
        activation other than ``gelu`` or a position embedding other than ``absolute``."""
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        for key, allowed in (("hidden_act", "gelu"), ("position_embedding_type", "absolute")):
            if raw.get(key, allowed) != allowed:
                raise ValueError(f"{path}: {key} must be {allowed!r}, got {raw[key]!r}")
        try:
            return cls(**{f.name: raw[f.name] for f in fields(cls) if f.name in raw})
        except TypeError as err:
            raise ValueError(f"{path} lacks a size of the encoder: {err}") from None


@dataclass(frozen=True)
class BertOutput:
    """``attention``: ``L`` tensors ``[B, H, query, key]`` (padding keys 0); ``hidden_states``: ``L + 1`` tensors
    ``[B, T, D]`` (the embedding, then each layer's output); ``pooled``: ``[B, D]`` the mean over real tokens of the
    last hidden states."""

    attention: tuple[torch.Tensor, ...]
    hidden_states: tuple[torch.Tensor, ...]
    pooled: torch.Tensor


def stack_tokens(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``tokens`` int64 ``[B, T, 2]`` of :class:`BertEncoder`'s heads methods: ids ``[B, T]`` and mask ``[B, T]``."""
    return torch.stack([torch.as_tensor(ids), torch.as_tensor(mask)], dim=-1).to(torch.int64)


_LAYER_KEYS = {
    "attention.self.query.weight": "DD",
    "attention.self.query.bias": "D",
    "attention.self.key.weight": "DD",
    "attention.self.key.bias": "D",
    "attention.self.value.weight": "DD",
    "attention.self.value.bias": "D",
    "attention.output.dense.weight": "DD",
    "attention.output.dense.bias": "D",
    "attention.output.LayerNorm.weight": "D",
    "attention.output.LayerNorm.bias": "D",
    "intermediate.dense.weight": "ID",
    "intermediate.dense.bias": "I",
    "output.dense.weight": "DI",
    "output.dense.bias": "D",
    "output.LayerNorm.weight": "D",
    "output.LayerNorm.bias": "D",
}
_EMBEDDING_KEYS = {
    "embeddings.word_embeddings.weight": "VD",
    "embeddings.position_embeddings.weight": "PD",
    "embeddings.token_type_embeddings.weight": "SD",
    "embeddings.LayerNorm.weight": "D",
    "embeddings.LayerNorm.bias": "D",
}


class BertEncoder:
    """A BERT encoder's weights in ``dtype`` (float64 by default) and its forward pass (module documentation).

    Args:
        weights: name -> tensor, the names of ``transformers.BertModel``'s state dict (a leading ``bert.`` is
            dropped; pooler and other extra entries are ignored); config: the sizes; dtype: a floating dtype.
    """

    def __init__(self, weights: Mapping[str, torch.Tensor], config: BertConfig, *, dtype=torch.float64):
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating torch dtype, got {dtype!r}")
        c = config
        sizes = dict(
            D=c.hidden_size, I=c.intermediate_size, V=c.vocab_size, P=c.max_position_embeddings, S=c.type_vocab_size
        )
        expected = dict(_EMBEDDING_KEYS)
        expected.update(
            {f"encoder.layer.{l}.{k}": s for l in range(c.num_hidden_layers) for k, s in _LAYER_KEYS.items()}
        )
        weights = {k.removeprefix("bert."): v for k, v in weights.items()}
        self.weights = {}
        for key, shape in expected.items():
            if key not in weights:
                raise ValueError(f"weights lack {key!r}")
            want = tuple(sizes[s] for s in shape)
            if tuple(weights[key].shape) != want:
                raise ValueError(f"weights[{key!r}] must have shape {list(want)}, got {list(weights[key].shape)}")
            self.weights[key] = weights[key].detach().to(dtype=dtype, device="cpu")
        self.config, self.dtype = config, dtype
        self.heads = (c.num_attention_heads,) * c.num_hidden_layers
        self.readout: tuple[torch.Tensor, float, bool] | None = None

    @classmethod
    def from_safetensors(cls, path: Path | str, config: BertConfig, *, dtype=torch.float64) -> BertEncoder:
        """The encoder whose weights are in the safetensors file ``path``."""
        load_file = require("safetensors.torch", "pretrained").load_file

        return cls(load_file(str(path)), config, dtype=dtype)

    def _check_inputs(self, ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        ids, attention_mask = torch.as_tensor(ids), torch.as_tensor(attention_mask)
        if ids.ndim != 2 or ids.dtype != torch.int64:
            raise ValueError(f"ids must be int64 [B, T], got {ids.dtype} {list(ids.shape)}")
        if attention_mask.shape != ids.shape or not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
            raise ValueError(f"attention_mask must be 0/1 of the shape of ids {list(ids.shape)}")
        if ids.shape[1] > self.config.max_position_embeddings:
            raise ValueError(f"ids must have at most {self.config.max_position_embeddings} tokens, got {ids.shape[1]}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise ValueError(f"ids must lie in [0, {self.config.vocab_size}), got [{int(ids.min())}, {int(ids.max())}]")
        return ids, attention_mask.to(torch.bool)

    def _norm(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        w = self.weights
        shape = (self.config.hidden_size,)
        return F.layer_norm(x, shape, w[prefix + ".weight"], w[prefix + ".bias"], self.config.layer_norm_eps)

    def _dense(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        return F.linear(x, self.weights[prefix + ".weight"], self.weights[prefix + ".bias"])

    def _layer(self, index: int, h: torch.Tensor, keys: torch.Tensor, gate: torch.Tensor | None):
        """Layer ``index`` on ``h`` ``[B, T, D]``: ``(attention [B, H, T, T], output [B, T, D])``; ``gate``
        ``[B or 1, H]`` multiplies each head's attention before it weighs the values."""
        p = f"encoder.layer.{index}."
        B, T, D = h.shape
        H = self.config.num_attention_heads

        def split(x):  # [B, T, D] -> [B, H, T, D / H]
            return x.view(B, T, H, D // H).transpose(1, 2)

        q, k, v = (split(self._dense(h, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = (q @ k.transpose(-1, -2)) * (D // H) ** -0.5
        # -inf, not a large negative number: padded keys get exactly 0 (every row has its [CLS] key unmasked)
        attention = torch.softmax(scores.masked_fill(~keys[:, None, None, :], -math.inf), dim=-1)
        weighed = attention if gate is None else attention * gate[:, :, None, None]
        context = (weighed @ v).transpose(1, 2).reshape(B, T, D)
        a = self._norm(h + self._dense(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        mlp = self._dense(F.gelu(self._dense(a, p + "intermediate.dense")), p + "output.dense")
        return attention, self._norm(a + mlp, p + "output.LayerNorm")

    def forward(self, ids, attention_mask, head_mask=None) -> BertOutput:
        """Every layer's attention, the hidden states and the pooled embedding (:class:`BertOutput`).

        Args:
            ids: int64 ``[B, T]`` word-piece ids; attention_mask: ``[B, T]`` 1 on real tokens, 0 on padding;
            head_mask: ``None`` (every head kept), ``[L, H]`` or ``[B, L, H]`` (1 keeps, 0 prunes; a fraction
                scales the head; the autograd graph is kept).
        """
        ids, keys = self._check_inputs(ids, attention_mask)
        B, T = ids.shape
        gates = None if head_mask is None else check_mask(head_mask, self.heads, B).to(self.dtype)
        w = self.weights
        h = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T]
        h = self._norm(h + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        attention, hidden = [], [h]
        for index in range(self.config.num_hidden_layers):
            a, h = self._layer(index, h, keys, None if gates is None else gates[:, index])
            attention.append(a)
            hidden.append(h)
        weight = keys[..., None].to(self.dtype)
        pooled = (h * weight).sum(dim=1) / weight.sum(dim=1).clamp(min=1e-9)
        return BertOutput(tuple(attention), tuple(hidden), pooled)

    __call__ = forward

    def sentence_embedding(self, ids, attention_mask, *, normalize: bool = True, head_mask=None) -> torch.Tensor:
        """``[B, D]``: the mean-pooled last hidden states, of unit length when ``normalize``."""
        pooled = self.forward(ids, attention_mask, head_mask).pooled
        return F.normalize(pooled, dim=-1) if normalize else pooled

    # the heads contract (attnpaths.head_models.HeadModel) on tokens [B, T, 2] = (ids, mask)
    def _split_tokens(self, tokens) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = torch.as_tensor(tokens)
        if tokens.ndim != 3 or tokens.shape[-1] != 2:
            raise ValueError(f"tokens must be int64 [B, T, 2] (ids, attention mask), got {list(tokens.shape)}")
        return tokens[..., 0], tokens[..., 1]

    def attention_weights(self, tokens) -> list[torch.Tensor]:
        """Every layer's attention ``[B, H, query, key]`` for ``tokens`` ``[B, T, 2]`` (:func:`stack_tokens`)."""
        return list(self.forward(*self._split_tokens(tokens)).attention)

    def with_readout(self, weight, bias: float = 0.0, *, normalize: bool = True) -> BertEncoder:
        """A copy (sharing the weights) whose :meth:`masked_output` is ``embedding @ weight + bias``, ``weight``
        ``[D]``, the embedding of :meth:`sentence_embedding` (unit length when ``normalize``)."""
        weight = torch.as_tensor(weight).to(self.dtype)
        if weight.shape != (self.config.hidden_size,):
            raise ValueError(f"weight must have shape [{self.config.hidden_size}], got {list(weight.shape)}")
        view = copy.copy(self)  # shares the weight tensors
        view.readout = (weight, float(bias), bool(normalize))
        return view

    def masked_output(self, tokens, mask) -> torch.Tensor:
        """``[B]``: the readout of the sentence embedding for ``tokens`` ``[B, T, 2]`` with head ``(l, h)``'s
        attention multiplied by ``mask[l, h]`` (``[L, H]``) or ``mask[b, l, h]`` (``[B, L, H]``)."""
        if self.readout is None:
            raise ValueError("masked_output needs a readout of the sentence embedding: use with_readout(weight, bias)")
        weight, bias, normalize = self.readout
        embedding = self.sentence_embedding(*self._split_tokens(tokens), normalize=normalize, head_mask=mask)
        return embedding @ weight + bias
