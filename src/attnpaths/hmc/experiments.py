"""The experiments of the HMC chapter (Fig. 2 and its appendix); its claims are tested by
:mod:`attnpaths.finite_width_claims` and :mod:`attnpaths.hmc.claims`.

Building blocks, each usable on its own:

* :class:`PathData` / :func:`path_data`: a network's path features (eq-path-features) on a training and a test set;
* :func:`theory_curve`: the theory (eq-action, eq-predictor) at every width: accuracy, ``U`` in figure order,
  GP accuracy;
* :func:`gp_lines`: the three GP lines of Fig. 2c (all paths, path g, paths g+d);
* :func:`draw_data_sets` and :func:`data_set_band`: the same curves over independently drawn training and
  test sets (the spread that one data set cannot show);
* :func:`sample_posterior`: posterior samples (sec-hmc-theory) at one width, the sampled accuracy and ``U`` with
  their Monte-Carlo errors and the sampler's diagnostics;
* :func:`diagonal_only`, :func:`evened_diagonal`, :func:`accuracy_with_order_parameter`: the ``U`` ablations of
  the authors' 2-path plotting script;
* :func:`pc_overlaps`, :func:`appendix_kernels`, :func:`head_score_curve`: Fig. 2d and appendix quantities;
* :func:`finite_width_epsilon`: the relative scale ``(n + 1) / N`` of the saddle point's finite-width shift.

Orders. ``U`` matrices returned by this module are in FIGURE order (``g, d, a1, a2``, the paths the network
has), i.e. ``U_flat[plot_order][:, plot_order]``; functions that need the flat order (the ablations, head
scores, the predictor) say so.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.stats import norm

from .._validation import as_float64_array, positive_real
from ..head_scores import head_scores
from ..kernels import gp_kernel, path_kernels, pc_label_overlap, renormalized_kernel
from ..network import AttentionNetwork
from ..order_parameter_posterior import sample_order_parameters
from ..paths import path_features
from ..sampler import PosteriorSampler
from ..engine import map_tasks, task_generator
from ..sweeps import width_sweep
from ..theory import classification_accuracy, solve
from .data import HMCDataset, HMCTask, check_generator
from .networks import HMCNetwork, four_path_network, good_and_denoising_network, good_path_network

#: Widths of Fig. 2c and 2e (sec-hmc-theory).
PAPER_WIDTHS = (10, 30, 50, 100, 300, 500, 1000)
#: Likelihood temperature of every HMC run (sec-hmc-theory).
PAPER_TEMPERATURE = 0.01
#: The paper's perpendicular noise of Fig. 2e (sec-hmc-task, sec-hmc-two-paths).
NOISY_SIGMA_PERP = 5.0
#: Keys of the three GP lines of Fig. 2c.
GP_LINES = ("all", "g", "g+d")


def _widths(widths, name: str = "widths") -> tuple[int, ...]:
    try:
        widths = tuple(widths)
    except TypeError as err:
        raise ValueError(f"{name} must be a sequence of integer widths >= 1, got {widths!r}") from err
    if not widths or any(isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1 for w in widths):
        raise ValueError(f"{name} must be a non-empty sequence of integer widths >= 1, got {widths!r}")
    if list(widths) != sorted(set(widths)):
        raise ValueError(f"{name} must be strictly increasing, got {widths!r}")
    return tuple(int(w) for w in widths)


def _count(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


def reorder(U, order) -> np.ndarray:
    """``U[order][:, order]`` for ``U`` ``[..., n, n]`` (e.g. flat path order -> figure order)."""
    U = np.asarray(U, dtype=np.float64)
    order = list(order)
    return U[..., order, :][..., :, order]


# --------------------------------------------------------------------------------------------------------
# path features of one network on one training / test pair


@dataclass(frozen=True, eq=False)
class PathData:
    """A network's path features on a training and a test set (eq-path-features).

    Attributes:
        network: the :class:`~attnpaths.hmc.networks.HMCNetwork`.
        features: ``[P, N0, n_paths]`` training path features; ``y``: ``[P]`` labels.
        features_test: ``[P_test, N0, n_paths]``; ``y_test``: ``[P_test]``.
    """

    network: HMCNetwork
    features: torch.Tensor
    y: torch.Tensor
    features_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def plot_order(self) -> tuple[int, ...]:
        return self.network.plot_order

    @property
    def plot_names(self) -> tuple[str, ...]:
        """Path names in figure order, e.g. ``("g", "d", "a1", "a2")``."""
        return tuple(self.network.path_names[i] for i in self.plot_order)

    @property
    def num_test(self) -> int:
        return self.features_test.shape[0]


def path_data(network: HMCNetwork, train: HMCDataset, test: HMCDataset) -> PathData:
    """Path features of ``network`` on ``train`` and ``test`` (which must come from the same task)."""
    if not isinstance(network, HMCNetwork):
        raise ValueError(f"network must be an HMCNetwork, got {type(network).__name__}")
    for name, data in (("train", train), ("test", test)):
        if not isinstance(data, HMCDataset):
            raise ValueError(f"{name} must be an HMCDataset, got {type(data).__name__}")
    if train.task != test.task:
        raise ValueError("train and test must be drawn from the same task (same v_+, v_-, noise strengths)")
    return PathData(
        network=network,
        features=path_features(train.x, network.attention),
        y=train.y,
        features_test=path_features(test.x, network.attention),
        y_test=test.y,
    )


# --------------------------------------------------------------------------------------------------------
# the theory over widths


@dataclass(frozen=True, eq=False)
class TheoryCurve:
    """The theory at every width on one data set.

    Attributes:
        widths: ``[n_w]`` widths ``N`` (every layer).
        accuracy: ``[n_w]`` test accuracy of the mean predictor (eq-predictor).
        U: ``[n_w, n, n]`` order parameters ``U_1`` in figure order (``g, d, a1, a2``).
        U_flat: the same in flat path order (``h_1`` slowest).
        gp_accuracy: accuracy of the same network in the GP limit (eq-gp).
        gp_test_mean: ``[n_test]`` the GP limit's mean predictor on the test set.
        converged: ``[n_w]`` the solver's certificate (gradient small, Hessian positive definite).
        solve_seconds: ``[n_w]``.
        names: path names in figure order.
    """

    widths: np.ndarray
    accuracy: np.ndarray
    U: np.ndarray
    U_flat: np.ndarray
    gp_accuracy: float
    converged: np.ndarray
    solve_seconds: np.ndarray
    names: tuple[str, ...]
    points: list = field(repr=False, default_factory=list)
    gp_test_mean: np.ndarray | None = field(repr=False, default=None)

    def index(self, width) -> int:
        """Position of ``width`` in :attr:`widths` (``ValueError`` if it was not solved)."""
        hits = np.flatnonzero(self.widths == width)
        if hits.size == 0:
            raise ValueError(f"width must be one of the solved widths {self.widths.tolist()}, got {width!r}")
        return int(hits[0])

    def U_at(self, width) -> np.ndarray:
        """``U`` (figure order) at one solved width."""
        return self.U[self.index(width)]


def theory_curve(data: PathData, widths, temperature: float = PAPER_TEMPERATURE, *, progress: bool = True) -> TheoryCurve:
    """Solve the theory (eq-action) at every width and evaluate the mean predictor (eq-predictor) on the test set.

    Args:
        data: path features of the network on a training and a test set.
        widths: strictly increasing integer widths (every layer has width ``N``).
        temperature: likelihood variance ``T``.
        progress: tqdm bar over widths.
    """
    widths = _widths(widths)
    temperature = positive_real(temperature, "temperature")
    heads = data.network.heads
    points = width_sweep(
        data.features, data.y, data.features_test, data.y_test, heads=heads, widths=widths,
        temperature=temperature, progress=progress, on_failure="raise",
    )
    gp = solve(data.features, data.y, heads=heads, widths=math.inf, temperature=temperature)
    gp_mean = gp.predict(data.features_test)[0]
    gp_acc = classification_accuracy(gp_mean, data.y_test.numpy())
    U_flat = np.stack([p.solution.U for p in points])
    return TheoryCurve(
        widths=np.array(widths),
        accuracy=np.array([p.accuracy for p in points]),
        U=reorder(U_flat, data.plot_order),
        U_flat=U_flat,
        gp_accuracy=gp_acc,
        converged=np.array([p.solution.converged for p in points]),
        solve_seconds=np.array([p.solve_seconds for p in points]),
        names=data.plot_names,
        points=points,
        gp_test_mean=np.asarray(gp_mean, dtype=np.float64),
    )


def gp_predictions(train: HMCDataset, test: HMCDataset, temperature: float = PAPER_TEMPERATURE) -> dict[str, np.ndarray]:
    """Test-set mean predictors (eq-predictor) of the three GP lines of Fig. 2c: the GP limit (eq-gp) of the
    4-path network (``"all"``), of the good path alone (``"g"``) and of the good and denoising paths (``"g+d"``),
    sec-hmc-theory."""
    temperature = positive_real(temperature, "temperature")
    out = {}
    for key, factory in zip(GP_LINES, (four_path_network, good_path_network, good_and_denoising_network)):
        data = path_data(factory(train), train, test)
        sol = solve(data.features, data.y, heads=data.network.heads, widths=math.inf, temperature=temperature)
        out[key] = sol.predict(data.features_test)[0]
    return out


def gp_lines(train: HMCDataset, test: HMCDataset, temperature: float = PAPER_TEMPERATURE) -> dict[str, float]:
    """Test accuracies of the three GP lines of Fig. 2c (see :func:`gp_predictions`)."""
    labels = test.y.numpy()
    return {key: classification_accuracy(mean, labels) for key, mean in gp_predictions(train, test, temperature).items()}


# --------------------------------------------------------------------------------------------------------
# independently drawn data sets


def draw_data_sets(
    num_sets: int, generator: torch.Generator, *, num_train: int = 100, num_test: int = 1000, **task_parameters
) -> list[tuple[HMCDataset, HMCDataset]]:
    """``num_sets`` independent (training, test) pairs of the HMC task, all drawn from ``generator``.

    Pair ``k`` is drawn after pair ``k - 1`` (training set first), so a prefix of the list does not depend on
    ``num_sets``. ``task_parameters`` override the paper's :class:`~attnpaths.hmc.data.HMCTask` fields (e.g.
    ``sigma_perp=5.0``).
    """
    num_sets = _count(num_sets, "num_sets", 1)
    check_generator(generator)
    task = HMCTask(**task_parameters)
    return [(task.sample(num_train, generator), task.sample(num_test, generator)) for _ in range(num_sets)]


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
            (:func:`label_fraction`), or ``None`` when not computed.
    """

    widths: np.ndarray
    accuracy: np.ndarray
    U: np.ndarray
    gp: dict
    names: tuple[str, ...]
    label_fraction: dict | None = None

    @property
    def num_sets(self) -> int:
        return self.accuracy.shape[0]

    def summary(self) -> dict:
        """Per-data-set values and their mean, min, max (plain numbers for a results file)."""
        def stats(a):
            return {"per_set": a, "mean": a.mean(axis=0), "min": a.min(axis=0), "max": a.max(axis=0),
                    "std": a.std(axis=0, ddof=1) if a.shape[0] > 1 else np.zeros_like(a[0])}
        out = {"widths": self.widths, "num_sets": self.num_sets, "accuracy": stats(self.accuracy),
               "gp_accuracy": {k: stats(v) for k, v in self.gp.items()}}
        if self.label_fraction is not None:
            out["label_fraction"] = self.label_fraction
        return out


