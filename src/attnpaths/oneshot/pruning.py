"""Pruning the trained one-shot model by the theory's head scores (Figs. 3e and 3f; sec-oneshot-pruning): the model's
accuracy with heads pruned (:class:`attnpaths.head_masks.HeadMaskEvaluator`, with the model's own rescaling of a
pruned layer) along the theory's order and random orders; whether pruning the lowest-score heads costs little, without
and after brief fine-tuning, with paired standard errors (sec-oneshot-little-loss); and the comparison of two
head-score patterns up to a relabelling of the heads within their layers.
"""

from __future__ import annotations

import gc
import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .._validation import as_float64_array, int_at_least, positive_int
from ..engine import experiment_generator, map_tasks, single_threaded
from ..experiments.head_pruning import all_heads, pruning_curve, pruning_sets, random_orders
from ..experiments.head_subsets import (
    allowed_subsets,
    curve_table,
    random_order_curve,
    random_order_weights,
    subset_masks,
)
from ..head_masks import HeadMaskEvaluator
from ..head_scoring import head_labels, pruning_order
from ..paths import all_paths
from ..transformer import SumHeadTransformer
from .sequences import Sequences
from .training import TrainedModel, fine_tune_pruned, predict
from .training import accuracy as model_accuracy

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


def subset_accuracy_table(model: SumHeadTransformer, sequences: Sequences, *, chunk_size: int = 1000) -> np.ndarray:
    """The accuracy of the gradient-descent model on ``sequences`` with every set of heads pruned that a pruning curve
    can reach (:func:`~attnpaths.experiments.head_subsets.curve_table` of :func:`pruning_evaluator`), computed on
    chunks of at most ``chunk_size`` episodes and weighted by their sizes: the evaluator keeps the earlier layers'
    activations of its episodes for each set pruned below, and a chunk's are freed before the next is evaluated, so
    the memory does not grow with the number of episodes.

    Returns:
        float64 ``[2^n]`` (0 for the sets that empty a layer), the same numbers as one evaluator over all the
        episodes up to rounding.
    """
    chunk_size = positive_int(chunk_size, "chunk_size")
    B = int(sequences.y.shape[0])
    table = None
    for start in range(0, B, chunk_size):
        stop = min(start + chunk_size, B)
        evaluator = HeadMaskEvaluator(
            model, sequences.x[start:stop].transpose(1, 2), sequences.y[start:stop], rescale=True
        )
        part = curve_table(evaluator) * ((stop - start) / B)
        table = part if table is None else table + part
        # the evaluator refers to itself (its bound output method), so only the cycle collector frees its activations
        del evaluator
        gc.collect()
    return table


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

    def summary(self) -> dict:
        """The numbers that the one-shot chapter's prose quotes (sec-oneshot-pruning), accuracies in %: ``P_prune``
        (episodes), ``base_acc`` (the unpruned model), ``num_random`` (random orders drawn), ``max_pruned`` (heads
        pruned at the end of a curve), ``curve_end_score`` and ``curve_end_random`` (the accuracy there along the
        score order and, averaged, along the drawn random orders), as ``{name: int | float}``.
        """
        return {
            "P_prune": int(self.num_episodes),
            "base_acc": 100 * self.base_accuracy,
            "num_random": len(self.random_orders),
            "max_pruned": int(len(self.score_curve) - 1),
            "curve_end_score": 100 * self.score_curve[-1],
            "curve_end_random": 100 * self.random_curves[:, -1].mean(),
        }

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
# little loss: absolute accuracy after pruning the lowest-score heads, without and after fine-tuning


def _variance_shares(correct, reference) -> tuple[np.ndarray, float, float | None]:
    """The per-episode differences ``mean_s c_si - r_i`` ``[B]`` of ``correct`` (``[B]`` or ``[S, B]``) from
    ``reference`` (``[B]``, ``B >= 2``), and the episodes' and the seeds' shares of their mean's variance (the
    seeds' ``None`` for one model)."""
    r = as_float64_array(reference, "reference", ndim=1)
    c = as_float64_array(correct, "correct")
    if c.ndim == 1:
        c = c[None]
    if c.ndim != 2 or c.shape[1] != r.size:
        raise ValueError(f"correct must have shape [B] or [S, B] with B = {r.size}, got {tuple(c.shape)}")
    if r.size < 2:
        raise ValueError(f"reference must hold at least 2 episodes, got {r.size}")
    per_episode = c.mean(axis=0) - r
    v_s = c.mean(axis=1).var(ddof=1) / c.shape[0] if c.shape[0] > 1 else None
    return per_episode, per_episode.var(ddof=1) / r.size, v_s


