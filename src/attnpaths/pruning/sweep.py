"""Pruning trained models along each ranking, over training seeds (sec-pruning-curves).

* :func:`curve_auc`: the area under a pruning curve (eq-pruning-auc); the curves themselves come from
  :func:`attnpaths.experiments.head_pruning.pruning_curve` (the last head of a layer is never pruned);
* :func:`run_seed`: one training seed: train, rank the heads by every method (timing each), prune along every
  ranking and along random orders, on the validation and test images of every split of the held-out images (one
  engine task);
* :func:`pruning_sweep`: every training seed on the engine (:func:`attnpaths.engine.map_tasks`), collected in
  a :class:`PruningSweep`; :func:`split_mean`: each seed's mean over the splits, the replicate of the tests.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .._validation import increasing_reals, int_at_least, positive_int, probability
from ..devices import torch_device
from ..engine import map_tasks, task_seed
from ..experiments.head_pruning import pruning_sets
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
from .rankings import attention_entropy, gradient_head_importance, value_norms
from .theory_scores import (
    THEORY_SCORES,
    action_changes,
    action_gate_gradients,
    loo_scores,
    removal_scores,
    trained_path_scores,
)
from .training import ModelTraining, TrainedWeights, rebuild_model, train_model, trained_weights

#: The rankings compared, in the chapter's order: the theory scores (sec-pruning-theory-scores), the practical
#: baselines (sec-pruning-rankings), and the two read from the validation subset table (sec-pruning-exact).
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


def curve_auc(curves) -> np.ndarray:
    """Normalised area under accuracy-vs-heads-pruned curves (eq-pruning-auc): the trapezoidal area over
    ``k = 0..K`` divided by ``K``, an accuracy between 0 and 1.

    Args:
        curves: ``[..., K + 1]`` with ``K >= 1``.

    Returns:
        ``[...]``.
    """
    curves = np.asarray(curves, dtype=np.float64)
    if curves.ndim < 1 or curves.shape[-1] < 2:
        raise ValueError(f"curves must have a last axis of K + 1 >= 2 points, got shape {curves.shape}")
    return np.trapezoid(curves, axis=-1) / (curves.shape[-1] - 1)


def _order_labels(order) -> list[str]:
    """``"(l)h"`` (1-based) for each head of ``order``, the labels of :func:`attnpaths.head_scoring.head_labels`."""
    return [f"({l + 1}){h + 1}" for l, h in order]


def training_seeds(seed: int, num_seeds: int) -> list[int]:
    """The seeds of the models of a sweep: ``task_seed(seed, i, 0)`` for ``i = 0..num_seeds - 1``
    (:func:`attnpaths.engine.task_seed`)."""
    return [task_seed(seed, i, 0) for i in range(num_seeds)]


def _theory_curves(view, solution, heldout_features, heldout_y, table, split) -> np.ndarray:
    """``[2, K + 1]`` the curves of the paper's score and of the removal score of one theory solution."""
    orders = [
        pruning_order(head_scores(solution.U, view.heads)),
        pruning_order(removal_scores(solution, heldout_features, heldout_y)),
    ]
    return np.stack([subset_curve(table.accuracy[split], pruning_sets(o, view.heads), view.heads) for o in orders])


