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

import torch
from torch import nn

from ._validation import positive_int, torch_generator


def _fill_uniform(parameter: torch.Tensor, bound: float, generator: torch.Generator) -> None:
    """Overwrite ``parameter`` with ``U(-bound, bound)`` draws from ``generator`` (in float64, then cast)."""
    values = (torch.rand(parameter.shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    with torch.no_grad():
        parameter.copy_(values.to(parameter.dtype))


class MultiheadAttentionStack(nn.Module):
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
        for name, value in (
            ("input_width", input_width),
            ("width", width),
            ("num_heads", num_heads),
            ("num_layers", num_layers),
        ):
            positive_int(value, name)
        if width % num_heads:
            raise ValueError(f"width must be a multiple of num_heads = {num_heads}, got {width}")
        torch_generator(generator, "generator", cpu=True)
        self.hyperparameters = {
            "input_width": input_width,
            "width": width,
            "num_heads": num_heads,
            "num_layers": num_layers,
            "bias": bool(bias),
        }
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

    @property
    def num_layers(self) -> int:
        """The number of attention layers."""
        return self.hyperparameters["num_layers"]

    @property
    def num_heads(self) -> int:
        """The number of heads of every layer."""
        return self.hyperparameters["num_heads"]

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
