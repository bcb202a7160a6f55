"""The experiments of the HMC chapter (Fig. 2 and its appendix) that only this task does, on the networks of
:mod:`attnpaths.hmc.networks`: the GP lines of Fig. 2c, the theory over independently drawn data sets (the spread
that one data set cannot show), the ``U`` ablations of the authors' 2-path plotting script and one network's
results record. Its claims are tested by :mod:`attnpaths.experiments.finite_width` and :mod:`attnpaths.hmc.claims`.

Orders. ``U`` matrices of the ablations are in the flat path order (``h_1`` slowest); the band's ``U`` is in
figure order (``g, d, a1, a2``, the paths the network has).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import increasing_ints, positive_int, positive_real, square_matrix, torch_generator
from ..engine import map_tasks
from ..experiments import sampling
from ..experiments.kernel_pcs import label_fraction, mean_predictor, pc_overlaps
from ..experiments.path_data import PathData, path_data
from ..experiments.sweep import TheorySweep, theory_sweep
from ..theory import classification_accuracy, solve
from .data import HMCDataset, HMCTask
from .heads import PAPER_BETA
from .networks import four_path_network, good_and_denoising_network, good_path_network

#: Widths of Fig. 2c and 2e (sec-hmc-theory).
PAPER_WIDTHS = (10, 30, 50, 100, 300, 500, 1000)
#: Likelihood temperature of every HMC run (sec-hmc-theory).
PAPER_TEMPERATURE = 0.01
#: The paper's perpendicular noise of Fig. 2e (sec-hmc-task, sec-hmc-two-paths).
NOISY_SIGMA_PERP = 5.0
#: Keys of the three GP lines of Fig. 2c.
GP_LINES = ("all", "g", "g+d")


# --------------------------------------------------------------------------------------------------------
# the GP lines of Fig. 2c


def gp_predictions(
    train: HMCDataset, test: HMCDataset, temperature: float, *, data: PathData | None = None
) -> dict[str, np.ndarray]:
    """Test-set mean predictors (eq-predictor) of the three GP lines of Fig. 2c: the GP limit (eq-gp) of the
    4-path network (``"all"``), of the good path alone (``"g"``) and of the good and denoising paths (``"g+d"``),
    sec-hmc-theory.

    The three networks share their heads (the same versions, seeds, inverse temperature and perturbation), so the
    path features (eq-path-features) of ``"g"`` and ``"g+d"`` are the columns of their paths in those of the 4-path
    network: those are computed once, or taken from ``data``.

    Args:
        train, test: the training and test sets.
        data: optional path data of :func:`~attnpaths.hmc.networks.four_path_network` (default settings) on
            ``train`` and ``test``, when the caller has them already.
    """
    temperature = positive_real(temperature, "temperature")
    if data is None:
        data = path_data(four_path_network(train), train, test)
    elif not (
        isinstance(data, PathData)
        and getattr(data.network, "name", None) == "four_path"
        and data.network.beta == PAPER_BETA
        and data.network.perturbation == 1.0
    ):
        raise ValueError(
            "data must be the path data of four_path_network(train) with its default beta and perturbation"
        )
    out = {}
    for key, factory in zip(GP_LINES, (four_path_network, good_path_network, good_and_denoising_network)):
        network = factory(train)
        columns = [data.network.path_names.index(name) for name in network.path_names]
        sol = solve(data.features[..., columns], data.y, heads=network.heads, width=math.inf, temperature=temperature)
        out[key] = sol.predict_mean(data.features_test[..., columns])
    return out


def gp_lines(
    train: HMCDataset, test: HMCDataset, temperature: float, *, data: PathData | None = None
) -> dict[str, float]:
    """Test accuracies of the three GP lines of Fig. 2c (see :func:`gp_predictions`, also for ``data``)."""
    labels = test.y.numpy()
    return {
        key: classification_accuracy(mean, labels)
        for key, mean in gp_predictions(train, test, temperature, data=data).items()
    }


# --------------------------------------------------------------------------------------------------------
# independently drawn data sets


def draw_data_sets(
    num_sets: int, generator: torch.Generator, *, num_train: int = 100, num_test: int = 1000, **task_parameters
) -> list[tuple[HMCDataset, HMCDataset]]:
    """``num_sets`` independent (training, test) pairs of the HMC task, all drawn from ``generator``.

    Pair ``k`` is drawn after pair ``k - 1`` (training set first), so a prefix of the list does not depend on
    ``num_sets``. ``task_parameters`` override the paper's :class:`~attnpaths.hmc.data.HMCTask` fields (e.g.
    ``sigma_perp=5.0``). :func:`data_set_draws` gives the same pairs without holding them all in memory.
    """
    num_sets = positive_int(num_sets, "num_sets")
    torch_generator(generator, cpu=True)
    task = HMCTask(**task_parameters)
    return [(task.sample(num_train, generator), task.sample(num_test, generator)) for _ in range(num_sets)]


@dataclass(frozen=True, eq=False)
class DataSetDraw:
    """One (training, test) pair of :func:`draw_data_sets`, kept as the generator state it is drawn from.

    A pair of the paper's sizes takes about 0.1 GB; the state takes 5 kB. A sweep sends the states to its
    tasks, which draw their pair (:meth:`draw`) where they run.

    Attributes:
        state: the CPU generator's state before the pair (``torch.Generator.get_state()``).
        num_train, num_test: the sizes of the two sets.
        task: the generation parameters.
    """

    state: torch.Tensor
    num_train: int
    num_test: int
    task: HMCTask

    def draw(self) -> tuple[HMCDataset, HMCDataset]:
        """The (training, test) pair, bit for bit the one :func:`draw_data_sets` draws at this place."""
        generator = torch.Generator()
        generator.set_state(self.state)
        return self.task.sample(self.num_train, generator), self.task.sample(self.num_test, generator)


def data_set_draws(
    num_sets: int, generator: torch.Generator, *, num_train: int = 100, num_test: int = 1000, **task_parameters
) -> list[DataSetDraw]:
    """The pairs of :func:`draw_data_sets` (same arguments, same generator use) as :class:`DataSetDraw`: only the
    random numbers of each pair are drawn here, to advance ``generator`` (:meth:`~attnpaths.hmc.data.HMCTask.skip`);
    the pairs are built where they are used."""
    num_sets = positive_int(num_sets, "num_sets")
    torch_generator(generator, cpu=True)
    task = HMCTask(**task_parameters)
    draws = []
    for _ in range(num_sets):
        draws.append(DataSetDraw(state=generator.get_state(), num_train=num_train, num_test=num_test, task=task))
        task.skip(num_train, generator), task.skip(num_test, generator)
    return draws


@dataclass(frozen=True, eq=False)
class Band:
    """Theory curves over independently drawn data sets.

    Attributes:
        widths: ``[n_w]``.
        accuracy: ``[n_sets, n_w]`` theory accuracy per data set.
        U: ``[n_sets, n_w, n, n]`` (figure order).
        gp: ``{line: [n_sets]}`` GP accuracies per data set (keys :data:`GP_LINES` for the 4-path network,
            ``"all"`` only for the others).
        names: path names in figure order.
        label_fraction: ``{"finite_width": [n_sets], "gp": [n_sets], "width": N, "k": k}``, the fraction of
            ``|y|^2`` carried by the first ``k`` PCs of the training kernel at width ``N`` and of the GP kernel
            (:func:`~attnpaths.experiments.kernel_pcs.label_fraction`), or ``None`` when not computed.
        diagonal_accuracy: ``[n_sets, n_w]`` accuracy with the theory's ``U`` replaced by its diagonal
            (:func:`diagonal_only`: every cross-path weight set to zero), the ablation behind the interplay claims.
    """

    widths: np.ndarray
    accuracy: np.ndarray
    U: np.ndarray
    gp: dict
    names: tuple[str, ...]
    label_fraction: dict | None = None
    diagonal_accuracy: np.ndarray | None = None

    @property
    def num_sets(self) -> int:
        """The number of data sets, ``n_sets``."""
        return self.accuracy.shape[0]

    def summary(self) -> dict:
        """Per-data-set values and their mean, min, max (plain numbers for a results file)."""

        def stats(a):
            return {
                "per_set": a,
                "mean": a.mean(axis=0),
                "min": a.min(axis=0),
                "max": a.max(axis=0),
                "std": a.std(axis=0, ddof=1) if a.shape[0] > 1 else np.zeros_like(a[0]),
            }

        out = {
            "widths": self.widths,
            "num_sets": self.num_sets,
            "accuracy": stats(self.accuracy),
            "gp_accuracy": {k: stats(v) for k, v in self.gp.items()},
        }
        if self.label_fraction is not None:
            out["label_fraction"] = self.label_fraction
        if self.diagonal_accuracy is not None:
            out["diagonal_accuracy"] = stats(self.diagonal_accuracy)
        return out


def data_set_band(
    data_sets,
    network_factory,
    widths,
    temperature: float,
    *,
    gp_references: bool = False,
    pc_width: int | None = None,
    pc_components: int = 5,
    progress: bool = True,
) -> Band:
    """Theory curve and GP accuracy of ``network_factory(train)`` on every (training, test) pair.

    Args:
        data_sets: list of ``(train, test)`` pairs (:func:`draw_data_sets`) or of :class:`DataSetDraw`
            (:func:`data_set_draws`, the same numbers; each task then draws its pair).
        network_factory: e.g. :func:`~attnpaths.hmc.networks.four_path_network`.
        widths, temperature: strictly increasing integer widths and the temperature ``T`` of the theory
            (:func:`attnpaths.experiments.sweep.theory_sweep`).
        gp_references: also compute the GP lines ``"g"`` and ``"g+d"`` (:func:`gp_lines`; 4-path task only).
        pc_width, pc_components: also compute, at this width (one of ``widths``), the label fraction of the
            first ``pc_components`` kernel PCs against the GP kernel's (:attr:`Band.label_fraction`).
    """
    data_sets = list(data_sets)
    if not data_sets:
        raise ValueError("data_sets must hold at least one (train, test) pair")
    checked = tuple(int(w) for w in increasing_ints(widths, "widths"))
    if pc_width is not None and pc_width not in checked:
        raise ValueError(f"pc_width must be one of widths {tuple(widths)}, got {pc_width!r}")
    pc_components = positive_int(pc_components, "pc_components")
    tasks = [dict(data_set=data_set) for data_set in data_sets]
    members = map_tasks(
        band_member,
        tasks,
        description="data sets",
        progress=progress,
        shared=dict(
            network_factory=network_factory,
            widths=widths,
            temperature=temperature,
            gp_references=gp_references,
            pc_width=pc_width,
            pc_components=pc_components,
        ),
    )
    gp = {key: np.array([m["gp"][key] for m in members]) for key in members[0]["gp"]}
    return Band(
        widths=np.array(checked),
        accuracy=np.array([m["accuracy"] for m in members]),
        U=np.array([m["U"] for m in members]),
        gp=gp,
        names=members[0]["names"],
        label_fraction=None
        if pc_width is None
        else {
            "finite_width": np.array([m["label_fraction"][0] for m in members]),
            "gp": np.array([m["label_fraction"][1] for m in members]),
            "width": int(pc_width),
            "k": pc_components,
        },
        diagonal_accuracy=np.array([m["diagonal_accuracy"] for m in members]),
    )


def band_member(
    data_set, network_factory, widths, temperature: float, gp_references: bool, pc_width: int | None, pc_components: int
) -> dict:
    """One data set of :func:`data_set_band` (one task of its sweep), a ``(train, test)`` pair or a
    :class:`DataSetDraw`: ``{"accuracy": [n_w], "U": [n_w, n, n], "names", "gp": {line: accuracy},
    "label_fraction": (finite width, GP) or None, "diagonal_accuracy": [n_w]}``."""
    train, test = data_set.draw() if isinstance(data_set, DataSetDraw) else data_set
    data = path_data(network_factory(train), train, test)
    sweep = theory_sweep(data, widths, [temperature], gp_limit=not gp_references, progress=False)
    fractions = None
    if pc_width is not None:
        pcs = pc_overlaps(data, sweep.U[sweep.index(pc_width), 0], pc_components)
        fractions = (label_fraction(pcs["finite_width"], pc_components), label_fraction(pcs["gp"], pc_components))
    gp = gp_lines(train, test, temperature, data=data) if gp_references else {"all": sweep.gp.accuracy["test"][0, 0]}
    return {
        "accuracy": sweep.accuracy["test"][:, 0],
        "U": sweep.U_figure[:, 0],
        "names": sweep.names,
        "gp": gp,
        "label_fraction": fractions,
        "diagonal_accuracy": np.array(
            [accuracy_with_order_parameter(data, diagonal_only(U), temperature) for U in sweep.U[:, 0]]
        ),
    }


# --------------------------------------------------------------------------------------------------------
# ablations of U (authors' 2paths/PLOT_classification_accuracy_mean_predictor.py, plot_manipulated_oparam)


def diagonal_only(U) -> np.ndarray:
    """``diag(diag(U))``: every cross-path weight removed, the same-path weights kept ("diagonals only")."""
    U = square_matrix(U, "U")
    return np.diag(np.diag(U))


def evened_diagonal(U, index: int = 0) -> np.ndarray:
    """``U`` with every diagonal entry replaced by ``U[index, index]`` (default the first path, ``g`` in the
    flat order of the HMC networks), off-diagonal entries kept ("evened diagonals")."""
    U = square_matrix(U, "U").copy()
    if isinstance(index, bool) or not isinstance(index, numbers.Integral) or not 0 <= index < U.shape[0]:
        raise ValueError(f"index must be a path index in [0, {U.shape[0]}), got {index!r}")
    np.fill_diagonal(U, U[index, index])
    return U


def accuracy_with_order_parameter(data: PathData, U_flat, temperature: float) -> float:
    """Test accuracy of the mean predictor with ``U_flat`` (flat path order) in place of the theory's ``U``."""
    mean = mean_predictor(data.features, data.y, data.features_test, U_flat, temperature)
    return classification_accuracy(mean, data.y_test.numpy())