def paired_difference(correct, reference) -> tuple[float, float]:
    """The accuracy difference of a model against a reference on the same episodes, and its standard error
    (sec-oneshot-little-loss).

    Args:
        correct: ``[B]`` (one model) or ``[S, B]`` (``S >= 2`` fine-tuning seeds of one model) per-episode
            correctness, 1 or 0.
        reference: ``[B]`` the reference model's correctness on the same episodes.

    Returns:
        ``(estimate, se)``. One model: ``estimate = mean_i (c_i - r_i)`` and ``se = sd_i(c_i - r_i) / sqrt(B)``, the
        paired (McNemar) standard error over the episodes, drawn independently from the test classes. ``S`` seeds:
        ``estimate = mean_{s,i} (c_si - r_i)`` and ``se^2 = var_i(mean_s c_si - r_i) / B + var_s(mean_i c_si) / S``:
        the first term is the episodes' share, the second the seeds' (each sample variance with ``ddof = 1``).
        Under the crossed random-effects model ``c_si - r_i = mu + e_i + s_s + (es)_si`` each term also holds the
        interaction's ``var((es)) / (B S)``, so the sum counts it twice: a conservative standard error.
    """
    per_episode, v_e, v_s = _variance_shares(correct, reference)
    return float(per_episode.mean()), float(math.sqrt(v_e if v_s is None else v_e + v_s))


def paired_difference_df(correct, reference) -> float:
    """The degrees of freedom of :func:`paired_difference`'s standard error (Welch-Satterthwaite): ``B - 1`` for one
    model; for ``S`` seeds ``(v_e + v_s)^2 / (v_e^2 / (B - 1) + v_s^2 / (S - 1))`` with ``v_e`` and ``v_s`` the
    episodes' and the seeds' shares of the variance. With few seeds and a seeds' share that dominates, this is near
    ``S - 1``: the test must then use Student's t, not the normal law."""
    per_episode, v_e, v_s = _variance_shares(correct, reference)
    B = per_episode.size
    if v_s is None:
        return float(B - 1)
    S = len(correct)  # [S, B]
    denominator = v_e**2 / (B - 1) + v_s**2 / (S - 1)
    return float((v_e + v_s) ** 2 / denominator) if denominator > 0 else float(B - 1)


def fine_tuned_correct(
    pruned,
    seed: int,
    identity: tuple,
    *,
    trained: TrainedModel,
    train_classes,
    sequences: Sequences,
    steps: int,
    batch_size: int | None = None,
    learning_rate: float | None = None,
) -> dict:
    """One engine task of :func:`fine_tune_pruned_sets`: fine-tune ``trained`` with ``pruned`` pruned
    (:func:`attnpaths.oneshot.training.fine_tune_pruned`, episodes from ``experiment_generator(seed, *identity)``,
    one thread everywhere: :func:`attnpaths.engine.single_threaded`) and evaluate it on ``sequences`` with those heads
    pruned, by its own float32 forward pass (``drop_heads``; the float64 evaluation of :func:`pruning_evaluator` agrees
    with it up to outputs within float32 rounding of 0, and would keep every layer's activations in memory).

    Returns:
        ``{"pruned", "correct": [B] (1 or 0), "accuracy", "losses": [steps]}``.
    """
    with single_threaded():
        tuned = fine_tune_pruned(
            trained,
            train_classes,
            pruned,
            steps=steps,
            rng=experiment_generator(seed, *identity),
            batch_size=batch_size,
            learning_rate=learning_rate,
        )
        outputs = predict(tuned.model, sequences.x.to(torch.float32), drop_heads=tuned.pruned).double()
        correct = (torch.sign(outputs) == sequences.y.double()).double().numpy()
    return {"pruned": tuned.pruned, "correct": correct, "accuracy": float(correct.mean()), "losses": tuned.losses}


