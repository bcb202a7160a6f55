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

from ._validation import positive_int
from .attention import Attention, AttentionLayer

FORWARD_REVISION = 2
"""Revision of :meth:`SumHeadTransformer.forward`'s float32 arithmetic. Training amplifies rounding, so a
model trained with another evaluation order is another model: the revision is part of the trained models'
cache key (:func:`attnpaths.oneshot.training.model_cache_path`). Revision 2 sums heads and keys in one
batched matmul and folds the last layer into the mean pooling and the readout."""


def _uniform(shape, fan_in: int, generator: torch.Generator, dtype: torch.dtype) -> nn.Parameter:
    bound = 1.0 / math.sqrt(fan_in)
    values = (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    return nn.Parameter(values.to(dtype))


class SumHeadTransformer(nn.Module):
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
        for name, value in (
            ("input_width", input_width),
            ("width", width),
            ("qk_width", qk_width),
            ("num_layers", num_layers),
            ("num_heads", num_heads),
        ):
            positive_int(value, name)
        self.hyperparameters = {
            "input_width": input_width,
            "width": width,
            "qk_width": qk_width,
            "num_layers": num_layers,
            "num_heads": num_heads,
        }
        L, F, N, G, N0 = num_layers, num_heads, width, qk_width, input_width
        self.input_layer = _uniform((N, N0), N0, generator, dtype)
        self.queries = _uniform((L, F, G, N0), N0, generator, dtype)
        self.keys = _uniform((L, F, G, N0), N0, generator, dtype)
        self.values = _uniform((L, F, N, N), N, generator, dtype)
        self.readout = _uniform((N,), N, generator, dtype)

    @property
    def num_layers(self) -> int:
        """Number of attention layers ``L``."""
        return self.hyperparameters["num_layers"]

    @property
    def num_heads(self) -> int:
        """Number of heads per layer ``F`` (summed, not concatenated)."""
        return self.hyperparameters["num_heads"]

    def _head_masks(self, drop_heads) -> torch.Tensor:
        """``[L, F]`` per-head factors: 0 for dropped heads, ``(F - n_dropped)^{-1/2}`` otherwise."""
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
        scale = self._head_masks(drop_heads)
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

    # the HeadModel protocol (attnpaths.head_models), on a float64 copy of the weights
    def attention_weights(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's attention for ``tokens`` ``[B, T, N0]`` (PyTorch's layout, ``x.transpose(1, 2)``):
        ``L`` float64 tensors ``[B, H, T, T]`` indexed ``[batch, head, query, key]``
        (:meth:`attnpaths.head_models.FrozenHeadModel.attention_weights`)."""
        from .head_models import head_model  # the frozen copy's module imports this one

        return head_model(self).attention_weights(tokens)

    def masked_output(self, tokens: torch.Tensor, mask=None) -> torch.Tensor:
        """The output ``[B]`` (float64) for ``tokens`` ``[B, T, N0]`` with head ``(l, h)``'s output multiplied by
        ``mask[l, h]`` (:meth:`attnpaths.head_models.FrozenHeadModel.masked_output`)."""
        from .head_models import head_model

        return head_model(self).masked_output(tokens, mask)

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