def data_set_band(
    data_sets, network_factory, widths, temperature: float = PAPER_TEMPERATURE, *, gp_references: bool = False,
    pc_width: int | None = None, pc_components: int = 5, progress: bool = True,
) -> Band:
    """Theory curve and GP accuracy of ``network_factory(train)`` on every (training, test) pair.

    Args:
        data_sets: list of ``(train, test)`` pairs (:func:`draw_data_sets`).
        network_factory: e.g. :func:`~attnpaths.hmc.networks.four_path_network`.
        widths, temperature: as in :func:`theory_curve`.
        gp_references: also compute the GP lines ``"g"`` and ``"g+d"`` (:func:`gp_lines`; 4-path task only).
        pc_width, pc_components: also compute, at this width (one of ``widths``), the label fraction of the
            first ``pc_components`` kernel PCs against the GP kernel's (:attr:`Band.label_fraction`).
    """
    data_sets = list(data_sets)
    if not data_sets:
        raise ValueError("data_sets must hold at least one (train, test) pair")
    if pc_width is not None and pc_width not in _widths(widths):
        raise ValueError(f"pc_width must be one of widths {tuple(widths)}, got {pc_width!r}")
    pc_components = _count(pc_components, "pc_components", 1)
    tasks = [dict(train=train, test=test) for train, test in data_sets]
    members = map_tasks(band_member, tasks, description="data sets", progress=progress,
                        shared=dict(network_factory=network_factory, widths=widths, temperature=temperature,
                                    gp_references=gp_references, pc_width=pc_width, pc_components=pc_components))
    gp = {key: np.array([m["gp"][key] for m in members]) for key in members[0]["gp"]}
    return Band(
        widths=np.array(_widths(widths)), accuracy=np.array([m["accuracy"] for m in members]),
        U=np.array([m["U"] for m in members]), gp=gp, names=members[0]["names"],
        label_fraction=None if pc_width is None else {
            "finite_width": np.array([m["label_fraction"][0] for m in members]),
            "gp": np.array([m["label_fraction"][1] for m in members]), "width": int(pc_width), "k": pc_components},
    )


