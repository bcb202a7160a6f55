"""The theory of any attention-only model whose attention is frozen: bring your own model (sec-own-model).

A trained transformer without MLPs, normalisation or residual connections computes, with its attention matrices
held fixed, a network that is linear in its value weights: its output is a sum over attention paths
``pi = (h_1, ..., h_L)`` (one head per layer) of the input routed along that path. The theory of the book
(eq-action, sec-minimum) then applies as it does to the paper's networks: the path features of the training data
(eq-path-features) define a kernel renormalised by the order parameter ``U`` (eq-kernel), whose value at the
minimum of the action (eq-action) gives the finite-width predictor (eq-predictor), ``U = I`` the GP limit
(eq-gp), and ``U`` scores every head (eq-head-score).

In words: the action is, up to constants, ``-2 log`` of the Bayesian evidence of the data for the network whose
value weights are learned and whose attention is fixed, as a function of ``U``, the overlaps of the value weights
along each pair of paths; the predictor is kernel regression with the path kernel weighted by ``U``, and a head's
score is the total ``|U|`` of the path pairs through it. The book (``book/theory.md``, sections "The action" and
"Head scores") derives them.

Three doors, one result (:class:`AttentionTheory`):

* :func:`theory_from_attention` takes what any attention model can return, the attention matrices of each layer
  in PyTorch's layout, and the token inputs;
* :func:`rank_heads` takes the model itself, any object with a method ``attention_weights(tokens)``
  (:class:`attnpaths.head_models.HeadModel`), and calls :func:`theory_from_attention` with what it returns;
* :func:`theory_from_statistics` takes the Gram statistics of as many examples as time allows, accumulated batch
  by batch from a model's attention and tokens (:func:`attnpaths.attention_batches.attention_statistics`, in
  this process or on the engine): the same checks of every batch, the same result, in memory that does not grow
  with the number of examples.

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

import numpy as np
import torch
from numpy.typing import ArrayLike

from ._validation import as_float64_tensor, float_eps, increasing_reals, positive_int, positive_real
from .attention import READOUTS, token_readout
from .gram import GramStatistics
from .head_models import HeadModel
from .head_scoring import head_labels, head_scores, pruning_order
from .paths import features_along_paths
from .theory import CertificateWarning, TheorySolution, solve, solve_from_statistics

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


AUTO_TEMPERATURES = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
"""The temperatures that ``temperature="auto"`` tries (those of the pruning chapter). The action at the certified
minimum, ``S(U*)``, is the saddle-point estimate of ``-2 log p(y | x, T)`` up to terms that do not depend on ``T``,
save the fluctuation term (the log-determinant of the action's Hessian): the rule "smallest action" uses the
training data only and is a heuristic, whose sensitivity :attr:`AttentionTheory.scan` shows."""


@dataclass(frozen=True, eq=False)
class AttentionTheory:
    """The theory of a model with frozen attention (sec-own-model): what :func:`theory_from_attention` and
    :func:`rank_heads` return.

    Attributes:
        heads: ``(H_1, ..., H_L)``.
        readout: how the last layer is read out (``"last_token"``, ``"first_token"`` or ``"average_pooling"``).
        solution: the minimiser of the action at the given width and the chosen temperature
            (:class:`attnpaths.theory.TheorySolution`: ``U``, the action, its certificate, the predictor).
        gp: the GP limit at the same temperature (``U = I``, eq-gp).
        num_examples: ``P``, the training examples.
        input_width: ``D``, the width of the tokens (the theory's ``N0``).
        features: ``[P, D, n_paths]`` the training data's path features (eq-path-features); None where the theory
            was solved from their Gram statistics (:func:`theory_from_statistics`).
        temperature: the temperature of ``solution`` (the one given, or the one chosen from a grid).
        scan: every temperature tried, ``{"temperatures": [n_T], "action": [n_T], "converged": [n_T],
            "head_scores": [n_T, L, max(H)]}`` (one entry when one temperature was given).
        solutions: the theory at every temperature of ``scan``, certified or not.
    """

    heads: tuple[int, ...]
    readout: str
    solution: TheorySolution
    gp: TheorySolution
    num_examples: int
    input_width: int
    features: torch.Tensor | None
    temperature: float
    scan: dict
    solutions: tuple

    def __repr__(self) -> str:
        # the fields hold the training features and three copies of U: a summary reads better than thousands of numbers
        n = self.U.shape[0]
        return (
            f"AttentionTheory(heads={self.heads}, readout={self.readout!r}, P={self.num_examples}, "
            f"D={self.input_width}, width={self.solution.arch.widths}, temperature={self.temperature:g} "
            f"(of {len(self.scan['temperatures'])} tried), converged={bool(self.solution.converged)}, "
            f"U=[{n}, {n}], head_scores={np.round(self.head_scores, 3).tolist()})"
        )

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
        """Labels ``"(l)h"`` (1-based) that line up with ``head_scores.ravel()`` (``""`` beyond a layer's heads,
        :func:`attnpaths.head_scoring.head_labels`)."""
        return head_labels(self.heads)

    @property
    def pruning_order(self) -> list[tuple[int, int]]:
        """Every head ``(layer, head)``, 0-based, in ascending head score: the order in which the theory prunes
        them (:func:`attnpaths.head_scoring.pruning_order`)."""
        return pruning_order(self.head_scores)

    @property
    def certificate(self) -> dict:
        """Whether the solver's answer is a certified minimum of the action, as a dict with ``converged`` (the
        stopping rule held and the Hessian in symmetric directions is positive definite), ``gradient_norm``,
        ``hessian_min_eigenvalue``, ``iterations`` and the ``action`` there."""
        s = self.solution
        return {
            "converged": bool(s.converged),
            "gradient_norm": float(s.gradient_norm),
            "hessian_min_eigenvalue": float(s.hessian_min_eigenvalue),
            "iterations": int(s.iterations),
            "action": float(s.action),
        }

    def features_of(self, attention: Sequence[ArrayLike], tokens: ArrayLike = None) -> torch.Tensor:
        """``[B, D, n_paths]`` path features (eq-path-features) of new examples, given their attention and tokens
        in the layout and order of :func:`theory_from_attention` (PyTorch's; :func:`attnpaths.paths.path_features`
        is the same in the library's layout, from an :class:`attnpaths.attention.Attention`)."""
        if tokens is None:
            raise TypeError(
                "the theory's predictions need the new examples' attention and their tokens: "
                "predict(attention, tokens), with attention = model.attention_weights(tokens) for a model "
                "(attnpaths.head_models.HeadModel), as theory_from_attention takes them"
            )
        matrices, x = checked_attention(attention, tokens, self.readout)
        if tuple(m.shape[1] for m in matrices) != self.heads:
            raise ValueError(
                f"attention must have the heads {self.heads} of the training data, "
                f"got {tuple(m.shape[1] for m in matrices)}"
            )
        return features_along_paths(x, matrices)

    def predict(self, attention: Sequence[ArrayLike], tokens: ArrayLike = None) -> tuple[np.ndarray, np.ndarray]:
        """Finite-width predictor mean and variance (eq-predictor) on new examples: ``([B], [B])``."""
        return self.solution.predict(self.features_of(attention, tokens))

    def predict_gp(self, attention: Sequence[ArrayLike], tokens: ArrayLike = None) -> tuple[np.ndarray, np.ndarray]:
        """GP-limit predictor mean and variance (eq-gp) on new examples: ``([B], [B])``."""
        return self.gp.predict(self.features_of(attention, tokens))


def checked_attention(
    attention: Sequence[ArrayLike], tokens: ArrayLike, readout: str
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The attention as the package's matrices (``[B, H, key, query]``, the last layer read out) and the
    tokens as ``[B, D, T]`` float64, after checking their shapes and that the attention rows sum to one."""
    if readout not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
    x = as_float64_tensor(tokens, "tokens")
    if x.ndim != 3 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"tokens must have shape [B, T, D] (batch, token, feature), got {tuple(x.shape)}")
    batch, length = x.shape[0], x.shape[1]
    if isinstance(attention, torch.Tensor) or not isinstance(attention, Sequence) or len(attention) == 0:
        raise ValueError(
            f"attention must be a list with one [B, H, T, T] tensor per layer, got {type(attention).__name__}"
        )
    matrices = []
    for layer, weights in enumerate(attention):
        tolerance = row_sum_tolerance(weights)
        w = as_float64_tensor(weights, f"attention[{layer}]")  # float64 before the row sums
        if w.ndim != 4 or w.shape[0] != batch or w.shape[2:] != (length, length) or w.shape[1] < 1:
            raise ValueError(
                f"attention[{layer}] must have shape [B, H, T, T] = [{batch}, H, {length}, {length}] "
                f"(batch, head, query, key; tokens are [B, T, D]), got {tuple(w.shape)}"
            )
        deviation = float((w.sum(dim=-1) - 1.0).abs().max())
        if not deviation <= tolerance or bool((w < 0).any()):
            raise ValueError(
                f"attention[{layer}] must hold softmax weights over the keys in its last axis "
                f"(PyTorch's [batch, head, query, key] layout): its rows sum to one within "
                f"{tolerance:.3g} only off by {deviation:.3g}, or it has negative entries"
            )
        matrices.append(w.transpose(-1, -2))  # [B, H, key, query]: the package's layout (sec-model-network)
    matrices[-1] = token_readout(matrices[-1], readout)
    return matrices, x.transpose(1, 2)


ZERO_ONE_TARGETS = (
    "targets hold only 0 and 1: the theory's targets are real numbers, +-1 for two classes; pass 2 * targets - 1"
)


def checked_targets(targets: ArrayLike, batch: int) -> torch.Tensor:
    """``targets`` as float64 ``[B]``: real numbers (e.g. ``+-1`` labels), one per example. Targets that take only
    the values 0 and 1 are refused: the theory regresses on the targets, so 0/1 class labels would change its
    answer (the head scores too) against ``+-1`` labels of the same classes; map them with ``2 * y - 1``."""
    y = as_float64_tensor(targets, "targets", labels=True)
    if y.shape != (batch,):
        raise ValueError(f"targets must have shape [B] = [{batch}] (one per sequence of tokens), got {tuple(y.shape)}")
    values = torch.unique(y)
    if values.numel() == 2 and bool((values == torch.tensor([0.0, 1.0], dtype=torch.float64)).all()):
        raise ValueError(ZERO_ONE_TARGETS)
    return y


def _temperature_grid(temperature) -> list[float]:
    """``temperature`` as the list of temperatures to try: one, an increasing grid, or :data:`AUTO_TEMPERATURES`."""
    if isinstance(temperature, str):
        if temperature != "auto":
            raise ValueError(
                f"temperature must be a number > 0, an increasing sequence of them or 'auto', got {temperature!r}"
            )
        return list(AUTO_TEMPERATURES)
    if np.ndim(temperature) == 0:
        return [positive_real(temperature, "temperature")]
    return [float(T) for T in increasing_reals(temperature, "temperature")]


def theory_from_attention(
    attention: Sequence[ArrayLike],
    tokens: ArrayLike,
    targets: ArrayLike,
    *,
    width: float | Sequence[float],
    temperature: float | Sequence[float] | str = "auto",
    readout: str = "average_pooling",
    variances: float | Sequence[float] = 1.0,
    max_iterations: int = 200,
    initial=None,
) -> AttentionTheory:
    """The theory of an attention-only model whose per-layer attention is frozen at ``attention`` (sec-own-model).

    Builds the path features of the training data (eq-path-features: each example's tokens routed along every
    attention path, one head per layer) from the given attention, minimises the action (eq-action: the
    Bayesian evidence, as a function of the order parameter ``U``) at ``width`` and ``temperature``
    (:func:`attnpaths.theory.solve`), and solves the GP limit (eq-gp: ``U = I``) at the same temperature.

    Given several temperatures (a grid, or ``"auto"``), the theory is solved at each, from the GP values (or
    ``initial``) at the first and then from the certified minimum of the temperature before, and the temperature
    with the smallest action at its certified minimum is kept (:data:`AUTO_TEMPERATURES` says why and what the
    rule neglects); :attr:`AttentionTheory.scan` holds every temperature's action and head scores.

    Args:
        attention: ``L`` tensors ``[B, H_l, T, T]`` (batch, head, query, key), rows summing to one over the keys:
            what ``torch.nn.MultiheadAttention(..., need_weights=True, average_attn_weights=False)`` returns,
            in any real floating dtype (converted to float64 first; float16 and bfloat16 rows are checked to
            their precision, :func:`row_sum_tolerance`).
        tokens: ``[B, T, D]`` the token inputs of the first layer (batch first, PyTorch's layout).
        targets: ``[B]`` real targets: ``+-1`` labels for two classes (0/1 labels are refused,
            :func:`checked_targets`; booleans too).
        width: the theory's width ``N`` (``>= 1``): the number of units of each head's value map in every layer of
            the theory's network, or ``(N_1, ..., N_L, N_a)`` per layer and readout. The theory departs from its GP
            limit by terms of order ``P / N`` (``P`` training examples); for a trained model, its embedding
            width ``D`` is the natural value, and the finite-width effects are strongest where ``N`` is
            comparable with ``P``.
        temperature: ``T > 0``, the likelihood variance (eq-action); a strictly increasing sequence of them; or
            ``"auto"`` (:data:`AUTO_TEMPERATURES`, the default of every door).
        readout: ``"average_pooling"`` (mean over tokens), ``"last_token"`` or ``"first_token"``.
        variances: prior variances, a number or ``(s0, s1, ..., sL, sa)``.
        max_iterations: Newton iteration cap of the solver (an integer >= 1).
        initial: the starting point ``[U_1, ..., U_L]`` of the first temperature's solve (e.g. the minimum of
            another width: fewer Newton steps to the same minimum); default: the GP values.

    Returns:
        :class:`AttentionTheory`. With one temperature, an uncertified minimum (see
        :attr:`AttentionTheory.certificate`) warns with :class:`attnpaths.theory.CertificateWarning`; with several,
        uncertified ones are never chosen, and ``RuntimeError`` is raised when none is certified.
    """
    max_iterations = positive_int(max_iterations, "max_iterations")
    matrices, x = checked_attention(attention, tokens, readout)
    y = checked_targets(targets, x.shape[0])
    heads = tuple(int(m.shape[1]) for m in matrices)
    features = features_along_paths(x, matrices)

    def solve_at(**settings) -> TheorySolution:
        return solve(features, y, heads=heads, variances=variances, **settings)

    theory = _over_temperatures(solve_at, temperature, width, max_iterations, initial)
    return AttentionTheory(
        heads=heads, readout=readout, num_examples=x.shape[0], input_width=x.shape[1], features=features, **theory
    )


def theory_from_statistics(
    statistics: GramStatistics,
    *,
    width: float | Sequence[float],
    temperature: float | Sequence[float] | str = "auto",
    variances: float | Sequence[float] = 1.0,
    max_iterations: int = 200,
    initial=None,
) -> AttentionTheory:
    """The theory of a model with frozen attention from the Gram statistics of its training data (sec-own-model,
    sec-learning-curves): :func:`theory_from_attention` for as many examples as time allows.

    ``statistics`` are those of :func:`attnpaths.attention_batches.attention_statistics` (every batch checked as
    :func:`theory_from_attention` checks its data), which record the model's heads and readout. The theory is
    solved from them (:func:`attnpaths.theory.solve_from_statistics`: the same action, minimum and predictor as
    from the features, up to rounding), at every temperature as in :func:`theory_from_attention`, and the GP limit
    beside it; the result is the same :class:`AttentionTheory`, with the same head scores and predictors
    (``predict(attention, tokens)`` on new examples), without the training features.

    Args:
        statistics: :class:`attnpaths.gram.GramStatistics` of ``P >= 1`` examples that record their ``heads`` and
            ``readout``.
        width, temperature, variances, max_iterations, initial: as for :func:`theory_from_attention`.

    Raises:
        ValueError: statistics of another type, of no examples, without recorded heads or readout, or whose
            labels took only the values 0 and 1 (:func:`checked_targets`).
    """
    if not isinstance(statistics, GramStatistics):
        raise ValueError(
            f"statistics must be the GramStatistics of attnpaths.attention_batches.attention_statistics, "
            f"got {type(statistics).__name__}"
        )
    if statistics.num_examples < 1 or statistics.heads is None or statistics.readout is None:
        raise ValueError(
            "statistics must hold P >= 1 examples and record their heads and readout, as "
            "attnpaths.attention_batches.attention_statistics makes them; got "
            f"P = {statistics.num_examples}, heads={statistics.heads}, readout={statistics.readout!r}"
        )
    if statistics.label_values == (0.0, 1.0):
        raise ValueError(ZERO_ONE_TARGETS)
    max_iterations = positive_int(max_iterations, "max_iterations")

    def solve_at(**settings) -> TheorySolution:
        return solve_from_statistics(statistics, variances=variances, **settings)

    theory = _over_temperatures(solve_at, temperature, width, max_iterations, initial)
    return AttentionTheory(
        heads=statistics.heads,
        readout=statistics.readout,
        num_examples=statistics.num_examples,
        input_width=statistics.input_width,
        features=None,
        **theory,
    )


def _over_temperatures(solve_at, temperature, width, max_iterations: int, initial) -> dict:
    """The theory at every temperature of ``temperature`` (one, a grid or ``"auto"``) by ``solve_at(width=...,
    temperature=..., ...)``, each from the certified minimum before; the certified one of smallest action kept, and
    the GP limit at its temperature: the fields ``solution``, ``gp``, ``temperature``, ``scan``, ``solutions`` of
    :class:`AttentionTheory`."""
    temperatures = _temperature_grid(temperature)
    solutions, start = [], initial
    for T in temperatures:
        with warnings.catch_warnings():
            if len(temperatures) > 1:  # an uncertified point is marked in the scan, never chosen
                warnings.simplefilter("ignore", CertificateWarning)
            solutions.append(
                solve_at(width=width, temperature=T, initial=start, max_iterations=max_iterations, on_failure="warn")
            )
        if solutions[-1].converged:
            start = solutions[-1].U_layers
    if len(solutions) == 1:
        best = 0
    else:
        certified = [i for i, s in enumerate(solutions) if s.converged]
        if not certified:
            raise RuntimeError(
                f"the action's minimiser is not certified at any temperature of {temperatures} (width {width!r})"
            )
        best = min(certified, key=lambda i: solutions[i].action)
        if isinstance(temperature, str) and best in (0, len(solutions) - 1):
            # the smallest action of the grid at its edge: the minimum over T may lie beyond it
            warnings.warn(
                f"temperature='auto' chose T = {temperatures[best]:g}, at the edge of its grid {temperatures}: the "
                "action may be smaller beyond it; pass a grid that extends past it (temperature=[...])",
                UserWarning,
                stacklevel=3,
            )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificateWarning)  # the GP limit has no minimisation to certify
        gp = solve_at(width=math.inf, temperature=temperatures[best])
    heads = solutions[best].heads
    scan = {
        "temperatures": np.array(temperatures),
        "action": np.array([s.action for s in solutions]),
        "converged": np.array([bool(s.converged) for s in solutions]),
        "head_scores": np.stack([head_scores(s.U, heads) for s in solutions]),
    }
    return dict(solution=solutions[best], gp=gp, temperature=temperatures[best], scan=scan, solutions=tuple(solutions))


def model_attention(model: HeadModel, tokens: ArrayLike) -> list:
    """``model.attention_weights(tokens)`` without gradients: the attention that :func:`rank_heads` freezes.

    Raises:
        ValueError: ``model`` has no method ``attention_weights`` (:class:`attnpaths.head_models.HeadModel`).
    """
    attention_weights = getattr(model, "attention_weights", None)
    if not callable(attention_weights):
        raise ValueError(
            f"model must have a method attention_weights(tokens) returning its per-layer attention "
            f"[B, H, T, T] (attnpaths.head_models.HeadModel), got {type(model).__name__}"
        )
    with torch.no_grad():
        return attention_weights(tokens)


def rank_heads(
    model: HeadModel,
    tokens: ArrayLike,
    targets: ArrayLike,
    *,
    width: float | Sequence[float],
    temperature: float | Sequence[float] | str = "auto",
    readout: str = "average_pooling",
    variances: float | Sequence[float] = 1.0,
    max_iterations: int = 200,
    initial=None,
) -> AttentionTheory:
    """Rank the heads of a trained attention-only model by the theory's head score (eq-head-score).

    The model's attention is frozen as it computes it for ``tokens`` (``model.attention_weights(tokens)``, the
    :class:`attnpaths.head_models.HeadModel` protocol: any object with that method, e.g. your own
    ``torch.nn.Module``), and :func:`theory_from_attention` does the rest: head ``(l, h)``'s score is the total
    ``|U_{pi pi'}|`` over the path pairs that pass through it, normalised to a largest score of 1, and
    :attr:`AttentionTheory.pruning_order` prunes the lowest first.

    Args:
        model: any object with a method ``attention_weights(tokens)`` returning ``L`` tensors ``[B, H_l, T, T]``
            (batch, head, query, key), e.g. :class:`~attnpaths.transformer.SumHeadTransformer`,
            :class:`~attnpaths.attention_stack.MultiheadAttentionStack`, or a model of your own.
        tokens: ``[B, T, D]`` the training inputs; targets: ``[B]`` their targets (``+-1`` labels).
        width, temperature, readout, variances, max_iterations, initial: as for :func:`theory_from_attention`.

    Returns:
        :class:`AttentionTheory`: ``head_scores`` ``[L, max(H)]``, ``head_labels``, ``pruning_order``,
        ``temperature``, ``scan``, and the theory's predictors.
    """
    max_iterations = positive_int(max_iterations, "max_iterations")  # before the model runs
    return theory_from_attention(
        model_attention(model, tokens),
        tokens,
        targets,
        width=width,
        temperature=temperature,
        readout=readout,
        variances=variances,
        max_iterations=max_iterations,
        initial=initial,
    )
