"""Head rankings of a trained model that practitioners use, beside the theory's head score (sec-pruning-rankings).

The theory's ranking is :func:`attnpaths.frozen_attention.rank_heads` (the frozen attention's path features, the action minimised at
a width and temperature, and every head scored by the order parameter ``U`` it touches, eq-head-score). The
baselines here:

* :func:`gradient_head_importance`: the expected absolute gradient of the loss with respect to a head-mask
  variable, normalised per layer (Michel, Levy and Neubig 2019; eq-michel-importance);
* :func:`attention_entropy`: the mean entropy of each head's attention over keys (eq-attention-entropy);
* :func:`value_norms`: the norm of each head's value map (eq-value-norm).

Every function takes the trained model itself (:class:`attnpaths.transformer.SumHeadTransformer` or
:class:`attnpaths.attention_stack.MultiheadAttentionStack`) or its :class:`~attnpaths.head_models.FrozenHeadModel`,
with inputs in the package's layout ``x`` ``[B, N0, T]``, and works in float64 on the CPU.
:func:`attnpaths.head_scoring.pruning_order` turns scores into the order in which heads are pruned.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import as_float64_tensor, positive_int
from ..head_models import head_model
from ..paths import all_paths
from .masked_outputs import path_outputs


class GateGradients:
    """Each example's gradient of the training loss ``(f(x^mu) - y^mu)^2`` with respect to the head gates
    ``xi_{l,h}`` (eq-michel-importance), at any mask, for one model and one data set.

    A model whose output is multilinear in its gates (:attr:`~attnpaths.head_models.FrozenHeadModel.multilinear_in_mask`: the
    summed-head model) is run once, path by path (:func:`~.masked_outputs.path_outputs`); the gradients at every mask
    are then sums over the paths, ``d f / d xi_{l,h} = sum_{pi: pi_l = h} c_pi prod_{l' != l} xi_{l', pi_l'}``.
    Any other model takes one backward pass per mask and batch.

    Args:
        model: a trained model or its :class:`~attnpaths.head_models.FrozenHeadModel`; x: ``[P, N0, T]``; y: ``[P]``.
        batch_size: examples per forward (and backward) pass (memory only).

    Calling it with a mask ``[L, H]`` (default: every head kept) returns float64 ``[P, L, max(H)]`` (0 beyond a
    layer's heads).
    """

    def __init__(self, model, x, y, *, batch_size: int = 512):
        self.view = head_model(model)
        self.x = as_float64_tensor(x, "x")
        self.y = as_float64_tensor(y, "y", labels=True)
        if self.y.shape != self.x.shape[:1]:
            raise ValueError(f"y must have shape [P] = [{self.x.shape[0]}], got {tuple(self.y.shape)}")
        self.batch_size = positive_int(batch_size, "batch_size")
        self._paths = None
        if self.view.multilinear_in_mask:
            chunks = [
                path_outputs(self.view, self.x[start : start + self.batch_size])
                for start in range(0, self.x.shape[0], self.batch_size)
            ]
            self._paths = torch.cat(chunks) if chunks else torch.zeros(0, self.view.num_paths, dtype=torch.float64)
            self._path_heads = torch.as_tensor(all_paths(self.view.heads))  # [n_paths, L]

    def mask(self, mask=None) -> torch.Tensor:
        """``mask`` as float64 ``[L, max(H)]`` (``None``: every head kept)."""
        L, H = self.view.num_layers, max(self.view.heads)
        return torch.ones(L, H, dtype=torch.float64) if mask is None else self.view._mask(mask, 1)[0].detach()

    def __call__(self, mask=None) -> torch.Tensor:
        at = self.mask(mask)
        L, H = at.shape
        if self._paths is not None:
            gates = at[torch.arange(L), self._path_heads]  # [n_paths, L]: each path's gate in each layer
            error = self._paths @ gates.prod(dim=1) - self.y  # f - y
            gradient = torch.zeros(self.x.shape[0], L, H, dtype=torch.float64)
            for l in range(L):
                others = torch.cat([gates[:, :l], gates[:, l + 1 :]], dim=1).prod(dim=1)  # [n_paths]
                through = torch.nn.functional.one_hot(self._path_heads[:, l], H).to(torch.float64)  # [n_paths, H]
                gradient[:, l] = (self._paths * others) @ through
            return 2.0 * error[:, None, None] * gradient
        rows = []
        for start in range(0, self.x.shape[0], self.batch_size):
            xb, yb = self.x[start : start + self.batch_size], self.y[start : start + self.batch_size]
            gates = at.expand(xb.shape[0], L, H).clone().requires_grad_(True)
            loss = ((self.view.outputs(xb, gates) - yb) ** 2).sum()  # sum of per-example losses: per-example gradients
            rows.append(torch.autograd.grad(loss, gates)[0])
        return torch.cat(rows) if rows else torch.zeros(0, L, H, dtype=torch.float64)

    def importance(self, mask=None, *, normalize: bool = True) -> np.ndarray:
        """:func:`gradient_head_importance` at ``mask``."""
        at = self.mask(mask)
        importance = (self(at).abs().sum(dim=0) / self.x.shape[0]).numpy()
        importance = _beyond_heads_nan(importance, self.view.heads)
        importance[at.numpy() == 0] = np.nan
        if normalize:
            norms = np.sqrt(np.nansum(importance**2, axis=1, keepdims=True))
            importance = importance / np.where(norms > 0, norms, 1.0)
        return importance


def gradient_head_importance(model, x, y, *, normalize: bool = True, mask=None, batch_size: int = 512) -> np.ndarray:
    """Michel, Levy and Neubig (2019)'s head importance (eq-michel-importance).

    Each head's output is multiplied by a mask variable ``xi_{l,h}`` (1 in the trained model); the importance
    is the mean over examples of ``|d loss(x^mu) / d xi_{l,h}|`` at ``xi = 1``, with the model's training loss
    ``(f(x^mu) - y^mu)^2``, and, when ``normalize``, divided by its Euclidean norm over the heads of the layer.

    Args:
        model: a trained model or its :class:`~attnpaths.head_models.FrozenHeadModel`.
        x: ``[P, N0, T]``; y: ``[P]``.
        mask: ``[L, H]`` the mask at which the gradient is taken (default: every head kept); heads with mask
            0 (already pruned) get ``nan`` and are left out of their layer's normalisation.
        batch_size: examples per backward pass (memory only).

    Returns:
        float64 ``[L, max(H)]`` (``nan`` beyond a layer's heads).
    """
    return GateGradients(model, x, y, batch_size=batch_size).importance(mask, normalize=normalize)


def attention_entropy(model, x) -> np.ndarray:
    """Mean entropy (nats) of each head's attention over keys, over examples and queries
    (eq-attention-entropy): ``-<sum_s Omega_{s t} log Omega_{s t}>``. Uniform attention over ``T`` tokens has
    entropy ``log T``, attention on one token 0.

    Args:
        model: a trained model or its :class:`~attnpaths.head_models.FrozenHeadModel`; x: ``[B, N0, T]``.

    Returns:
        float64 ``[L, max(H)]`` (``nan`` beyond a layer's heads).
    """
    view = head_model(model)
    with torch.no_grad():
        matrices = view.layer_attention(x)
    out = np.full((view.num_layers, max(view.heads)), np.nan)
    for l, omega in enumerate(matrices):
        entropy = -torch.special.xlogy(omega, omega).sum(dim=-2)  # [B, H, T_query]
        out[l, : omega.shape[1]] = entropy.mean(dim=(0, 2)).numpy()
    return out


def value_norms(model) -> np.ndarray:
    """Frobenius norm of each head's value map into the next layer (eq-value-norm): ``|V^(l,h)|`` for the
    summed-head model, ``|W_o^h W_v^h|`` for a ``MultiheadAttention`` layer.

    Returns:
        float64 ``[L, max(H)]``.
    """
    return np.asarray(head_model(model).value_norms(), dtype=np.float64)


def _beyond_heads_nan(values: np.ndarray, heads) -> np.ndarray:
    values = values.copy()
    for l, H in enumerate(heads):
        values[l, H:] = np.nan
    return values


__all__ = ["GateGradients", "attention_entropy", "gradient_head_importance", "value_norms"]
