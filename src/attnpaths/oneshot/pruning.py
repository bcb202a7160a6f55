"""Pruning the trained one-shot model by the theory's head scores (Figs. 3e and 3f; sec-oneshot-pruning).

* :func:`pruning_evaluator`, :func:`single_head_drops`: the gradient-descent model's accuracy with heads pruned
  (:class:`attnpaths.head_masks.HeadMaskEvaluator`, with the model's own rescaling of a pruned
  layer), and the drop when one head is pruned;
* :func:`prune_heads` (a :class:`PruningResult`): all of Figs. 3e and 3f, along the theory's order and random
  orders (:mod:`attnpaths.experiments.head_pruning`); :func:`forward_pass_errors` its check;
* :func:`head_relabelings`, :func:`pattern_similarity`: the comparison of two head-score patterns up to a
  relabelling of the heads within their layers.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from .._validation import as_float64_array, positive_int
from ..experiments.head_pruning import all_heads, pruning_curve, pruning_sets, random_orders
from ..experiments.head_subsets import curve_table, random_order_curve
from ..head_masks import HeadMaskEvaluator
from ..head_scoring import head_labels, pruning_order
from ..paths import all_paths
from ..transformer import SumHeadTransformer
from .sequences import Sequences
from .training import accuracy as model_accuracy
from .training import predict

#: The authors' GD model, its test accuracy and single-head pruning drops (points, heads in ascending score order)
#: as typed into their PLOT_head_scores_vs_performance_drop.py (sec-oneshot-pruning, Fig. 3e); quoted for comparison only.
AUTHORS_BASE_ACCURACY = 0.838
AUTHORS_SINGLE_HEAD_DROPS = (2.0, 0.8, 4.3, 8.4, 7.8, 7.3, 9.5, 8.9)


def pruning_evaluator(model: SumHeadTransformer, sequences: Sequences) -> HeadMaskEvaluator:
    """The accuracy of the gradient-descent model on the episodes ``sequences`` with a set of heads pruned as the
    authors' pruning script prunes them: the pruned heads' outputs set to 0 and the layer's head sum rescaled by
    ``(H - n_pruned)^{-1/2}`` (``rescale=True``), without retraining; computed in float64 (sec-oneshot-pruning)."""
    if not isinstance(model, SumHeadTransformer):
        raise ValueError(f"model must be a SumHeadTransformer, got {type(model).__name__}")
    return HeadMaskEvaluator(model, sequences.x.transpose(1, 2), sequences.y, rescale=True)


def single_head_drops(evaluator: HeadMaskEvaluator) -> dict:
    """Accuracy with each single head pruned, and the drop from the unpruned model (Fig. 3e, sec-oneshot-pruning).

    Returns:
        ``{"base": float, "accuracy": [L, H], "drop": [L, H]}`` (drops in accuracy fraction, positive = worse).
    """
    base = evaluator()
    L, H = len(evaluator.heads), max(evaluator.heads)
    acc = np.full((L, H), np.nan)
    for l, h in all_heads(evaluator.heads):
        acc[l, h] = evaluator([(l, h)])
    return {"base": base, "accuracy": acc, "drop": base - acc}


def forward_pass_errors(
    model: SumHeadTransformer, sequences: Sequences, evaluator: HeadMaskEvaluator, pruned_sets
) -> list[dict]:
    """How far the evaluator's float64 outputs (:func:`pruning_evaluator`) lie from the model's own forward pass
    (float32, :func:`attnpaths.oneshot.training.predict`) on the same episodes, for every set of pruned heads in
    ``pruned_sets``.

    Returns:
        one ``{"pruned", "output", "scale", "accuracy"}`` per set: the largest output difference, the largest
        output magnitude of the forward pass and the accuracy difference.
    """
    out = []
    for pruned in pruned_sets:
        pruned = [tuple(int(v) for v in pair) for pair in pruned]
        direct = predict(model, sequences.x, drop_heads=pruned).double().numpy()
        out.append(
            {
                "pruned": pruned,
                "output": float(np.abs(evaluator.outputs(pruned) - direct).max()),
                "scale": float(np.abs(direct).max()),
                "accuracy": abs(evaluator(pruned) - model_accuracy(model, sequences, drop_heads=pruned)),
            }
        )
    return out


@dataclass(frozen=True, eq=False)
class PruningResult:
    """Pruning the gradient-descent model without retraining (Figs. 3e and 3f, sec-oneshot-pruning).

    Attributes:
        heads: ``(H_1, ..., H_L)``; labels: head labels ``"(l)h"`` in layer-major order
            (:func:`attnpaths.head_scoring.head_labels`).
        num_episodes: episodes on which every accuracy is measured.
        scores: ``[L, H]`` the theory's head scores (sec-head-scores).
        base_accuracy: the unpruned model's accuracy.
        single_head_accuracy, single_head_drop: ``[L, H]`` accuracy with one head pruned, and its drop.
        score_order: heads ``(l, h)`` in ascending score; score_curve: ``[K + 1]`` accuracy after pruning
            ``k = 0..K`` heads along it (:func:`~attnpaths.experiments.head_pruning.pruning_curve`).
        random_orders: random orders of the heads (drawn, for the figure); random_curves: ``[n_orders, K + 1]``
            their curves.
        curve_accuracy: ``[2^n]`` accuracy of every set of pruned heads that keeps a head per layer
            (:func:`~attnpaths.experiments.head_subsets.curve_table`; 0 for the sets that empty a layer).
        random_expectation: ``[K + 1]`` the exact expected curve of a random order (eq-pruning-random).
    """

    heads: tuple
    labels: list
    num_episodes: int
    scores: np.ndarray
    base_accuracy: float
    single_head_accuracy: np.ndarray
    single_head_drop: np.ndarray
    score_order: list
    score_curve: np.ndarray
    random_orders: list
    random_curves: np.ndarray
    curve_accuracy: np.ndarray
    random_expectation: np.ndarray
    _label_of: dict = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_label_of", dict(zip(all_heads(self.heads), [l for l in self.labels if l])))

    def label(self, head) -> str:
        """The label of ``head``, a 0-based ``(layer, head)`` pair."""
        return self._label_of[tuple(int(v) for v in head)]

    @property
    def score_order_pruned(self) -> list[str]:
        """Labels of the heads pruned at steps ``1..K`` along the score order (a layer's last head is skipped)."""
        return [self.label(s[-1]) for s in pruning_sets(self.score_order, self.heads)[1:]]

    def largest_drops(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` heads whose pruning alone costs the most accuracy: ``(label, drop)``, largest first."""
        drops = self.single_head_drop.ravel()
        return [(self.labels[i], float(drops[i])) for i in np.argsort(-drops)[: positive_int(k, "k")]]

    def to_dict(self) -> dict:
        """The results-file form: accuracies and drops flat in label order, orders as labels."""
        return {
            "num_episodes": self.num_episodes,
            "base_accuracy": self.base_accuracy,
            "single_head_accuracy": self.single_head_accuracy.ravel(),
            "single_head_drop": self.single_head_drop.ravel(),
            "labels": self.labels,
            "score_order": [self.label(lh) for lh in self.score_order],
            "score_order_pruned": self.score_order_pruned,
            "score_order_accuracy": self.score_curve,
            "random_orders": [[self.label(lh) for lh in o] for o in self.random_orders],
            "random_order_accuracy": self.random_curves,
            "random_order_mean": self.random_curves.mean(axis=0),
            "random_order_sd": self.random_curves.std(axis=0, ddof=1),
            "curve_accuracy": self.curve_accuracy,
            "random_expectation": self.random_expectation,
        }


def prune_heads(
    evaluator: HeadMaskEvaluator, scores, num_random_orders: int, rng: np.random.Generator
) -> PruningResult:
    """Figs. 3e and 3f: the accuracy drop of every head pruned alone (:func:`single_head_drops`), the pruning
    curve along ascending head score (:func:`attnpaths.head_scoring.pruning_order`,
    :func:`~attnpaths.experiments.head_pruning.pruning_curve`) and those of
    ``num_random_orders`` random orders drawn from ``rng`` (:func:`~attnpaths.experiments.head_pruning.random_orders`),
    and the accuracy of every set a pruning curve can reach with the exact random expectation built from it.

    Args:
        evaluator: the model and its episodes; scores: ``[L, H]`` head scores (sec-head-scores).
    """
    scores = as_float64_array(scores, "scores")
    heads = evaluator.heads
    if scores.shape != (len(heads), max(heads)):
        raise ValueError(f"scores must have shape {(len(heads), max(heads))} (layers, heads), got {scores.shape}")
    single = single_head_drops(evaluator)
    order = pruning_order(scores)
    orders = random_orders(heads, num_random_orders, rng)
    table = curve_table(evaluator)
    return PruningResult(
        heads=tuple(heads),
        labels=head_labels(heads),
        num_episodes=evaluator.num_examples,
        scores=scores,
        base_accuracy=single["base"],
        single_head_accuracy=single["accuracy"],
        single_head_drop=single["drop"],
        score_order=order,
        score_curve=pruning_curve(evaluator, order),
        random_orders=orders,
        random_curves=np.array([pruning_curve(evaluator, o) for o in orders]),
        curve_accuracy=table,
        random_expectation=random_order_curve(table, heads),
    )


# --------------------------------------------------------------------------------------------------------
# statistics behind the verdicts


def head_relabelings(heads) -> np.ndarray:
    """Every relabelling of the heads within each layer, as a permutation of the flat path index.

    Path ``(h_1, ..., h_L)`` is sent to ``(sigma_1(h_1), ..., sigma_L(h_L))``; paths that share a head keep
    sharing one. Returns int ``[prod_l H_l!, n_paths]`` (the identity first).
    """
    heads = tuple(int(h) for h in heads)
    paths = all_paths(heads)
    index = {p: k for k, p in enumerate(paths)}
    out = []
    for sigmas in itertools.product(*(itertools.permutations(range(H)) for H in heads)):
        out.append([index[tuple(s[h] for s, h in zip(sigmas, p))] for p in paths])
    return np.array(out, dtype=int)


def pattern_similarity(U_a, U_b, heads) -> dict:
    """How similar the patterns of two order parameters are (Fig. 3c: theory vs gradient descent).

    Each matrix is divided by its largest magnitude; the statistic is the Pearson correlation of their
    upper triangles (diagonal included). Its null distribution relabels the heads of ``U_b`` within each
    layer (:func:`head_relabelings`), which keeps every structural feature of ``U_b`` (diagonal, paths
    sharing a head) and only breaks which head is which; ``p_value`` is the fraction of relabellings with a
    correlation at least as large as the observed one (the identity included, so ``p >= 1 / n_relabellings``).

    Returns:
        ``{"pearson", "pearson_offdiagonal", "p_value", "num_relabelings", "null_max", "null"}`` (``null``:
        ``[num_relabelings]`` the correlation under every relabelling, the identity first).
    """
    A, B = as_float64_array(U_a, "U_a"), as_float64_array(U_b, "U_b")
    if A.ndim != 2 or A.shape != B.shape or A.shape[0] != A.shape[1]:
        raise ValueError(f"U_a and U_b must be square matrices of the same shape, got {A.shape} and {B.shape}")
    A, B = A / np.abs(A).max(), B / np.abs(B).max()
    iu = np.triu_indices(A.shape[0])
    off = np.triu_indices(A.shape[0], k=1)

    def corr(x, y):
        x, y = x - x.mean(), y - y.mean()
        d = np.sqrt((x @ x) * (y @ y))
        return float(x @ y / d) if d > 0 else 0.0

    perms = head_relabelings(heads)
    if perms.shape[1] != A.shape[0]:
        raise ValueError(f"heads={tuple(heads)} gives {perms.shape[1]} paths, U has {A.shape[0]}")
    observed = corr(A[iu], B[iu])
    null = np.array([corr(A[iu], B[np.ix_(p, p)][iu]) for p in perms])
    return {
        "pearson": observed,
        "pearson_offdiagonal": corr(A[off], B[off]),
        "p_value": float(np.mean(null >= observed - 1e-12)),
        "num_relabelings": int(len(perms)),
        "null_max": float(null[1:].max()) if len(null) > 1 else observed,
        "null": null,
    }