def _timed(function, *args, **kwargs):
    """``(function(*args, **kwargs), wall seconds)``."""
    start = time.perf_counter()
    out = function(*args, **kwargs)
    return out, time.perf_counter() - start


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
        a dict of plain values: ``scores`` ``{ranking: [L, H]}`` (Shapley: split 0's), ``orders``
        ``{ranking: [(l, h), ...]}`` of the rankings that do not depend on the split (the Fisher search gives
        ``sets`` instead), ``split_orders`` ``{"shapley", "greedy": [R][(l, h), ...]}``, ``curves``
        ``{split: [R, n_rankings, K + 1]}`` (rows in :data:`RANKINGS` order), ``random`` and ``best``
        ``{split: [R, K + 1]}``, ``held_out`` (``base``, the unpruned model's accuracy, and ``random``, ``best``
        ``[K + 1]`` on every held-out image), ``train_loss``, ``attention_error``, ``theory`` (chosen
        temperature, certificate, iterations, held-out accuracy of its predictor eq-predictor, certificates of
        the re-solves of eq-action-change), ``theory_scan`` (``temperatures``, ``action``, ``converged``,
        ``curves`` ``[n_T, 2, K + 1]`` on every held-out image), ``width_scan`` (``widths``, ``converged``,
        ``curves`` ``[n_N, 2, K + 1]``), ``weights``, ``seconds`` (per stage) and ``cost_seconds`` (wall seconds
        of each ranking: what it needs, the theory's solve over the temperatures or the subset table included;
        ``"table"``, the subset table alone).
    """
    masks = np.asarray(validation_masks)
    if masks.ndim != 2 or masks.dtype != bool or masks.shape[1] != len(held_out):
        raise ValueError(
            f"validation_masks must be bool [R, {len(held_out)}] (one row per split of the held-out images), got "
            f"dtype {masks.dtype} and shape {masks.shape}"
        )
    if not (masks.any(axis=1) & ~masks.all(axis=1)).all():
        raise ValueError("validation_masks must leave both validation and test images in every split")
    seconds, cost = {}, {}
    start = time.perf_counter()
    if weights is None:
        model, history = train_model(training, train, task_seed(seed, seed_index, 0), device=device)
        weights = trained_weights(model, history)
    else:
        model = rebuild_model(training, train.input_width, weights)
    view = head_model(model)
    seconds["training"] = time.perf_counter() - start
    frozen_error = attention_error(model, held_out.x)

    outcomes, seconds["subsets"] = _timed(subset_outcomes, view, held_out.x, held_out.y)
    cost["table"] = seconds["subsets"]
    tables = [outcomes.table({"validation": m, "test": ~m}) for m in masks]
    whole = outcomes.table({"held_out": np.ones(len(held_out), dtype=bool)})

    start = time.perf_counter()
    K = sum(view.heads) - view.num_layers
    x_theory, y_theory = train.x[:theory_examples], train.y[:theory_examples]
    x_held, y_held = train.x[theory_examples:], train.y[theory_examples:]
    held = path_features(x_held, view)
    tokens_theory = x_theory.transpose(1, 2)  # [P, T, N0]: the layout of rank_heads
    theory, solve_s = _timed(
        rank_heads,
        view,
        tokens_theory,
        y_theory,
        width=theory_width,
        temperature=temperatures,
        max_iterations=max_iterations,
    )
    features = theory.features
    theory_mean, _ = theory.solution.predict(path_features(held_out.x, view))
    (action, action_certified), action_s = _timed(
        action_changes, features, y_theory, theory.solution, max_iterations=max_iterations
    )
    removal, removal_s = _timed(removal_scores, theory.solution, held, y_held)
    gate, gate_s = _timed(action_gate_gradients, theory.solution)
    loo, loo_s = _timed(loo_scores, theory.solution)
    trained, trained_s = _timed(trained_path_scores, view)
    scores = {
        "theory": theory.head_scores,
        "theory_removal": removal,
        "theory_action": action,
        "theory_gate": gate,
        "theory_loo": loo,
        "theory_trained": trained,
    }
    # a score that needs the theory's minimum costs the solve (over the temperature grid) and its own work
    cost.update(
        theory=solve_s,
        theory_removal=solve_s + removal_s,
        theory_action=solve_s + action_s,
        theory_gate=solve_s + gate_s,
        theory_loo=solve_s + loo_s,
        theory_trained=trained_s,
    )
    scan_curves = np.stack([_theory_curves(view, s, held, y_held, whole, "held_out") for s in theory.solutions])
    width_curves, width_converged = [], []
    for N in sensitivity_widths:
        # started from the chosen minimum at theory_width: the same minimum in fewer Newton steps
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificateWarning)  # an uncertified width is marked, never used
            at_N = rank_heads(
                view,
                tokens_theory,
                y_theory,
                width=N,
                temperature=theory.temperature,
                max_iterations=max_iterations,
                initial=theory.solution.U_layers,
            )
        certified = bool(at_N.solution.converged)
        width_curves.append(
            _theory_curves(view, at_N.solution, held, y_held, whole, "held_out")
            if certified
            else np.full((2, K + 1), np.nan)
        )
        width_converged.append(certified)
    seconds["theory"] = time.perf_counter() - start

    start = time.perf_counter()
    train_tokens = train.x.transpose(1, 2)  # [P, T, N0]: PyTorch's layout, that of the rankings
    scores["michel"], cost["michel"] = _timed(gradient_head_importance, view, train_tokens, train.y)
    scores["entropy"], cost["entropy"] = _timed(attention_entropy, view, train_tokens)
    scores["norm"], cost["norm"] = _timed(value_norms, view)
    orders = {name: pruning_order(scores[name]) for name in scores if name != "entropy"}
    orders["entropy"] = pruning_order(scores["entropy"], prune_first="highest")
    orders["michel_iterative"], cost["michel_iterative"] = _timed(iterative_gradient_order, view, train_tokens, train.y)
    sets = {name: pruning_sets(order, view.heads) for name, order in orders.items()}
    (sets["fisher"], _), cost["fisher"] = _timed(fisher_pruning_sets, view, train_tokens, train.y)
    seconds["baselines"] = time.perf_counter() - start

    # read from each split's validation table: the table's cost and their own (mean over the splits)
    shapley, shapley_s = zip(
        *(_timed(shapley_values, t.loss["validation"], view.heads, higher_is_better=False) for t in tables)
    )
    greedy, greedy_s = zip(*(_timed(greedy_order, t.loss["validation"], view.heads, maximize=False) for t in tables))
    cost["shapley"] = cost["table"] + float(np.mean(shapley_s))
    cost["greedy"] = cost["table"] + float(np.mean(greedy_s))
    scores["shapley"] = shapley[0]
    split_orders = {"shapley": [pruning_order(v) for v in shapley], "greedy": list(greedy)}

    def curves_of(r: int, split: str) -> np.ndarray:
        per_split = {name: pruning_sets(o[r], view.heads) for name, o in split_orders.items()}
        accuracy = tables[r].accuracy[split]
        return np.stack([subset_curve(accuracy, {**sets, **per_split}[name], view.heads) for name in RANKINGS])

    loss = weights.loss
    return {
        "scores": scores,
        "orders": orders,
        "split_orders": split_orders,
        "sets": {"fisher": sets["fisher"]},
        "curves": {split: np.stack([curves_of(r, split) for r in range(len(tables))]) for split in SPLITS},
        "random": {
            split: np.stack([random_order_curve(t.accuracy[split], view.heads) for t in tables]) for split in SPLITS
        },
        "best": {split: np.stack([best_curve(t.accuracy[split], view.heads) for t in tables]) for split in SPLITS},
        "held_out": {
            "base": float(whole.accuracy["held_out"][0]),
            "random": random_order_curve(whole.accuracy["held_out"], view.heads),
            "best": best_curve(whole.accuracy["held_out"], view.heads),
        },
        "train_loss": float(loss[-max(1, loss.size // 10) :].mean()),
        "attention_error": frozen_error,
        "theory": {
            "temperature": theory.temperature,
            "converged": bool(theory.solution.converged),
            "iterations": int(theory.solution.iterations),
            "gradient_norm": float(theory.solution.gradient_norm),
            "hessian_min_eigenvalue": float(theory.solution.hessian_min_eigenvalue),
            "held_out_accuracy": classification_accuracy(theory_mean, held_out.y.numpy()),
            "action_change_certified": bool(action_certified[~np.isnan(action)].all()),
        },
        "theory_scan": {
            "temperatures": theory.scan["temperatures"],
            "action": theory.scan["action"],
            "converged": theory.scan["converged"],
            "curves": scan_curves,
        },
        "width_scan": {
            "widths": np.array(sensitivity_widths, dtype=float),
            "converged": np.array(width_converged, dtype=bool),
            "curves": np.array(width_curves).reshape(len(width_curves), 2, K + 1),
        },
        "weights": weights,
        "seconds": seconds,
        "cost_seconds": cost,
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


def mean_interval(values, confidence: float = 0.95, axis: int = 0) -> dict:
    """Mean over ``axis`` and its two-sided Student-t confidence interval (``n - 1`` degrees of freedom).

    Returns:
        ``{"mean", "low", "high", "sd", "n"}`` (arrays over the remaining axes).
    """
    values = np.asarray(values, dtype=np.float64)
    probability(confidence, "confidence", open_interval=True)
    n = values.shape[axis]
    if n < 2:
        raise ValueError(f"values must hold at least 2 replicates along axis {axis}, got {n}")
    mean, sd = values.mean(axis=axis), values.std(axis=axis, ddof=1)
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "low": mean - half, "high": mean + half, "sd": sd, "n": int(n)}


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
        return int(self.curves["test"].shape[0])

    @property
    def num_splits(self) -> int:
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


def auc_table(
    auc: dict, *, confidence: float = 0.95, scale: float = 100.0, digits: int = 1, seconds: dict | None = None
) -> str:
    """A Markdown table of the area under the pruning curve (eq-pruning-auc, in % with the default ``scale``) of
    every ranking (rows) for every model (columns): the mean over seeds and its two-sided Student-t confidence
    interval; with ``seconds``, beside each model's column the mean wall seconds per seed of each ranking.

    Args:
        auc: ``{model label: {ranking: [S]}}`` (or normalised areas, eq-pruning-normalised, with ``scale=1``).
        scale: factor applied before printing; digits: decimals printed.
        seconds: ``None`` or ``{model label: {ranking: [S]}}`` (:attr:`PruningSweep.cost_seconds`; the ceiling
            ``"best"`` costs the subset table); a ranking without a cost gets an empty cell.
    """
    models = list(auc)
    rankings = list(dict.fromkeys(name for by_ranking in auc.values() for name in by_ranking))
    header = [f"{m} | {m}: s per seed" if seconds is not None else m for m in models]
    lines = ["| ranking | " + " | ".join(header) + " |", "|---|" + "---|" * (len(models) * (1 + (seconds is not None)))]
    for name in rankings:
        cells = []
        for model in models:
            if name not in auc[model]:
                cells.append("")
            else:
                interval = mean_interval(scale * np.asarray(auc[model][name], dtype=float), confidence)
                low, high = interval["low"], interval["high"]
                cells.append(f"{interval['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]")
            if seconds is not None:
                cost = seconds.get(model, {}).get("table" if name == "best" else name)
                cells.append("" if cost is None else f"{float(np.mean(cost)):.2g}")
        lines.append(f"| {RANKING_NAMES[name]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
    if weights is not None:
        weights = list(weights)
        if len(weights) != num_seeds or not all(isinstance(w, TrainedWeights) for w in weights):
            raise ValueError(
                f"weights must be None or {num_seeds} TrainedWeights (one per seed), got {len(weights)} items"
            )
    seed = int_at_least(seed, "seed", 0)
    theory_examples = positive_int(theory_examples, "theory_examples")
    if theory_examples >= len(train):
        raise ValueError(
            f"theory_examples must be below the {len(train)} training images (the others score the "
            f"removal score), got {theory_examples}"
        )
    parse_widths(theory_width, training.num_layers)
    sensitivity_widths = [float(N) for N in sensitivity_widths]
    for N in sensitivity_widths:
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
    tasks = [
        dict(seed_index=i) if weights is None else dict(seed_index=i, weights=weights[i]) for i in range(num_seeds)
    ]
    rows = map_tasks(run_seed, tasks, shared=shared, description="pruning: training seeds", progress=progress)
    heads = (training.num_heads,) * training.num_layers
    return PruningSweep(
        rankings=RANKINGS,
        heads=heads,
        curves={split: np.stack([r["curves"][split] for r in rows]) for split in SPLITS},
        random={split: np.stack([r["random"][split] for r in rows]) for split in SPLITS},
        best={split: np.stack([r["best"][split] for r in rows]) for split in SPLITS},
        held_out={key: np.stack([r["held_out"][key] for r in rows]) for key in ("base", "random", "best")},
        scores={name: np.stack([r["scores"][name] for r in rows]) for name in rows[0]["scores"]},
        orders={name: [r["orders"][name] for r in rows] for name in rows[0]["orders"]},
        split_orders={name: [r["split_orders"][name] for r in rows] for name in rows[0]["split_orders"]},
        fisher_sets=[r["sets"]["fisher"] for r in rows],
        train_loss=np.array([r["train_loss"] for r in rows]),
        attention_error=np.array([r["attention_error"] for r in rows]),
        theory={key: np.array([r["theory"][key] for r in rows]) for key in rows[0]["theory"]},
        theory_scan={
            "temperatures": np.array(temperatures),
            **{key: np.stack([r["theory_scan"][key] for r in rows]) for key in ("action", "converged", "curves")},
        },
        width_scan={
            "widths": np.array(sensitivity_widths),
            **{key: np.stack([r["width_scan"][key] for r in rows]) for key in ("converged", "curves")},
        },
        seconds={key: np.array([r["seconds"][key] for r in rows]) for key in rows[0]["seconds"]},
        cost_seconds={key: np.array([r["cost_seconds"][key] for r in rows]) for key in rows[0]["cost_seconds"]},
        weights=[r["weights"] for r in rows],
    )


__all__ = [
    "RANKINGS",
    "RANKING_NAMES",
    "SPLITS",
    "HeadMaskEvaluator",
    "PruningSweep",
    "auc_table",
    "base_accuracies",
    "curve_auc",
    "mean_interval",
    "pruning_sweep",
    "run_seed",
    "split_mean",
    "training_seeds",
]
