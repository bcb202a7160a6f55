"""Pruning trained models along each ranking, over training seeds (sec-pruning-curves): one seed's rankings and
pruning curves (:func:`~attnpaths.pruning.sweep.run_seed`, one engine task), every seed's
(:func:`~attnpaths.pruning.sweep.pruning_sweep`), and the areas under the curves (eq-pruning-auc).
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._validation import increasing_reals, int_at_least, positive_int
from ..devices import torch_device
from ..engine import map_tasks, task_seed
from ..experiments.head_pruning import curve_auc, pruning_sets
from ..experiments.head_rankings import attention_entropy, gradient_head_importance, value_norms
from ..experiments.head_subsets import (
    best_curve,
    greedy_order,
    normalised_area,
    random_order_curve,
    shapley_values,
    subset_curve,
)
from ..frozen_attention import rank_heads
from ..head_masks import HeadMaskEvaluator
from ..head_models import attention_error, head_model
from ..head_scoring import head_scores, pruning_order
from ..paths import path_features
from ..theory import CertificateWarning, classification_accuracy, parse_widths
from .digits import PatchDigits
from .exact import subset_outcomes
from .practical import fisher_pruning_sets, iterative_gradient_order
from .theory_scores import (
    THEORY_SCORES,
    action_changes,
    action_gate_gradients,
    loo_scores,
    removal_scores,
    trained_path_scores,
)
from .training import ModelTraining, TrainedWeights, rebuild_model, train_model, trained_weights

#: The rankings compared, in the chapter's order, are the theory scores (sec-pruning-theory-scores), the
#: practical baselines (sec-pruning-rankings), and the two read from the validation subset table
#: (sec-pruning-exact).
RANKINGS = THEORY_SCORES + ("michel", "michel_iterative", "fisher", "entropy", "norm", "shapley", "greedy")
#: Their names in figures and tables; ``"random"`` (the exact expectation of a random order) and ``"best"``
#: (the ceiling) are the two references.
RANKING_NAMES = {
    "theory": "theory's head score (paper)",
    "theory_removal": "theory's removal score",
    "theory_action": "theory's action change",
    "theory_gate": "theory's action gate gradient",
    "theory_loo": "theory's leave-one-out change",
    "theory_trained": "head score of the trained path weights",
    "michel": "gradient importance (Michel et al.)",
    "michel_iterative": "gradient importance, re-estimated",
    "fisher": "gate Fisher, joint (Kwon et al.)",
    "entropy": "attention entropy",
    "norm": "value-weight norm",
    "shapley": "Shapley value (validation)",
    "greedy": "greedy removal (validation)",
    "random": "random orders (exact expectation)",
    "best": "best subset (ceiling)",
}
#: The splits every pruning curve is measured on.
SPLITS = ("validation", "test")


def _order_labels(order) -> list[str]:
    """``"(l)h"`` (1-based) for each head of ``order``, the labels of :func:`attnpaths.head_scoring.head_labels`."""
    return [f"({l + 1}){h + 1}" for l, h in order]


def training_seeds(seed: int, num_seeds: int) -> list[int]:
    """The seeds of the models of a sweep: ``task_seed(seed, i, 0)`` for ``i = 0..num_seeds - 1``
    (:func:`attnpaths.engine.task_seed`)."""
    return [task_seed(seed, i, 0) for i in range(num_seeds)]


def _timed(function, *args, **kwargs):
    """``(function(*args, **kwargs), wall seconds)``."""
    start = time.perf_counter()
    out = function(*args, **kwargs)
    return out, time.perf_counter() - start


def _split_masks(validation_masks, num_images: int) -> np.ndarray:
    masks = np.asarray(validation_masks)
    if masks.ndim != 2 or masks.dtype != bool or masks.shape[1] != num_images:
        raise ValueError(
            f"validation_masks must be bool [R, {num_images}] (one row per split of the held-out images), got "
            f"dtype {masks.dtype} and shape {masks.shape}"
        )
    if not (masks.any(axis=1) & ~masks.all(axis=1)).all():
        raise ValueError("validation_masks must leave both validation and test images in every split")
    return masks


def _trained_model(training: ModelTraining, train: PatchDigits, seed: int, device, weights) -> tuple:
    """``(model, weights)``: the model trained from ``seed``, or rebuilt from ``weights`` when given."""
    if weights is None:
        model, history = train_model(training, train, seed, device=device)
        return model, trained_weights(model, history)
    return rebuild_model(training, train.input_width, weights), weights


def _theory_curves(view, solution, held, y_held, accuracy) -> np.ndarray:
    """``[2, K + 1]`` the curves of the paper's score and of the removal score of one theory solution."""
    orders = [pruning_order(head_scores(solution.U, view.heads)), pruning_order(removal_scores(solution, held, y_held))]
    return np.stack([subset_curve(accuracy, pruning_sets(o, view.heads), view.heads) for o in orders])