def ablation_curves(data: PathData, sweep: TheorySweep, temperature: float | None = None) -> dict:
    """Accuracy vs ``N`` with ``U`` replaced by its diagonal (``"diagonal_only"``) and with every diagonal
    entry set to ``U_gg`` (``"evened_diagonal"``), next to the theory (``"theory"``), at one temperature of
    the sweep: ``temperature``, which may be left out when the sweep holds only one."""
    if temperature is None:
        if len(sweep.temperatures) != 1:
            raise ValueError(f"temperature must be given: the sweep holds the temperatures {list(sweep.temperatures)}")
        temperature = float(sweep.temperatures[0])
    j = sweep.temperature_index(temperature)
    g = data.network.path_names.index("g")
    U_flat = sweep.U[:, j]
    return {
        "theory": sweep.accuracy["test"][:, j],
        "diagonal_only": np.array([accuracy_with_order_parameter(data, diagonal_only(U), temperature) for U in U_flat]),
        "evened_diagonal": np.array(
            [accuracy_with_order_parameter(data, evened_diagonal(U, g), temperature) for U in U_flat]
        ),
    }


# --------------------------------------------------------------------------------------------------------
# one network of Fig. 2: its results record, its run for the claims, its least relevant head


def network_record(curve: TheorySweep, band: Band, samples: dict, exact: dict) -> dict:
    """The results-file record of one network of Fig. 2 (sec-hmc-theory, sec-hmc-two-paths).

    Args:
        curve: the theory over widths at one temperature (:func:`~attnpaths.experiments.sweep.theory_sweep`).
        band: the same network over independently drawn data sets (:func:`data_set_band`).
        samples, exact: ``{width: SampledPoint}`` and ``{width: ExactOrderParameter}``
            (:func:`~attnpaths.experiments.sampling.sample_widths`).

    Returns:
        The network's record,
        ``{"theory_accuracy": {"N", "accuracy"}, "sampled_accuracy": {"N", "accuracy", "mc_sd"}, "U": {N: [n, n]},
        "U_sampled": {N: [n, n]}, "U_order": path names, "sampler": {N: diagnostics}, "U_exact": {N: ...},
        "band": Band.summary()}``, every ``U`` in figure order (``U_order``).
    """
    if not isinstance(curve, TheorySweep) or curve.temperatures.size != 1:
        raise ValueError(f"curve must be a TheorySweep at one temperature, got {type(curve).__name__}")
    if not isinstance(band, Band):
        raise ValueError(f"band must be a Band (data_set_band), got {type(band).__name__}")
    return {
        "theory_accuracy": {"N": curve.widths, "accuracy": curve.accuracy["test"][:, 0]},
        "sampled_accuracy": sampling.sampled_accuracy_record(samples),
        "U": {str(w): curve.U_at(w) for w in curve.widths},
        "U_sampled": {str(w): p.U for w, p in samples.items()},
        "U_order": list(curve.names),
        "sampler": sampling.sampler_record(samples),
        "U_exact": sampling.exact_record(exact),
        "band": band.summary(),
    }