def band_member(train: HMCDataset, test: HMCDataset, network_factory, widths, temperature: float,
                gp_references: bool, pc_width: int | None, pc_components: int) -> dict:
    """One data set of :func:`data_set_band` (one task of its sweep): ``{"accuracy": [n_w], "U": [n_w, n, n],
    "names", "gp": {line: accuracy}, "label_fraction": (finite width, GP) or None}``."""
    data = path_data(network_factory(train), train, test)
    curve = theory_curve(data, widths, temperature, progress=False)
    fractions = None
    if pc_width is not None:
        pcs = pc_overlaps(data, curve.U_flat[curve.index(pc_width)], pc_components)
        fractions = (label_fraction(pcs["finite_width"], pc_components), label_fraction(pcs["gp"], pc_components))
    gp = gp_lines(train, test, temperature) if gp_references else {"all": curve.gp_accuracy}
    return {"accuracy": curve.accuracy, "U": curve.U, "names": curve.names, "gp": gp, "label_fraction": fractions}


# --------------------------------------------------------------------------------------------------------
# posterior samples


@dataclass(frozen=True, eq=False)
class SampledPoint:
    """Posterior samples at one width, summarised (sec-hmc-theory, eq-sampled-u).

    Attributes:
        width: ``N``.
        accuracy: accuracy of the sampled mean predictor on the test set.
        accuracy_mc_sd: Monte-Carlo standard deviation of :attr:`accuracy` (see :func:`accuracy_mc_sd`).
        mean: ``[P_test]`` sampled mean predictor; ``mean_se``: its Monte-Carlo standard errors
            ``sd / sqrt(ESS)``; ``sd``: posterior standard deviation of ``f`` per test point.
        kernel_mean: ``[P_test]`` the theory's predictor (eq-predictor) evaluated with the SAMPLED ``U`` in place of the
            minimiser: what the sampled order parameter alone changes in the predictions.
        U, U_se, U_sd, U_ess: sampled ``U`` (eq-sampled-u), its Monte-Carlo standard error, the posterior standard
            deviation of the per-sample overlap and the ESS of each entry, all ``[n, n]`` in figure order.
        diagnostics: plain numbers: ``wall_time_s``, chains, draws, warm-up, min / median predictor ESS,
            max predictor R-hat, min ``U`` ESS, max ``U`` R-hat.
    """

    width: int
    accuracy: float
    accuracy_mc_sd: float
    mean: np.ndarray
    mean_se: np.ndarray
    sd: np.ndarray
    kernel_mean: np.ndarray
    U: np.ndarray
    U_se: np.ndarray
    U_sd: np.ndarray
    U_ess: np.ndarray
    diagnostics: dict


