"""Masks that prune a trained model's heads, and the model's accuracy under them (sec-oneshot-pruning,
sec-pruning-curves).

* :func:`pruning_mask`: the head mask ``[L, max(H)]`` that prunes a set of heads (0 for a pruned head, 1 or the
  layer's rescaling for a kept one);
* :class:`HeadMaskEvaluator`: a trained model's accuracy on fixed examples with a set of heads pruned, for any
  model with ``masked_output(tokens, mask)`` (the :class:`attnpaths.head_models.HeadModel` protocol); an output of
  exactly 0 counts as chance (half right).
"""

from __future__ import annotations

import numpy as np
import torch

from ._validation import as_float64_tensor
from .head_models import HeadModel, layered_model, model_heads


def pruning_mask(heads, pruned=(), *, rescale: bool = False) -> torch.Tensor:
    """The head mask ``[L, max(H)]`` that prunes the heads ``pruned`` (0-based ``(layer, head)`` pairs).

    Pruned heads get 0 and kept heads 1; with ``rescale``, the kept heads of a layer with ``n`` of its ``H_l``
    heads pruned get ``sqrt(H_l / (H_l - n))``, which turns the ``H_l^{-1/2}`` head sum of
    :class:`~attnpaths.transformer.SumHeadTransformer` into its ``drop_heads`` rescaling by
    ``(H_l - n)^{-1/2}`` (sec-oneshot-pruning). Entries beyond a layer's heads are 0.
    """
    heads = tuple(int(h) for h in heads)
    mask = torch.zeros(len(heads), max(heads), dtype=torch.float64)
    for l, H in enumerate(heads):
        mask[l, :H] = 1.0
    for pair in pruned:
        try:
            l, h = (int(v) for v in pair)
        except (TypeError, ValueError) as err:
            raise ValueError(f"pruned must hold (layer, head) pairs, got {pair!r}") from err
        if not (0 <= l < len(heads) and 0 <= h < heads[l]):
            raise ValueError(f"pruned must hold 0-based (layer, head) pairs within heads={heads}, got {pair!r}")
        mask[l, h] = 0.0
    if rescale:
        kept = mask.sum(dim=1)
        if (kept == 0).any():
            raise ValueError(f"pruned must leave at least one head in every layer to rescale, got {list(pruned)!r}")
        mask = mask * torch.sqrt(torch.tensor(heads, dtype=torch.float64) / kept)[:, None]
    return mask