def _width_scan(solve, theory, widths, curves, K: int) -> dict:
    """The ``width_scan`` entry of :func:`run_seed`: ``curves(solution)`` of ``solve`` at each width of ``widths``."""
    out, converged = [], []
    for N in widths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificateWarning)  # an uncertified width is marked, never used
            # started from the chosen minimum at theory_width: the same minimum in fewer Newton steps
            at_N = solve(width=N, temperature=theory.temperature, initial=theory.solution.U_layers).solution
        converged.append(bool(at_N.converged))
        out.append(curves(at_N) if converged[-1] else np.full((2, K + 1), np.nan))
    return {
        "widths": np.array(widths, dtype=float),
        "converged": np.array(converged, dtype=bool),
        "curves": np.array(out).reshape(len(out), 2, K + 1),
    }


def _theory_rankings(view, train, held_out, accuracy, width, temperatures, examples, widths, max_iterations) -> tuple:
    """``(scores, cost, results)``: the theory scores, their wall seconds (:func:`run_seed`) and its ``theory``,
    ``theory_scan`` and ``width_scan`` entries; ``accuracy``: ``[2^n]`` the subset table of the held-out images."""
    x_theory, y_theory = train.x[:examples], train.y[:examples]
    held, y_held = path_features(train.x[examples:], view), train.y[examples:]
    # [P, T, N0]: the layout of rank_heads
    solve = functools.partial(rank_heads, view, x_theory.transpose(1, 2), y_theory, max_iterations=max_iterations)
    theory, solve_s = _timed(solve, width=width, temperature=temperatures)
    solution = theory.solution
    theory_mean = solution.predict_mean(path_features(held_out.x, view))
    (action, certified), action_s = _timed(
        action_changes, theory.features, y_theory, solution, max_iterations=max_iterations
    )
    own = {
        "theory_removal": _timed(removal_scores, solution, held, y_held),
        "theory_action": (action, action_s),
        "theory_gate": _timed(action_gate_gradients, solution),
        "theory_loo": _timed(loo_scores, solution),
    }
    trained, trained_s = _timed(trained_path_scores, view)
    scores = {"theory": theory.head_scores, **{name: s for name, (s, _) in own.items()}, "theory_trained": trained}
    # a score that needs the theory's minimum costs the solve (over the temperature grid) and its own work
    cost = {"theory": solve_s, **{name: solve_s + s for name, (_, s) in own.items()}, "theory_trained": trained_s}
    curves = functools.partial(_theory_curves, view, held=held, y_held=y_held, accuracy=accuracy)
    results = {
        "theory": {
            "temperature": theory.temperature,
            "converged": bool(solution.converged),
            "iterations": int(solution.iterations),
            "gradient_norm": float(solution.gradient_norm),
            "hessian_min_eigenvalue": float(solution.hessian_min_eigenvalue),
            "held_out_accuracy": classification_accuracy(theory_mean, held_out.y.numpy()),
            "action_change_certified": bool(certified[~np.isnan(action)].all()),
        },
        "theory_scan": {key: theory.scan[key] for key in ("temperatures", "action", "converged")},
        "width_scan": _width_scan(solve, theory, widths, curves, sum(view.heads) - view.num_layers),
    }
    results["theory_scan"]["curves"] = np.stack([curves(s) for s in theory.solutions])
    return scores, cost, results


def _practical_rankings(view, train: PatchDigits) -> tuple:
    """``(scores, michel_iterative order, fisher sets, cost)`` of the practical rankings, on every training image."""
    tokens = train.x.transpose(1, 2)  # [P, T, N0]: PyTorch's layout, that of the rankings
    scores, cost = {}, {}
    scores["michel"], cost["michel"] = _timed(gradient_head_importance, view, tokens, train.y)
    scores["entropy"], cost["entropy"] = _timed(attention_entropy, view, tokens)
    scores["norm"], cost["norm"] = _timed(value_norms, view)
    order, cost["michel_iterative"] = _timed(iterative_gradient_order, view, tokens, train.y)
    (fisher, _), cost["fisher"] = _timed(fisher_pruning_sets, view, tokens, train.y)
    return scores, order, fisher, cost