def accuracy_summary(curve: TheorySweep, band: Band, samples: dict, gp: dict) -> dict:
    """The numbers the HMC chapter quotes of Fig. 2c (sec-hmc-theory), one network on the authors' data.

    Args:
        curve: the theory over widths at one temperature; band: the same over independently drawn data sets
            (:func:`data_set_band`, with the all-paths GP line); samples: ``{width: SampledPoint}`` at solved
            widths; gp: ``{line: accuracy}`` the GP lines (:func:`gp_lines`).

    Returns:
        ``{name: number}``: the GP lines ``gp_all``, ``gp_g``, ``gp_gd``; the theory's test accuracy at the
        smallest and largest width, ``acc_small`` and ``acc_large``, and those widths, ``N_small`` and ``N_large``;
        the range over the data sets of the theory at the smallest width (``band_small_lo``, ``band_small_hi``) and
        of the all-paths GP (``band_gp_lo``, ``band_gp_hi``); ``max_sampled_diff``, the largest difference between
        the sampled and the theory's accuracy over the sampled widths.
    """
    if not isinstance(curve, TheorySweep) or curve.temperatures.size != 1:
        raise ValueError(f"curve must be a TheorySweep at one temperature, got {type(curve).__name__}")
    if not isinstance(band, Band) or "all" not in band.gp:
        raise ValueError("band must be a Band (data_set_band) with the all-paths GP line")
    missing = [line for line in GP_LINES if line not in gp]
    if missing:
        raise ValueError(f"gp must hold the GP lines {list(GP_LINES)}, missing {missing}")
    accuracy = curve.accuracy["test"][:, 0]
    return {
        "gp_all": gp["all"],
        "gp_g": gp["g"],
        "gp_gd": gp["g+d"],
        "acc_small": float(accuracy[0]),
        "acc_large": float(accuracy[-1]),
        "N_small": int(curve.widths[0]),
        "N_large": int(curve.widths[-1]),
        "band_small_lo": float(band.accuracy[:, 0].min()),
        "band_small_hi": float(band.accuracy[:, 0].max()),
        "band_gp_lo": float(band.gp["all"].min()),
        "band_gp_hi": float(band.gp["all"].max()),
        "max_sampled_diff": sampling.largest_accuracy_difference(
            samples, {w: accuracy[curve.index(w)] for w in samples}
        ),
    }


