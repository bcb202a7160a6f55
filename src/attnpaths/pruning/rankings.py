"""Head rankings of a trained model: the theory's head score and the baselines practitioners use (sec-pruning-rankings).

* :func:`theory_head_ranking`: freeze the trained model's attention, build the path features of a data set
  (eq-path-features), minimise the action at a width and temperature (eq-action) and score every head by the
  order parameter ``U`` it touches (eq-head-score);
* :func:`gradient_head_importance`: the expected absolute gradient of the loss with respect to a head-mask
  variable, normalised per layer (Michel, Levy and Neubig 2019; eq-michel-importance);
* :func:`attention_entropy`: the mean entropy of each head's attention over keys (eq-attention-entropy);
* :func:`value_norms`: the norm of each head's value map (eq-value-norm).

Every function takes the trained model itself (:class:`attnpaths.transformer.SumHeadTransformer` or
:class:`attnpaths.pruning.models.MultiheadAttentionStack`) or its :class:`~.adapters.HeadModel`, and works in
float64 on the CPU. :func:`pruning_order` turns scores into the order in which heads are pruned.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._validation import as_float64_tensor, increasing_reals, positive_int, positive_real
from ..head_scoring import head_scores
from ..experiments.head_pruning import score_order
from ..paths import all_paths, path_features
from ..theory import CertificateWarning, TheorySolution, solve
from ..transformer import SumHeadTransformer
from .adapters import HeadModel, head_model, path_outputs
from .models import MultiheadAttentionStack


def pruning_order(scores, *, prune_first: str = "lowest") -> list[tuple[int, int]]:
    """Heads ``(layer, head)`` (0-based) in the order in which they are pruned: ascending ``scores`` when
    ``prune_first="lowest"``, descending when ``"highest"``; ties in layer-major order; non-finite entries
    (layers with fewer heads) left out.

    Args:
        scores: ``[L, max(H)]``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError(f"scores must have shape [L, H], got {scores.shape}")
    if prune_first not in ("lowest", "highest"):
        raise ValueError(f"prune_first must be 'lowest' or 'highest', got {prune_first!r}")
    return score_order(scores if prune_first == "lowest" else -scores)


@dataclass(frozen=True, eq=False)
class TheoryRanking:
    """The theory's head scores of a trained model and the pruning order they give.

    Attributes:
        scores: ``[L, max(H)]`` head scores (eq-head-score), normalised to a largest score of 1.
        order: every head ``(layer, head)``, 0-based, in ascending score: the pruning order.
        solution: the theory at the minimum (:class:`attnpaths.theory.TheorySolution`) at the chosen
            temperature: ``U`` ``[n_paths, n_paths]``, its certificate, and the predictor (eq-predictor) on new
            path features.
        heads: ``(H_1, ..., H_L)``.
        temperature: the temperature of ``solution``.
        scan: every temperature tried, ``{"temperatures": [n_T], "action": [n_T], "converged": [n_T],
            "scores": [n_T, L, max(H)]}`` (a single entry when one temperature was given).
        solutions: the theory at every temperature tried (certified or not), in the order of ``scan``.
    """

    scores: np.ndarray
    order: list[tuple[int, int]]
    solution: TheorySolution
    heads: tuple[int, ...]
    temperature: float
    scan: dict[str, np.ndarray]
    solutions: tuple = ()

    @property
    def U(self) -> np.ndarray:
        """``[n_paths, n_paths]`` the order parameter ``U_1`` in flat path order (``h_1`` slowest)."""
        return self.solution.U