class HeadMaskEvaluator:
    """Accuracy of a trained model on fixed examples with a set of heads pruned, memoised by the set
    (sec-oneshot-pruning, sec-pruning-curves).

    Pruning head ``(l, h)`` multiplies its output by 0, without retraining; with ``rescale``, the kept heads of a
    layer with ``n`` of its ``H_l`` heads pruned are multiplied by ``sqrt(H_l / (H_l - n))``
    (:func:`~attnpaths.head_masks.pruning_mask`), which turns the ``H^{-1/2}`` head sum of
    :class:`~attnpaths.transformer.SumHeadTransformer` into its ``drop_heads`` pruning. An example counts 1 when
    ``sign(f) == y``, 0 when the signs differ and 1/2 when ``f`` is exactly 0 (a model with every head of a layer
    pruned outputs 0, or its bias, for every example: it guesses, at chance); the accuracy is the mean.

    Any :class:`~attnpaths.head_models.HeadModel` is evaluated through ``masked_output(tokens, mask)``, one call per
    set, with ``tokens`` as given (their dtype and device) and the mask in their floating dtype and on their
    device. A :class:`~attnpaths.head_models.LayeredHeadModel` (the package's architectures, through their frozen
    float64 copy) runs layer by layer instead, keeping every earlier layer's input for each set of heads pruned before
    it (the last layer is reduced to its head terms at once, on its pooled heads);
    the output depends linearly on the last layer's head mask
    (:meth:`~attnpaths.head_models.LayeredHeadModel.head_terms`), so every pruning of the last layer is a dot
    product.

    Args:
        model: the trained model.
        tokens: ``[B, T, D]`` the examples (PyTorch's layout).
        targets: ``[B]`` their labels, ``+-1``.
        rescale: whether the kept heads of a pruned layer are rescaled (see above).

    Attributes: ``heads`` ``(H_1, ..., H_L)``; ``num_examples`` ``B``; ``targets`` float64 ``[B]``.
    """

    def __init__(self, model, tokens, targets, *, rescale: bool = False):
        tokens = tokens if isinstance(tokens, torch.Tensor) else torch.as_tensor(np.asarray(tokens))
        if tokens.ndim != 3:
            raise ValueError(f"tokens must have shape [B, T, D] (batch, token, feature), got {tuple(tokens.shape)}")
        self.targets = as_float64_tensor(targets, "targets", labels=True).numpy()
        if self.targets.shape != (tokens.shape[0],):
            raise ValueError(f"targets must have shape [B] = [{tokens.shape[0]}], got {self.targets.shape}")
        if not np.isin(self.targets, (-1.0, 1.0)).all():
            raise ValueError(
                "targets must be +-1 (the accuracy compares them with the sign of the output), got the "
                f"values {np.unique(self.targets)[:5].tolist()}"
            )
        self.rescale = bool(rescale)
        self.num_examples = int(tokens.shape[0])
        self._cache: dict[frozenset, float] = {}
        self._terms: dict = {}
        layered = layered_model(model)
        if layered is not None:
            self.model = layered
            self.tokens = layered.check_tokens(tokens)
            self.heads = tuple(int(h) for h in layered.heads)
            with torch.no_grad():
                self._inputs: dict = {(0, frozenset()): layered.embed_tokens(self.tokens)}  # (layer, before) -> input
            self._heads_out: dict = {}
            self._attention: dict = {}
            self._outputs = self._layered_outputs
        elif isinstance(model, HeadModel):
            self.model, self.tokens = model, tokens
            self.heads = model_heads(model, tokens)
            self._outputs = self._masked_outputs
        else:
            raise ValueError(
                f"model must have the methods attention_weights(tokens) and masked_output(tokens, mask) "
                f"(attnpaths.head_models.HeadModel), got {type(model).__name__}"
            )

    def mask(self, pruned=()) -> torch.Tensor:
        """The head mask ``[L, max(H)]`` (float64) that prunes ``pruned`` (0-based ``(layer, head)`` pairs)."""
        return pruning_mask(self.heads, pruned, rescale=self.rescale)

    def _masked_outputs(self, pruned) -> np.ndarray:
        dtype = self.tokens.dtype if self.tokens.is_floating_point() else torch.float64
        with torch.no_grad():
            out = self.model.masked_output(self.tokens, self.mask(pruned).to(dtype=dtype, device=self.tokens.device))
        out = torch.as_tensor(out).detach().cpu().double().numpy()
        if out.shape != (self.num_examples,):
            raise ValueError(
                f"model.masked_output must return one output per example, shape [{self.num_examples}], got {out.shape}"
            )
        return out

    def _layer_attention(self, layer: int, before: frozenset, h, *, keep: bool) -> torch.Tensor:
        """Layer ``layer``'s attention for its input ``h`` (with the heads ``before`` pruned), stored when ``keep``
        or when it depends on the tokens only (then one for every set)."""
        key = layer if self.model.attention_from_input else (layer, before)
        attention = self._attention.get(key)
        if attention is None:
            attention = self.model.layer_attention(layer, h, self.tokens)
            if keep or self.model.attention_from_input:
                self._attention[key] = attention
        return attention

    def _layer_heads(self, layer: int, before: frozenset) -> torch.Tensor:
        """The heads' outputs of an earlier layer ``layer`` with the heads ``before`` (in earlier layers) pruned,
        stored for every later set."""
        if (layer, before) not in self._heads_out:
            h = self._layer_input(layer, before)
            attention = self._layer_attention(layer, before, h, keep=True)
            self._heads_out[(layer, before)] = self.model.layer_heads(layer, h, attention)
        return self._heads_out[(layer, before)]

    def _layer_input(self, layer: int, before: frozenset, *, keep: bool = True) -> torch.Tensor:
        """The input of ``layer`` with the heads ``before`` (in earlier layers) pruned, stored when ``keep``."""
        if (layer, before) in self._inputs:
            return self._inputs[(layer, before)]
        earlier = frozenset(lh for lh in before if lh[0] < layer - 1)
        mask = self.mask(before)[layer - 1, : self.heads[layer - 1]][None]
        heads_out = self._layer_heads(layer - 1, earlier)
        layer_input = self.model.combine_heads(layer - 1, heads_out, mask)
        if keep:
            self._inputs[(layer, before)] = layer_input
        return layer_input

    def _layered_outputs(self, pruned) -> np.ndarray:
        mask = self.mask(pruned)
        last = len(self.heads) - 1
        before = frozenset((int(l), int(h)) for l, h in pruned if int(l) < last)
        if before not in self._terms:
            # the last layer is read through its head terms only: its heads on the attention averaged over queries
            # (a token-wise linear map before the mean pooling: T times fewer products), nothing of it stored
            with torch.no_grad():
                h = self._layer_input(last, before, keep=False)
                attention = self._layer_attention(last, before, h, keep=False)
                terms, offset = self.model.head_terms(self.model.pooled_heads(last, h, attention))
            self._terms[before] = (terms.numpy(), offset.numpy())
        terms, offset = self._terms[before]
        return terms @ mask[last, : self.heads[last]].numpy() + offset

    def outputs(self, pruned=()) -> np.ndarray:
        """Model outputs ``[B]`` (float64) with the ``(layer, head)`` pairs ``pruned`` (0-based) pruned."""
        return self._outputs([(int(l), int(h)) for l, h in pruned])

    def correct(self, pruned=()) -> np.ndarray:
        """Each example's score ``[B]`` with ``pruned`` pruned: 1 where ``sign(f) == y``, 0 where the signs
        differ, 1/2 where ``f`` is exactly 0 (chance)."""
        f = self.outputs(pruned)
        return np.where(f == 0, 0.5, (np.sign(f) == self.targets).astype(np.float64))

    def __call__(self, pruned=()) -> float:
        """The accuracy after pruning the ``(layer, head)`` pairs ``pruned``: the mean of :meth:`correct`."""
        key = frozenset((int(l), int(h)) for l, h in pruned)
        if key not in self._cache:
            self._cache[key] = float(np.mean(self.correct(sorted(key))))
        return self._cache[key]