def accuracy_mc_sd(mean, mean_se) -> float:
    """Monte-Carlo standard deviation of the accuracy of a sampled mean predictor.

    A test point's sampled mean ``m_i`` carries a Monte-Carlo error ``se_i``; with a Gaussian error its sign
    differs from the sign of the exact posterior mean with probability ``p_i = Phi(-|m_i| / se_i)``, and the
    accuracy moves by ``1 / n`` each time, independently across points, so
    ``sd = sqrt(sum_i p_i (1 - p_i)) / n``.

    Args:
        mean: ``[n]`` sampled mean predictor; ``mean_se``: ``[n]`` its standard errors (> 0).
    """
    mean = as_float64_array(mean, "mean")
    se = as_float64_array(mean_se, "mean_se")
    if mean.shape != se.shape or mean.ndim != 1 or np.any(se <= 0):
        raise ValueError("mean and mean_se must be [n] arrays with mean_se > 0")
    p = norm.cdf(-np.abs(mean) / se)
    return float(np.sqrt(np.sum(p * (1 - p))) / mean.size)


def _usable_ess(ess: np.ndarray) -> np.ndarray:
    """ESS floored at 1: very short runs can give a non-positive or undefined estimate (Geyer's initial
    sequence ends at its first pair), for which one effective draw is the conservative reading."""
    return np.where(np.isfinite(ess) & (ess >= 1), ess, 1.0)


