"""The theory of any attention-only model whose attention is frozen: bring your own model (sec-own-model).

A trained transformer without MLPs, normalisation or residual connections computes, with its attention matrices
held fixed, a network that is linear in its value weights: its output is a sum over attention paths
``pi = (h_1, ..., h_L)`` (one head per layer) of the input routed along that path. The theory of the book
(eq-action, sec-minimum) then applies as it does to the paper's networks: the path features of the training data
(eq-path-features) define a kernel renormalised by the order parameter ``U`` (eq-kernel), whose value at the
minimum of the action (eq-action) gives the finite-width predictor (eq-predictor), ``U = I`` the GP limit
(eq-gp), and ``U`` scores every head (eq-head-score).

:func:`theory_from_attention` takes what any attention model can return, the attention matrices of each layer
in PyTorch's layout, and the token inputs; :func:`theory_of_model` does the same for a model that exposes them
(the :class:`HeadAttentionModel` protocol).

Layout conventions (PyTorch's, not the theory's internal ones):

* tokens: ``[B, T, D]``, batch first, as ``torch.nn.MultiheadAttention(..., batch_first=True)`` takes them;
  inside the package inputs are ``[B, N0, T]`` (the authors' layout), transposed here once;
* attention of layer ``l``: ``[B, H_l, T, T]`` indexed ``[batch, head, query, key]``, rows summing to one over
  the keys, exactly what ``torch.nn.MultiheadAttention(..., need_weights=True, average_attn_weights=False)``
  returns as its second output; inside the package the same matrices are ``[B, H, key, query]``;
* the theory's network reads each layer's attention as fixed and applies it to the *token inputs*: the
  values of layer ``l`` act on the output of layer ``l - 1``, the attention does not change with the values.
  A model whose attention of layer ``l`` is computed from the output of layer ``l - 1`` (a plain stack) is
  thus described by the theory *given* its attention: exactly for the data it was evaluated on;
* the last layer's output is read out at the last token (``readout="last_token"``), at the first token, or
  averaged over tokens (``readout="average_pooling"``), as the model does.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np
import torch
from numpy.typing import ArrayLike

from ._validation import as_float64_tensor, float_eps, positive_int, positive_real
from .attention import READOUTS, token_readout
from .head_scoring import head_labels, head_scores
from .paths import features_along_paths
from .theory import CertificateWarning, TheorySolution, solve

ROW_SUM_TOLERANCE = 1e-4
"""The largest deviation from 1 allowed of a row sum of given attention weights. Float32 softmax outputs
(PyTorch's default) sum to one within about 1e-6 per row; a larger deviation means that the tensor is not softmax
weights over the last axis (e.g. the key and query axes were swapped). Weights given in a lower precision
(float16, bfloat16) are allowed :data:`ROW_SUM_EPS` machine epsilons of their dtype instead, where that is more."""

ROW_SUM_EPS = 4.0
"""How many machine epsilons of its dtype the row sums of low-precision attention may be off by. Softmax weights
rounded entry by entry to a dtype of epsilon ``eps`` sum to one within ``eps / 2`` (measured: at most ``0.41 eps`` for
float16 and bfloat16 softmax over 3 to 1024 keys), so ``4 eps`` leaves room for a model's own rounding while a
swap of the key and query axes (row sums off by order one) is still caught: ``0.03`` for bfloat16."""


def row_sum_tolerance(weights) -> float:
    """The allowed deviation from 1 of the row sums of ``weights`` as given (before their conversion to
    float64): :data:`ROW_SUM_TOLERANCE`, or :data:`ROW_SUM_EPS` epsilons of a lower-precision dtype."""
    eps = float_eps(weights)
    return ROW_SUM_TOLERANCE if eps is None else max(ROW_SUM_TOLERANCE, ROW_SUM_EPS * eps)


@runtime_checkable
class HeadAttentionModel(Protocol):
    """A model that exposes the attention of its heads (for :func:`theory_of_model`)."""

    def attention_weights(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """Per-layer attention weights for ``tokens`` ``[B, T, D]``: a list of ``L`` tensors ``[B, H_l, T, T]``
        indexed ``[batch, head, query, key]``, rows summing to one over the keys."""
        ...


@dataclass(frozen=True, eq=False)
class AttentionTheory:
    """The theory of a model with frozen attention (sec-own-model).

    Attributes:
        heads: ``(H_1, ..., H_L)``.
        readout: how the last layer is read out (``"last_token"``, ``"first_token"`` or ``"average_pooling"``).
        solution: the minimiser of the action at the given width and temperature
            (:class:`attnpaths.theory.TheorySolution`: ``U``, the action, its certificate, the predictor).
        gp: the GP limit at the same temperature (``U = I``, eq-gp).
        features: ``[P, D, n_paths]`` the training data's path features (eq-path-features).
    """

    heads: tuple[int, ...]
    readout: str
    solution: TheorySolution
    gp: TheorySolution
    features: torch.Tensor

    @property
    def U(self) -> np.ndarray:
        """``[n_paths, n_paths]`` the order parameter ``U_1`` at the minimum (paths in flat order, ``h_1``
        slowest: path ``(h_1, ..., h_L)`` has index ``((h_1 H_2 + h_2) H_3 + h_3) ...``)."""
        return self.solution.U

    @property
    def head_scores(self) -> np.ndarray:
        """``[L, max(H)]`` the head scores of ``U`` (eq-head-score), largest 1; ``nan`` beyond a layer's heads."""
        return head_scores(self.U, self.heads)

    @property
    def head_labels(self) -> list[str]:
        """Labels ``"(l)h"`` (1-based) of the heads, in the row-major order of :attr:`head_scores`."""
        return head_labels(self.heads)

    @property
    def certificate(self) -> dict:
        """Whether the solver's answer is a certified minimum of the action, as a dict with ``converged`` (the
        stopping rule held and the Hessian in symmetric directions is positive definite), ``gradient_norm``,
        ``hessian_min_eigenvalue``, ``iterations`` and the ``action`` there."""
        s = self.solution
        return {"converged": bool(s.converged), "gradient_norm": float(s.gradient_norm),
                "hessian_min_eigenvalue": float(s.hessian_min_eigenvalue), "iterations": int(s.iterations),
                "action": float(s.action)}

    def path_features(self, attention: Sequence[ArrayLike], tokens: ArrayLike) -> torch.Tensor:
        """``[B, D, n_paths]`` path features of new examples, given their attention and tokens in the layout of
        :func:`theory_from_attention`."""
        matrices, x = _checked(attention, tokens, self.readout)
        if tuple(m.shape[1] for m in matrices) != self.heads:
            raise ValueError(f"attention must have the heads {self.heads} of the training data, "
                             f"got {tuple(m.shape[1] for m in matrices)}")
        return features_along_paths(x, matrices)

    def predict(self, attention: Sequence[ArrayLike], tokens: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Finite-width predictor mean and variance (eq-predictor) on new examples: ``([B], [B])``."""
        return self.solution.predict(self.path_features(attention, tokens))

    def predict_gp(self, attention: Sequence[ArrayLike], tokens: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """GP-limit predictor mean and variance (eq-gp) on new examples: ``([B], [B])``."""
        return self.gp.predict(self.path_features(attention, tokens))


def _checked(attention: Sequence[ArrayLike], tokens: ArrayLike, readout: str) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The attention as the package's matrices (``[B, H, key, query]``, the last layer read out) and the
    tokens as ``[B, D, T]`` float64, after checking their shapes and that the attention rows sum to one."""
    if readout not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
    x = as_float64_tensor(tokens, "tokens")
    if x.ndim != 3 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"tokens must have shape [B, T, D] (batch, token, feature), got {tuple(x.shape)}")
    batch, length = x.shape[0], x.shape[1]
    if isinstance(attention, torch.Tensor) or not isinstance(attention, Sequence) or len(attention) == 0:
        raise ValueError("attention must be a list with one [B, H, T, T] tensor per layer, got "
                         f"{type(attention).__name__}")
    matrices = []
    for layer, weights in enumerate(attention):
        tolerance = row_sum_tolerance(weights)
        w = as_float64_tensor(weights, f"attention[{layer}]")  # float64 before the row sums
        if w.ndim != 4 or w.shape[0] != batch or w.shape[2:] != (length, length) or w.shape[1] < 1:
            raise ValueError(f"attention[{layer}] must have shape [B, H, T, T] = [{batch}, H, {length}, {length}] "
                             f"(batch, head, query, key; tokens are [B, T, D]), got {tuple(w.shape)}")
        deviation = float((w.sum(dim=-1) - 1.0).abs().max())
        if not deviation <= tolerance or bool((w < 0).any()):
            raise ValueError(f"attention[{layer}] must hold softmax weights over the keys in its last axis "
                             f"(PyTorch's [batch, head, query, key] layout): its rows sum to one within "
                             f"{tolerance:.3g} only off by {deviation:.3g}, or it has negative entries")
        matrices.append(w.transpose(-1, -2))  # [B, H, key, query]: the package's layout (sec-model-network)
    matrices[-1] = token_readout(matrices[-1], readout)
    return matrices, x.transpose(1, 2)


def theory_from_attention(attention: Sequence[ArrayLike], tokens: ArrayLike, targets: ArrayLike, *,
                          width: Union[float, Sequence[float]], temperature: float,
                          readout: str = "average_pooling", variances: Union[float, Sequence[float]] = 1.0,
                          max_iterations: int = 200) -> AttentionTheory:
    """The theory of an attention-only model whose per-layer attention is frozen at ``attention`` (sec-own-model).

    Builds the path features of the training data (eq-path-features) from the given attention, minimises the
    action (eq-action) at ``width`` and ``temperature`` (:func:`attnpaths.theory.solve`), and solves the GP
    limit (eq-gp) at the same temperature.

    Args:
        attention: ``L`` tensors ``[B, H_l, T, T]`` (batch, head, query, key), rows summing to one over the keys:
            what ``torch.nn.MultiheadAttention(..., need_weights=True, average_attn_weights=False)`` returns,
            in any real floating dtype (converted to float64 first; float16 and bfloat16 rows are checked to
            their precision, :func:`row_sum_tolerance`).
        tokens: ``[B, T, D]`` the token inputs of the first layer (batch first, PyTorch's layout).
        targets: ``[B]`` real targets (e.g. ``+-1`` labels as floats; booleans are refused).
        width: ``N`` of every layer (``>= 1``), or ``(N_1, ..., N_L, N_a)``.
        temperature: ``T > 0``, the likelihood variance (eq-action).
        readout: ``"average_pooling"`` (mean over tokens), ``"last_token"`` or ``"first_token"``.
        variances: prior variances, a number or ``(s0, s1, ..., sL, sa)``.
        max_iterations: Newton iteration cap of the solver (an integer >= 1).

    Returns:
        :class:`AttentionTheory`. An uncertified minimum (see :attr:`AttentionTheory.certificate`) warns with
        :class:`attnpaths.theory.CertificateWarning`.
    """
    max_iterations = positive_int(max_iterations, "max_iterations")
    matrices, x = _checked(attention, tokens, readout)
    y = as_float64_tensor(targets, "targets", labels=True)
    if y.shape != (x.shape[0],):
        raise ValueError(f"targets must have shape [B] = [{x.shape[0]}] (one per sequence of tokens), "
                         f"got {tuple(y.shape)}")
    temperature = positive_real(temperature, "temperature")
    heads = tuple(int(m.shape[1]) for m in matrices)
    features = features_along_paths(x, matrices)
    solution = solve(features, y, heads=heads, widths=width, temperature=temperature, variances=variances,
                     max_iterations=max_iterations, on_failure="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificateWarning)  # the GP limit has no minimisation to certify
        gp = solve(features, y, heads=heads, widths=math.inf, temperature=temperature, variances=variances)
    return AttentionTheory(heads=heads, readout=readout, solution=solution, gp=gp, features=features)


def theory_of_model(model: HeadAttentionModel, tokens: ArrayLike, targets: ArrayLike, **settings: Any) -> AttentionTheory:
    """:func:`theory_from_attention` with the attention that ``model`` computes for ``tokens``
    (:meth:`HeadAttentionModel.attention_weights`); ``settings`` are its keyword arguments."""
    if not isinstance(model, HeadAttentionModel):
        raise ValueError(f"model must have a method attention_weights(tokens) (HeadAttentionModel), "
                         f"got {type(model).__name__}")
    with torch.no_grad():
        attention = model.attention_weights(tokens)
    return theory_from_attention(attention, tokens, targets, **settings)
