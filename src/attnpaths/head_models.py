"""A trained model's heads: the protocols the library calls, and the frozen float64 copies of the package's
architectures (sec-own-model, sec-pruning-models).

Every tensor here is in PyTorch's layout: tokens ``[B, T, D]`` (batch, token, feature) and attention
``[B, H, T_query, T_key]`` (what ``torch.nn.MultiheadAttention(..., need_weights=True,
average_attn_weights=False)`` returns), rows summing to one over the keys.

:class:`HeadModel` is what the library needs of any attention-only model:

* ``attention_weights(tokens)``: every layer's attention, a list of ``L`` tensors ``[B, H_l, T, T]``;
* ``masked_output(tokens, mask)``: the model's output ``[B]`` with head ``(l, h)``'s output multiplied by
  ``mask[l, h]`` (``mask`` ``[L, max(H)]``; 1 keeps a head, 0 prunes it; entries beyond a layer's heads are 0).
  The gradient rankings (:mod:`attnpaths.experiments.head_rankings`, eq-michel-importance) also pass a *batched* mask
  ``[B, L, max(H)]``, example ``b`` masked by ``mask[b]``, and differentiate the output with respect to it
  (each example's gradient in one backward pass): a model used with them accepts both shapes and keeps the
  mask's autograd graph. The library gives the mask in the tokens' floating dtype and on their device.
* optionally ``value_norms()``: ``[L, max(H)]`` the norm of each head's value map, for
  :func:`attnpaths.experiments.head_rankings.value_norms` (a model without it cannot be ranked by value norms).

Any object with these methods is a :class:`HeadModel` (a structural protocol: no base class to inherit).
:func:`attnpaths.frozen_attention.rank_heads` needs ``attention_weights`` only;
:class:`attnpaths.head_masks.HeadMaskEvaluator` needs ``masked_output``.

:class:`~.LayeredHeadModel` is a second, optional protocol: the model run one layer at a time (embed the tokens; per
layer, the attention, the heads' outputs, their masked combination; the readout), which lets the pruning
experiments share every layer's input between the masks that agree on the layers before it
(:class:`~attnpaths.head_masks.HeadMaskEvaluator`, :func:`attnpaths.pruning.masked_outputs.subset_outputs`).
The library checks for it with ``isinstance(model, LayeredHeadModel)`` and otherwise calls the
:class:`HeadModel` methods.

:class:`FrozenHeadModel` implements both, in float64, for the package's architectures (``SumHeadModel`` of
:mod:`attnpaths.transformer`, ``MultiheadStackModel`` of :mod:`attnpaths.attention_stack`), and the form of
:class:`attnpaths.attention.Attention`; :func:`head_model` returns it through a trained module's ``frozen_heads()``.

:func:`attention_error` measures a frozen model's agreement with the model's own attention; the masks that prune
heads, and the accuracy of a model under them, are :mod:`attnpaths.head_masks`.
"""

from __future__ import annotations

import copy
import itertools
import numbers
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from ._validation import as_float64_tensor
from .attention import HeadCounts


