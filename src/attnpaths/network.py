"""The finite-width network with fixed attention (eq-forward, sec-model-network) and its path form (eq-path-form).

Model (eq-forward), for an input ``x`` of shape ``[N0, T]`` and attention matrices computed from ``x``::

    x^(0)   = V0 x / sqrt(N0)                                                   [N_1, T]
    x^(l)   = sum_h V^(l,h) x^(l-1) Omega^(l,h) / sqrt(H_l N_l),   l < L         [N_{l+1}, T]
    xbar^(L) = sum_h V^(L,h) x^(L-1) omega^(L,h) / sqrt(H_L N_L)                 [N_a]
    f(x)    = a . xbar^(L) / sqrt(N_a)

Gaussian priors (sec-model-network): ``V0 ~ N(0, s0)``, ``V^(l,h) ~ N(0, s_l)``, ``a ~ N(0, sa)`` entrywise.

Path form. Expanding the products, every path ``pi = (h_1, ..., h_L)`` routes the input through
``xi_pi(x)`` (eq-path-features) and is read out by its effective weight (eq-path-form)::

    e^(L)_{h_L}        = a^T V^(L,h_L) / sqrt(N_a)                               [N_L]
    e^(l)_{h_l..h_L}   = e^(l+1)_{h_{l+1}..h_L} V^(l,h_l) / sqrt(N_{l+1})         [N_l]

Collecting the normalisations, ``1/sqrt(N0) * prod_l 1/sqrt(H_l N_l) * 1/sqrt(N_a)`` equals
``1/sqrt(N_a N_L ... N_2)`` (absorbed in ``e^(1)``) times ``1/sqrt(N0 N_1 n_paths)``, so

    f(x) = sum_pi e^(1)_pi . V0 xi_pi(x) / sqrt(N0 N_1 n_paths)                  (path form)

The row vectors ``w_pi = e^(1)_pi V0 / sqrt(N0 N_1 n_paths)`` (:meth:`AttentionNetwork.path_input_weights`)
make ``f`` linear in the path features: ``f(x) = sum_{pi, i} w_{pi i} xi_{i pi}(x)``. Under the prior
``E[e_pi . e_pi' / N_1] = sa sL ... s1 delta_{pi pi'} = U_GP`` at every width, hence
``E[f(x) f(x')] = K_GP(x, x')`` (sec-prior-kernel).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ._validation import as_float64_tensor, check_real_dtype, positive_int, positive_real, torch_generator
from .attention import Attention, HeadCounts
from .paths import path_features


@dataclass(frozen=True)
class NetworkWeights:
    """Weights of an :class:`AttentionNetwork`, each with an optional leading sample axis ``[S]``.

    Attributes:
        V0: ``[S, N_1, N0]`` input layer.
        V: ``(V_1, ..., V_L)`` with ``V_l`` of shape ``[S, H_l, N_{l+1}, N_l]`` (``N_{L+1} = N_a``).
        a: ``[S, N_a]`` readout.
    """

    V0: torch.Tensor
    V: tuple[torch.Tensor, ...]
    a: torch.Tensor

    def __post_init__(self):
        object.__setattr__(self, "V", tuple(self.V))

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """``(S,)`` for a batch of weight samples, ``()`` for a single network."""
        return tuple(self.a.shape[:-1])

    def as_dict(self) -> dict[str, torch.Tensor]:
        """The weights under the authors' names ``V_0, V_1, ..., V_L, a``."""
        out = {"V_0": self.V0}
        out.update({f"V_{l}": v for l, v in enumerate(self.V, start=1)})
        out["a"] = self.a
        return out


