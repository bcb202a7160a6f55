"""Many head masks of a trained model evaluated at once (sec-pruning-exact, sec-pruning-rankings).

* :func:`subset_outputs`: the output with every set of heads pruned, layer by layer, sharing what the sets share;
* :func:`path_outputs`: the output of a model that is multilinear in its head masks split into its attention paths'
  contributions, from which any mask's output is a sum;
* :func:`gated_stack`: a copy of a ``MultiheadAttentionStack`` whose heads are scaled by a mask (the gate of
  eq-pruning-mha on the module itself).

They use the layer-by-layer internals of :class:`attnpaths.head_models.FrozenHeadModel`, in the package's layout
(inputs ``[B, N0, T]``).
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from ..attention_stack import MultiheadAttentionStack
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

    Layer by layer, each layer runs once per mask of the layers before it (an attention computed from the raw
    input only once); the output is linear in the last layer's mask (:meth:`~attnpaths.head_models.FrozenHeadModel.last_layer_terms`), so the
    last layer's ``2^H_L`` masks are a matrix product, and mean pooling follows it, so it runs on the attention
    averaged over queries (``FrozenHeadModel._pooled_heads``). A model whose output is multilinear in the masks
    (:attr:`~attnpaths.head_models.FrozenHeadModel.multilinear_in_mask`: attention from the raw input, no biases) runs once per attention
    path instead (:func:`path_outputs`), and every set of pruned heads sums the paths it keeps.

    Args:
        model: a trained model or its :class:`~attnpaths.head_models.FrozenHeadModel`; x: ``[B, N0, T]``.

    Returns:
        float64 ``[2^n, B]``.
    """
    view = head_model(model)
    x = view._input(x)
    B, last = x.shape[0], view.num_layers - 1
    with torch.no_grad():
        if view.multilinear_in_mask:
            # out[m_L, ..., m_1, b] = sum_pi prod_l kept_l[m_l, pi_l] c_pi(x_b): one layer's masks at a time
            out = path_outputs(view, x).reshape(B, *view.heads)
            for index in range(view.num_layers):  # axes [m_l, ..., m_1, b, h_{l+1}, ..., h_L]
                out = torch.tensordot(_kept(view.heads[index]), out, dims=([1], [index + 1]))
            return out.reshape(-1, B)
        h = view._embed(x)[None]  # [V, B, ...]: one input per mask of the earlier layers
        for index in range(view.num_layers):
            V = h.shape[0]
            flat = h.reshape(V * B, *h.shape[2:])
            if view.attention_from_input:
                omega = view._attention(index, None, x)
                if index == last:
                    omega = omega.mean(dim=-1, keepdim=True)  # what _pooled_heads reads, before it is repeated
                omega = omega.expand(V, *omega.shape).reshape(V * B, *omega.shape[1:])
            else:
                omega = view._attention(index, flat, x.repeat(V, 1, 1))
            if index == last:
                terms, offset = view._last_terms(view._pooled_heads(index, flat, omega))  # [V B, H_L], [V B]
                out = torch.einsum("vbh,mh->mvb", terms.reshape(V, B, -1), _kept(view.heads[index]))
                return (out + offset.reshape(V, B)[None]).reshape(-1, B)
            heads_out = view._heads(index, flat, omega)
            masks = _kept(view.heads[index])  # new variant m * V + v: this layer's bits above the earlier ones
            h = torch.stack(
                [
                    view._combine(index, heads_out, mask[None].expand(V * B, -1)).reshape(V, B, *h.shape[2:])
                    for mask in masks
                ]
            ).reshape(len(masks) * V, B, *h.shape[2:])


def path_outputs(model, x) -> torch.Tensor:
    """Each attention path's contribution to the output of a model whose output is multilinear in its head masks
    (:attr:`~attnpaths.head_models.FrozenHeadModel.multilinear_in_mask`): ``c[b, pi]`` with ``outputs(x, mask)[b] = sum_pi c[b, pi]
    prod_l mask[l, pi_l]`` for every mask, paths in flat order (``h_1`` slowest).

    Each layer runs once per path through the layers before it, on the input that path alone gives it; the last
    layer on the attention averaged over queries (``FrozenHeadModel._pooled_heads``).

    Args:
        model: such a model or its :class:`~attnpaths.head_models.FrozenHeadModel`; x: ``[B, N0, T]``.

    Returns:
        float64 ``[B, n_paths]``.
    """
    view = head_model(model)
    if not view.multilinear_in_mask:
        raise ValueError(
            f"the output of a {type(view).__name__} is not multilinear in its head masks (its attention "
            "reads the masked layers, or it has biases)"
        )
    x = view._input(x)
    last = view.num_layers - 1
    with torch.no_grad():
        inputs = [view._embed(x)]  # one per path through the layers so far, in flat order
        for index in range(view.num_layers):
            omega = view._attention(index, None, x)
            if index == last:
                return torch.cat([view._last_terms(view._pooled_heads(index, h, omega))[0] for h in inputs], dim=1)
            units = torch.eye(view.heads[index], dtype=torch.float64)
            inputs = [
                view._combine(index, heads_out, unit[None])
                for heads_out in (view._heads(index, h, omega) for h in inputs)
                for unit in units
            ]