def sample_posterior(
    data: PathData,
    width: int,
    temperature: float,
    generator: torch.Generator,
    *,
    num_warmup: int,
    num_samples: int,
    num_chains: int,
    progress: bool = True,
    device="cpu",
) -> SampledPoint:
    """Sample the finite network's posterior at width ``N`` (blocked Gibbs, :mod:`attnpaths.sampler`).

    Args:
        data: path features (training data condition the posterior; test data give the accuracy).
        width: ``N`` (every layer).
        temperature: likelihood variance ``T``.
        generator: the source of all randomness of the run.
        num_warmup, num_samples, num_chains: sweeps discarded per chain, draws kept per chain, chains.
        device: where the sampler's linear algebra runs (:class:`~attnpaths.sampler.PosteriorSampler`).
    """
    width = _count(width, "width", 1)
    network = AttentionNetwork(data.network.attention, width)
    sampler = PosteriorSampler(network, data.y, temperature, features=data.features, device=device)
    samples = sampler.run(generator, num_warmup, num_samples, num_chains, progress=progress)
    diag = samples.diagnostics(data.features_test)
    mean = samples.predict(data.features_test).numpy()
    sd = samples.predictor_variance(data.features_test).sqrt().numpy()
    ess = _usable_ess(diag["predictor_ess"].numpy())
    mean_se = sd / np.sqrt(ess)
    order = data.plot_order
    U_ess = _usable_ess(diag["order_parameter_ess"].numpy())
    U_sd = samples.order_parameters.flatten(0, 1).std(dim=0).numpy()
    U_flat = samples.order_parameter().numpy()
    return SampledPoint(
        width=width,
        accuracy=classification_accuracy(mean, data.y_test.numpy()),
        accuracy_mc_sd=accuracy_mc_sd(mean, mean_se),
        mean=mean,
        mean_se=mean_se,
        sd=sd,
        kernel_mean=mean_predictor(data.features, data.y, data.features_test, U_flat, temperature),
        U=reorder(U_flat, order),
        U_se=reorder(U_sd / np.sqrt(U_ess), order),
        U_sd=reorder(U_sd, order),
        U_ess=reorder(U_ess, order),
        diagnostics={
            "wall_time_s": samples.wall_time_s,
            "num_chains": samples.num_chains,
            "num_samples": samples.num_samples,
            "num_warmup": samples.num_warmup,
            "min_predictor_ess": float(ess.min()),
            "median_predictor_ess": float(np.median(ess)),
            "max_predictor_rhat": float(diag["max_predictor_rhat"]),
            "min_U_ess": float(U_ess.min()),
            "max_U_rhat": float(diag["order_parameter_rhat"].max()),
        },
    )