def _table_rankings(heads, tables, table_s: float) -> tuple:
    """``(split 0's Shapley values, split_orders, cost)`` read from each split's validation losses: each costs the
    table and its own work (mean over the splits)."""
    shapley, shapley_s = zip(
        *(_timed(shapley_values, t.loss["validation"], heads, higher_is_better=False) for t in tables)
    )
    greedy, greedy_s = zip(*(_timed(greedy_order, t.loss["validation"], heads, maximize=False) for t in tables))
    cost = {"shapley": table_s + float(np.mean(shapley_s)), "greedy": table_s + float(np.mean(greedy_s))}
    return shapley[0], {"shapley": [pruning_order(v) for v in shapley], "greedy": list(greedy)}, cost


def _ranking_curves(heads, tables, whole, sets: dict, split_orders: dict) -> dict:
    """The ``curves``, ``random``, ``best`` and ``held_out`` entries of :func:`run_seed` (``sets``: the pruned sets
    of the rankings that do not depend on the split)."""

    def curves_of(r: int, split: str) -> np.ndarray:
        per_split = {name: pruning_sets(o[r], heads) for name, o in split_orders.items()}
        accuracy = tables[r].accuracy[split]
        return np.stack([subset_curve(accuracy, {**sets, **per_split}[name], heads) for name in RANKINGS])

    reference = {"random": random_order_curve, "best": best_curve}
    out = {"curves": {split: np.stack([curves_of(r, split) for r in range(len(tables))]) for split in SPLITS}}
    for name, curve in reference.items():
        out[name] = {split: np.stack([curve(t.accuracy[split], heads) for t in tables]) for split in SPLITS}
    accuracy = whole.accuracy["held_out"]
    out["held_out"] = {
        "base": float(accuracy[0]),
        **{name: curve(accuracy, heads) for name, curve in reference.items()},
    }
    return out