def predictor_variance_record(samples: dict, exact: dict, theory_variance: dict) -> dict:
    """The test-set averages of the predictor variance behind claims 2v and 2ve, per sampled width (key
    ``str(N)``).

    Args:
        samples: ``{width: SampledPoint}``; exact: ``{width: ExactOrderParameter}`` at every sampled width;
            theory_variance: ``{width: [P_test]}`` the theory's predictor variance at the test points at every
            sampled width (:func:`~attnpaths.experiments.kernel_pcs.predictor_variance`).

    Returns:
        per width ``str(N)`` a dict with the keys ``"theory"``, ``"sampled"``, ``"sampled_mc_se"``,
        ``"relative_deviation"``, ``"exact"``, ``"exact_mc_se"`` and ``"exact_relative_deviation"``, the theory's
        average, the samples' posterior variance of ``f`` averaged over the test set with its Monte-Carlo error,
        ``sampled / theory - 1``, the same average under the exact density of the order parameters with its error,
        and ``sampled / exact - 1``.
    """
    missing = [w for w in samples if w not in exact or w not in theory_variance]
    if missing:
        raise ValueError(f"exact and theory_variance must hold every sampled width, missing {missing}")
    record = {}
    for w, p in samples.items():
        theory = float(np.mean(theory_variance[w]))
        record[str(w)] = {
            "theory": theory,
            "sampled": p.mean_variance,
            "sampled_mc_se": p.mean_variance_se,
            "relative_deviation": p.mean_variance / theory - 1,
            "exact": exact[w].mean_variance,
            "exact_mc_se": exact[w].mean_variance_se,
            "exact_relative_deviation": p.mean_variance / exact[w].mean_variance - 1,
        }
    return record