def _broadcast(value, length: int, name: str, kind: str) -> tuple:
    """Broadcast a scalar to ``length`` entries or check that a sequence has exactly ``length``."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return (value,) * length
    try:
        values = tuple(value)
    except TypeError as err:
        raise ValueError(f"{name} must be a {kind} or a sequence of {length} of them, got {value!r}") from err
    if len(values) != length:
        raise ValueError(f"{name} must be a {kind} or a sequence of {length} of them, got {len(values)} entries")
    return values


class AttentionNetwork(HeadCounts):
    """Deep multi-head attention network with fixed attention and Gaussian priors (eq-forward, sec-model-network).

    Args:
        attention: the fixed attention (heads ``(H_1, ..., H_L)``, token readout).
        width: ``(N_1, ..., N_L, N_a)`` or one int for all of them; ``N_l`` is the input width of
            attention layer ``l`` and ``N_a`` the input width of the readout.
        variances: prior variances ``(s0, s1, ..., sL, sa)`` or one number for all of them.

    ``num_layers`` and ``num_paths`` come from :class:`~attnpaths.attention.HeadCounts`.
    """

    def __init__(
        self, attention: Attention, width: int | Sequence[int], variances: float | Sequence[float] = 1.0
    ) -> None:
        if not isinstance(attention, Attention):
            raise ValueError(f"attention must be an attnpaths.attention.Attention, got {type(attention).__name__}")
        self.attention = attention
        L = len(attention.heads)
        widths = _broadcast(width, L + 1, "width", "positive int")
        if any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1 for n in widths):
            raise ValueError(f"width must be positive ints (N_1, ..., N_L, N_a), got {width!r}")
        self.widths = tuple(int(n) for n in widths)
        variances = _broadcast(variances, L + 2, "variances", "real number > 0")
        self.variances = tuple(positive_real(s, "variances") for s in variances)

    # -- sizes -------------------------------------------------------------------------------------
    @property
    def heads(self) -> tuple[int, ...]:
        """Heads per layer ``(H_1, ..., H_L)``."""
        return self.attention.heads

    @property
    def input_width(self) -> int:
        """Width ``N0`` of the raw input."""
        return self.attention.input_width

    @property
    def gp_order_parameter(self) -> float:
        """``U_GP = sa sL ... s1`` (eq-gp): the prior mean of ``e_pi . e_pi / N_1``."""
        return math.prod(self.variances[1:])

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of one network's weights, keyed ``V_0, V_1, ..., V_L, a``."""
        n = self.widths
        shapes = {"V_0": (n[0], self.input_width)}
        for l, H in enumerate(self.heads, start=1):
            shapes[f"V_{l}"] = (H, n[l], n[l - 1])
        shapes["a"] = (n[-1],)
        return shapes

    def __repr__(self) -> str:
        return f"AttentionNetwork(heads={self.heads}, width={self.widths}, variances={self.variances})"

    # -- prior ---------------------------------------------------------------------------------------
    def sample_prior(self, generator: torch.Generator, num_samples: int | None = None) -> NetworkWeights:
        """Draw weights from the Gaussian prior (sec-model-network).

        Args:
            generator: the source of randomness (CPU ``torch.Generator``).
            num_samples: ``S``; ``None`` draws a single network without a sample axis.

        Returns:
            :class:`NetworkWeights` with leading axis ``[S]`` (absent when ``num_samples`` is ``None``).
        """
        torch_generator(generator)
        lead = () if num_samples is None else (positive_int(num_samples, "num_samples"),)
        drawn = [
            torch.randn(lead + shape, generator=generator, dtype=torch.float64) * math.sqrt(s)
            for shape, s in zip(self.weight_shapes().values(), self.variances)
        ]
        return NetworkWeights(V0=drawn[0], V=tuple(drawn[1:-1]), a=drawn[-1])

    def check_weights(self, weights: NetworkWeights) -> NetworkWeights:
        """Return ``weights`` as float64 tensors (autograd kept) after checking their shapes against the network."""
        if not isinstance(weights, NetworkWeights):
            raise ValueError(f"weights must be NetworkWeights, got {type(weights).__name__}")
        if len(weights.V) != self.num_layers:
            raise ValueError(f"weights.V must hold {self.num_layers} layers V_1..V_L, got {len(weights.V)}")
        lead = tuple(torch.as_tensor(weights.a).shape[:-1])
        if len(lead) > 1:
            raise ValueError(
                f"weights may have at most one leading sample axis, got a of shape {tuple(weights.a.shape)}"
            )
        tensors = {}
        for (name, shape), value in zip(self.weight_shapes().items(), (weights.V0, *weights.V, weights.a)):
            tensor = _as_float64_keeping_grad(value, f"weights.{name}")
            if tuple(tensor.shape) != lead + shape:
                raise ValueError(f"weights.{name} must have shape {lead + shape}, got {tuple(tensor.shape)}")
            tensors[name] = tensor
        values = list(tensors.values())
        return NetworkWeights(V0=values[0], V=tuple(values[1:-1]), a=values[-1])

    # -- layer-by-layer forward (eq-forward) ---------------------------------------------------------
    def forward(self, x, weights: NetworkWeights, *, matrices: list[torch.Tensor] | None = None) -> torch.Tensor:
        """The network output computed layer by layer, literally as in (eq-forward).

        Args:
            x: ``[B, N0, T]`` input sequences.
            weights: one network, or a batch with leading axis ``[S]``.
            matrices: optional precomputed ``attention.matrices(x)`` (e.g. reused inside a sampler).

        Returns:
            ``f`` of shape ``[S, B]`` (or ``[B]`` for weights without a sample axis).
        """
        weights = self.check_weights(weights)
        x = as_float64_tensor(x, "x")
        if x.ndim != 3 or x.shape[1] != self.input_width:
            raise ValueError(f"x must have shape [B, {self.input_width}, T], got {tuple(x.shape)}")
        if matrices is None:
            matrices = self.attention.matrices(x)
        single = weights.sample_shape == ()
        V0, V, a = (
            (weights.V0, weights.V, weights.a)
            if not single
            else (weights.V0[None], tuple(v[None] for v in weights.V), weights.a[None])
        )
        # batched matmuls rather than einsum: ~2x faster fwd+bwd at small sizes, where NUTS calls this often
        hidden = torch.matmul(V0[:, None], x[None]) / math.sqrt(self.input_width)  # [S, B, N_1, T]
        for l, (V_l, omega) in enumerate(zip(V, matrices), start=1):
            norm = math.sqrt(self.heads[l - 1] * self.widths[l - 1])
            routed_values = torch.matmul(V_l[:, None], hidden[:, :, None])  # V^(l,h) x^(l-1): [S, B, H, N_{l+1}, T]
            if l < self.num_layers:  # sum_h sum_s (V^(l,h) x^(l-1))_s Omega^(l,h)_{s t}
                hidden = torch.matmul(routed_values, omega[None]).sum(dim=2) / norm
            else:  # token readout already applied to the last layer's attention: omega [B, H, T]
                hidden = torch.matmul(routed_values, omega[None, ..., None]).sum(dim=2)[..., 0] / norm
        f = (hidden * a[:, None, :]).sum(dim=-1) / math.sqrt(self.widths[-1])
        return f[0] if single else f

    __call__ = forward

    # -- path form (eq-path-form) -----------------------------------------------------------------------
    def path_weights(self, weights: NetworkWeights) -> torch.Tensor:
        """Effective path weights ``e^(1)_pi`` (eq-path-form), path order with ``h_1`` slowest.

        Returns:
            ``[S, n_paths, N_1]`` (or ``[n_paths, N_1]`` without a sample axis).
        """
        return self._path_weights(self.check_weights(weights))

    def _path_weights(self, weights: NetworkWeights) -> torch.Tensor:
        return self._path_weights_by_layer(weights)[0]

    def _path_weights_by_layer(self, weights: NetworkWeights) -> list[torch.Tensor]:
        """``[e^(1), ..., e^(L)]``: ``e^(l)`` ``[S, n_l, N_l]`` (or without the sample axis), the weights of the
        paths through layers ``l..L`` (``h_l`` slowest)."""
        single = weights.sample_shape == ()
        V, a = (weights.V, weights.a) if not single else (tuple(v[None] for v in weights.V), weights.a[None])
        upper = (a / math.sqrt(self.widths[-1]))[:, None, :]  # [S, paths above (none yet), N_{l+1}]
        layers = []
        for l in range(self.num_layers, 0, -1):
            # e^(l)[s, h_l, rho] = e^(l+1)[s, rho] V^(l,h_l) / sqrt(N_{l+1}); h_l becomes the slowest index
            combined = torch.einsum("sri,shij->shrj", upper, V[l - 1])
            if l < self.num_layers:
                combined = combined / math.sqrt(self.widths[l])
            upper = combined.reshape(combined.shape[0], -1, combined.shape[-1])
            layers.insert(0, upper[0] if single else upper)
        return layers

    def layer_order_parameters(self, weights: NetworkWeights) -> list[torch.Tensor]:
        """Per-sample order parameters of every layer, ``U_l = e^(l) e^(l)T / N_l`` (``e^(l)``: the weights of the
        paths through layers ``l..L``, eq-path-form): the variables of the exact density (eq-exact-density), of which
        ``U_1`` is :meth:`sampled_order_parameter`.

        Returns:
            ``[U_1, ..., U_L]``, ``U_l`` of shape ``[S, n_l, n_l]`` (``[n_l, n_l]`` without a sample axis).
        """
        weights = self.check_weights(weights)
        return [e @ e.transpose(-1, -2) / self.widths[l] for l, e in enumerate(self._path_weights_by_layer(weights))]

    def sampled_order_parameter(self, weights: NetworkWeights, *, per_sample: bool = False) -> torch.Tensor:
        """Sampled order parameter ``U_{pi pi'} = < e_pi . e_pi' / N_1 >`` over weight samples (eq-sampled-u).

        Args:
            weights: a batch of weight samples (leading axis ``[S]``) or a single network.
            per_sample: return ``[S, n_paths, n_paths]`` (one overlap matrix per sample) instead of the mean.

        Returns:
            ``[n_paths, n_paths]`` (or ``[S, n_paths, n_paths]`` when ``per_sample``).
        """
        overlaps = self._overlaps(self.path_weights(weights))
        return overlaps if per_sample else overlaps.mean(dim=0)

    def _overlaps(self, e: torch.Tensor) -> torch.Tensor:
        if e.ndim == 2:
            e = e[None]
        return e @ e.transpose(-1, -2) / self.widths[0]

    def path_input_weights(self, weights: NetworkWeights) -> torch.Tensor:
        """``w_pi = e^(1)_pi V0 / sqrt(N0 N_1 n_paths)``: the predictor is ``f(x) = sum_{pi,i} w_{pi i} xi_{i pi}(x)``.

        Returns:
            ``[S, n_paths, N0]`` (or ``[n_paths, N0]`` without a sample axis).
        """
        weights = self.check_weights(weights)
        return self._input_weights(weights, self._path_weights(weights))

    def _input_weights(self, weights: NetworkWeights, e: torch.Tensor) -> torch.Tensor:
        norm = math.sqrt(self.input_width * self.widths[0] * self.num_paths)
        return torch.einsum("...pk,...ki->...pi", e, weights.V0) / norm

    def path_summary(self, weights: NetworkWeights, *, check: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`path_input_weights` and the per-sample :meth:`sampled_order_parameter` of a batch of weights, from
        one computation of the path weights: ``([S, n_paths, N0], [S, n_paths, n_paths])``.

        Args:
            weights: a batch of weight samples (leading axis ``[S]``).
            check: check the weights first (:meth:`check_weights`); a sampler storing the weights it drew itself,
                of the right shapes by construction, skips the check and checks what it stored once at the end.
        """
        if check:
            weights = self.check_weights(weights)
        e = self._path_weights(weights)
        return self._input_weights(weights, e), self._overlaps(e)

    def forward_from_features(self, features, weights: NetworkWeights) -> torch.Tensor:
        """The predictor in path form, ``f(x) = sum_pi e_pi . V0 xi_pi(x) / sqrt(N0 N_1 n_paths)``.

        Args:
            features: ``[B, N0, n_paths]`` path features ``xi`` (:func:`attnpaths.paths.path_features`).
            weights: one network, or a batch with leading axis ``[S]``.

        Returns:
            ``[S, B]`` (or ``[B]``); equals :meth:`forward` on the inputs the features came from.
        """
        xi = self.check_features(features)
        return predictor_from_input_weights(self.path_input_weights(weights), xi)

    def features(self, x, *, batch_size: int = 256) -> torch.Tensor:
        """Path features of ``x`` ``[B, N0, T]`` for this network's attention, shape ``[B, N0, n_paths]``."""
        return path_features(x, self.attention, batch_size=batch_size)

    def check_features(self, features) -> torch.Tensor:
        """Return ``features`` as float64 after checking the shape ``[B, N0, n_paths]``."""
        xi = as_float64_tensor(features, "features")
        if xi.ndim != 3 or xi.shape[1:] != (self.input_width, self.num_paths):
            raise ValueError(
                f"features must have shape [B, {self.input_width}, {self.num_paths}], got {tuple(xi.shape)}"
            )
        return xi


def _as_float64_keeping_grad(value, name: str) -> torch.Tensor:
    """Like :func:`attnpaths._validation.as_float64_tensor` but without detaching: gradient-based samplers
    (NUTS in the benchmarks) differentiate the forward map with respect to the weights."""
    if not isinstance(value, torch.Tensor):
        return as_float64_tensor(value, name)
    check_real_dtype(value.dtype, name)
    tensor = value.to(device="cpu", dtype=torch.float64)
    if not torch.isfinite(tensor.detach()).all():
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return tensor


def predictor_from_input_weights(input_weights: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """``f = sum_{pi, i} w_{pi i} xi_{i pi}`` for path input weights ``[..., n, N0]`` and features ``[B, N0, n]``.

    Returns:
        ``[..., B]``.
    """
    return torch.einsum("...pi,bip->...b", input_weights, features)
