"""Many head masks of a trained model evaluated at once (sec-pruning-exact, sec-pruning-rankings): every set of
pruned heads, every attention path's contribution, and a ``MultiheadAttentionStack`` gated per head
(eq-pruning-mha). They run a :class:`attnpaths.head_models.LayeredHeadModel` one layer at a time.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from .._validation import as_float64_tensor
from ..attention_stack import MultiheadAttentionStack
from ..experiments.head_rankings import path_outputs
from ..head_models import head_model


def gated_stack(model: MultiheadAttentionStack, mask) -> MultiheadAttentionStack:
    """A copy of a ``MultiheadAttentionStack`` whose head ``(l, h)`` is multiplied by ``mask[l, h]``: the column
    block of head ``h`` in ``layers[l].out_proj.weight`` is scaled (the module concatenates its heads before
    ``out_proj``, so no hook on a head exists; this is the gate ``xi_{l,h}`` of eq-pruning-mha).

    Args:
        model: the trained stack; mask: ``[L, H]``.
    """
    if not isinstance(model, MultiheadAttentionStack):
        raise ValueError(f"model must be a MultiheadAttentionStack, got {type(model).__name__}")
    mask = torch.as_tensor(mask, dtype=torch.float64)
    if mask.shape != (model.num_layers, model.num_heads):
        raise ValueError(f"mask must have shape [{model.num_layers}, {model.num_heads}], got {tuple(mask.shape)}")
    gated = copy.deepcopy(model)
    d = gated.hyperparameters["width"] // gated.num_heads
    with torch.no_grad():
        for l, layer in enumerate(gated.layers):
            scale = mask[l].repeat_interleave(d).to(layer.out_proj.weight)
            layer.out_proj.weight.mul_(scale[None, :])
    return gated


def _kept(num_heads: int) -> torch.Tensor:
    """``[2^H, H]`` head masks of one layer, mask ``m`` pruning the heads of the bits of ``m``."""
    m = np.arange(2**num_heads)[:, None] >> np.arange(num_heads)[None, :]
    return torch.from_numpy((m & 1 == 0).astype(np.float64))


def subset_outputs(model, x) -> torch.Tensor:
    """The model's output with every set of heads pruned, in the order of the subset table
    (:func:`attnpaths.experiments.head_subsets.subset_masks`: bit ``i`` prunes head ``i``, layer-major).

    Each layer runs once per mask of the layers before it, and the last layer's masks are one matrix product (the
    output is linear in them); a model whose output is multilinear in the masks
    (:attr:`~attnpaths.head_models.LayeredHeadModel.multilinear_in_mask`) runs once per attention path instead
    (:func:`attnpaths.experiments.head_rankings.path_outputs`), and every set of pruned heads sums the paths it keeps.

    Args:
        model: a trained model of the package or a :class:`~attnpaths.head_models.LayeredHeadModel`;
            x: ``[B, N0, T]`` (``tokens.transpose(1, 2)``).

    Returns:
        float64 ``[2^n, B]``.
    """
    view = head_model(model)
    tokens = view.check_tokens(as_float64_tensor(x, "x").transpose(1, 2))
    B, last = tokens.shape[0], len(view.heads) - 1
    with torch.no_grad():
        if view.multilinear_in_mask:
            # out[m_L, ..., m_1, b] = sum_pi prod_l kept_l[m_l, pi_l] c_pi(x_b): one layer's masks at a time
            out = path_outputs(view, tokens.transpose(1, 2)).reshape(B, *view.heads)
            for index in range(len(view.heads)):  # axes [m_l, ..., m_1, b, h_{l+1}, ..., h_L]
                out = torch.tensordot(_kept(view.heads[index]), out, dims=([1], [index + 1]))
            return out.reshape(-1, B)
        h = view.embed_tokens(tokens)[None]  # [V, B, ...]: one input per mask of the earlier layers
        for index in range(len(view.heads)):
            V = h.shape[0]
            flat = h.reshape(V * B, *h.shape[2:])
            if view.attention_from_input:
                attention = view.layer_attention(index, None, tokens)
                if index == last:  # what pooled_heads reads, before it is repeated
                    attention = attention.mean(dim=-2, keepdim=True)
                attention = attention.expand(V, *attention.shape).reshape(V * B, *attention.shape[1:])
            else:
                attention = view.layer_attention(index, flat, tokens.repeat(V, 1, 1))
            if index == last:
                terms, offset = view.head_terms(view.pooled_heads(index, flat, attention))  # [V B, H_L], [V B]
                out = torch.einsum("vbh,mh->mvb", terms.reshape(V, B, -1), _kept(view.heads[index]))
                return (out + offset.reshape(V, B)[None]).reshape(-1, B)
            heads_out = view.layer_heads(index, flat, attention)
            masks = _kept(view.heads[index])  # new variant m * V + v: this layer's bits above the earlier ones
            h = torch.stack(
                [
                    view.combine_heads(index, heads_out, mask[None].expand(V * B, -1)).reshape(V, B, *h.shape[2:])
                    for mask in masks
                ]
            ).reshape(len(masks) * V, B, *h.shape[2:])