def predictor_variance_summary(record: dict) -> dict:
    """The numbers the HMC chapter quotes of claim 2v at the smallest sampled width of ``record``
    (:func:`predictor_variance_record`).

    Returns:
        ``"dev_small"`` is ``sampled / theory - 1``, ``"z_small"`` is ``abs(sampled - theory) /
        sampled_mc_se``, ``"exact_dev_small"`` is ``sampled / exact - 1`` and ``"saddle_exact_small"`` is
        ``theory / exact - 1``.
    """
    if not record:
        raise ValueError("record must hold at least one sampled width")
    small = record[min(record, key=int)]
    return {
        "dev_small": small["relative_deviation"],
        "z_small": abs(small["sampled"] - small["theory"]) / small["sampled_mc_se"],
        "exact_dev_small": small["exact_relative_deviation"],
        "saddle_exact_small": small["theory"] / small["exact"] - 1,
    }


@dataclass(frozen=True, eq=False)
class NetworkRun:
    """What the claims of Fig. 2 are tested on for one network (:func:`attnpaths.hmc.claims.figure_verdicts`).

    Attributes:
        label: e.g. ``"4 paths"`` (the claims' ids and sentences name it).
        curve: the theory over widths at one temperature on the authors' data, with its GP limit.
        band: the theory over independently drawn data sets (:func:`data_set_band`).
        samples: ``{width: SampledPoint}``; exact: ``{width: ExactOrderParameter}`` on the authors' data.
        test_labels: ``[P_test]`` the labels of the authors' test set.
    """

    label: str
    curve: TheorySweep
    band: Band
    samples: dict
    exact: dict
    test_labels: np.ndarray


def least_relevant_head(scores, labels) -> tuple[str, float]:
    """The head with the lowest score and that score (sec-head-scores).

    Args:
        scores: ``[L, max(H)]`` head scores at one width (``nan`` where a layer has fewer heads), e.g. one row of
            :func:`~attnpaths.experiments.sweep.head_score_curve`.
        labels: one label per head in layer-major order (the non-``nan`` entries of ``scores``).
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = list(labels)
    valid = ~np.isnan(scores)
    if scores.ndim != 2 or not valid.any() or len(labels) != int(valid.sum()):
        raise ValueError(
            f"scores must be [L, max(H)] with one label per head ({int(valid.sum())}), got shape "
            f"{scores.shape} and {len(labels)} labels"
        )
    low = np.unravel_index(np.nanargmin(scores), scores.shape)
    position = int(valid.reshape(-1)[: np.ravel_multi_index(low, scores.shape)].sum())
    return labels[position], float(scores[low])
