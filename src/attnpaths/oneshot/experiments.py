"""The experiments of the one-shot chapter (Fig. 3 and its appendix); its claims are tested by
:mod:`attnpaths.finite_width_claims` and :mod:`attnpaths.oneshot.claims`.

Building blocks, each usable on its own:

* :class:`OneShotNetwork`, :func:`draw_episodes`, :func:`episode_features`: the theory network (the trained
  model's query/key maps, 16 paths), the episodes of every split and their path features (eq-path-features);
* :func:`theory_grid`, :func:`gp_grid`: the theory (eq-action, eq-predictor) and its GP limit (eq-gp) on a
  grid of widths and temperatures, evaluated on the validation, test and out-of-distribution episodes;
* :func:`select_temperature`, :func:`selected`: the temperature per width, chosen on ONE split (the
  validation episodes in the chapter; the test episodes reproduce the authors' choice);
* :func:`warm_start_differences`, :func:`order_parameter_summary`: a check of the grid's minimisers and
  where the selected ``U`` lies relative to its GP value;
* :class:`PruningEvaluator`, :func:`single_head_drops`, :func:`pruning_sets`, :func:`pruning_curve`,
  :func:`random_orders`, :func:`score_order`: pruning of the gradient-descent model; :func:`prune_heads`
  (a :class:`PruningResult`) all of Figs. 3e and 3f, :func:`path_decomposition_errors` its check;
* :func:`head_relabelings`, :func:`pattern_similarity`, :func:`spearman_permutation_test`: the statistics
  behind the claims about the trained model.

The theory grid, the samples and the kernel PCs run on the experiment layer (:mod:`attnpaths.experiments`):
:class:`OneShotNetwork` is a :class:`~attnpaths.experiments.path_data.PathNetwork` and the episodes' path
features a :class:`~attnpaths.experiments.path_data.PathData`. Every ``U`` here is in the flat path order
(``h_1`` slowest), which is also the figure order of this task (path label ``"h1,h2"``, 1-based).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats

from .._validation import as_float64_array, even_int, int_at_least, numpy_generator, positive_int
from ..attention import Attention
from ..experiments import sampling
from ..experiments.path_data import PathData, PathNetwork
from ..experiments.sweep import TheorySweep, theory_sweep
from ..head_scores import head_labels
from ..paths import all_paths, path_features
from ..theory import solve
from .digits import DigitPairs
from .imagesets import ImageDataset
from .model import SumHeadTransformer
from .sequences import SequenceEncoder, Sequences, digit_sequences, sample_sequences
from .training import accuracy as model_accuracy
from .training import predict

#: Widths of Fig. 3b (sec-oneshot-theory; the authors' config.csv).
PAPER_WIDTHS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
#: Temperatures of the authors' grid (sec-oneshot-temperatures; their config.csv).
PAPER_TEMPERATURES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5)
#: Temperatures among which the authors pick the GP line's (sec-oneshot-temperatures, ``forced_temperature``).
PAPER_GP_TEMPERATURES = (0.025, 0.05, 0.075, 0.1, 0.25)
#: Training examples of the theory and test episodes (sec-oneshot-theory).
PAPER_NUM_TRAIN = 600
PAPER_NUM_TEST = 1000
#: The authors' GD model: test accuracy and single-head pruning drops (points, heads in ascending score order),
#: typed into their PLOT_head_scores_vs_performance_drop.py (sec-oneshot-pruning, Fig. 3e); quoted for comparison only.
AUTHORS_BASE_ACCURACY = 0.838
AUTHORS_SINGLE_HEAD_DROPS = (2.0, 0.8, 4.3, 8.4, 7.8, 7.3, 9.5, 8.9)
#: Splits on which the theory's predictors are evaluated.
EVALUATION_SPLITS = ("validation", "test", "ood")


# --------------------------------------------------------------------------------------------------------
# the theory network and the episodes


@dataclass(frozen=True)
class OneShotNetwork(PathNetwork):
    """The theory network of the one-shot task (sec-oneshot-theory): the trained model's query/key maps as fixed
    attention (qk form, average pooling), ``L = 2`` layers of ``H = 4`` heads, 16 paths, shown in flat order.
    """

    attention: Attention
    name: str = "one-shot"

    def __post_init__(self):
        if not isinstance(self.attention, Attention):
            raise ValueError(f"attention must be an attnpaths.attention.Attention, got {type(self.attention).__name__}")

    @property
    def path_names(self) -> tuple[str, ...]:
        """``"h1,h2"`` with 1-based heads, in flat path order (eq-path-form)."""
        return tuple(",".join(str(h + 1) for h in path) for path in all_paths(self.heads))


@dataclass(frozen=True, eq=False)
class Episodes:
    """The episodes of one chapter run.

    Attributes:
        train: ``P`` class-sorted episodes of the training classes (the theory's training set).
        validation: class-sorted episodes of the validation classes (temperature selection).
        test: class-sorted episodes of the test classes (reported accuracies).
        ood: out-of-distribution digit episodes (or None).
    """

    train: Sequences
    validation: Sequences
    test: Sequences
    ood: Sequences | None = None

    def split(self, name: str) -> Sequences:
        if name not in ("train",) + EVALUATION_SPLITS:
            raise ValueError(f"split must be one of {('train',) + EVALUATION_SPLITS}, got {name!r}")
        value = getattr(self, name)
        if value is None:
            raise ValueError(f"split {name!r} was not drawn")
        return value


def class_sorted_sequences(classes, n: int, encoder: SequenceEncoder, rng: np.random.Generator) -> Sequences:
    """``n`` episodes of one split, the first ``n/2`` with ``y = +1`` then ``n/2`` with ``y = -1`` (sec-oneshot-task).

    Draws episodes in blocks of ``n`` until each target has ``n/2`` of them, then keeps the first ``n/2`` of
    each (in the order drawn), so the result depends only on ``rng``'s state and ``n``.
    """
    n = even_int(n, "n (half of each target)")
    blocks = []
    while True:
        blocks.append(sample_sequences(classes, n, encoder, rng))
        y = torch.cat([b.y for b in blocks])
        if min(int((y > 0).sum()), int((y < 0).sum())) >= n // 2:
            break
    merged = blocks[0] if len(blocks) == 1 else Sequences(
        torch.cat([b.x for b in blocks]), y, np.concatenate([b.images for b in blocks]),
        np.concatenate([b.label_tokens for b in blocks]), np.concatenate([b.classes for b in blocks]),
    )
    return merged.class_sorted(n)


def draw_episodes(
    dataset: ImageDataset,
    encoder: SequenceEncoder,
    *,
    num_train: int = PAPER_NUM_TRAIN,
    num_validation: int = PAPER_NUM_TEST,
    num_test: int = PAPER_NUM_TEST,
    seed: int = 0,
    digits: DigitPairs | None = None,
) -> Episodes:
    """Training, validation and test episodes from the disjoint class splits, and the OOD digit episodes.

    Each split has its own stream ``numpy.random.default_rng(SeedSequence(seed).spawn(3)[k])`` (k = 0, 1, 2
    for train, validation, test), so changing one split's size changes no other split.

    Args:
        dataset: the class splits; encoder: the trained model's frozen token encoding.
        num_train: ``P``; num_validation, num_test: episodes per split (even).
        seed: the seed of the three streams.
        digits: out-of-distribution digit pairs (:func:`attnpaths.oneshot.digits.load_digit_pairs`), or None.
    """
    seed = int_at_least(seed, "seed", 0)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
    return Episodes(
        train=class_sorted_sequences(dataset.train, num_train, encoder, rngs[0]),
        validation=class_sorted_sequences(dataset.validation, num_validation, encoder, rngs[1]),
        test=class_sorted_sequences(dataset.test, num_test, encoder, rngs[2]),
        ood=None if digits is None else digit_sequences(digits, encoder),
    )


def episode_features(episodes: Episodes, attention: Attention) -> PathData:
    """Path features of the training episodes, and of the validation, test and (if drawn) OOD episodes as the
    evaluation splits (in that order), under the theory network of ``attention``."""
    network = OneShotNetwork(attention)
    names = ("train",) + tuple(s for s in EVALUATION_SPLITS if getattr(episodes, s) is not None)
    features = {s: path_features(episodes.split(s).x, attention) for s in names}
    y = {s: episodes.split(s).y.to(torch.float64) for s in names}
    return PathData(network, features["train"], y["train"], {s: (features[s], y[s]) for s in names[1:]})


# --------------------------------------------------------------------------------------------------------
# the theory on a grid of widths and temperatures


def theory_grid(data: PathData, widths=PAPER_WIDTHS, temperatures=PAPER_TEMPERATURES, *,
                warm_start: bool = True, max_iterations: int = 200, progress: bool = True) -> TheorySweep:
    """The theory (eq-action) at every width and temperature, with the mean predictor (eq-predictor) on every split: the
    :func:`~attnpaths.experiments.sweep.theory_sweep` of the one-shot chapter, one engine task per width.

    With ``warm_start`` the temperatures of one width are solved from the highest down, each starting from
    the previous certified minimiser (a start that fails to certify is retried from the GP values, the
    solver's default start). The minimiser is the same when the action has one minimum; the chapter checks
    this at the selected points against a start from the GP values.

    A point whose minimiser is not certified (the solver's gradient or Hessian test fails) keeps the
    solver's last iterate and is marked ``False`` in ``converged``; :func:`selected` never chooses it.
    """
    return theory_sweep(data, widths, temperatures, warm_start=warm_start, keep_uncertified=True,
                        max_iterations=max_iterations, on_engine=True, description="theory (N, T)", progress=progress)


def gp_grid(data: PathData, temperatures=PAPER_GP_TEMPERATURES) -> TheorySweep:
    """The GP limit (eq-gp), ``U = I`` at every temperature, as a one-width :class:`~attnpaths.experiments.sweep.TheorySweep`."""
    return theory_sweep(data, (math.inf,), temperatures, keep_uncertified=True, max_iterations=1, on_engine=True,
                        description="GP", progress=False)


def select_temperature(accuracy, mse=None, allowed=None) -> np.ndarray:
    """Index of the chosen temperature for every width: the highest accuracy; ties go to the lower mean
    squared error (if given), then to the lower temperature.

    Args:
        accuracy: ``[n_w, n_T]`` accuracies on the selection split; mse: ``[n_w, n_T]`` or None.
        allowed: bool ``[n_w, n_T]`` the points that may be chosen (default all); every width needs one.

    Returns:
        int ``[n_w]``.
    """
    acc = as_float64_array(accuracy, "accuracy")
    if acc.ndim != 2 or acc.shape[1] < 1:
        raise ValueError(f"accuracy must have shape [n_w, n_T], got {acc.shape}")
    err = np.zeros_like(acc) if mse is None else as_float64_array(mse, "mse")
    if err.shape != acc.shape:
        raise ValueError(f"mse must have the shape of accuracy {acc.shape}, got {err.shape}")
    ok = np.ones(acc.shape, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if ok.shape != acc.shape:
        raise ValueError(f"allowed must have the shape of accuracy {acc.shape}, got {ok.shape}")
    if not ok.any(axis=1).all():
        raise ValueError(f"allowed must leave at least one temperature for every width (none for rows "
                         f"{np.flatnonzero(~ok.any(axis=1)).tolist()})")
    chosen = []
    for a, e, m in zip(acc, err, ok):
        # lexicographic: highest accuracy, then lowest mse, then lowest temperature index
        chosen.append(min(np.flatnonzero(m), key=lambda j: (-a[j], e[j], j)))
    return np.array(chosen, dtype=int)


def selected(grid: TheorySweep, on: str = "validation") -> dict:
    """The grid at the temperature chosen on split ``on`` for every width (:func:`select_temperature`),
    among the certified points.

    Returns:
        ``{"on", "index": [n_w], "temperature": [n_w], "accuracy": {split: [n_w]}, "mse": {split: [n_w]},
        "U": [n_w, n, n], "means": {split: [n_w, B]}}``.
    """
    if on not in grid.accuracy:
        raise ValueError(f"on must be one of the evaluated splits {tuple(grid.accuracy)}, got {on!r}")
    idx = select_temperature(grid.accuracy[on], grid.mse[on], grid.converged)
    rows = np.arange(len(idx))
    return {
        "on": on,
        "index": idx,
        "temperature": grid.temperatures[idx],
        "accuracy": {s: a[rows, idx] for s, a in grid.accuracy.items()},
        "mse": {s: m[rows, idx] for s, m in grid.mse.items()},
        "U": grid.U[rows, idx],
        "means": {s: m[rows, idx] for s, m in grid.means.items()},
    }


def sample_widths(data: PathData, widths, temperatures, seed: int, *, warmup, draws, chains,
                  progress: bool = True, device="cpu") -> dict:
    """Posterior samples of the network at every sampled width and its selected temperature
    (:func:`attnpaths.experiments.sampling.sample_widths`, one engine task per width, the generator of width
    ``N`` seeded with :func:`~attnpaths.engine.task_seed` ``(seed, N)``; no exact order-parameter run).

    Args:
        widths, temperatures, warmup, draws, chains: one entry per sampled width.
        device: where the sampler's linear algebra runs (``"cpu"`` or ``"cuda"``).

    Returns:
        ``{width: SampledPoint}`` in the order of ``widths``.
    """
    columns = (widths, temperatures, warmup, draws, chains)
    if len({len(c) for c in columns}) != 1:
        raise ValueError("widths, temperatures, warmup, draws and chains must have one entry per sampled width, got "
                         f"lengths {[len(c) for c in columns]}")
    plans = [sampling.SamplingPlan(int(w), int(a), int(b), int(c)) for w, a, b, c in zip(widths, warmup, draws, chains)]
    points, _ = sampling.sample_widths(data, plans, [float(T) for T in temperatures], seed, progress=progress,
                                       device=device)
    return points


def warm_start_differences(data: PathData, grid: TheorySweep, selection: dict, widths) -> dict[int, float]:
    """How far the warm-started minimiser of :func:`theory_grid` lies from the one reached from the GP values
    (the solver's default start), at the selected point of every width in ``widths`` (sec-oneshot-temperatures).

    Args:
        selection: :func:`selected` ``(grid, ...)``; widths: solved widths of ``grid``.

    Returns:
        ``{width: max_ij |U_ij(from GP values) - U_ij(selected)|}``; the solve from the GP values must certify
        its minimiser (``on_failure="raise"``).
    """
    out = {}
    for w in widths:
        k = grid.index(w)
        reference = solve(data.features, data.y, heads=data.network.heads, widths=w,
                          temperature=float(selection["temperature"][k]), on_failure="raise")
        out[int(w)] = float(np.abs(reference.U - selection["U"][k]).max())
    return out


def order_parameter_summary(U) -> dict:
    """Where ``U`` lies relative to its GP value ``I`` (eq-gp, sec-oneshot-order-parameter).

    Args:
        U: ``[n, n]`` order parameter.

    Returns:
        ``{"diagonal_min", "diagonal_max", "offdiagonal_min", "offdiagonal_max", "distance_to_gp"}``, the last
        ``||U - I||_F``.
    """
    U = as_float64_array(U, "U")
    if U.ndim != 2 or U.shape[0] != U.shape[1] or U.shape[0] < 2:
        raise ValueError(f"U must be a square matrix of size >= 2, got shape {U.shape}")
    diagonal, off = np.diag(U), U[~np.eye(U.shape[0], dtype=bool)]
    return {"diagonal_min": float(diagonal.min()), "diagonal_max": float(diagonal.max()),
            "offdiagonal_min": float(off.min()), "offdiagonal_max": float(off.max()),
            "distance_to_gp": float(np.linalg.norm(U - np.eye(U.shape[0])))}


# --------------------------------------------------------------------------------------------------------
# pruning the gradient-descent model (sec-oneshot-pruning)


def all_heads(heads) -> list[tuple[int, int]]:
    """Every ``(layer, head)`` pair, 0-based, layer-major (the order of :func:`attnpaths.head_scores.head_labels`)."""
    return [(l, h) for l, n in enumerate(heads) for h in range(n)]


@torch.no_grad()
def path_outputs(model: SumHeadTransformer, x: torch.Tensor, *, batch_size: int = 256) -> torch.Tensor:
    """The GD model's output split into its attention paths, without the head-sum factors ``F^{-1/2}``.

    The model is linear in its value weights, so ``f(x) = sum_pi (prod_l c_l[h_l]) g_pi(x)`` with
    ``g_pi(x) = mean_t [V^(L,h_L) Omega^(L,h_L) ... V^(1,h_1) Omega^(1,h_1) V0 x]_t . a`` and ``c_l[h]`` the
    factor of head ``h`` in layer ``l``: ``F^{-1/2}`` unpruned, and after pruning 0 for a dropped head and
    ``(F - n_dropped)^{-1/2}`` for a kept one (sec-oneshot-pruning). Computed in float64.

    Args:
        x: ``[B, N0, T]`` episodes.

    Returns:
        float64 ``[B, F^L]``, paths in flat order (``h_1`` slowest).
    """
    chunks = []
    V0 = model.input_layer.detach().double()
    values = model.values.detach().double()
    readout = model.readout.detach().double()
    for start in range(0, x.shape[0], batch_size):
        xb = x[start : start + batch_size].double()
        omega = model.attention_matrices(xb).double()  # [B, L, F, T_key, T_query]
        stream = torch.einsum("bit,ni->btn", xb, V0)[:, None]  # [B, paths so far, T, N]
        for layer in range(model.num_layers):
            # new[b, (p, h), t] = V^(l,h) sum_s Omega^(l,h)_{s t} stream[b, p, s]
            mixed = torch.einsum("bhst,bpsn->bphtn", omega[:, layer], stream)
            stream = torch.einsum("bphtn,hmn->bphtm", mixed, values[layer]).flatten(1, 2)
        chunks.append(stream.mean(dim=2) @ readout)
    return torch.cat(chunks) if chunks else torch.zeros(0, model.num_heads**model.num_layers, dtype=torch.float64)


def head_factors(heads, pruned=()) -> np.ndarray:
    """Per-path factor ``prod_l c_l[h_l]`` of :func:`path_outputs` with the heads ``pruned`` dropped.

    Returns:
        float64 ``[prod_l H_l]`` in flat path order.
    """
    heads = tuple(int(h) for h in heads)
    keep = [np.ones(H) for H in heads]
    for pair in pruned:
        l, h = (int(v) for v in pair)
        if not (0 <= l < len(heads) and 0 <= h < heads[l]):
            raise ValueError(f"pruned must hold 0-based (layer, head) pairs within heads={heads}, got {pair!r}")
        keep[l][h] = 0.0
    if any(k.sum() == 0 for k in keep):
        raise ValueError(f"pruned must leave at least one head in every layer, got {list(pruned)!r}")
    factors = [k / np.sqrt(k.sum()) for k in keep]
    out = factors[0]
    for f in factors[1:]:
        out = np.multiply.outer(out, f).ravel()
    return out


class PruningEvaluator:
    """Accuracy of the gradient-descent model on fixed episodes with a set of heads pruned (memoised).

    The episodes' path outputs (:func:`path_outputs`) are computed once; the output with any set of heads
    pruned is then their combination with :func:`head_factors`, so a pruning curve costs no forward pass.

    Args:
        model: the trained :class:`~attnpaths.oneshot.model.SumHeadTransformer`.
        sequences: the episodes on which every accuracy is measured.
    """

    def __init__(self, model: SumHeadTransformer, sequences: Sequences):
        if not isinstance(model, SumHeadTransformer):
            raise ValueError(f"model must be a SumHeadTransformer, got {type(model).__name__}")
        self.model = model
        self.sequences = sequences
        self.heads = (model.num_heads,) * model.num_layers
        self.paths = path_outputs(model, sequences.x).numpy()
        self.labels = sequences.y.numpy().astype(np.float64)
        self._cache: dict[frozenset, float] = {}

    def outputs(self, pruned=()) -> np.ndarray:
        """Model outputs ``[B]`` with the heads ``pruned`` dropped."""
        return self.paths @ head_factors(self.heads, pruned)

    def __call__(self, pruned=()) -> float:
        key = frozenset((int(l), int(h)) for l, h in pruned)
        if key not in self._cache:
            self._cache[key] = float(np.mean(np.sign(self.outputs(sorted(key))) == self.labels))
        return self._cache[key]


def single_head_drops(evaluator: PruningEvaluator) -> dict:
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


def pruning_sets(order, heads) -> list[tuple[tuple[int, int], ...]]:
    """Cumulative sets of pruned heads along ``order``: set ``k`` holds the first ``k`` heads of ``order``
    that can be pruned, a head being skipped when it is the last one left in its layer (the model needs
    one head per layer). ``k`` runs from 0 to ``sum(H_l - 1)``.

    Args:
        order: a permutation of :func:`all_heads` ``(heads)``.
        heads: ``(H_1, ..., H_L)``.
    """
    heads = tuple(int(h) for h in heads)
    order = [tuple(int(v) for v in pair) for pair in order]
    if sorted(order) != all_heads(heads):
        raise ValueError(f"order must be a permutation of every (layer, head) pair of heads={heads}, got {order!r}")
    left = list(heads)
    pruned: list[tuple[int, int]] = []
    sets = [()]
    for l, h in order:
        if left[l] > 1:
            left[l] -= 1
            pruned.append((l, h))
            sets.append(tuple(pruned))
    return sets


def pruning_curve(evaluator: PruningEvaluator, order) -> np.ndarray:
    """Accuracy after pruning ``k = 0, 1, ...`` heads along ``order`` (:func:`pruning_sets`)."""
    return np.array([evaluator(s) for s in pruning_sets(order, evaluator.heads)])


def score_order(scores) -> list[tuple[int, int]]:
    """Heads in ascending head score (sec-head-scores), ties in layer-major order.

    Args:
        scores: ``[L, H]`` (:func:`attnpaths.head_scores.head_scores`).
    """
    scores = np.asarray(scores, dtype=np.float64)
    heads = [(l, h) for l in range(scores.shape[0]) for h in range(scores.shape[1]) if np.isfinite(scores[l, h])]
    return sorted(heads, key=lambda lh: (scores[lh], lh))


def random_orders(heads, num_orders: int, rng: np.random.Generator) -> list[list[tuple[int, int]]]:
    """``num_orders`` uniformly random orders of all heads, drawn from ``rng``."""
    num_orders = positive_int(num_orders, "num_orders")
    numpy_generator(rng)
    pairs = all_heads(heads)
    return [[pairs[i] for i in rng.permutation(len(pairs))] for _ in range(num_orders)]


def path_decomposition_errors(evaluator: PruningEvaluator, pruned_sets) -> list[dict]:
    """How far the path decomposition of :class:`PruningEvaluator` (float64) lies from the model's own forward
    pass (float32, :func:`attnpaths.oneshot.training.predict`), for every set of pruned heads in ``pruned_sets``.

    Returns:
        one ``{"pruned", "output", "scale", "accuracy"}`` per set: the largest output difference, the largest
        output magnitude of the forward pass and the accuracy difference.
    """
    out = []
    for pruned in pruned_sets:
        pruned = [tuple(int(v) for v in pair) for pair in pruned]
        direct = predict(evaluator.model, evaluator.sequences.x, drop_heads=pruned).double().numpy()
        out.append({"pruned": pruned, "output": float(np.abs(evaluator.outputs(pruned) - direct).max()),
                    "scale": float(np.abs(direct).max()),
                    "accuracy": abs(evaluator(pruned) - model_accuracy(evaluator.model, evaluator.sequences,
                                                                       drop_heads=pruned))})
    return out


@dataclass(frozen=True, eq=False)
class PruningResult:
    """Pruning the gradient-descent model without retraining (Figs. 3e and 3f, sec-oneshot-pruning).

    Attributes:
        heads: ``(H_1, ..., H_L)``; labels: head labels ``"(l)h"`` in layer-major order.
        num_episodes: episodes on which every accuracy is measured.
        scores: ``[L, H]`` the theory's head scores (sec-head-scores).
        base_accuracy: the unpruned model's accuracy.
        single_head_accuracy, single_head_drop: ``[L, H]`` accuracy with one head pruned, and its drop.
        score_order: heads ``(l, h)`` in ascending score; score_curve: ``[K + 1]`` accuracy after pruning
            ``k = 0..K`` heads along it (:func:`pruning_curve`).
        random_orders: random orders of the heads; random_curves: ``[n_orders, K + 1]`` their curves.
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
    _label_of: dict = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_label_of", dict(zip(all_heads(self.heads), self.labels)))

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
            "num_episodes": self.num_episodes, "base_accuracy": self.base_accuracy,
            "single_head_accuracy": self.single_head_accuracy.ravel(),
            "single_head_drop": self.single_head_drop.ravel(), "labels": self.labels,
            "score_order": [self.label(lh) for lh in self.score_order],
            "score_order_pruned": self.score_order_pruned,
            "score_order_accuracy": self.score_curve,
            "random_orders": [[self.label(lh) for lh in o] for o in self.random_orders],
            "random_order_accuracy": self.random_curves,
            "random_order_mean": self.random_curves.mean(axis=0),
            "random_order_sd": self.random_curves.std(axis=0, ddof=1),
        }


def prune_heads(evaluator: PruningEvaluator, scores, num_random_orders: int, rng: np.random.Generator) -> PruningResult:
    """Figs. 3e and 3f: the accuracy drop of every head pruned alone (:func:`single_head_drops`), the pruning
    curve along ascending head score (:func:`score_order`, :func:`pruning_curve`) and those of
    ``num_random_orders`` random orders drawn from ``rng`` (:func:`random_orders`).

    Args:
        evaluator: the model and its episodes; scores: ``[L, H]`` head scores (sec-head-scores).
    """
    scores = as_float64_array(scores, "scores")
    heads = evaluator.heads
    if scores.shape != (len(heads), max(heads)):
        raise ValueError(f"scores must have shape {(len(heads), max(heads))} (layers, heads), got {scores.shape}")
    single = single_head_drops(evaluator)
    order = score_order(scores)
    orders = random_orders(heads, num_random_orders, rng)
    return PruningResult(
        heads=tuple(heads), labels=head_labels(heads), num_episodes=len(evaluator.sequences), scores=scores,
        base_accuracy=single["base"], single_head_accuracy=single["accuracy"], single_head_drop=single["drop"],
        score_order=order, score_curve=pruning_curve(evaluator, order), random_orders=orders,
        random_curves=np.array([pruning_curve(evaluator, o) for o in orders]),
    )


# --------------------------------------------------------------------------------------------------------
# statistics behind the verdicts


def spearman_permutation_test(a, b) -> dict:
    """Spearman rank correlation of ``a`` and ``b`` and its exact one-sided permutation p-value
    ``P(rho_perm >= rho)`` over all ``n!`` pairings (``n <= 9``).

    ``rho`` is :func:`scipy.stats.spearmanr`; the p-value is :func:`scipy.stats.permutation_test` with
    ``permutation_type="pairings"`` and ``n_resamples = n!`` (every pairing: exact). Its test statistic is
    the sum of products of the centred average ranks (:func:`scipy.stats.rankdata`), ``rho`` times a
    normalisation that no pairing changes: it orders the pairings as ``rho`` does, and it is exact in floating
    point (the centred ranks are multiples of 1/2), so pairings with the same ``rho`` tie exactly.

    Args:
        a, b: ``[n]`` values (``3 <= n <= 9``).

    Returns:
        ``{"rho", "p_value", "n"}``; ``rho = 0`` and ``p_value = 1`` when ``a`` or ``b`` is constant.
    """
    a, b = as_float64_array(a, "a").ravel(), as_float64_array(b, "b").ravel()
    if a.shape != b.shape or a.size < 3:
        raise ValueError(f"a and b must hold the same number (>= 3) of values, got {a.size} and {b.size}")
    if a.size > 9:
        raise ValueError(f"the exact permutation test enumerates n! pairings: n must be <= 9, got {a.size}")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return {"rho": 0.0, "p_value": 1.0, "n": int(a.size)}
    ra, rb = (stats.rankdata(v, method="average") - 1 for v in (a, b))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    test = stats.permutation_test((ra,), lambda x, axis: np.sum(x * rb, axis=axis), permutation_type="pairings",
                                  alternative="greater", n_resamples=math.factorial(a.size), vectorized=True)
    return {"rho": float(stats.spearmanr(a, b).statistic), "p_value": float(test.pvalue), "n": int(a.size)}


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