@dataclass(frozen=True)
class ExactOrderParameter:
    """The exact finite-width posterior mean of ``U`` (eq-exact-density, :mod:`attnpaths.order_parameter_posterior`)
    at one width, in figure order: ``U`` and its Monte-Carlo standard error ``U_se`` (``[n, n]``), ``mode`` (the
    density's mode), ``diagnostics`` (``wall_time_s``, chains, draws, ``min_ess``, ``max_rhat``, ``acceptance``)."""

    width: int
    U: np.ndarray
    U_se: np.ndarray
    mode: np.ndarray
    diagnostics: dict


def exact_order_parameter(
    data: PathData, width: int, temperature: float, generator: torch.Generator, *, num_chains: int = 32,
    num_warmup: int = 300, num_samples: int = 300, thin: int = 4, progress: bool = True,
) -> ExactOrderParameter:
    """Sample the exact posterior (eq-exact-density) of the order parameters of ``data``'s network at width
    ``N`` (every layer) and summarise ``U_1`` in figure order
    (:func:`attnpaths.order_parameter_posterior.sample_order_parameters`)."""
    width = _count(width, "width", 1)
    draws = sample_order_parameters(
        data.features, data.y, heads=data.network.heads, widths=width, temperature=temperature,
        generator=generator, num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples, thin=thin,
        progress=progress,
    )
    order = data.plot_order
    return ExactOrderParameter(
        width=width, U=reorder(draws.mean, order), U_se=reorder(draws.mc_se, order), mode=reorder(draws.mode, order),
        diagnostics={"wall_time_s": draws.wall_time_s, "num_chains": int(draws.U.shape[0]),
                     "num_samples": int(draws.U.shape[1]), "min_ess": float(draws.ess.min()),
                     "max_rhat": float(draws.rhat.max()), "acceptance": draws.acceptance},
    )


@dataclass(frozen=True)
class SamplingPlan:
    """How long to sample at one width: the network's Gibbs sampler (``warmup`` sweeps, ``draws`` kept per
    chain, ``chains``) and the exact order-parameter posterior (``exact_chains``, ``exact_warmup``,
    ``exact_draws``, ``exact_thin``; see :func:`exact_order_parameter`)."""

    width: int
    warmup: int
    draws: int
    chains: int
    exact_chains: int
    exact_warmup: int
    exact_draws: int
    exact_thin: int


def sample_width(data: PathData, plan: SamplingPlan, temperature: float, seed: int, network_index: int
                 ) -> tuple[SampledPoint, ExactOrderParameter]:
    """Posterior samples of the network (:func:`sample_posterior`) and the exact mean of ``U``
    (:func:`exact_order_parameter`) at ``plan.width``, both from one generator seeded with
    :func:`~attnpaths.engine.task_seed` ``(seed, network_index, plan.width)`` (the network's run first)."""
    generator = task_generator(seed, network_index, plan.width)
    point = sample_posterior(data, plan.width, temperature, generator, num_warmup=plan.warmup,
                             num_samples=plan.draws, num_chains=plan.chains, progress=False)
    exact = exact_order_parameter(data, plan.width, temperature, generator, num_chains=plan.exact_chains,
                                  num_warmup=plan.exact_warmup, num_samples=plan.exact_draws, thin=plan.exact_thin,
                                  progress=False)
    return point, exact


def sample_widths(data: PathData, plans, temperature: float, seed: int, network_index: int, *,
                  progress: bool = True) -> tuple[dict, dict]:
    """:func:`sample_width` at every plan's width, one task per width (:func:`~attnpaths.engine.map_tasks`).

    Returns:
        ``({width: SampledPoint}, {width: ExactOrderParameter})`` in the order of ``plans``.
    """
    plans = list(plans)
    results = map_tasks(sample_width, [dict(plan=plan) for plan in plans], description="sampled widths",
                        shared=dict(data=data, temperature=temperature, seed=seed, network_index=network_index),
                        progress=progress)
    return ({p.width: r[0] for p, r in zip(plans, results)}, {p.width: r[1] for p, r in zip(plans, results)})


# --------------------------------------------------------------------------------------------------------
# ablations of U (authors' 2paths/PLOT_classification_accuracy_mean_predictor.py, plot_manipulated_oparam)