def run_seed(
    seed_index: int,
    *,
    seed: int,
    train: PatchDigits,
    held_out: PatchDigits,
    validation_masks,
    training: ModelTraining,
    theory_width,
    temperatures,
    theory_examples: int,
    sensitivity_widths=(),
    max_iterations: int = 200,
    device="cpu",
    weights: TrainedWeights | None = None,
) -> dict:
    """One training seed: train a model (or rebuild it from ``weights``), evaluate every set of pruned heads
    on every held-out image (:func:`~.exact.subset_outcomes`), rank the heads by every method of
    :data:`RANKINGS` and read each ranking's pruning curve on the validation and the test images of every split
    of the held-out images (one task of :func:`pruning_sweep`).

    The model's initial weights and mini-batches come from ``task_seed(seed, seed_index, 0)``; given
    ``weights`` (the :class:`~.training.TrainedWeights` of an earlier training from that seed, e.g. shipped
    ones), the model is rebuilt from them instead of trained. The theory is solved on the first
    ``theory_examples`` training images at every temperature of ``temperatures`` and its scores are taken at the
    one with the smallest action (:func:`attnpaths.frozen_attention.rank_heads`); the removal score is measured on the
    other training images. The gradient importances, the gate Fisher matrix and the attention entropy use every
    training image: these rankings are the same for every split. The Shapley values and the greedy order are read
    from each split's validation table. Sensitivity: the paper's and the removal score at every temperature, and
    at each width of ``sensitivity_widths`` (at the chosen temperature), on every held-out image.

    Args:
        held_out: ``B`` images the model never saw; validation_masks: ``[R, B]`` bool, split ``r``'s validation
            images (``True``) and test images (``False``), e.g. :func:`~.digits.held_out_splits`.

    Returns:
        A dict of plain values, one seed's entries of the fields of :class:`PruningSweep` (their shapes without
        the leading ``S``; ``sets`` ``{"fisher": [K + 1]}`` for ``fisher_sets``), ``orders`` without Fisher's,
        ``theory`` with the certificates of the re-solves of eq-action-change, ``seconds`` (per stage) and
        ``cost_seconds`` (wall seconds of each ranking: what it needs, the theory's solve over the temperatures or
        the subset table included; ``"table"``, the subset table alone).
    """
    masks = _split_masks(validation_masks, len(held_out))
    seconds = {}
    (model, weights), seconds["training"] = _timed(
        _trained_model, training, train, task_seed(seed, seed_index, 0), device, weights
    )
    view = head_model(model)
    frozen_error = attention_error(model, held_out.x)
    outcomes, seconds["subsets"] = _timed(subset_outcomes, view, held_out.x, held_out.y)
    cost = {"table": seconds["subsets"]}
    tables = [outcomes.table({"validation": m, "test": ~m}) for m in masks]
    whole = outcomes.table({"held_out": np.ones(len(held_out), dtype=bool)})
    settings = (theory_width, temperatures, theory_examples, sensitivity_widths, max_iterations)
    (scores, theory_cost, theory), seconds["theory"] = _timed(
        _theory_rankings, view, train, held_out, whole.accuracy["held_out"], *settings
    )
    (practical, iterative, fisher, practical_cost), seconds["baselines"] = _timed(_practical_rankings, view, train)
    scores.update(practical)
    orders = {name: pruning_order(scores[name]) for name in scores if name != "entropy"}
    orders["entropy"] = pruning_order(scores["entropy"], prune_first="highest")
    orders["michel_iterative"] = iterative
    sets = {name: pruning_sets(order, view.heads) for name, order in orders.items()}
    sets["fisher"] = fisher
    scores["shapley"], split_orders, table_cost = _table_rankings(view.heads, tables, cost["table"])
    loss = weights.loss
    return {
        "scores": scores,
        "orders": orders,
        "split_orders": split_orders,
        "sets": {"fisher": fisher},
        **_ranking_curves(view.heads, tables, whole, sets, split_orders),
        "train_loss": float(loss[-max(1, loss.size // 10) :].mean()),
        "attention_error": frozen_error,
        **theory,
        "weights": weights,
        "seconds": seconds,
        "cost_seconds": {**cost, **theory_cost, **practical_cost, **table_cost},
    }


def base_accuracies(training: ModelTraining, weights, test: PatchDigits) -> np.ndarray:
    """``[S]`` test accuracy of each unpruned model rebuilt from ``weights`` (a list of
    :class:`~.training.TrainedWeights` of ``training``), as :attr:`PruningSweep.base_accuracy` measures it."""
    return np.array(
        [
            HeadMaskEvaluator(rebuild_model(training, test.input_width, w), test.x.transpose(1, 2), test.y)()
            for w in weights
        ]
    )


@dataclass(frozen=True, eq=False)
class PruningSweep:
    """Every training seed's rankings and pruning curves, on every split of the held-out images.

    Attributes:
        rankings: the ranking names (:data:`RANKINGS`).
        heads: ``(H_1, ..., H_L)``.
        curves: ``{split: [S, R, n_rankings, K + 1]}`` accuracy after pruning ``k`` heads along each ranking, on
            the validation or test images of each of the ``R`` splits.
        random, best: ``{split: [S, R, K + 1]}`` the exact expected curve of a random order and the ceiling.
        held_out: ``{"base": [S], "random", "best": [S, K + 1]}`` the same on every held-out image.
        scores: ``{ranking: [S, L, H]}``; orders: ``{ranking: [S][(l, h), ...]}`` of the rankings that do not
            depend on the split; split_orders: ``{"shapley", "greedy": [S][R][(l, h), ...]}``; fisher_sets:
            ``[S][K + 1]``.
        train_loss: ``[S]``; attention_error: ``[S]`` (:func:`attnpaths.head_models.attention_error`); theory: ``{key: [S]}``
            (chosen temperature, certificate, iterations, held-out accuracy of the theory's predictor);
            theory_scan: ``{"temperatures": [n_T], "action", "converged": [S, n_T], "curves": [S, n_T, 2, K + 1]}``;
            width_scan: ``{"widths": [n_N], "converged": [S, n_N], "curves": [S, n_N, 2, K + 1]}`` (rows: the
            paper's score, the removal score; every held-out image); seconds: ``{stage: [S]}``;
            cost_seconds: ``{ranking: [S]}`` wall seconds of each ranking (see :func:`run_seed`), with ``"table"``.
        weights: ``[S]`` each seed's :class:`~.training.TrainedWeights` (trained, or the ones passed in).
    """

    rankings: tuple
    heads: tuple
    curves: dict
    random: dict
    best: dict
    held_out: dict
    scores: dict
    orders: dict
    split_orders: dict
    fisher_sets: list
    train_loss: np.ndarray
    attention_error: np.ndarray
    theory: dict
    theory_scan: dict
    width_scan: dict
    seconds: dict
    cost_seconds: dict
    weights: list

    @property
    def num_seeds(self) -> int:
        """The number of training seeds ``S``."""
        return int(self.curves["test"].shape[0])

    @property
    def num_splits(self) -> int:
        """The number of splits ``R`` of the held-out images."""
        return int(self.curves["test"].shape[1])

    @property
    def base_accuracy(self) -> np.ndarray:
        """``[S]`` accuracy of each unpruned model on every held-out image."""
        return self.held_out["base"]

    def curves_by_ranking(self, split: str = "test") -> dict:
        """``{ranking: [S, R, K + 1]}`` with ``"random"`` and ``"best"``."""
        out = {name: self.curves[split][:, :, i] for i, name in enumerate(self.rankings)}
        out["random"], out["best"] = self.random[split], self.best[split]
        return out

    def mean_curves(self, split: str = "test") -> dict:
        """``{ranking: [S, K + 1]}`` each seed's curves averaged over the splits."""
        return {name: c.mean(axis=1) for name, c in self.curves_by_ranking(split).items()}

    def auc(self, split: str = "test") -> dict:
        """``{ranking: [S, R]}`` area under each seed's and split's curve (eq-pruning-auc), with ``"random"`` and
        ``"best"``."""
        return {name: curve_auc(c) for name, c in self.curves_by_ranking(split).items()}

    def normalised_auc(self, split: str = "test") -> dict:
        """``{ranking: [S, R]}`` each area between the random expectation (0) and the ceiling (1) of its seed and
        split, eq-pruning-normalised."""
        auc = self.auc(split)
        return {name: normalised_area(v, auc["random"], auc["best"]) for name, v in auc.items()}

    def order_labels(self, ranking: str) -> list:
        """Each seed's pruning order along ``ranking`` as ``"(l)h"`` labels (``[S][R]`` orders for the rankings
        read from each split's validation table)."""
        if ranking in self.split_orders:
            return [[_order_labels(order) for order in orders] for orders in self.split_orders[ranking]]
        return [_order_labels(order) for order in self.orders[ranking]]

    def normalised_scan(self, scan: str = "theory_scan") -> np.ndarray:
        """``[S, n, 2]`` normalised areas (eq-pruning-normalised, on every held-out image) of the paper's score and
        the removal score at each of the ``n`` points of ``scan``: ``"theory_scan"`` (each temperature) or
        ``"width_scan"`` (each width, at the chosen temperature); ``nan`` where the solver certified no minimum."""
        if scan not in ("theory_scan", "width_scan"):
            raise ValueError(f"scan must be 'theory_scan' or 'width_scan', got {scan!r}")
        random, best = (curve_auc(self.held_out[k])[:, None, None] for k in ("random", "best"))
        areas = curve_auc(getattr(self, scan)["curves"])
        certified = np.isfinite(areas)  # an uncertified point's curves are nan
        return np.where(certified, normalised_area(np.where(certified, areas, 0.0), random, best), np.nan)

    def summary(self, split: str = "test") -> dict:
        """The numbers of the unpruned models and of every ranking's area, under the names the chapter's prose uses:
        ``base``, ``base_min``, ``base_max`` (accuracy on every held-out image in %: mean, smallest and largest over
        seeds); for each ranking of :meth:`auc` (``"random"`` and ``"best"`` included), ``<ranking>_auc`` (its area
        on the ``split`` images in %, eq-pruning-auc) and ``<ranking>_nauc`` (its normalised area,
        eq-pruning-normalised): the mean over seeds of each seed's mean over the splits (:func:`split_mean`).

        Returns:
            ``{name: float}``.
        """
        out = {
            "base": 100 * float(self.base_accuracy.mean()),
            "base_min": 100 * float(self.base_accuracy.min()),
            "base_max": 100 * float(self.base_accuracy.max()),
        }
        out.update({f"{name}_auc": 100 * float(np.mean(v)) for name, v in split_mean(self.auc(split)).items()})
        normalised = split_mean(self.normalised_auc(split))
        out.update({f"{name}_nauc": float(np.nanmean(v)) for name, v in normalised.items()})
        return out

    def sensitivity_summary(self) -> dict:
        """The numbers of the sensitivity scans (sec-pruning-sensitivity), under the names the chapter's prose uses:
        ``edge`` (seeds whose chosen temperature is the grid's lowest); for the paper's score (``theory``) and the
        removal score (``theory_removal``), ``<score>_scan_min`` and ``<score>_scan_max`` (the smallest and largest
        mean over seeds of the normalised area over the temperatures, :meth:`normalised_scan`) and
        ``<score>_width_min``, ``<score>_width_max`` (the same over the scanned widths); ``uncertified`` (scan
        points without a certified minimum) and ``theory_acc`` (the held-out accuracy of the theory's predictor in
        %, mean over seeds).

        Returns:
            ``{name: int or float}``.
        """
        scans = {"scan": self.normalised_scan("theory_scan"), "width": self.normalised_scan("width_scan")}
        out = {"edge": int(np.sum(self.theory["temperature"] == self.theory_scan["temperatures"][0]))}
        for i, score in enumerate(("theory", "theory_removal")):
            for kind, areas in scans.items():
                means = np.nanmean(areas[:, :, i], axis=0)
                out[f"{score}_{kind}_min"] = float(np.nanmin(means))
                out[f"{score}_{kind}_max"] = float(np.nanmax(means))
        uncertified = (~self.theory_scan["converged"]).sum() + (~self.width_scan["converged"]).sum()
        out["uncertified"] = int(uncertified)
        out["theory_acc"] = 100 * float(self.theory["held_out_accuracy"].mean())
        return out

    def to_dict(self) -> dict:
        """The sweep as the results file keeps it: ``heads``, ``base_accuracy``, ``train_loss``,
        ``attention_error``, ``curves`` (``{split: {ranking: [S, R, K + 1]}}``, :meth:`curves_by_ranking`),
        ``held_out``; ``auc`` (test areas, ``{ranking: [S]}``, each seed's mean over the splits),
        ``normalised_auc`` and ``normalised_auc_validation`` (the same of the normalised areas on the test and the
        validation images) and ``normalised_auc_splits``, ``normalised_auc_validation_splits`` (``[S, R]``);
        ``scores``, ``orders`` (:meth:`order_labels` of every ranking), ``fisher_sets`` (``[S][K + 1]`` labels),
        ``theory``, ``theory_scan`` and ``width_scan`` (with ``normalised_auc``, :meth:`normalised_scan`) and
        ``seconds``. The trained weights are left out.

        Returns:
            A dict of arrays, lists and numbers.
        """
        split_normalised = {split: self.normalised_auc(split) for split in SPLITS}
        return {
            "heads": list(self.heads),
            "base_accuracy": self.base_accuracy,
            "train_loss": self.train_loss,
            "attention_error": self.attention_error,
            "curves": {split: self.curves_by_ranking(split) for split in SPLITS},
            "held_out": self.held_out,
            "auc": split_mean(self.auc("test")),
            "normalised_auc": split_mean(split_normalised["test"]),
            "normalised_auc_validation": split_mean(split_normalised["validation"]),
            "normalised_auc_splits": split_normalised["test"],
            "normalised_auc_validation_splits": split_normalised["validation"],
            "scores": self.scores,
            "orders": {name: self.order_labels(name) for name in (*self.orders, *self.split_orders)},
            "fisher_sets": [[_order_labels(pruned) for pruned in sets] for sets in self.fisher_sets],
            "theory": self.theory,
            "theory_scan": {**self.theory_scan, "normalised_auc": self.normalised_scan("theory_scan")},
            "width_scan": {**self.width_scan, "normalised_auc": self.normalised_scan("width_scan")},
            "seconds": self.seconds,
        }


def split_mean(values: dict) -> dict:
    """``{key: [S]}`` the mean over the splits (axis 1) of ``{key: [S, R]}``, ``nan`` entries left out (a split
    whose ceiling equals its random expectation has no normalised area); the per-seed replicate of the chapter's
    tests (sec-pruning-verdicts)."""
    out = {}
    for key, v in values.items():
        v = np.asarray(v, dtype=np.float64)
        if v.ndim != 2:
            raise ValueError(f"values[{key!r}] must be [S, R], got shape {v.shape}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a seed with no defined split stays nan
            out[key] = np.nanmean(v, axis=1)
    return out


def pruning_sweep(
    train: PatchDigits,
    held_out: PatchDigits,
    validation_masks,
    *,
    training: ModelTraining,
    num_seeds: int,
    seed: int,
    theory_width,
    temperatures,
    theory_examples: int,
    sensitivity_widths=(),
    max_iterations: int = 200,
    device="cpu",
    weights=None,
    progress: bool = True,
) -> PruningSweep:
    """:func:`run_seed` for ``seed_index = 0..num_seeds - 1``, one :func:`attnpaths.engine.map_tasks` task each.

    Args:
        train: the training images; held_out: images the models never see; validation_masks: ``[R, B]`` bool,
            ``R`` splits of the ``B`` held-out images into validation images (``True``: they choose) and test
            images (they judge), e.g. :func:`~.digits.held_out_splits`; training: the model and its optimiser.
        num_seeds: ``S >= 2`` training seeds; seed: the sweep's seed (:func:`attnpaths.engine.task_seed`).
        theory_width: the theory's width ``N`` (eq-action); temperatures: its temperatures ``T``, a strictly
            increasing sequence, the one with the smallest action chosen per seed.
        theory_examples: training images the theory is solved on (the first ones of ``train``; the others score
            the removal score), below ``len(train)``.
        sensitivity_widths: widths at which the paper's and the removal score are computed again.
        max_iterations: the theory solver's Newton iteration cap (a point that does not certify within it is
            marked and never chosen).
        device: where the models are trained (``"cpu"`` or ``"cuda"``).
        weights: ``None`` (train every seed's model) or ``num_seeds`` :class:`~.training.TrainedWeights` of
            earlier trainings from the seeds :func:`training_seeds` (e.g. shipped ones), used instead.
    """
    num_seeds = int_at_least(num_seeds, "num_seeds", 2)
    given = weights is not None
    weights = list(weights) if given else [None] * num_seeds
    if given and (len(weights) != num_seeds or not all(isinstance(w, TrainedWeights) for w in weights)):
        raise ValueError(f"weights must be None or {num_seeds} TrainedWeights (one per seed), got {len(weights)} items")
    seed = int_at_least(seed, "seed", 0)
    theory_examples = positive_int(theory_examples, "theory_examples")
    if theory_examples >= len(train):
        raise ValueError(
            f"theory_examples must be below the {len(train)} training images (the others score the "
            f"removal score), got {theory_examples}"
        )
    sensitivity_widths = [float(N) for N in sensitivity_widths]
    for N in (theory_width, *sensitivity_widths):
        parse_widths(N, training.num_layers)
    temperatures = [float(T) for T in increasing_reals(temperatures, "temperatures")]
    max_iterations = positive_int(max_iterations, "max_iterations")
    torch_device(device, "device")
    shared = dict(
        seed=seed,
        train=train,
        held_out=held_out,
        validation_masks=np.asarray(validation_masks),
        training=training,
        theory_width=theory_width,
        temperatures=temperatures,
        theory_examples=theory_examples,
        sensitivity_widths=sensitivity_widths,
        max_iterations=max_iterations,
        device=str(device),
    )
    tasks = [dict(seed_index=i, weights=w) for i, w in enumerate(weights)]
    rows = map_tasks(run_seed, tasks, shared=shared, description="pruning: training seeds", progress=progress)
    fields = {key: _gathered(rows, key, np.stack) for key in ("curves", "random", "best", "held_out", "scores")}
    fields.update({key: _gathered(rows, key, list) for key in ("orders", "split_orders")})
    fields.update({key: _gathered(rows, key, np.array) for key in ("theory", "seconds", "cost_seconds")})
    return PruningSweep(
        rankings=RANKINGS,
        heads=(training.num_heads,) * training.num_layers,
        fisher_sets=[r["sets"]["fisher"] for r in rows],
        train_loss=np.array([r["train_loss"] for r in rows]),
        attention_error=np.array([r["attention_error"] for r in rows]),
        theory_scan={
            "temperatures": np.array(temperatures),
            **_gathered(rows, "theory_scan", np.stack, ("action", "converged", "curves")),
        },
        width_scan={
            "widths": np.array(sensitivity_widths),
            **_gathered(rows, "width_scan", np.stack, ("converged", "curves")),
        },
        weights=[r["weights"] for r in rows],
        **fields,
    )


def _gathered(rows, key: str, gather, keys=None) -> dict:
    """``{k: gather([row[key][k] for row in rows])}`` for each ``k`` of ``keys`` (default: the first row's)."""
    return {k: gather([r[key][k] for r in rows]) for k in (keys or rows[0][key])}