def fine_tune_pruned_sets(
    trained: TrainedModel,
    train_classes,
    sequences: Sequences,
    pruned_sets: dict,
    *,
    num_seeds: int,
    seed: int,
    steps: int,
    batch_size: int | None = None,
    learning_rate: float | None = None,
    progress: bool = False,
) -> dict:
    """Brief fine-tuning of ``trained`` with each set of heads of ``pruned_sets`` pruned, from ``num_seeds`` seeds
    each, one engine task per (set, seed) (:func:`attnpaths.engine.map_tasks`; sec-oneshot-little-loss).

    Args:
        pruned_sets: ``{k: pruned}``: a key (e.g. the number of heads pruned) and its 0-based ``(layer, head)``
            pairs; the episodes of seed ``s`` come from ``experiment_generator(seed, k, s)``.
        sequences: the episodes on which every fine-tuned model is evaluated (e.g. those of
            :func:`pruning_evaluator`).

    Returns:
        ``{k: {"pruned", "correct": [S, B] (1 or 0), "accuracy": [S], "losses": [S, steps]}}``.
    """
    num_seeds = positive_int(num_seeds, "num_seeds")
    seed = int_at_least(seed, "seed", 0)
    keys = [int_at_least(k, "pruned_sets keys", 0) for k in pruned_sets]
    tasks = [dict(pruned=tuple(pruned_sets[k]), identity=(k, s)) for k in keys for s in range(num_seeds)]
    results = map_tasks(
        fine_tuned_correct,
        tasks,
        shared=dict(
            seed=seed,
            trained=trained,
            train_classes=train_classes,
            sequences=sequences,
            steps=positive_int(steps, "steps"),
            batch_size=batch_size,
            learning_rate=learning_rate,
        ),
        description="one-shot model: fine-tuning pruned models",
        progress=progress,
    )
    out = {}
    for i, k in enumerate(keys):
        runs = results[i * num_seeds : (i + 1) * num_seeds]
        out[k] = {
            "pruned": runs[0]["pruned"],
            "correct": np.array([r["correct"] for r in runs]),
            "accuracy": np.array([r["accuracy"] for r in runs]),
            "losses": np.array([r["losses"] for r in runs]),
        }
    return out


@dataclass(frozen=True, eq=False)
class LittleLoss:
    """Absolute accuracy of the gradient-descent model after pruning ``k`` heads along the theory's order, without
    and after brief fine-tuning, against the unpruned model and the other orders (sec-oneshot-little-loss).

    Every accuracy is on the same episodes; every difference is paired over them (:func:`paired_difference`).

    Attributes:
        ks: ``[m]`` the numbers of heads pruned that are asked about.
        num_episodes: ``B``; num_seeds: ``S`` fine-tuning seeds.
        base_accuracy, base_se: the unpruned model's accuracy and its binomial standard error over the episodes.
        score_sets: the heads pruned along the score order at each ``k`` (labels).
        pruned_accuracy, pruned_difference, pruned_se: ``[m]`` accuracy without fine-tuning, its difference from
            the unpruned model and the difference's standard error.
        random_accuracy: ``[m]`` the exact expected accuracy of a uniformly random order (eq-pruning-random);
            minus_random, minus_random_se: ``[m]`` the score order's accuracy minus it, and the standard error over
            the episodes of that difference (the expectation's per-episode weights are exact).
        best_accuracy: ``[m]`` the best accuracy over every allowed set of ``k`` pruned heads (eq-pruning-ceiling),
            chosen on these episodes (so optimistic); best_sets: their heads (labels); minus_best, minus_best_se:
            ``[m]`` the score order's accuracy minus the best, and its paired standard error.
        tuned_accuracy: ``[m, S]`` accuracy after fine-tuning (per seed); tuned_difference, tuned_se: ``[m]`` the
            mean over seeds minus the unpruned accuracy, and its standard error over episodes and seeds; tuned_df:
            ``[m]`` the degrees of freedom of that standard error (:func:`paired_difference_df`).
        control_accuracy: ``[S]`` the unpruned model after the same fine-tuning (``None`` if not run);
            control_difference, control_se: its difference from the unpruned model and the standard error.
        losses: ``{k: [S, steps]}`` the fine-tuning losses (``k = 0``: the control).
    """

    ks: tuple
    num_episodes: int
    num_seeds: int
    base_accuracy: float
    base_se: float
    score_sets: list
    pruned_accuracy: np.ndarray
    pruned_difference: np.ndarray
    pruned_se: np.ndarray
    random_accuracy: np.ndarray
    minus_random: np.ndarray
    minus_random_se: np.ndarray
    best_accuracy: np.ndarray
    best_sets: list
    minus_best: np.ndarray
    minus_best_se: np.ndarray
    tuned_accuracy: np.ndarray
    tuned_difference: np.ndarray
    tuned_se: np.ndarray
    tuned_df: np.ndarray
    control_accuracy: np.ndarray | None
    control_difference: float | None
    control_se: float | None
    losses: dict

    def summary(self) -> dict:
        """The numbers that the one-shot chapter's prose quotes (sec-oneshot-little-loss), accuracies and changes in
        points: ``ll_seeds`` (fine-tuning seeds), ``ll_base`` (the unpruned model) and, where the control was run,
        ``ll_control`` (its mean accuracy over the seeds), ``ll_control_diff`` and ``ll_control_se`` (its change from
        the unpruned model and the change's standard error), as ``{name: int | float}``.
        """
        out = {"ll_seeds": self.num_seeds, "ll_base": 100 * self.base_accuracy}
        if self.control_accuracy is not None:
            out["ll_control"] = 100 * float(self.control_accuracy.mean())
            out["ll_control_diff"] = 100 * self.control_difference
            out["ll_control_se"] = 100 * self.control_se
        return out

    def to_dict(self) -> dict:
        """The results-file form (accuracies and differences as fractions, heads as labels)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "losses"}
        out["ks"] = list(self.ks)
        out["tuned_mean_accuracy"] = self.tuned_accuracy.mean(axis=1)
        out["final_loss"] = {str(k): v[:, -1] for k, v in self.losses.items()}
        return out


def _checked_ks(pruning: PruningResult, ks, fine_tuned: dict) -> tuple[tuple[int, ...], list]:
    """``ks`` as integers and the score order's pruned sets, each ``k`` checked against them and ``fine_tuned``."""
    sets = pruning_sets(pruning.score_order, pruning.heads)
    ks = tuple(int(k) for k in ks)
    if not ks or any(not 1 <= k < len(sets) for k in ks):
        raise ValueError(f"ks must hold numbers of pruned heads in 1..{len(sets) - 1}, got {ks!r}")
    missing = [k for k in ks if k not in fine_tuned]
    if missing:
        raise ValueError(f"fine_tuned must hold the models fine-tuned at every k of ks, missing {missing}")
    for k in ks:
        if set(fine_tuned[k]["pruned"]) != set(sets[k]):
            raise ValueError(
                f"fine_tuned[{k}] must prune the score order's heads {sets[k]}, got {fine_tuned[k]['pruned']}"
            )
    return ks, sets


