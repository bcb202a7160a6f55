"""A plain stack of ``torch.nn.MultiheadAttention`` layers, the practitioners' attention layer (sec-pruning-models).

    h^(0)_t = E x_t                                   E in R^{D x N0}  (token embedding, no bias)
    h^(l)   = MultiheadAttention_l(h^(l-1), h^(l-1), h^(l-1))          l = 1..L (self-attention, no residual)
    f(x)    = a . mean_t h^(L)_t                       a in R^D  (mean pooling, linear readout, no bias)

Inside layer ``l`` the module computes, for each of its ``H`` heads of size ``d = D / H``, queries
``W_q^h h + b_q^h``, keys ``W_k^h h + b_k^h`` and values ``W_v^h h + b_v^h`` from the layer's *input*, the
attention ``softmax_s(q_t . k_s / sqrt(d))``, and maps the concatenated head outputs through ``W_o`` (plus
``b_o``). Unlike the theory's network (sec-model-network) and :class:`attnpaths.transformer.SumHeadTransformer`,
the attention of layer 2 is computed from the output of layer 1, not from the raw input. There are no residual
connections, normalisation layers or MLP blocks, so that with ``bias=False`` the output is a sum over attention
paths of linear maps of the raw input (eq-path-form), as in the theory.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ._validation import positive_ints, torch_generator
from .head_models import FrozenHeadMethods, FrozenHeadModel


def _fill_uniform(parameter: torch.Tensor, bound: float, generator: torch.Generator) -> None:
    """Overwrite ``parameter`` with ``U(-bound, bound)`` draws from ``generator`` (in float64, then cast)."""
    values = (torch.rand(parameter.shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    with torch.no_grad():
        parameter.copy_(values.to(parameter.dtype))


class MultiheadAttentionStack(FrozenHeadMethods, nn.Module):
    """``L`` ``torch.nn.MultiheadAttention`` layers of ``H`` heads between a linear token embedding and a
    mean-pooled linear readout (sec-pruning-models).

    Args:
        input_width: ``N0``, features per input token.
        width: ``D``, the embedding width (a multiple of ``num_heads``).
        num_heads: ``H``, heads per layer (head size ``D / H``).
        num_layers: ``L``.
        bias: biases of the attention layers' query/key/value and output projections (the embedding and the
            readout have none).
        generator: source of the initial weights: PyTorch's default initialisation laws (Xavier-uniform
            query/key/value projections, ``U(+-1/sqrt(fan_in))`` linear maps, zero biases), drawn from this
            CPU generator, so that a seed gives the same weights whatever the global random state.
        dtype: parameter dtype.

    Modules: ``embed`` (``Linear(N0, D)``), ``layers`` (``ModuleList`` of ``MultiheadAttention(D, H,
    batch_first=True)``), ``readout`` (``Linear(D, 1)``).
    """

    def __init__(
        self,
        input_width: int,
        width: int = 32,
        num_heads: int = 4,
        num_layers: int = 2,
        *,
        bias: bool = False,
        generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ):
        super().__init__()
        sizes = positive_ints(input_width=input_width, width=width, num_heads=num_heads, num_layers=num_layers)
        if width % num_heads:
            raise ValueError(f"width must be a multiple of num_heads = {num_heads}, got {width}")
        torch_generator(generator, "generator", cpu=True)
        self.hyperparameters = {**sizes, "bias": bool(bias)}
        # the modules' own initialisation draws from the global generator: fork it so that the global state is
        # left as it was, then overwrite every weight from ``generator``
        with torch.random.fork_rng(devices=[]):
            self.embed = nn.Linear(input_width, width, bias=False, dtype=dtype)
            self.layers = nn.ModuleList(
                nn.MultiheadAttention(width, num_heads, bias=bias, batch_first=True, dtype=dtype)
                for _ in range(num_layers)
            )
            self.readout = nn.Linear(width, 1, bias=False, dtype=dtype)
        _fill_uniform(self.embed.weight, 1 / math.sqrt(input_width), generator)
        for layer in self.layers:
            _fill_uniform(layer.in_proj_weight, math.sqrt(6 / (width + 3 * width)), generator)
            _fill_uniform(layer.out_proj.weight, 1 / math.sqrt(width), generator)
            if bias:
                with torch.no_grad():
                    layer.in_proj_bias.zero_()
                    layer.out_proj.bias.zero_()
        _fill_uniform(self.readout.weight, 1 / math.sqrt(width), generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs ``f(x)``.

        Args:
            x: ``[B, N0, T]`` input tokens (the package's convention, ``attnpaths.attention``), moved to the
                weights' device and dtype.

        Returns:
            ``[B]``.
        """
        weight = self.readout.weight
        h = self.embed(x.to(device=weight.device, dtype=weight.dtype).transpose(1, 2))  # [B, T, D]
        for layer in self.layers:
            h = layer(h, h, h, need_weights=False)[0]
        return self.readout(h.mean(dim=1)).squeeze(-1)

    def attention_matrices(self, x: torch.Tensor) -> torch.Tensor:
        """Each layer's per-head attention as the module computes it (``need_weights=True,
        average_attn_weights=False``, each layer fed the module's own output of the layer before), in the
        package's convention ``Omega[b, l, h, s, t]`` (key ``s``, query ``t``), like
        :meth:`attnpaths.transformer.SumHeadTransformer.attention_matrices`.

        Args:
            x: ``[B, N0, T]``, moved to the weights' device and dtype.

        Returns:
            ``[B, L, H, T, T]``.
        """
        weight = self.readout.weight
        h, out = self.embed(x.to(device=weight.device, dtype=weight.dtype).transpose(1, 2)), []
        for layer in self.layers:
            h, weights = layer(h, h, h, need_weights=True, average_attn_weights=False)
            out.append(weights.transpose(-1, -2))  # [B, H, T_query, T_key] -> (key, query)
        return torch.stack(out, dim=1)

    # the HeadModel protocol (attnpaths.head_models.FrozenHeadMethods), on a float64 copy of the weights; value_norms
    # is that of W_o^h W_v^h, head h's map into the next layer
    def frozen_heads(self) -> MultiheadStackModel:
        """The model's weights frozen in float64 (:class:`MultiheadStackModel`), the
        :class:`~attnpaths.head_models.HeadModel` and :class:`~attnpaths.head_models.LayeredHeadModel` that
        :func:`attnpaths.head_models.head_model` returns."""
        return MultiheadStackModel(self)