def _square(U, name: str = "U") -> np.ndarray:
    U = as_float64_array(U, name)
    if U.ndim != 2 or U.shape[0] != U.shape[1]:
        raise ValueError(f"{name} must be a square [n, n] matrix, got shape {U.shape}")
    return U


def diagonal_only(U) -> np.ndarray:
    """``diag(diag(U))``: every cross-path weight removed, the same-path weights kept ("diagonals only")."""
    U = _square(U)
    return np.diag(np.diag(U))


def evened_diagonal(U, index: int = 0) -> np.ndarray:
    """``U`` with every diagonal entry replaced by ``U[index, index]`` (default the first path, ``g`` in the
    flat order of the HMC networks), off-diagonal entries kept ("evened diagonals")."""
    U = _square(U).copy()
    if isinstance(index, bool) or not isinstance(index, numbers.Integral) or not 0 <= index < U.shape[0]:
        raise ValueError(f"index must be a path index in [0, {U.shape[0]}), got {index!r}")
    np.fill_diagonal(U, U[index, index])
    return U


def mean_predictor(features, y, features_test, U, temperature: float) -> np.ndarray:
    """Mean predictor (eq-predictor) with a GIVEN order parameter ``U`` (flat order), not the minimiser of the action:
    ``<f(x*)> = k^T (K(U) + T I)^{-1} y`` with the renormalised kernel (eq-kernel)."""
    temperature = positive_real(temperature, "temperature")
    U = torch.as_tensor(_square(U))
    K = renormalized_kernel(features, U)
    k = renormalized_kernel(features_test, U, features)
    labels = torch.as_tensor(y, dtype=torch.float64)
    if labels.shape != (K.shape[0],):
        raise ValueError(f"y must have shape [{K.shape[0]}], got {tuple(labels.shape)}")
    chol = torch.linalg.cholesky(K + temperature * torch.eye(K.shape[0], dtype=torch.float64))
    return (k @ torch.cholesky_solve(labels[:, None], chol))[:, 0].numpy()


def accuracy_with_order_parameter(data: PathData, U_flat, temperature: float = PAPER_TEMPERATURE) -> float:
    """Test accuracy of the mean predictor with ``U_flat`` (flat path order) in place of the theory's ``U``."""
    mean = mean_predictor(data.features, data.y, data.features_test, U_flat, temperature)
    return classification_accuracy(mean, data.y_test.numpy())


def ablation_curves(data: PathData, curve: TheoryCurve, temperature: float = PAPER_TEMPERATURE) -> dict:
    """Accuracy vs ``N`` with ``U`` replaced by its diagonal (``"diagonal_only"``) and with every diagonal
    entry set to ``U_gg`` (``"evened_diagonal"``), next to the theory (``"theory"``)."""
    g = data.network.path_names.index("g")
    return {
        "theory": curve.accuracy,
        "diagonal_only": np.array([accuracy_with_order_parameter(data, diagonal_only(U), temperature) for U in curve.U_flat]),
        "evened_diagonal": np.array(
            [accuracy_with_order_parameter(data, evened_diagonal(U, g), temperature) for U in curve.U_flat]
        ),
    }


# --------------------------------------------------------------------------------------------------------
# kernels, PCs, head scores


def pc_overlaps(data: PathData, U_flat, num_components: int = 30) -> dict:
    """Overlap of the training kernel's PCs with the labels (Fig. 2d): ``K(U_flat)`` vs ``K_GP``.

    Returns:
        ``{"finite_width": [k], "gp": [k], "eigenvalues_finite_width": [k], "eigenvalues_gp": [k],
        "first_pc_mean_direction": (fw, gp)}``; the last is ``|u_1 . 1| / sqrt(P)``, the cosine between the
        leading PC and the all-examples direction.
    """
    num_components = _count(num_components, "num_components", 1)
    K_fw = renormalized_kernel(data.features, torch.as_tensor(_square(U_flat, "U_flat")))
    K_gp = gp_kernel(data.features)
    fw, fw_eig = pc_label_overlap(K_fw, data.y, num_components)
    gp, gp_eig = pc_label_overlap(K_gp, data.y, num_components)
    ones = torch.ones_like(data.y)
    mean_direction = (float(pc_label_overlap(K_fw, ones, 1)[0][0]), float(pc_label_overlap(K_gp, ones, 1)[0][0]))
    return {"finite_width": fw, "gp": gp, "eigenvalues_finite_width": fw_eig, "eigenvalues_gp": gp_eig,
            "first_pc_mean_direction": mean_direction}