def _little_loss_row(evaluator, pruning: PruningResult, score_set, k: int, base, tuned: dict) -> dict:
    """The fields of :class:`LittleLoss` at one ``k``: the score order's set ``score_set`` against the unpruned
    model (``base``: its correctness), the exact random-order expectation and the best set of ``k`` heads, and the
    fine-tuned models ``tuned``."""
    heads = pruning.heads
    pairs, masks = all_heads(heads), subset_masks(heads)

    def members(m):
        return [pairs[i] for i in np.flatnonzero(masks[m])]

    score = evaluator.correct(score_set)
    weights = random_order_weights(heads)[k]
    random_correct = sum(w * evaluator.correct(members(m)) for m, w in enumerate(weights) if w > 0)
    candidates = np.flatnonzero(allowed_subsets(heads) & (masks.sum(axis=1) == k))
    best_m = candidates[np.argmax([pruning.curve_accuracy[m] for m in candidates])]
    row = {"pruned_accuracy": score.mean(), "random_accuracy": random_correct.mean()}
    row["pruned_difference"], row["pruned_se"] = paired_difference(score, base)
    row["minus_random"], row["minus_random_se"] = paired_difference(score, random_correct)
    row["best_accuracy"] = pruning.curve_accuracy[best_m]
    row["best_sets"] = [pruning.label(lh) for lh in members(best_m)]
    row["minus_best"], row["minus_best_se"] = paired_difference(score, evaluator.correct(members(best_m)))
    row["tuned_accuracy"] = tuned["accuracy"]
    row["tuned_difference"], row["tuned_se"] = paired_difference(tuned["correct"], base)
    row["tuned_df"] = paired_difference_df(tuned["correct"], base)
    return row


def little_loss(evaluator: HeadMaskEvaluator, pruning: PruningResult, ks, fine_tuned: dict) -> LittleLoss:
    """The numbers of :class:`LittleLoss` from the evaluator of the unpruned model's episodes, the pruning result of
    the same evaluator (:func:`prune_heads`) and the fine-tuned models (:func:`fine_tune_pruned_sets`, keyed by
    ``k``, with the score order's set at each ``k`` of ``ks`` and optionally ``k = 0``, the control).

    Args:
        ks: numbers of heads pruned, each in ``1..K`` (``K = sum_l (H_l - 1)``).
    """
    ks, sets = _checked_ks(pruning, ks, fine_tuned)
    base = evaluator.correct()
    B = base.size
    rows = [_little_loss_row(evaluator, pruning, sets[k], k, base, fine_tuned[k]) for k in ks]
    columns = {name: np.array([row[name] for row in rows]) for name in rows[0] if name != "best_sets"}
    control = fine_tuned.get(0)
    control_difference, control_se = paired_difference(control["correct"], base) if control else (None, None)
    return LittleLoss(
        ks=ks,
        num_episodes=B,
        num_seeds=int(fine_tuned[ks[0]]["correct"].shape[0]),
        base_accuracy=float(base.mean()),
        base_se=float(np.sqrt(base.mean() * (1 - base.mean()) / B)),
        score_sets=[[pruning.label(lh) for lh in sets[k]] for k in ks],
        best_sets=[row["best_sets"] for row in rows],
        **columns,
        control_accuracy=None if control is None else np.asarray(control["accuracy"]),
        control_difference=control_difference,
        control_se=control_se,
        losses={k: np.asarray(v["losses"]) for k, v in fine_tuned.items()},
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