@runtime_checkable
class HeadModel(Protocol):
    """The protocol of a model's heads (see the module's documentation for the shapes and the batched mask)."""

    def attention_weights(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """Per-layer attention weights for ``tokens`` ``[B, T, D]``: a list of ``L`` tensors ``[B, H_l, T, T]``
        indexed ``[batch, head, query, key]``, rows summing to one over the keys."""
        ...

    def masked_output(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The output ``[B]`` for ``tokens`` ``[B, T, D]`` with head ``(l, h)``'s output multiplied by
        ``mask[l, h]`` (``[L, max(H)]``), or by ``mask[b, l, h]`` for example ``b`` (``[B, L, max(H)]``),
        differentiable with respect to ``mask``."""
        ...


@runtime_checkable
class LayeredHeadModel(Protocol):
    """A :class:`HeadModel` that runs one layer at a time, in PyTorch's layout. ``state`` is a layer's input
    (the model's own tensor, batch first); ``heads_out`` a layer's heads' outputs (the model's own tensor, batch
    first, with a token axis of its queries).

    The output with head mask ``m`` is, for ``state = embed_tokens(tokens)`` and each layer ``l``:
    ``state = combine_heads(l, layer_heads(l, state, layer_attention(l, state, tokens)), m[:, l, :H_l])``, then
    ``read_out(state)``. Every model here mean-pools its last layer's tokens before a linear readout, so the last
    layer's heads are needed on the attention averaged over queries only (:meth:`pooled_heads`), and the output
    is linear in the last layer's mask (:meth:`head_terms`).
    """

    #: ``(H_1, ..., H_L)``
    heads: tuple[int, ...]
    #: whether every layer's attention is computed from the tokens alone (then ``state`` may be ``None``)
    attention_from_input: bool
    #: whether the output is a multilinear function of the layers' head masks (the attention read from the raw
    #: input, no biases): a sum over attention paths of each path's contribution times its heads' mask entries
    multilinear_in_mask: bool

    def check_tokens(self, tokens) -> torch.Tensor:
        """``tokens`` ``[B, T, D]`` as the model computes with them (``ValueError`` for another shape)."""
        ...

    def embed_tokens(self, tokens: torch.Tensor) -> Any:
        """The first layer's input ``state`` for checked ``tokens``."""
        ...

    def layer_attention(self, index: int, state: Any, tokens: torch.Tensor) -> torch.Tensor:
        """Layer ``index``'s attention ``[B, H, T_query, T_key]`` for its input ``state``."""
        ...

    def layer_heads(self, index: int, state: Any, attention: torch.Tensor) -> Any:
        """Layer ``index``'s heads' outputs for the queries of ``attention`` ``[B, H, T', T_key]``."""
        ...

    def pooled_heads(self, index: int, state: Any, attention: torch.Tensor) -> Any:
        """The heads' outputs averaged over the query tokens (one token, kept as an axis of size 1)."""
        ...

    def combine_heads(self, index: int, heads_out: Any, mask: torch.Tensor) -> Any:
        """The next layer's input (the layer's output): the heads' outputs combined, head ``h``'s multiplied by
        ``mask[:, h]`` (``mask`` ``[B or 1, H_l]``)."""
        ...

    def read_out(self, state: Any) -> torch.Tensor:
        """The output ``[B]`` from the last layer's output."""
        ...

    def head_terms(self, heads_out: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``(terms [B, H_L], offset [B])`` from the last layer's (or pooled) heads' outputs: the output with
        last-layer mask ``m`` is ``terms @ m + offset``."""
        ...


def layered_model(model) -> LayeredHeadModel | None:
    """``model`` itself if it is a :class:`~.LayeredHeadModel`, the frozen copy it gives through a method
    ``frozen_heads()`` (the package's trained architectures), else ``None``."""
    if isinstance(model, LayeredHeadModel):
        return model
    frozen = getattr(model, "frozen_heads", None)
    if callable(frozen):
        view = frozen()
        if isinstance(view, LayeredHeadModel):
            return view
    return None


def head_model(model) -> LayeredHeadModel:
    """The frozen float64 :class:`HeadModel` of a trained ``model`` of the package's architectures
    (:class:`~attnpaths.transformer.SumHeadTransformer` or
    :class:`~attnpaths.attention_stack.MultiheadAttentionStack`, through their method ``frozen_heads()``); a
    :class:`~.LayeredHeadModel` is returned as it is. Another model of your own needs no conversion: give it the
    methods of :class:`HeadModel`."""
    view = layered_model(model)
    if view is None:
        raise ValueError(
            f"model must be a SumHeadTransformer, a MultiheadAttentionStack or a LayeredHeadModel, got "
            f"{type(model).__name__} (a model of your own is used through its attention_weights and "
            "masked_output methods, the HeadModel protocol, without this conversion)"
        )
    return view


def model_heads(model: HeadModel, tokens) -> tuple[int, ...]:
    """``(H_1, ..., H_L)`` of a :class:`HeadModel`: its ``heads`` attribute where that is a sequence of integers,
    else read from the attention it computes for ``tokens`` ``[B, T, D]`` (e.g. a model whose ``heads`` are its
    modules)."""
    heads = getattr(model, "heads", None)
    if not (
        isinstance(heads, Sequence)
        and not isinstance(heads, str)
        and all(isinstance(h, numbers.Integral) and not isinstance(h, bool) for h in heads)
    ):
        with torch.no_grad():
            heads = [int(a.shape[1]) for a in model.attention_weights(tokens)]
    return tuple(int(h) for h in heads)


def check_mask(mask, heads, batch: int) -> torch.Tensor:
    """A head mask as float64 ``[B or 1, L, max(H)]`` (``None``: all ones), keeping its autograd graph.

    Args:
        mask: ``[L, max(H)]`` or ``[B, L, max(H)]`` with ``B = batch``; heads: ``(H_1, ..., H_L)``.
    """
    L, H = len(heads), max(heads)
    if mask is None:
        return torch.ones(1, L, H, dtype=torch.float64)
    mask = torch.as_tensor(mask)
    if mask.ndim == 2:
        mask = mask[None]
    if mask.ndim != 3 or mask.shape[1:] != (L, H) or mask.shape[0] not in (1, batch):
        raise ValueError(f"mask must have shape [{L}, {H}] or [B, {L}, {H}] with B = {batch}, got {tuple(mask.shape)}")
    return mask.to(torch.float64)


class FrozenHeadModel(HeadCounts):
    """A trained model's weights, frozen in float64, with its attention and its head-masked output: a
    :class:`HeadModel` and a :class:`~.LayeredHeadModel`, and an :class:`attnpaths.attention.Attention` for
    :func:`attnpaths.paths.path_features`.

    Attributes (set by the subclasses): ``heads`` ``(H_1, ..., H_L)``; ``input_width`` ``N0``; ``readout``
    ``"average_pooling"`` (every model here mean-pools its last layer's tokens).

    A subclass implements the layer stages in the authors' layout (inputs ``x`` ``[B, N0, T]``, attention
    ``Omega[b, h, key, query]``, softmax over keys, sec-model-network) as ``_embed(x)``, ``_attention(index, h,
    x)``, ``_heads(index, h, omega)`` (and optionally a cheaper ``_pooled_heads``), with ``combine_heads``,
    ``read_out``, ``value_norms`` and the path maps; the public methods here give them PyTorch's layout.

    ``num_layers`` and ``num_paths`` come from :class:`~attnpaths.attention.HeadCounts`.
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

    def check_tokens(self, tokens) -> torch.Tensor:
        """``tokens`` ``[B, T, N0]`` as a float64 tensor (``ValueError`` for another shape)."""
        tokens = as_float64_tensor(tokens, "tokens")
        if tokens.ndim != 3 or tokens.shape[2] != self.input_width:
            raise ValueError(
                f"tokens must have shape [B, T, {self.input_width}] (batch, token, feature), got {tuple(tokens.shape)}"
            )
        return tokens

    def attention_weights(self, tokens, mask=None) -> list[torch.Tensor]:
        """The attention of every layer for ``tokens`` ``[B, T, N0]``, as the model computes it: ``L`` float64
        tensors ``[B, H_l, T, T]`` indexed ``[batch, head, query, key]`` (the :class:`HeadModel` protocol).

        ``mask`` (``[L, max(H)]`` or ``[B, L, max(H)]``, optional) multiplies the heads' outputs before the
        attention of the following layers is computed (it changes nothing where the attention acts on the raw
        input)."""
        return [omega.transpose(-1, -2) for omega in self._layer_matrices(self.check_tokens(tokens), mask)]

    def masked_output(self, tokens, mask=None) -> torch.Tensor:
        """The model's output ``[B]`` (float64) for ``tokens`` ``[B, T, N0]`` with head ``(l, h)``'s output
        multiplied by ``mask[l, h]`` (``[L, max(H)]``, or ``[B, L, max(H)]`` one mask per example; ``None``: every
        head kept), differentiable with respect to ``mask`` (the :class:`HeadModel` protocol;
        :func:`attnpaths.head_masks.pruning_mask` builds the masks)."""
        tokens = self.check_tokens(tokens)
        mask = check_mask(mask, self.heads, tokens.shape[0])
        x = tokens.transpose(1, 2)
        h = self._embed(x)
        last = self.num_layers - 1
        for index in range(self.num_layers):
            omega = self._attention(index, h, x)
            # mean pooling follows the last layer: its heads' outputs are needed on the mean token only
            heads_out = self._pooled_heads(index, h, omega) if index == last else self._heads(index, h, omega)
            h = self.combine_heads(index, heads_out, mask[:, index, : self.heads[index]])
        return self.read_out(h)

    def last_layer_terms(self, tokens, mask=None) -> tuple[torch.Tensor, torch.Tensor]:
        """The output as a function of the last layer's head mask, which it depends on linearly (the last layer
        is followed by mean pooling and a linear readout): ``masked_output(tokens, mask) = terms @ mask[L-1] +
        offset`` for any last-layer mask, the earlier layers masked by ``mask``.

        Args:
            tokens: ``[B, T, N0]``; mask: ``[L, max(H)]`` or ``[B, L, max(H)]`` (its last layer is not used).

        Returns:
            ``(terms [B, H_L], offset [B])``, float64: head ``h``'s contribution and the output with the last
            layer's heads all masked (its output bias, if any).
        """
        tokens = self.check_tokens(tokens)
        mask = check_mask(mask, self.heads, tokens.shape[0])
        x = tokens.transpose(1, 2)
        h = self._embed(x)
        for index in range(self.num_layers - 1):
            heads_out = self._heads(index, h, self._attention(index, h, x))
            h = self.combine_heads(index, heads_out, mask[:, index, : self.heads[index]])
        last = self.num_layers - 1
        return self.head_terms(self._pooled_heads(last, h, self._attention(last, h, x)))

    def matrices(self, x) -> list[torch.Tensor]:
        """The unmasked model's attention in the form of :meth:`attnpaths.attention.Attention.matrices` (``x``
        ``[B, N0, T]``, ``Omega[b, h, key, query]``): ``[Omega_1, ..., Omega_{L-1}, omega_L]`` with ``omega_L``
        ``[B, H_L, T]`` the average over queries, so that :func:`attnpaths.paths.path_features` takes the model."""
        x = as_float64_tensor(x, "x")
        if x.ndim != 3 or x.shape[1] != self.input_width:
            raise ValueError(f"x must have shape [B, {self.input_width}, T], got {tuple(x.shape)}")
        with torch.no_grad():
            out = self._layer_matrices(x.transpose(1, 2), None)
        out[-1] = out[-1].mean(dim=-1)
        return out

    def _layer_matrices(self, tokens: torch.Tensor, mask) -> list[torch.Tensor]:
        """Every layer's ``Omega[b, h, key, query]`` for checked ``tokens``, the heads masked by ``mask``."""
        x = tokens.transpose(1, 2)
        mask = check_mask(mask, self.heads, x.shape[0])
        if self.attention_from_input:  # no layer's output is needed
            return [self._attention(index, None, x) for index in range(self.num_layers)]
        h, omegas = self._embed(x), []
        for index in range(self.num_layers):
            omegas.append(self._attention(index, h, x))
            if index < self.num_layers - 1:  # the last layer's output feeds no attention
                heads_out = self._heads(index, h, omegas[-1])
                h = self.combine_heads(index, heads_out, mask[:, index, : self.heads[index]])
        return omegas

    # the LayeredHeadModel protocol: PyTorch's layout over the subclasses' stages
    def embed_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        """The first layer's input for checked ``tokens`` ``[B, T, N0]`` (:class:`~.LayeredHeadModel`)."""
        return self._embed(tokens.transpose(1, 2))

    def layer_attention(self, index: int, state, tokens: torch.Tensor) -> torch.Tensor:
        """Layer ``index``'s attention ``[B, H, T_query, T_key]`` (:class:`~.LayeredHeadModel`)."""
        return self._attention(index, state, tokens.transpose(1, 2)).transpose(-1, -2)

    def layer_heads(self, index: int, state, attention: torch.Tensor) -> torch.Tensor:
        """Layer ``index``'s heads' outputs for the queries of ``attention`` (:class:`~.LayeredHeadModel`)."""
        return self._heads(index, state, attention.transpose(-1, -2))

    def pooled_heads(self, index: int, state, attention: torch.Tensor) -> torch.Tensor:
        """The heads' outputs averaged over the query tokens (:class:`~.LayeredHeadModel`)."""
        return self._pooled_heads(index, state, attention.transpose(-1, -2))

    def _pooled_heads(self, index: int, h: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
        """The heads' outputs of layer ``index`` averaged over the tokens (one token, kept as an axis of size 1),
        as the mean pooling after the last layer reads them: each head's output is linear in its attention, so
        the attention averaged over queries gives it, ``T`` times fewer products than :meth:`_heads` and the
        mean of its ``T`` tokens."""
        return self._heads(index, h, omega.mean(dim=-1, keepdim=True))

    def head_terms(self, heads_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(terms [B, H_L], offset [B])`` of :meth:`last_layer_terms` from the last layer's head outputs (those of
        :meth:`layer_heads`, or already pooled by :meth:`pooled_heads`; :class:`~.LayeredHeadModel`)."""
        last = self.num_layers - 1
        H = self.heads[last]
        # mean pooling follows a token-wise linear map: pool the heads' outputs first, one token instead of T
        if heads_out.shape[self.head_token_axis] != 1:
            heads_out = heads_out.mean(dim=self.head_token_axis, keepdim=True)
        offset = self.read_out(self.combine_heads(last, heads_out, torch.zeros(1, H, dtype=torch.float64)))
        unit = torch.eye(H, dtype=torch.float64)
        terms = torch.stack(
            [self.read_out(self.combine_heads(last, heads_out, unit[k : k + 1])) for k in range(H)], dim=1
        )
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

    # one layer at a time, in the authors' layout: _embed(x) -> h; per layer _attention -> Omega (key, query),
    # _heads -> the heads' outputs, combine_heads(mask) -> the next h; read_out(h) -> f
    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _attention(self, index: int, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _heads(self, index: int, h: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def combine_heads(self, index: int, heads_out: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The output of layer ``index``: its heads' outputs, head ``h``'s times ``mask[:, h]`` (``[B or 1, H]``),
        combined as the model combines them (:class:`~.LayeredHeadModel`)."""
        raise NotImplementedError

    def read_out(self, h: torch.Tensor) -> torch.Tensor:
        """The output ``[B]`` from the last layer's output (:class:`~.LayeredHeadModel`)."""
        raise NotImplementedError


class FrozenHeadMethods:
    """The :class:`HeadModel` methods of a trained module of the package's architectures, each computed on the
    float64 copy of its weights that the module's ``frozen_heads()`` returns (a :class:`FrozenHeadModel`), and its
    sizes, read from the ``hyperparameters`` dict it was built with (``num_layers`` and ``num_heads`` keys)."""

    @property
    def num_layers(self) -> int:
        """The number of attention layers ``L``."""
        return self.hyperparameters["num_layers"]

    @property
    def num_heads(self) -> int:
        """The number of heads of every layer (``H``; ``F`` of the summed-head model)."""
        return self.hyperparameters["num_heads"]

    def attention_weights(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's attention for ``tokens`` ``[B, T, N0]`` (PyTorch's layout, ``x.transpose(1, 2)``):
        ``L`` float64 tensors ``[B, H, T, T]`` indexed ``[batch, head, query, key]``
        (:meth:`FrozenHeadModel.attention_weights`)."""
        return self.frozen_heads().attention_weights(tokens)

    def masked_output(self, tokens: torch.Tensor, mask=None) -> torch.Tensor:
        """The output ``[B]`` (float64) for ``tokens`` ``[B, T, N0]`` with head ``(l, h)``'s output multiplied by
        ``mask[l, h]`` (:meth:`FrozenHeadModel.masked_output`)."""
        return self.frozen_heads().masked_output(tokens, mask)

    def value_norms(self) -> np.ndarray:
        """``[L, H]``: the Frobenius norm of each head's value map into the next layer (eq-value-norm), that of the
        frozen copy's ``value_norms()``."""
        return self.frozen_heads().value_norms()


def attention_error(model, x, view: FrozenHeadModel | None = None) -> float:
    """Largest absolute difference between the attention of a frozen view (default :func:`head_model`
    ``(model)``) and the model's own, in float64 (a copy of the model's own ``attention_matrices``:
    :meth:`attnpaths.transformer.SumHeadTransformer.attention_matrices`, or the per-head weights that each
    ``torch.nn.MultiheadAttention`` layer returns,
    :meth:`attnpaths.attention_stack.MultiheadAttentionStack.attention_matrices`).

    Args:
        model: a :class:`~attnpaths.transformer.SumHeadTransformer` or
            :class:`~attnpaths.attention_stack.MultiheadAttentionStack`; x: ``[B, N0, T]``.
        view: the view to check (e.g. one taken before the model's weights changed).
    """
    view = head_model(model) if view is None else view
    tokens = view.check_tokens(as_float64_tensor(x, "x").transpose(1, 2))
    reference = copy.deepcopy(model).to(device="cpu", dtype=torch.float64).eval()
    with torch.no_grad():
        ours = view.attention_weights(tokens)
        theirs = reference.attention_matrices(tokens.transpose(1, 2)).unbind(dim=1)  # [B, H, key, query] each
    return max(float((a - b.transpose(-1, -2)).abs().max()) for a, b in zip(ours, theirs))
