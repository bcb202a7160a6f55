"""The gradient-descent-trained model of the one-shot task (sec-oneshot-data), whose Q/K the theory borrows.

    h^(0)_t = V0 x0_t                                   V0 in R^{N x N0}  (learned input layer, no bias)
    h^(l)_t = F^{-1/2} sum_h V^(l,h) sum_s h^(l-1)_s Omega^(l,h)_{s t}(x0)      l = 1..L, no residual
    Omega^(l,h)_{s t} = softmax_s( (K^(l,h) x0_s) . (Q^(l,h) x0_t) / sqrt(G) )  Q, K in R^{G x N0}
    f(x0) = a . mean_t h^(L)_t                           (mean pooling, linear readout, no bias)

Query and key maps act on the raw input ``x0`` at every layer, never on ``h^(l-1)``; there is no
normalisation, MLP or nonlinearity besides the softmax, and the loss is the mean squared error to
``y = +-1``. Pruning (sec-oneshot-pruning) zeroes the dropped heads of a layer and rescales that layer's head
sum by ``(F - n_dropped)^{-1/2}`` instead of ``F^{-1/2}``, without retraining.

Unlike the Bayesian network of the theory (``attnpaths.network``), the weights carry no ``1/sqrt(N)``
factors: they follow PyTorch's default ``Linear`` initialisation, uniform in
``+-1/sqrt(fan_in)``, drawn here from an explicit CPU ``torch.Generator`` (in float64, then cast), so a
seed gives the same initial weights whatever device the model is later moved to (``model.to(device)``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validation import positive_ints
from .attention import Attention, AttentionLayer
from .head_models import FrozenHeadMethods, FrozenHeadModel

FORWARD_REVISION = 2
"""Revision of :meth:`SumHeadTransformer.forward`'s float32 arithmetic. Training amplifies rounding, so a
model trained with another evaluation order is another model: the revision is part of the trained models'
cache key (:func:`attnpaths.oneshot.training.model_cache_path`). Revision 2 sums heads and keys in one
batched matmul and folds the last layer into the mean pooling and the readout."""


def _uniform(shape, fan_in: int, generator: torch.Generator, dtype: torch.dtype) -> nn.Parameter:
    bound = 1.0 / math.sqrt(fan_in)
    values = (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    return nn.Parameter(values.to(dtype))


class SumHeadTransformer(FrozenHeadMethods, nn.Module):
    """``L`` layers of ``F`` summed softmax heads on a learned linear input layer (sec-oneshot-data).

    Args:
        input_width: ``N0``, features per token.
        width: ``N``, width of the value stream.
        qk_width: ``G``, dimension of queries and keys.
        num_layers: ``L``.
        num_heads: ``F``, heads per layer.
        generator: source of the initial weights.
        dtype: parameter dtype.

    Parameters (shapes): ``input_layer`` [N, N0]; ``queries``, ``keys`` [L, F, G, N0]; ``values``
    [L, F, N, N] (out, in); ``readout`` [N].
    """

    def __init__(
        self,
        input_width: int = 64,
        width: int = 128,
        qk_width: int = 32,
        num_layers: int = 2,
        num_heads: int = 4,
        *,
        generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.hyperparameters = positive_ints(
            input_width=input_width, width=width, qk_width=qk_width, num_layers=num_layers, num_heads=num_heads
        )
        L, F, N, G, N0 = num_layers, num_heads, width, qk_width, input_width
        self.input_layer = _uniform((N, N0), N0, generator, dtype)
        self.queries = _uniform((L, F, G, N0), N0, generator, dtype)
        self.keys = _uniform((L, F, G, N0), N0, generator, dtype)
        self.values = _uniform((L, F, N, N), N, generator, dtype)
        self.readout = _uniform((N,), N, generator, dtype)

    def head_factors(self, drop_heads) -> torch.Tensor:
        """``[L, F]`` per-head factors of :meth:`forward` with ``drop_heads`` dropped: 0 for dropped heads,
        ``(F - n_dropped)^{-1/2}`` otherwise (``ValueError`` for pairs out of range or a layer left without heads)."""
        L, F = self.num_layers, self.num_heads
        keep = torch.ones(L, F, dtype=torch.bool)  # built on the CPU, moved to the weights' device below
        for pair in drop_heads:
            try:
                layer, head = (int(v) for v in pair)
            except (TypeError, ValueError) as err:
                raise ValueError(f"drop_heads must hold (layer, head) pairs, got {pair!r}") from err
            if not (0 <= layer < L and 0 <= head < F):
                raise ValueError(f"drop_heads entries must be 0-based (layer < {L}, head < {F}), got {pair!r}")
            keep[layer, head] = False
        kept = keep.sum(dim=1)
        if (kept == 0).any():
            raise ValueError(f"drop_heads must leave at least one head in every layer, got {list(drop_heads)!r}")
        factors = keep.to(self.readout.dtype) / kept.to(self.readout.dtype).sqrt()[:, None]
        return factors.to(self.readout.device)

    def _layer_attention(self, tokens: torch.Tensor, layer: int) -> torch.Tensor:
        """Softmax attention of one layer, ``[B, F, T_query, T_key]``, from tokens ``[B, T, N0]``.

        Query-major with keys last, so the softmax runs over the last axis. The ``1/sqrt(G)`` rides on the
        ``F G N0`` query weights rather than on the ``B F T^2`` logits.
        """
        B, T, N0 = tokens.shape
        F, G = self.queries.shape[1:3]
        queries = tokens @ (self.queries[layer].reshape(F * G, N0).T * G**-0.5)
        keys = tokens @ self.keys[layer].reshape(F * G, N0).T
        logits = queries.reshape(B, T, F, G).transpose(1, 2) @ keys.reshape(B, T, F, G).permute(0, 2, 3, 1)
        return torch.softmax(logits, dim=-1)

    def attention_matrices(self, x: torch.Tensor) -> torch.Tensor:
        """``Omega[b, l, h, s, t]`` (key ``s``, query ``t``, softmax over ``s``) from the raw input, in
        the package's convention (``attnpaths.attention``), as :meth:`forward` computes them.

        Args:
            x: ``[B, N0, T]``.

        Returns:
            ``[B, L, F, T, T]``.
        """
        tokens = x.to(device=self.readout.device, dtype=self.readout.dtype).transpose(1, 2)
        layers = [self._layer_attention(tokens, layer) for layer in range(self.num_layers)]
        return torch.stack(layers, dim=1).transpose(-1, -2)

    def forward(self, x: torch.Tensor, drop_heads=()) -> torch.Tensor:
        """Outputs ``f(x)``.

        Args:
            x: ``[B, N0, T]`` token features (``SequenceEncoder.encode``), on any device: they are moved to
                the weights' device and dtype.
            drop_heads: 0-based ``(layer, head)`` pairs to prune.

        Returns:
            ``[B]``, on the weights' device.

        Evaluation order (the same function as the module docstring's, summed in another order): in each
        layer but the last, the value maps act first, ``u_{s h} = c_h V^(l,h) h_s`` for all heads in one
        matmul, so that the sum over heads and keys is one batched matmul, ``h_t = sum_{s, h}
        Omega^(l,h)_{s t} u_{s h}``, with no copy of the ``[B, T, F, N]`` activations; the last layer is
        folded with the mean pooling and the readout, ``f = sum_{h, s} (mean_t Omega^(L,h)_{s t})
        c_h a.V^(L,h) h_s``, which needs neither its ``N x N`` value maps on every token nor its token
        mixing. ``c_h`` is the head factor (``F^{-1/2}``, or the pruned layer's).
        """
        tokens = x.to(device=self.readout.device, dtype=self.readout.dtype).transpose(1, 2)  # [B, T, N0]
        B, T, _ = tokens.shape
        L, F, N = self.values.shape[:3]
        scale = self.head_factors(drop_heads)
        h = tokens @ self.input_layer.T  # [B, T, N]
        for layer in range(L - 1):
            omega = self._layer_attention(tokens, layer)  # [B, F, t, s]
            values = (self.values[layer] * scale[layer][:, None, None]).reshape(F * N, N)  # [(h, out), in]
            u = (h @ values.T).reshape(B, T * F, N)  # [B, (s, h), N]
            h = omega.permute(0, 2, 3, 1).reshape(B, T, T * F) @ u
        omega = self._layer_attention(tokens, L - 1)
        readout = (self.readout @ self.values[L - 1]) * scale[L - 1][:, None]  # [F, N]: c_h a.V^(L,h)
        z = h @ readout.T  # [B, s, F]
        return (omega.mean(dim=2) * z.transpose(1, 2)).sum(dim=(1, 2))

    # the HeadModel protocol (attnpaths.head_models.FrozenHeadMethods), on a float64 copy of the weights; value_norms
    # is that of V^(l,h)
    def frozen_heads(self) -> SumHeadModel:
        """The model's weights frozen in float64 (:class:`SumHeadModel`), the :class:`~attnpaths.head_models.HeadModel`
        and :class:`~attnpaths.head_models.LayeredHeadModel` that :func:`attnpaths.head_models.head_model` returns."""
        return SumHeadModel(self)

    def attention(self) -> Attention:
        """The trained query/key maps as the theory's fixed attention (sec-model-network, qk form with
        ``1/sqrt(G)``, ``readout="average_pooling"``), as float64 copies."""
        layers = tuple(
            AttentionLayer(Q=self.queries[l].detach().cpu().double(), K=self.keys[l].detach().cpu().double())
            for l in range(self.num_layers)
        )
        return Attention(layers, readout="average_pooling")

    def path_weights(self) -> torch.Tensor:
        """Effective weight of every attention path, ``w_pi = a^T V^(L,h_L) ... V^(1,h_1)`` (the gradient-descent
        version of eq-path-form, no normalisation factors; sec-oneshot-order-parameter).

        Returns:
            float64 ``[F^L, N]`` in the package's path order (``h_1`` slowest).
        """
        values = self.values.detach().cpu().double()
        weights = self.readout.detach().cpu().double()[None]  # [paths of layers l+1..L, N]
        for layer in reversed(range(self.num_layers)):
            # new[h_l, rho] = weights[rho] @ V^(l, h_l); h_l becomes the slowest path index.
            weights = torch.einsum("rm,hmn->hrn", weights, values[layer]).reshape(-1, values.shape[-1])
        return weights

    def gd_order_parameter(self) -> torch.Tensor:
        """``U^GD_{pi pi'} = w_pi . w_pi'`` (sec-oneshot-order-parameter): float64 ``[F^L, F^L]``; only its pattern is
        comparable with the theory's U."""
        w = self.path_weights()
        return w @ w.T


class SumHeadModel(FrozenHeadModel):
    """:class:`SumHeadTransformer` in float64 (sec-oneshot-data): attention from the raw input through the trained
    query/key maps (:meth:`SumHeadTransformer.attention`), layer outputs
    ``h^(l) = F^{-1/2} sum_h mask[l, h] V^(l,h) h^(l-1) Omega^(l,h)``. With the mask of
    :func:`attnpaths.head_masks.pruning_mask` ``(..., rescale=True)`` this is the model's own ``drop_heads``
    pruning."""

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

    def combine_heads(self, index, heads_out, mask):
        """Layer ``index``'s output: the heads' outputs ``[B, H, N, T]``, head ``h``'s times ``mask[:, h]``, summed
        and divided by ``sqrt(H)`` (eq-forward)."""
        return torch.einsum("bh,bhmt->bmt", mask.expand(heads_out.shape[0], -1), heads_out) / math.sqrt(
            self.heads[index]
        )

    def read_out(self, h):
        """The output ``[B]``: the last layer's output ``[B, N, T]`` averaged over tokens, then read out."""
        return h.mean(dim=2) @ self.readout_weights

    def value_norms(self):
        """``[L, H]``: the Frobenius norm of each head's value map into the next layer."""
        return torch.linalg.matrix_norm(self.values).numpy()

    def _head_maps(self, index):
        return list(self.values[index] / math.sqrt(self.heads[index]))

    def _embed_matrix(self):
        return self.input_layer

    def _readout_vector(self):
        return self.readout_weights
