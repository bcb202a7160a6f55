"""Head rankings of a trained model that practitioners use, beside the theory's head score (sec-pruning-rankings).

The gradient importance of Michel, Levy and Neubig (2019; eq-michel-importance), the attention entropy
(eq-attention-entropy) and the value-weight norm (eq-value-norm). Every function takes any model of the
:class:`attnpaths.head_models.HeadModel` protocol with tokens in PyTorch's layout ``[P, T, D]`` and targets
``[P]``; the package's trained architectures run through their frozen float64 copies
(:func:`attnpaths.head_models.head_model`). :func:`attnpaths.head_scoring.pruning_order` turns scores into the
order in which heads are pruned. :func:`path_outputs` splits the output of a model that is multilinear in its head
gates into its attention paths, so the gradients of every gate come from one forward pass.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import as_float64_tensor, positive_int
from ..head_models import HeadModel, check_mask, head_model, layered_model, model_heads
from ..paths import all_paths


def _head_model(model, tokens):
    """``(the model to call, its tokens, its heads)``: a :class:`~attnpaths.head_models.LayeredHeadModel` (the
    package's models through their frozen copies) with its checked tokens, else a
    :class:`~attnpaths.head_models.HeadModel` with the tokens as given."""
    layered = layered_model(model)
    if layered is not None:
        return layered, layered.check_tokens(tokens), tuple(int(h) for h in layered.heads)
    if not isinstance(model, HeadModel):
        raise TypeError(
            "model must have the methods attention_weights(tokens) and masked_output(tokens, mask) "
            f"(attnpaths.head_models.HeadModel), got {type(model).__name__}"
        )
    tokens = tokens if isinstance(tokens, torch.Tensor) else torch.as_tensor(np.asarray(tokens))
    if tokens.ndim != 3:
        raise ValueError(f"tokens must have shape [P, T, D] (batch, token, feature), got {tuple(tokens.shape)}")
    return model, tokens, model_heads(model, tokens)


def path_outputs(model, x) -> torch.Tensor:
    """Each attention path's contribution to the output of a model whose output is multilinear in its head masks
    (:attr:`~attnpaths.head_models.LayeredHeadModel.multilinear_in_mask`): ``c[b, pi]`` with
    ``masked_output(tokens, mask)[b] = sum_pi c[b, pi] prod_l mask[l, pi_l]`` for every mask, paths in flat order
    (``h_1`` slowest).

    Each layer runs once per path through the layers before it, on the input that path alone gives it; the last
    layer on the attention averaged over queries (:meth:`~attnpaths.head_models.LayeredHeadModel.pooled_heads`).

    Args:
        model: such a model or its :class:`~attnpaths.head_models.LayeredHeadModel`; x: ``[B, N0, T]``
            (``tokens.transpose(1, 2)``).

    Returns:
        float64 ``[B, n_paths]``.
    """
    view = head_model(model)
    if not view.multilinear_in_mask:
        raise ValueError(
            f"the output of a {type(view).__name__} is not multilinear in its head masks (its attention "
            "reads the masked layers, or it has biases)"
        )
    tokens = view.check_tokens(as_float64_tensor(x, "x").transpose(1, 2))
    last = len(view.heads) - 1
    with torch.no_grad():
        inputs = [view.embed_tokens(tokens)]  # one per path through the layers so far, in flat order
        for index in range(len(view.heads)):
            attention = view.layer_attention(index, None, tokens)
            if index == last:
                return torch.cat([view.head_terms(view.pooled_heads(index, h, attention))[0] for h in inputs], dim=1)
            units = torch.eye(view.heads[index], dtype=torch.float64)
            inputs = [
                view.combine_heads(index, heads_out, unit[None])
                for heads_out in (view.layer_heads(index, h, attention) for h in inputs)
                for unit in units
            ]


class GateGradients:
    """Each example's gradient of the training loss ``(f(x^mu) - y^mu)^2`` with respect to the head gates
    ``xi_{l,h}`` (eq-michel-importance), at any mask, for one model and one data set.

    The gates are the head mask of ``model.masked_output(tokens, mask)``, given batched, ``[B, L, max(H)]``. A model
    whose output is multilinear in its gates (the summed-head model) is run once, path by path
    (:func:`path_outputs`), and the gradients at every mask are sums over the paths,
    ``d f / d xi_{l,h} = sum_{pi: pi_l = h} c_pi prod_{l' != l} xi_{l', pi_l'}``.

    Args:
        model: a :class:`~attnpaths.head_models.HeadModel` (or a trained model of the package);
            tokens: ``[P, T, D]``; targets: ``[P]``.
        batch_size: examples per forward (and backward) pass (memory only).

    Calling it with a mask ``[L, max(H)]`` (default: every head kept) returns float64 ``[P, L, max(H)]`` (0 beyond
    a layer's heads). Attribute ``heads``: ``(H_1, ..., H_L)``.
    """

    def __init__(self, model, tokens, targets, *, batch_size: int = 512):
        self.model, self.tokens, self.heads = _head_model(model, tokens)
        self.y = as_float64_tensor(targets, "targets", labels=True)
        if self.y.shape != self.tokens.shape[:1]:
            raise ValueError(f"targets must have shape [P] = [{self.tokens.shape[0]}], got {tuple(self.y.shape)}")
        self.batch_size = positive_int(batch_size, "batch_size")
        self._paths = None
        if getattr(self.model, "multilinear_in_mask", False):
            chunks = [
                path_outputs(self.model, self.tokens[start : start + self.batch_size].transpose(1, 2))
                for start in range(0, self.tokens.shape[0], self.batch_size)
            ]
            num_paths = int(np.prod(self.heads))
            self._paths = torch.cat(chunks) if chunks else torch.zeros(0, num_paths, dtype=torch.float64)
            self._path_heads = torch.as_tensor(all_paths(self.heads))  # [n_paths, L]

    def mask(self, mask=None) -> torch.Tensor:
        """``mask`` as float64 ``[L, max(H)]`` (``None``: every head kept)."""
        return check_mask(mask, self.heads, 1)[0].detach()

    def __call__(self, mask=None) -> torch.Tensor:
        at = self.mask(mask)
        L, H = at.shape
        if self._paths is not None:
            gates = at[torch.arange(L), self._path_heads]  # [n_paths, L]: each path's gate in each layer
            error = self._paths @ gates.prod(dim=1) - self.y  # f - y
            gradient = torch.zeros(self.tokens.shape[0], L, H, dtype=torch.float64)
            for l in range(L):
                others = torch.cat([gates[:, :l], gates[:, l + 1 :]], dim=1).prod(dim=1)  # [n_paths]
                through = torch.nn.functional.one_hot(self._path_heads[:, l], H).to(torch.float64)  # [n_paths, H]
                gradient[:, l] = (self._paths * others) @ through
            return 2.0 * error[:, None, None] * gradient
        floating = self.tokens.dtype if self.tokens.is_floating_point() else torch.float64
        rows = []
        for start in range(0, self.tokens.shape[0], self.batch_size):
            tb, yb = self.tokens[start : start + self.batch_size], self.y[start : start + self.batch_size]
            gates = at.expand(tb.shape[0], L, H).clone().requires_grad_(True)
            out = self.model.masked_output(tb, gates.to(dtype=floating, device=tb.device))
            out = torch.as_tensor(out).to(torch.float64)
            if out.shape != yb.shape:
                raise ValueError(f"model.masked_output must return one output per example, got {tuple(out.shape)}")
            loss = ((out - yb.to(out.device)) ** 2).sum()  # sum of per-example losses: per-example gradients
            rows.append(torch.autograd.grad(loss, gates)[0])
        return torch.cat(rows) if rows else torch.zeros(0, L, H, dtype=torch.float64)

    def importance(self, mask=None, *, normalize: bool = True) -> np.ndarray:
        """:func:`gradient_head_importance` at ``mask``."""
        at = self.mask(mask)
        importance = (self(at).abs().sum(dim=0) / self.tokens.shape[0]).numpy()
        # nan beyond a layer's heads and at the pruned ones
        importance[(np.arange(importance.shape[1]) >= np.array(self.heads)[:, None]) | (at.numpy() == 0)] = np.nan
        if normalize:
            norms = np.sqrt(np.nansum(importance**2, axis=1, keepdims=True))
            importance = importance / np.where(norms > 0, norms, 1.0)
        return importance


def gradient_head_importance(
    model, tokens, targets, *, normalize: bool = True, mask=None, batch_size: int = 512
) -> np.ndarray:
    """Michel, Levy and Neubig (2019)'s head importance (eq-michel-importance).

    Each head's output is multiplied by a mask variable ``xi_{l,h}`` (1 in the trained model); the importance
    is the mean over examples of ``|d loss(x^mu) / d xi_{l,h}|`` at ``xi = 1``, with the model's training loss
    ``(f(x^mu) - y^mu)^2``, and, when ``normalize``, divided by its Euclidean norm over the heads of the layer.

    Args:
        model, tokens, targets, batch_size: as for :class:`~attnpaths.experiments.head_rankings.GateGradients`
            (``masked_output`` differentiable in the batched mask ``[B, L, max(H)]``; tokens ``[P, T, D]``, targets
            ``[P]``).
        mask: ``[L, max(H)]`` the mask at which the gradient is taken (default: every head kept); heads with mask
            0 (already pruned) get ``nan`` and are left out of their layer's normalisation.

    Returns:
        float64 ``[L, max(H)]`` (``nan`` beyond a layer's heads).
    """
    return GateGradients(model, tokens, targets, batch_size=batch_size).importance(mask, normalize=normalize)


def attention_entropy(model, tokens) -> np.ndarray:
    """Mean entropy (nats) of each head's attention over keys, over examples and queries
    (eq-attention-entropy): ``-<sum_s Omega_{t s} log Omega_{t s}>`` from ``model.attention_weights(tokens)``.
    Uniform attention over ``T`` tokens has entropy ``log T``, attention on one token 0.

    Args:
        model: a :class:`~attnpaths.head_models.HeadModel` (or a trained model of the package); tokens: ``[B, T, D]``.

    Returns:
        float64 ``[L, max(H)]`` (``nan`` beyond a layer's heads).
    """
    model, tokens, heads = _head_model(model, tokens)
    with torch.no_grad():
        weights = model.attention_weights(tokens)  # [B, H, query, key] per layer
    out = np.full((len(heads), max(heads)), np.nan)
    for l, a in enumerate(weights):
        entropy = -torch.special.xlogy(a, a).sum(dim=-1)  # [B, H, T_query]
        out[l, : a.shape[1]] = entropy.mean(dim=(0, 2)).double().cpu().numpy()
    return out


def value_norms(model) -> np.ndarray:
    """Frobenius norm of each head's value map into the next layer (eq-value-norm): ``|V^(l,h)|`` for the
    summed-head model, ``|W_o^h W_v^h|`` for a ``MultiheadAttention`` layer, ``model.value_norms()`` for any
    model that exposes it (the optional method of :class:`~attnpaths.head_models.HeadModel`).

    Returns:
        float64 ``[L, max(H)]``.
    """
    norms = getattr(model, "value_norms", None)
    if not callable(norms):
        raise TypeError(
            "model must have a method value_norms() returning [L, max(H)] the norm of each head's value map "
            f"(the optional method of attnpaths.head_models.HeadModel), got {type(model).__name__}"
        )
    return np.asarray(norms(), dtype=np.float64)