def label_fraction(overlaps, k: int) -> float:
    """Fraction of ``|y|^2`` carried by the first ``k`` PCs: ``sum_{j<k} overlap_j^2`` (overlaps of
    :func:`pc_overlaps`, normalised by ``sqrt(P)``)."""
    overlaps = as_float64_array(overlaps, "overlaps")
    k = _count(k, "k", 1)
    return float(np.sum(overlaps[:k] ** 2))


def appendix_kernels(data: PathData, U_flat, examples=None) -> dict[str, np.ndarray]:
    """The kernels of the authors' PLOT_kernels.py on a subset of training examples (no temperature):
    same-path pre-kernels ``C_pi,pi`` (eq-kernel, without ``1/n_paths``) keyed by path name, ``"GP"`` and ``"FW"``
    (``K(U_flat)``).

    Args:
        examples: training example indices (default: 0-24 and 75-99, 25 of each class, as in the script).
    """
    if examples is None:
        P = data.features.shape[0]
        examples = list(range(0, min(25, P // 2))) + list(range(P - min(25, P // 2), P))
    xi = data.features[list(examples)]
    C = path_kernels(xi)
    out = {data.network.path_names[i]: C[i, i].numpy() for i in data.plot_order}
    out["GP"] = gp_kernel(xi).numpy()
    out["FW"] = renormalized_kernel(xi, torch.as_tensor(_square(U_flat, "U_flat"))).numpy()
    return out


def centered_alignment(kernel, y) -> float:
    """Centred kernel-target alignment ``<K_c, y y^T>_F / (||K_c||_F |y|^2)`` with ``K_c = H K H``,
    ``H = I - 1 1^T / P`` (Cortes, Mohri and Rostamizadeh 2012): 1 when the centred kernel is proportional to
    ``y y^T``, near 0 when it ignores the labels."""
    K = _square(kernel, "kernel")
    y = as_float64_array(y, "y")
    if y.shape != (K.shape[0],):
        raise ValueError(f"y must have shape [{K.shape[0]}], got {y.shape}")
    Kc = K - K.mean(axis=0) - K.mean(axis=1)[:, None] + K.mean()
    norm = np.linalg.norm(Kc) * (y @ y)
    return float(y @ Kc @ y / norm) if norm > 0 else 0.0


def head_score_curve(curve: TheoryCurve, heads) -> np.ndarray:
    """Normalised head scores (sec-head-scores) at every width: ``[n_w, L, max(H)]`` from the flat-order ``U``."""
    return np.stack([head_scores(U, heads) for U in curve.U_flat])


# --------------------------------------------------------------------------------------------------------
# finite-width scale


def finite_width_epsilon(width, num_paths: int) -> float:
    """``(n + 1) / N``: the relative scale of the finite-width difference between the theory's ``U`` and the
    posterior mean of ``U`` (a scale for figures, never a test tolerance).

    The theory is the saddle point of the action, exact as ``N, P -> infinity``; the posterior mean at
    finite ``N`` differs from it by ``O(1/N)``. The scale chosen: given the layers above, the ``N`` columns
    of the path weights ``e_pi`` (eq-path-form) are i.i.d. Gaussian, so ``U = e e^T / N`` is Wishart in ``n = n_paths``
    dimensions, whose exact log-density carries ``(N - n - 1) log det U`` where the action (eq-entropy) has
    ``N log det U``: the terms the saddle point drops are of relative size ``(n + 1) / N``. The coefficient
    of the resulting shift is not derived here, so this is a scale, not a bound. Where it is affordable the
    shift is computed exactly instead (:func:`exact_order_parameter`); the HMC chapter shows that the measured
    shifts are of this order.
    """
    width = _count(width, "width", 1)
    num_paths = _count(num_paths, "num_paths", 1)
    return (num_paths + 1) / width
