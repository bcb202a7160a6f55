"""A trained model's heads: one protocol, and its implementations for the package's architectures (sec-own-model,
sec-pruning-models).

:class:`HeadModel` is what the theory needs of any attention-only model, in PyTorch's layout:

* ``attention_weights(tokens)``: for tokens ``[B, T, D]`` (batch first), every layer's attention, a list of ``L``
  tensors ``[B, H_l, T, T]`` indexed ``[batch, head, query, key]``, rows summing to one over the keys (what
  ``torch.nn.MultiheadAttention(..., need_weights=True, average_attn_weights=False)`` returns);
* optionally ``masked_output(tokens, mask)``: the model's output ``[B]`` with head ``(l, h)``'s output multiplied by
  ``mask[l, h]`` (``mask`` ``[L, max(H)]``; 1 keeps a head, 0 prunes it), which pruning experiments evaluate.

Any object with these methods is a :class:`HeadModel` (a structural protocol: no base class to inherit).
:func:`attnpaths.frozen_attention.rank_heads` needs ``attention_weights`` only; :class:`attnpaths.head_masks.HeadMaskEvaluator`
needs ``masked_output``.

The package's two trained architectures have the protocol through :class:`FrozenHeadModel`, a copy of their
weights in float64 that computes exactly what the model computes (:func:`head_model` returns it):

* :class:`SumHeadModel` for :class:`attnpaths.transformer.SumHeadTransformer`, whose query/key maps act on the raw
  input at every layer (the theory's network, sec-model-network);
* :class:`MultiheadStackModel` for :class:`attnpaths.attention_stack.MultiheadAttentionStack`, a plain stack of
  ``torch.nn.MultiheadAttention`` layers, whose layer-``l`` attention is computed from the output of layer ``l - 1``.

Inside the package a frozen model also works in the authors' layout, inputs ``x`` ``[B, N0, T]`` (features before
tokens, ``tokens.transpose(1, 2)``) and attention ``[B, H, key, query]``, for the pruning experiments' fast paths:

* ``layer_attention(x)``: every head's attention matrix ``Omega^(l,h)[b, s, t]`` (key ``s``, query ``t``);
* ``matrices(x)``: the same in the form of :meth:`attnpaths.attention.Attention.matrices` (the last layer
  reduced by the average-pooling readout), so that :func:`attnpaths.paths.path_features` builds the path
  features (eq-path-features) of the model's *frozen* attention;
* ``outputs(x, mask)``: :meth:`FrozenHeadModel.masked_output` in that layout; the mask may carry a batch axis, so
  that the gradient of each example's loss with respect to it is one backward pass (eq-michel-importance);
* ``last_layer_terms(x, mask)``: the output as a linear function of the last layer's head mask, which it is
  (mean pooling and a linear readout follow the last layer), so that pruning curves cost few forward passes.

:func:`attention_error` measures a frozen model's agreement with the model's own attention; the masks that prune
heads, and the accuracy of a model under them, are :mod:`attnpaths.head_masks`.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from ._validation import as_float64_tensor
from .attention_stack import MultiheadAttentionStack
from .transformer import SumHeadTransformer


@runtime_checkable
class HeadModel(Protocol):
    """The protocol of a model's heads: any object with a method ``attention_weights(tokens)`` (and, for
    pruning, ``masked_output(tokens, mask)``, see the module's documentation)."""

    def attention_weights(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """Per-layer attention weights for ``tokens`` ``[B, T, D]``: a list of ``L`` tensors ``[B, H_l, T, T]``
        indexed ``[batch, head, query, key]``, rows summing to one over the keys."""
        ...


def model_heads(model: HeadModel, tokens) -> tuple[int, ...]:
    """``(H_1, ..., H_L)`` of a :class:`HeadModel`: its ``heads`` attribute where it has one, else read from the
    attention it computes for ``tokens`` ``[B, T, D]``."""
    heads = getattr(model, "heads", None)
    if heads is None:
        with torch.no_grad():
            heads = [int(a.shape[1]) for a in model.attention_weights(tokens)]
    return tuple(int(h) for h in heads)


class FrozenHeadModel:
    """A trained model's weights, frozen in float64, with its attention and its head-masked output: a
    :class:`HeadModel` (``attention_weights``, ``masked_output``) that also works in the package's layout.

    Attributes (set by the subclasses): ``heads`` ``(H_1, ..., H_L)``; ``input_width`` ``N0``; ``readout``
    ``"average_pooling"`` (every model here mean-pools its last layer's tokens).
    """

    heads: tuple[int, ...]
    input_width: int
    readout = "average_pooling"
    #: whether every layer's attention is computed from the raw input alone (not from the previous layer)
    attention_from_input = False
    #: the token axis of the heads' outputs
    head_token_axis = 2
    #: whether the output is a multilinear function of the layers' head masks (the attention read from the raw
    #: input, no biases): a sum over attention paths of each path's contribution times its heads' mask entries
    multilinear_in_mask = False

    @property
    def num_layers(self) -> int:
        """The number of attention layers."""
        return len(self.heads)

    @property
    def num_paths(self) -> int:
        """``H_1 ... H_L``, the number of attention paths (eq-path-features)."""
        return math.prod(self.heads)

    def _tokens(self, tokens) -> torch.Tensor:
        """``tokens`` ``[B, T, N0]`` as the package's float64 inputs ``[B, N0, T]``."""
        tokens = as_float64_tensor(tokens, "tokens")
        if tokens.ndim != 3 or tokens.shape[2] != self.input_width:
            raise ValueError(
                f"tokens must have shape [B, T, {self.input_width}] (batch, token, feature), got {tuple(tokens.shape)}"
            )
        return tokens.transpose(1, 2)

    def attention_weights(self, tokens) -> list[torch.Tensor]:
        """The attention of every layer for ``tokens`` ``[B, T, N0]``, as the model computes it: ``L`` float64
        tensors ``[B, H_l, T, T]`` indexed ``[batch, head, query, key]`` (the :class:`HeadModel` protocol)."""
        with torch.no_grad():
            return [omega.transpose(-1, -2) for omega in self.layer_attention(self._tokens(tokens))]

    def masked_output(self, tokens, mask=None) -> torch.Tensor:
        """The model's output ``[B]`` (float64) for ``tokens`` ``[B, T, N0]`` with head ``(l, h)``'s output
        multiplied by ``mask[l, h]`` (``[L, max(H)]``; ``None``: every head kept), the :class:`HeadModel`
        protocol's pruning method (:func:`attnpaths.head_masks.pruning_mask` builds the masks)."""
        with torch.no_grad():
            return self.outputs(self._tokens(tokens), mask)

    def _input(self, x) -> torch.Tensor:
        x = as_float64_tensor(x, "x")
        if x.ndim != 3 or x.shape[1] != self.input_width:
            raise ValueError(f"x must have shape [B, {self.input_width}, T], got {tuple(x.shape)}")
        return x

    def _mask(self, mask, batch: int) -> torch.Tensor:
        """``mask`` as float64 ``[B or 1, L, H]`` (``None``: all ones); keeps its autograd graph."""
        L, H = self.num_layers, max(self.heads)
        if mask is None:
            return torch.ones(1, L, H, dtype=torch.float64)
        mask = torch.as_tensor(mask)
        if mask.ndim == 2:
            mask = mask[None]
        if mask.ndim != 3 or mask.shape[1:] != (L, H) or mask.shape[0] not in (1, batch):
            raise ValueError(
                f"mask must have shape [{L}, {H}] or [B, {L}, {H}] with B = {batch}, got {tuple(mask.shape)}"
            )
        return mask.to(torch.float64)

    def layer_attention(self, x, mask=None) -> list[torch.Tensor]:
        """Every layer's attention matrices, computed as the model computes them.

        Args:
            x: ``[B, N0, T]``.
            mask: optional head mask ``[L, H]`` or ``[B, L, H]`` applied to the heads' outputs before the
                attention of the following layers is computed (it changes nothing where the attention acts
                on the raw input).

        Returns:
            ``[Omega_1, ..., Omega_L]``, each float64 ``[B, H_l, T, T]`` (key, query), softmax over keys.
        """
        x = self._input(x)
        mask = self._mask(mask, x.shape[0])
        if self.attention_from_input:  # no layer's output is needed
            return [self._attention(index, None, x) for index in range(self.num_layers)]
        h, omegas = self._embed(x), []
        for index in range(self.num_layers):
            omegas.append(self._attention(index, h, x))
            if index < self.num_layers - 1:  # the last layer's output feeds no attention
                h = self._combine(index, self._heads(index, h, omegas[-1]), mask[:, index, : self.heads[index]])
        return omegas

    def matrices(self, x) -> list[torch.Tensor]:
        """The unmasked model's attention in the form of :meth:`attnpaths.attention.Attention.matrices`:
        ``[Omega_1, ..., Omega_{L-1}, omega_L]`` with ``omega_L`` ``[B, H_L, T]`` the average over queries."""
        with torch.no_grad():
            out = self.layer_attention(x)
        out[-1] = out[-1].mean(dim=-1)
        return out

    def outputs(self, x, mask=None) -> torch.Tensor:
        """The model's output with each head's output multiplied by its mask entry.

        Args:
            x: ``[B, N0, T]``.
            mask: ``[L, H]`` or ``[B, L, H]`` (``None``: every head kept, the model's own output).

        Returns:
            float64 ``[B]`` (differentiable with respect to ``mask``).
        """
        x = self._input(x)
        mask = self._mask(mask, x.shape[0])
        h = self._embed(x)
        last = self.num_layers - 1
        for index in range(self.num_layers):
            omega = self._attention(index, h, x)
            # mean pooling follows the last layer: its heads' outputs are needed on the mean token only
            heads_out = self._pooled_heads(index, h, omega) if index == last else self._heads(index, h, omega)
            h = self._combine(index, heads_out, mask[:, index, : self.heads[index]])
        return self._readout(h)

    def last_layer_terms(self, x, mask=None) -> tuple[torch.Tensor, torch.Tensor]:
        """The output as a function of the last layer's head mask, which it depends on linearly (the last layer
        is followed by mean pooling and a linear readout): ``outputs(x, mask) = terms @ mask[L-1] + offset``
        for any last-layer mask, the earlier layers masked by ``mask``.

        Args:
            x: ``[B, N0, T]``; mask: ``[L, H]`` or ``[B, L, H]`` (its last layer is not used).

        Returns:
            ``(terms [B, H_L], offset [B])``, float64: head ``h``'s contribution and the output with the last
            layer's heads all masked (its output bias, if any).
        """
        x = self._input(x)
        mask = self._mask(mask, x.shape[0])
        h = self._embed(x)
        for index in range(self.num_layers - 1):
            heads_out = self._heads(index, h, self._attention(index, h, x))
            h = self._combine(index, heads_out, mask[:, index, : self.heads[index]])
        last = self.num_layers - 1
        return self._last_terms(self._pooled_heads(last, h, self._attention(last, h, x)))

    def _pooled_heads(self, index: int, h: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
        """The heads' outputs of layer ``index`` averaged over the tokens (one token, kept as an axis of size 1),
        as the mean pooling after the last layer reads them: each head's output is linear in its attention, so
        the attention averaged over queries gives it, ``T`` times fewer products than :meth:`_heads` and the
        mean of its ``T`` tokens."""
        return self._heads(index, h, omega.mean(dim=-1, keepdim=True))

    def _last_terms(self, heads_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(terms [B, H_L], offset [B])`` of :meth:`last_layer_terms` from the last layer's head outputs (those of
        :meth:`_heads`, or already pooled by :meth:`_pooled_heads`)."""
        last = self.num_layers - 1
        H = self.heads[last]
        # mean pooling follows a token-wise linear map: pool the heads' outputs first, one token instead of T
        if heads_out.shape[self.head_token_axis] != 1:
            heads_out = heads_out.mean(dim=self.head_token_axis, keepdim=True)
        offset = self._readout(self._combine(last, heads_out, torch.zeros(1, H, dtype=torch.float64)))
        unit = torch.eye(H, dtype=torch.float64)
        terms = torch.stack([self._readout(self._combine(last, heads_out, unit[k : k + 1])) for k in range(H)], dim=1)
        return terms - offset[:, None], offset

    def value_norms(self) -> np.ndarray:
        """``[L, H]``: the Frobenius norm of each head's value map into the next layer."""
        raise NotImplementedError

    def path_weights(self) -> torch.Tensor:
        """The trained weights of every attention path (eq-path-form): ``f(x) = sum_pi w_pi . xi_pi(x)`` with
        the path features ``xi_pi`` of the frozen attention (eq-path-features) and
        ``w_pi = E^T M_{1,h_1}^T ... M_{L,h_L}^T a``, ``M_{l,h}`` head ``h``'s value map of layer ``l`` into
        the next layer, ``E`` the token embedding, ``a`` the readout.

        Returns:
            float64 ``[n_paths, N0]``, paths in flat order (``h_1`` slowest). Raises ``ValueError`` for a model
            with biases (its output is then not a sum over paths).
        """
        maps = [self._head_maps(l) for l in range(self.num_layers)]
        rows = []
        for path in itertools.product(*(range(H) for H in self.heads)):
            w = self._readout_vector()
            for l in reversed(range(self.num_layers)):
                w = w @ maps[l][path[l]]
            rows.append(w @ self._embed_matrix())
        return torch.stack(rows)

    def _head_maps(self, index: int) -> list[torch.Tensor]:
        raise NotImplementedError

    def _embed_matrix(self) -> torch.Tensor:
        raise NotImplementedError

    def _readout_vector(self) -> torch.Tensor:
        raise NotImplementedError

    # one layer at a time: _embed(x) -> h; per layer _attention -> Omega, _heads -> the heads' outputs,
    # _combine(mask) -> the next h; _readout(h) -> f
    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _attention(self, index: int, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _heads(self, index: int, h: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _combine(self, index: int, heads_out: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _readout(self, h: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class SumHeadModel(FrozenHeadModel):
    """:class:`~attnpaths.transformer.SumHeadTransformer` in float64 (sec-oneshot-data): attention from the raw
    input through the trained query/key maps (:meth:`~attnpaths.transformer.SumHeadTransformer.attention`),
    layer outputs ``h^(l) = F^{-1/2} sum_h mask[l, h] V^(l,h) h^(l-1) Omega^(l,h)``. With the mask of
    :func:`attnpaths.head_masks.pruning_mask` ``(..., rescale=True)`` this is the model's own ``drop_heads`` pruning."""

    attention_from_input = True
    multilinear_in_mask = True
    head_token_axis = 3

    def __init__(self, model: SumHeadTransformer):
        self.attention = model.attention()
        self.input_layer = model.input_layer.detach().cpu().double()
        self.values = model.values.detach().cpu().double()  # [L, F, N, N]
        self.readout_weights = model.readout.detach().cpu().double()
        self.heads = (model.num_heads,) * model.num_layers
        self.input_width = int(self.input_layer.shape[1])

    def _embed(self, x):
        return torch.einsum("ni,bit->bnt", self.input_layer, x)  # [B, N, T]

    def _attention(self, index, h, x):
        return self.attention.layers[index].matrices(x)  # from the raw input

    def _heads(self, index, h, omega):
        # [B, F, N, T']: V^(l,h) sum_s h_s Omega^(l,h)_{s t} for the T' queries of omega (T' = 1: pooled). Two
        # matrix products in the cheaper order; torch.einsum's own order of the three operands took twice as long.
        values = self.values[index]  # [F, N, N]
        F, M, N = values.shape
        B, _, S = h.shape
        if omega.shape[-1] < S:  # few queries: the attention of every head first, then V per head
            Tq = omega.shape[-1]
            routed = (h @ omega.permute(0, 2, 1, 3).reshape(B, S, F * Tq)).reshape(B, N, F, Tq)
            out = values @ routed.permute(2, 1, 0, 3).reshape(F, N, B * Tq)  # [F, M, B T']
            return out.reshape(F, M, B, Tq).permute(2, 0, 1, 3)
        # V^(l,h) h for every head in one product [F N, N] x [N, B S], then the attention of each (b, h)
        mapped = (values.reshape(F * M, N) @ h.transpose(0, 1).reshape(N, B * S)).reshape(F, M, B, S)
        return mapped.permute(2, 0, 1, 3) @ omega

    def _combine(self, index, heads_out, mask):
        return torch.einsum("bh,bhmt->bmt", mask.expand(heads_out.shape[0], -1), heads_out) / math.sqrt(
            self.heads[index]
        )

    def _readout(self, h):
        return h.mean(dim=2) @ self.readout_weights

    def value_norms(self) -> np.ndarray:
        """``[L, H]``: the Frobenius norm of each head's value map into the next layer."""
        return torch.linalg.matrix_norm(self.values).numpy()

    def _head_maps(self, index):
        return list(self.values[index] / math.sqrt(self.heads[index]))

    def _embed_matrix(self):
        return self.input_layer

    def _readout_vector(self):
        return self.readout_weights


def _f64(tensor):
    """A detached float64 CPU copy of ``tensor`` (``None`` stays ``None``)."""
    return None if tensor is None else tensor.detach().cpu().double()


class MultiheadStackModel(FrozenHeadModel):
    """:class:`~attnpaths.attention_stack.MultiheadAttentionStack` in float64 (sec-pruning-models): each layer
    recomputes what ``torch.nn.MultiheadAttention`` computes (eval mode, self-attention, no attention mask),
    from the layer's packed input projection ``in_proj_weight`` (queries, keys, values, in that order, each
    split into ``H`` heads of ``d = D / H`` rows), its biases and its output projection:
    ``Omega^(l,h)_{s t} = softmax_s((W_q^h h_t + b_q^h) . (W_k^h h_s + b_k^h) / sqrt(d))`` and
    ``h^(l) = W_o [mask[l, 1] o^1; ...; mask[l, H] o^H] + b_o`` with ``o^h_t = sum_s Omega^(l,h)_{s t}
    (W_v^h h_s + b_v^h)``."""

    def __init__(self, model: MultiheadAttentionStack):
        self.embed = model.embed.weight.detach().cpu().double()  # [D, N0]
        self.readout_weights = model.readout.weight.detach().cpu().double()[0]  # [D]
        self.layers = []
        for index, layer in enumerate(model.layers):
            if not layer._qkv_same_embed_dim or layer.bias_k is not None or layer.add_zero_attn:
                raise ValueError(
                    f"model.layers[{index}] must be a self-attention MultiheadAttention with one packed "
                    "input projection, no bias_k/bias_v and no add_zero_attn"
                )
            self.layers.append(
                {
                    "in_weight": _f64(layer.in_proj_weight),
                    "in_bias": _f64(layer.in_proj_bias),
                    "out_weight": _f64(layer.out_proj.weight),
                    "out_bias": _f64(layer.out_proj.bias),
                    "num_heads": int(layer.num_heads),
                }
            )
        self.heads = tuple(layer["num_heads"] for layer in self.layers)
        self.input_width = int(self.embed.shape[1])
        self.width = int(self.embed.shape[0])

    def _embed(self, x):
        return torch.einsum("di,bit->btd", self.embed, x)  # [B, T, D]

    def _split(self, index, h, parts=slice(0, 3)):
        """Queries, keys and values ``[B, H, T, d]`` of layer ``index`` from its input ``h`` ``[B, T, D]``, or those
        of ``parts`` (a slice of the three): only their rows of the packed projection are applied."""
        layer = self.layers[index]
        B, T, _ = h.shape
        H, D = layer["num_heads"], self.width
        rows = slice(parts.start * D, parts.stop * D)
        projected = h @ layer["in_weight"][rows].T
        if layer["in_bias"] is not None:
            projected = projected + layer["in_bias"][rows]
        return [part.reshape(B, T, H, D // H).transpose(1, 2) for part in projected.split(D, dim=-1)]

    def _attention(self, index, h, x):
        q, k = self._split(index, h, slice(0, 2))
        d = q.shape[-1]
        return torch.softmax((q * math.sqrt(1.0 / d)) @ k.transpose(-1, -2), dim=-1).transpose(-1, -2)  # key, query

    def _heads(self, index, h, omega):
        (v,) = self._split(index, h, slice(2, 3))
        return omega.transpose(-1, -2) @ v  # [B, H, T', d] for the T' queries of omega

    def _pooled_heads(self, index, h, omega):
        # sum_s omega_s (W_v h_s + b_v) = W_v (sum_s omega_s h_s) + b_v sum_s omega_s with the attention averaged
        # over queries: the value projection of one token per head instead of T
        layer = self.layers[index]
        H, D = layer["num_heads"], self.width
        pooled = omega.mean(dim=-1)  # [B, H, S]
        routed = pooled @ h  # [B, H, D]: the input averaged by each head's pooled attention
        W_v = layer["in_weight"][2 * D :].reshape(H, D // H, D)  # [H, d, D]
        out = (routed.transpose(0, 1) @ W_v.transpose(1, 2)).transpose(0, 1)[:, :, None]  # [B, H, 1, d]
        if layer["in_bias"] is not None:
            out = out + layer["in_bias"][2 * D :].reshape(H, 1, D // H) * pooled.sum(dim=-1)[:, :, None, None]
        return out

    def _combine(self, index, heads_out, mask):
        layer = self.layers[index]
        B, H, T, d = heads_out.shape
        out = (heads_out * mask[:, :, None, None]).transpose(1, 2).reshape(B, T, H * d) @ layer["out_weight"].T
        return out + layer["out_bias"] if layer["out_bias"] is not None else out

    def _readout(self, h):
        return h.mean(dim=1) @ self.readout_weights

    def value_norms(self) -> np.ndarray:
        """``[L, H]``: the Frobenius norm of each head's slice of the value projection (NaN where a layer has
        fewer heads)."""
        L, H = self.num_layers, max(self.heads)
        norms = np.full((L, H), np.nan)
        for l, layer in enumerate(self.layers):
            d = self.width // layer["num_heads"]
            W_v = layer["in_weight"][2 * self.width :]
            for h in range(layer["num_heads"]):
                block = slice(h * d, (h + 1) * d)
                norms[l, h] = float(torch.linalg.matrix_norm(layer["out_weight"][:, block] @ W_v[block]))
        return norms

    def _head_maps(self, index):
        layer = self.layers[index]
        if layer["in_bias"] is not None or layer["out_bias"] is not None:
            raise ValueError(f"the model's layer {index} has biases: its output is not a sum over attention paths")
        d = self.width // layer["num_heads"]
        W_v = layer["in_weight"][2 * self.width :]
        return [
            layer["out_weight"][:, h * d : (h + 1) * d] @ W_v[h * d : (h + 1) * d] for h in range(layer["num_heads"])
        ]

    def _embed_matrix(self):
        return self.embed

    def _readout_vector(self):
        return self.readout_weights


def head_model(model) -> FrozenHeadModel:
    """The frozen float64 :class:`HeadModel` of a trained ``model`` of the package's architectures
    (:class:`~attnpaths.transformer.SumHeadTransformer` or :class:`~attnpaths.attention_stack.MultiheadAttentionStack`);
    a :class:`FrozenHeadModel` is returned as it is. Another model of your own needs no conversion: give it the
    methods of :class:`HeadModel`."""
    if isinstance(model, FrozenHeadModel):
        return model
    if isinstance(model, SumHeadTransformer):
        return SumHeadModel(model)
    if isinstance(model, MultiheadAttentionStack):
        return MultiheadStackModel(model)
    raise ValueError(
        f"model must be a SumHeadTransformer, a MultiheadAttentionStack or a FrozenHeadModel, got "
        f"{type(model).__name__} (a model of your own is used through its attention_weights and "
        "masked_output methods, the HeadModel protocol, without this conversion)"
    )


def attention_error(model, x, view: FrozenHeadModel | None = None) -> float:
    """Largest absolute difference between the attention of a frozen view (default :func:`head_model`
    ``(model)``) and the model's own,
    in float64 (a copy of the model): ``SumHeadTransformer.attention_matrices``, or the per-head weights that
    each ``torch.nn.MultiheadAttention`` layer returns with ``need_weights=True, average_attn_weights=False``
    (each layer fed the module's own output of the layer before).

    Args:
        model: a :class:`~attnpaths.transformer.SumHeadTransformer` or
            :class:`~attnpaths.attention_stack.MultiheadAttentionStack`; x: ``[B, N0, T]``.
        view: the view to check (e.g. one taken before the model's weights changed).
    """
    view = head_model(model) if view is None else view
    x = view._input(x)
    reference = copy.deepcopy(model).to(device="cpu", dtype=torch.float64).eval()
    with torch.no_grad():
        ours = view.layer_attention(x)
        if isinstance(reference, SumHeadTransformer):
            theirs = list(reference.attention_matrices(x).unbind(dim=1))
        else:
            h, theirs = reference.embed(x.transpose(1, 2)), []
            for layer in reference.layers:
                h, weights = layer(h, h, h, need_weights=True, average_attn_weights=False)
                theirs.append(weights.transpose(-1, -2))  # [B, H, T_query, T_key] -> (key, query)
    return max(float((a - b).abs().max()) for a, b in zip(ours, theirs))
