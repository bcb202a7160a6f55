"""The one-shot claims over trained models and draws of the theory's training episodes (sec-oneshot-replicates).

One trained model and one draw of the theory's ``P`` training episodes make one replicate of the chapter's
pipeline (:func:`draw_replicate`). The replicates cross the shipped models of several training seeds with
independent draws of the training episodes. Draws of one model share its attention, its episodes and its weights,
so they are not independent of each other; the models are, so the claims (``attnpaths.oneshot.claims``) average
every statistic over the draws of its model and test over the models.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from .._validation import int_at_least, positive_int
from ..engine import HERE, experiment_generator, map_tasks
from ..experiments.head_pruning import pruning_sets
from ..experiments.head_subsets import best_curve, random_order_curve, subset_curve
from ..experiments.kernel_pcs import mean_predictor
from ..experiments.path_data import PathData
from ..experiments.wrong_theories import TransposedAttention, wrong_order_parameters
from ..head_scoring import head_scores, pruning_order
from ..paths import path_features
from ..theory import classification_accuracy
from .episodes import class_sorted_sequences, draw_episodes, episode_features
from .pruning import pattern_similarity, subset_accuracy_table
from .sequences import SequenceEncoder
from .temperature_grid import gp_grid, label_fractions, selected, theory_grid
from .training import TrainedModel

#: The key of the theory as written (at the replicates' small width) among a draw's order parameters.
THEORY = "theory"


@dataclass(frozen=True, eq=False)
class ModelEvaluation:
    """What the draws of one trained model share (:func:`model_evaluation`).

    Attributes:
        index: the model's position among the replicates (0: the chapter's own model); seed: its training seed.
        data: its theory network's path features, with its validation and test episodes as the evaluation splits
            (the training features are each draw's own).
        encoder: the model's token encoding (episodes of a draw are encoded with it).
        U_gd: ``[n, n]`` the model's gradient-descent order parameter (flat path order).
        table: ``[2^n]`` the model's accuracy on its pruning episodes with every set of pruned heads that a pruning
            curve can reach (:func:`attnpaths.oneshot.pruning.subset_accuracy_table`).
    """

    index: int
    seed: int
    data: PathData
    encoder: SequenceEncoder
    U_gd: np.ndarray
    table: np.ndarray

    @property
    def heads(self) -> tuple[int, ...]:
        """``(H_1, ..., H_L)``."""
        return tuple(self.data.network.heads)

    @property
    def best(self) -> np.ndarray:
        """``[K + 1]`` the best accuracy over the sets of ``k`` pruned heads (picked on the pruning episodes)."""
        return best_curve(self.table, self.heads)


@dataclass(frozen=True)
class ReplicateSettings:
    """How the replicates are drawn and solved (sec-oneshot-replicates).

    Attributes:
        draws: draws of the training episodes per model; seed: their seed (draw ``d`` of model ``i`` comes from
            ``experiment_generator(seed, i, d)``).
        num_train: ``P``; num_validation, num_test: the episodes of each model's validation and test split, drawn
            with the seed ``episode_seed + i``; num_pruning_test, pruning_seed: each model's pruning episodes.
        width: the small width ``N`` of the theory as written; near_gp_width: the width of ``U`` near the GP limit.
        temperatures, gp_temperatures: the temperatures among which the theory and the GP limit choose theirs on
            the validation episodes; max_iterations: the solver's Newton cap on that grid.
        num_components: the leading kernel PCs of the label fraction (claim 4).
        ks: the numbers of pruned heads of claim 7c.
        chunk_size: episodes per chunk of a model's subset table (memory only).
    """

    draws: int
    seed: int
    num_train: int
    num_validation: int
    num_test: int
    episode_seed: int
    num_pruning_test: int
    pruning_seed: int
    width: int
    near_gp_width: int
    temperatures: tuple
    gp_temperatures: tuple
    num_components: int
    ks: tuple
    max_iterations: int = 200
    chunk_size: int = 500

    def __post_init__(self):
        positive_int(self.draws, "draws")
        int_at_least(self.seed, "seed", 0)
        if not 0 < int(self.width) < int(self.near_gp_width):
            raise ValueError(
                f"near_gp_width must exceed width >= 1, got width={self.width!r}, near_gp_width={self.near_gp_width!r}"
            )
        ks = tuple(int(k) for k in self.ks)
        if not ks or min(ks) < 1:
            raise ValueError(f"ks must hold numbers of pruned heads >= 1, got {self.ks!r}")
        object.__setattr__(self, "ks", ks)
        object.__setattr__(self, "temperatures", tuple(float(T) for T in self.temperatures))
        object.__setattr__(self, "gp_temperatures", tuple(float(T) for T in self.gp_temperatures))


def model_evaluation(
    trained: TrainedModel,
    dataset,
    settings: ReplicateSettings,
    *,
    index: int,
    data: PathData | None = None,
    table=None,
) -> ModelEvaluation:
    """The :class:`ModelEvaluation` of one trained model.

    Model ``index`` has its own episodes: validation and test from :func:`attnpaths.oneshot.episodes.draw_episodes`
    with the seed ``settings.episode_seed + index``, pruning episodes of the test classes from
    ``experiment_generator(pruning_seed, 0)`` for the chapter's model (index 0: the chapter's pruning episodes) and
    ``experiment_generator(pruning_seed, 0, index)`` for the others.

    Args:
        trained: the model; dataset: the class splits.
        data, table: the chapter's path features and subset table of this model, reused when given (computed
            otherwise); ``data``'s splits other than validation and test are left out.
    """
    index = int_at_least(index, "index", 0)
    attention = trained.model.attention()
    if data is None:
        episodes = draw_episodes(
            dataset,
            trained.encoder,
            num_train=2,  # each draw brings its own training episodes
            num_validation=settings.num_validation,
            num_test=settings.num_test,
            seed=int_at_least(settings.episode_seed, "episode_seed", 0) + index,
        )
        data = episode_features(episodes, attention)
    missing = [s for s in ("validation", "test") if s not in data.evaluation]
    if missing:
        raise ValueError(f"data must hold the validation and test episodes, missing {missing}")
    data = dataclasses.replace(data, evaluation={s: data.evaluation[s] for s in ("validation", "test")})
    if table is None:
        identity = (0,) if index == 0 else (0, index)
        rng = experiment_generator(settings.pruning_seed, *identity)
        pruning_episodes = class_sorted_sequences(dataset.test, settings.num_pruning_test, trained.encoder, rng)
        table = subset_accuracy_table(trained.model, pruning_episodes, chunk_size=settings.chunk_size)
    return ModelEvaluation(
        index=index,
        seed=int(trained.config.seed),
        data=data,
        encoder=trained.encoder,
        U_gd=trained.model.gd_order_parameter().numpy(),
        table=np.asarray(table, dtype=np.float64),
    )


def _transfer(U, model: ModelEvaluation, ks) -> dict:
    """The transfer statistics of one order parameter ``U`` to ``model``: the pattern correlation with its
    gradient-descent ``U`` and its excess over the mean over every relabelling of the heads (claim 8); the accuracy of
    the head-score order averaged over ``k = 1..K`` pruned heads, minus the random-order expectation (claim 7b); the
    accuracy after pruning ``k`` heads along it, minus the best set of ``k`` heads, for every ``k`` of ``ks``
    (claim 7c)."""
    similarity = pattern_similarity(U, model.U_gd, model.heads)
    excess = similarity["pearson"] - float(np.mean(similarity["null"]))
    sets = pruning_sets(pruning_order(head_scores(U, model.heads)), model.heads)
    curve = subset_curve(model.table, sets, model.heads)
    best = model.best
    return {
        "transfer": similarity["pearson"],
        # a pattern that every relabelling leaves alone (U = I) has no excess: the same sums in another order differ
        # in the last bits only, and a replicate t-test must not read a sign into them
        "transfer_excess": excess if abs(excess) > 1e-12 else 0.0,
        "order_gain": float(curve[1:].mean()) - float(random_order_curve(model.table, model.heads)[1:].mean()),
        "best_gap": [float(curve[k] - best[k]) for k in ks],
    }


def draw_replicate(model: ModelEvaluation, classes, settings: ReplicateSettings, draw: int) -> dict:
    """One replicate: ``settings.num_train`` class-sorted training episodes of ``classes`` drawn from
    ``experiment_generator(settings.seed, model.index, draw)`` and encoded by the model, and the chapter's pipeline on
    them: the theory at ``settings.width`` and the GP limit, each at the temperature with the best accuracy on the
    model's validation episodes (and, for the authors' rule, on its test episodes); at the theory's temperature, ``U``
    also at ``settings.near_gp_width`` and with each plausible mistake
    (:func:`attnpaths.experiments.wrong_theories.wrong_order_parameters`).

    Returns:
        ``{"temperature", "gp_temperature", "accuracy", "label_fraction", "theories"}``: the test accuracies
        (the fields of :class:`ModelReplicates`), the label fractions of the first ``settings.num_components`` PCs,
        and per order parameter (``theory`` first) the transfer statistics.
    """
    rng = experiment_generator(settings.seed, model.index, int_at_least(draw, "draw", 0))
    episodes = class_sorted_sequences(classes, settings.num_train, model.encoder, rng)
    attention = model.data.network.attention
    features = path_features(episodes.x, attention)
    y = episodes.y.to(features.dtype)
    data = dataclasses.replace(model.data, features=features, y=y)
    width = settings.width
    grid = theory_grid(
        data, [width], settings.temperatures, max_iterations=settings.max_iterations, progress=False, engine=HERE
    )
    gp = gp_grid(data, settings.gp_temperatures, engine=HERE)
    sel, sel_test = selected(grid, "validation"), selected(grid, "test")
    gp_sel, gp_sel_test = selected(gp, "validation"), selected(gp, "test")
    U, T = sel["U"][0], float(sel["temperature"][0])
    test_features, test_y = data.evaluation["test"]
    diagonal = mean_predictor(features, y, test_features, np.diag(np.diag(U)), T)
    theories = {THEORY: U}
    transposed = path_features(episodes.x, TransposedAttention(attention))
    theories.update(
        wrong_order_parameters(features, y, transposed, model.heads, width, T, near_gp_width=settings.near_gp_width)
    )
    return {
        "temperature": T,
        "gp_temperature": float(gp_sel["temperature"][0]),
        "accuracy": {
            "theory": float(sel["accuracy"]["test"][0]),
            "diagonal": classification_accuracy(diagonal, test_y.numpy()),
            "gp": float(gp_sel["accuracy"]["test"][0]),
            "theory_test_rule": float(sel_test["accuracy"]["test"][0]),
            "gp_test_rule": float(gp_sel_test["accuracy"]["test"][0]),
        },
        "label_fraction": label_fractions(features, y, U, settings.num_components),
        "theories": {name: _transfer(u, model, settings.ks) for name, u in theories.items()},
    }


@dataclass(frozen=True, eq=False)
class ModelReplicates:
    """Every draw of one model (:func:`model_replicates`); arrays run over the draws ``[D]``.

    Attributes:
        index, seed: the model's position among the replicates and its training seed.
        temperature, gp_temperature: ``[D]`` the temperatures chosen on the validation episodes.
        accuracy: ``{"theory", "diagonal", "gp", "theory_test_rule", "gp_test_rule"}``, each ``[D]`` (see
            :func:`draw_replicate`).
        label_fraction: ``{"finite_width", "gp"}``, each ``[D]``.
        transfer, transfer_excess, order_gain: ``{theory: [D]}`` per order parameter (``"theory"``, the mistakes,
            near the GP limit) the statistics of claims 8 and 7b.
        best_gap: ``{theory: [D, m]}`` claim 7c's statistic at each ``k`` of ``ks``.
        ks: the numbers of pruned heads of ``best_gap``; base_accuracy: the unpruned model on its pruning episodes;
            best_accuracy: ``[m]`` the best set of ``k`` heads there.
        seconds: ``{"evaluation", "draws"}`` wall-clock seconds of :func:`model_evaluation` and of the draws.
    """

    index: int
    seed: int
    temperature: np.ndarray
    gp_temperature: np.ndarray
    accuracy: dict
    label_fraction: dict
    transfer: dict
    transfer_excess: dict
    order_gain: dict
    best_gap: dict
    ks: tuple
    base_accuracy: float
    best_accuracy: np.ndarray
    seconds: dict

    @property
    def num_draws(self) -> int:
        """``D``."""
        return int(self.temperature.size)

    @property
    def theories(self) -> tuple[str, ...]:
        """The order parameters read, ``"theory"`` first."""
        return tuple(self.transfer)

    def to_dict(self) -> dict:
        """The results-file form."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["ks"] = list(self.ks)
        return out