def _f64(tensor):
    """A detached float64 CPU copy of ``tensor`` (``None`` stays ``None``)."""
    return None if tensor is None else tensor.detach().cpu().double()


class MultiheadStackModel(FrozenHeadModel):
    """:class:`MultiheadAttentionStack` in float64 (sec-pruning-models): each layer recomputes what
    ``torch.nn.MultiheadAttention`` computes (eval mode, self-attention, no attention mask), from the layer's packed
    input projection ``in_proj_weight`` (queries, keys, values, in that order, each split into ``H`` heads of
    ``d = D / H`` rows), its biases and its output projection:
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

    def combine_heads(self, index, heads_out, mask):
        """Layer ``index``'s output ``[B, T, D]``: the heads' outputs ``[B, H, T, d]``, head ``h``'s times
        ``mask[:, h]``, concatenated and mapped by the output projection (its bias added)."""
        layer = self.layers[index]
        B, H, T, d = heads_out.shape
        out = (heads_out * mask[:, :, None, None]).transpose(1, 2).reshape(B, T, H * d) @ layer["out_weight"].T
        return out + layer["out_bias"] if layer["out_bias"] is not None else out

    def read_out(self, h):
        """The output ``[B]``: the last layer's output ``[B, T, D]`` averaged over tokens, then read out."""
        return h.mean(dim=1) @ self.readout_weights

    def value_norms(self):
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