def theory_head_ranking(
    model: SumHeadTransformer | MultiheadAttentionStack | HeadModel,
    x: ArrayLike,
    y: ArrayLike,
    width: float | Sequence[float],
    temperature: float | Sequence[float],
    *,
    variances: float | Sequence[float] = 1.0,
    max_iterations: int = 200,
    features=None,
    initial=None,
) -> TheoryRanking:
    """Rank the heads of a trained model by the theory's head score.

    The model's attention is frozen as the model computes it (:func:`~.adapters.head_model`): the attention
    matrices ``Omega^(l,h)(x)`` of every input, from the trained query/key weights. The path features
    ``xi_pi(x^mu)`` of the data (eq-path-features) define the theory's network with that fixed attention and
    learned values; the action ``S(U)`` (eq-action) is minimised at ``width`` and ``temperature``
    (:func:`attnpaths.theory.solve`), and head ``(l, h)`` scores ``sum_{pi, pi'} |U_{pi pi'}|`` over the path
    pairs that pass through it (eq-head-score, :func:`attnpaths.head_scoring.head_scores`). Heads are pruned
    in ascending score.

    Given several temperatures, the theory is solved at each (from the GP values, or ``initial``, at the first,
    then from the certified minimum of the temperature before: a quarter fewer Newton steps on the pruning
    chapter's models, the same minima to 1e-12) and the one with the smallest action at its certified minimum
    is kept: ``S`` at the minimum is the saddle-point estimate of ``-2 log`` of the evidence ``p(y | x, T)`` up
    to terms that do not depend on ``T`` (sec-pruning-rankings), so the choice uses the training data only.

    Args:
        model: a trained :class:`~attnpaths.transformer.SumHeadTransformer` or
            :class:`~attnpaths.pruning.models.MultiheadAttentionStack`, or its :class:`~.adapters.HeadModel`.
        x: ``[P, N0, T]`` the theory's training inputs (the raw input tokens of the model).
        y: ``[P]`` their labels (``+-1``).
        width: ``N`` of every layer (a number >= 1), or ``(N_1, ..., N_L, N_a)``.
        temperature: ``T > 0``, the likelihood variance, or a strictly increasing sequence of them.
        variances: prior variances, a number or ``(s0, s1, ..., sL, sa)``.
        max_iterations: Newton iteration cap of the solver.
        features: the path features of ``x`` through the model's frozen attention (``[P, N0, n_paths]``,
            :func:`attnpaths.paths.path_features` ``(x, head_model(model))``), where the caller has them already;
            by default they are computed.
        initial: the starting point ``[U_1, ..., U_L]`` of the first temperature's solve (e.g. the minimum at
            another width: half the Newton steps of the GP values on the pruning chapter's models, the same minima
            to 1e-12); default: the GP values.

    Returns:
        :class:`TheoryRanking`. Raises ``RuntimeError`` when no temperature gives a certified minimum.
    """
    max_iterations = positive_int(max_iterations, "max_iterations")
    view = head_model(model)
    if np.ndim(temperature) == 0:
        temperatures = [positive_real(temperature, "temperature")]
    else:
        temperatures = [float(T) for T in increasing_reals(temperature, "temperature")]
    x = as_float64_tensor(x, "x")
    if features is None:
        features = path_features(x, view)  # [P, N0, n_paths]; the view has the interface of an Attention
    else:
        features = as_float64_tensor(features, "features")
        if features.shape != (x.shape[0], view.input_width, view.num_paths):
            raise ValueError(f"features must have shape [{x.shape[0]}, {view.input_width}, {view.num_paths}] (the "
                             f"path features of x), got {tuple(features.shape)}")
    solutions, start = [], initial
    for T in temperatures:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificateWarning)  # an uncertified point is marked, never chosen
            solutions.append(solve(features, y, heads=view.heads, widths=width, temperature=T, variances=variances,
                                   initial=start, max_iterations=max_iterations, on_failure="warn"))
        if solutions[-1].converged:
            start = solutions[-1].U_layers
    certified = [i for i, s in enumerate(solutions) if s.converged]
    if not certified:
        raise RuntimeError(f"the action's minimiser is not certified at any temperature of {temperatures} "
                           f"(width {width!r})")
    best = min(certified, key=lambda i: solutions[i].action)
    all_scores = np.stack([head_scores(s.U, view.heads) for s in solutions])
    scan = {"temperatures": np.array(temperatures), "action": np.array([s.action for s in solutions]),
            "converged": np.array([s.converged for s in solutions]), "scores": all_scores}
    return TheoryRanking(scores=all_scores[best], order=pruning_order(all_scores[best]), solution=solutions[best],
                         heads=view.heads, temperature=temperatures[best], scan=scan,
                         solutions=tuple(solutions))


class GateGradients:
    """Each example's gradient of the training loss ``(f(x^mu) - y^mu)^2`` with respect to the head gates
    ``xi_{l,h}`` (eq-michel-importance), at any mask, for one model and one data set.

    A model whose output is multilinear in its gates (:attr:`~.adapters.HeadModel.multilinear_in_mask`: the
    summed-head model) is run once, path by path (:func:`~.adapters.path_outputs`); the gradients at every mask
    are then sums over the paths, ``d f / d xi_{l,h} = sum_{pi: pi_l = h} c_pi prod_{l' != l} xi_{l', pi_l'}``.
    Any other model takes one backward pass per mask and batch.

    Args:
        model: a trained model or its :class:`~.adapters.HeadModel`; x: ``[P, N0, T]``; y: ``[P]``.
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
            chunks = [path_outputs(self.view, self.x[start:start + self.batch_size])
                      for start in range(0, self.x.shape[0], self.batch_size)]
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
                others = torch.cat([gates[:, :l], gates[:, l + 1:]], dim=1).prod(dim=1)  # [n_paths]
                through = torch.nn.functional.one_hot(self._path_heads[:, l], H).to(torch.float64)  # [n_paths, H]
                gradient[:, l] = (self._paths * others) @ through
            return 2.0 * error[:, None, None] * gradient
        rows = []
        for start in range(0, self.x.shape[0], self.batch_size):
            xb, yb = self.x[start:start + self.batch_size], self.y[start:start + self.batch_size]
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
        model: a trained model or its :class:`~.adapters.HeadModel`.
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
        model: a trained model or its :class:`~.adapters.HeadModel`; x: ``[B, N0, T]``.

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


__all__ = ["GateGradients", "HeadModel", "TheoryRanking", "attention_entropy", "gradient_head_importance",
           "pruning_order", "theory_head_ranking", "value_norms"]