def model_replicates(trained: TrainedModel, dataset, settings: ReplicateSettings, **evaluation) -> ModelReplicates:
    """Every draw of one model (:func:`model_evaluation` with these arguments, then :func:`draw_replicate` for each
    draw, in this process): one engine task of :func:`replicates`."""
    start = time.perf_counter()
    model = model_evaluation(trained, dataset, settings, **evaluation)
    evaluated = time.perf_counter()
    results = [draw_replicate(model, dataset.train, settings, d) for d in range(settings.draws)]
    names = tuple(results[0]["theories"])

    def stack(key):
        return {name: np.array([r["theories"][name][key] for r in results]) for name in names}

    return ModelReplicates(
        index=model.index,
        seed=model.seed,
        temperature=np.array([r["temperature"] for r in results]),
        gp_temperature=np.array([r["gp_temperature"] for r in results]),
        accuracy={k: np.array([r["accuracy"][k] for r in results]) for k in results[0]["accuracy"]},
        label_fraction={k: np.array([r["label_fraction"][k] for r in results]) for k in ("finite_width", "gp")},
        transfer=stack("transfer"),
        transfer_excess=stack("transfer_excess"),
        order_gain=stack("order_gain"),
        best_gap=stack("best_gap"),
        ks=settings.ks,
        base_accuracy=float(model.table[0]),
        best_accuracy=np.array([model.best[k] for k in settings.ks]),
        seconds={"evaluation": evaluated - start, "draws": time.perf_counter() - evaluated},
    )


def replicate_summary(reps) -> dict:
    """The numbers that the one-shot chapter's prose quotes of the replicates (sec-oneshot-replicates):
    ``num_rep_models`` (trained models), ``rep_draws`` (draws of each), ``rep_df`` (the degrees of freedom of a test
    over the models) and ``alignment_fw_mean``, ``alignment_gp_mean`` (the label fractions of the first PCs at finite
    width and in the GP limit, averaged over every draw of every model).

    Args:
        reps: :func:`replicates` ``(...)``, ``[S]`` models with the same number of draws.

    Returns:
        ``{name: int | float}``.
    """
    reps = list(reps)
    draws = {m.num_draws for m in reps}
    if not reps or len(draws) != 1:
        raise ValueError(f"reps must hold models with the same number of draws, got {sorted(draws)}")
    return {
        "num_rep_models": len(reps),
        "rep_draws": draws.pop(),
        "rep_df": len(reps) - 1,
        **{
            f"alignment_{short}_mean": float(np.mean([m.label_fraction[key] for m in reps]))
            for short, key in (("fw", "finite_width"), ("gp", "gp"))
        },
    }


def replicates(
    models, dataset, settings: ReplicateSettings, *, data: PathData | None = None, table=None, progress: bool = False
) -> list[ModelReplicates]:
    """:func:`model_replicates` of every trained model of ``models`` (the chapter's model first), one engine task
    each (:func:`attnpaths.engine.map_tasks`).

    Args:
        models: the trained models, ``[S]``, ``S >= 2``; data, table: the chapter's path features and subset table of
            the first (reused, see :func:`model_evaluation`).
    """
    models = list(models)
    if len(models) < 2 or any(not isinstance(m, TrainedModel) for m in models):
        raise ValueError(f"models must hold at least 2 trained models, got {len(models)}")
    tasks = [
        dict(trained=m, index=i, data=data if i == 0 else None, table=table if i == 0 else None)
        for i, m in enumerate(models)
    ]
    return map_tasks(
        model_replicates,
        tasks,
        shared=dict(dataset=dataset, settings=settings),
        description="one-shot replicates (trained models)",
        progress=progress,
    )
