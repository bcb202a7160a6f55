"""Posterior samples at given widths: the finite network's weights (blocked Gibbs, :mod:`attnpaths.sampler`,
eq-sampled-u) and the exact finite-width density of the order parameters (:mod:`attnpaths.order_parameter_posterior`,
(eq-exact-density)), each summarised with its Monte-Carlo errors and the sampler's diagnostics.

A chapter plans its widths with :func:`sampling_plans`, records the results with :func:`sampled_accuracy_record`,
:func:`sampler_record` and :func:`exact_record`, compares them with the saddle point
(:func:`saddle_point_z_max`, :func:`finite_width_shift`) and shows :func:`diagnostics_table`.

``U`` matrices returned here are in figure order (the network's :attr:`~.path_data.PathNetwork.plot_order`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import norm

from .._validation import as_float64_array, heads_tuple, int_at_least, positive_int, positive_real
from ..engine import map_tasks, task_generator
from ..network import AttentionNetwork
from ..order_parameter_posterior import sample_order_parameters
from ..sampler import PosteriorSampler, effective_sample_size, split_rhat
from ..theory import classification_accuracy
from .finite_width import entry_scale
from .kernel_pcs import mean_predictor, predictor_variance
from .path_data import PathData, reorder


@dataclass(frozen=True, eq=False)
class SampledPoint:
    """Posterior samples at one width, summarised (eq-sampled-u).

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
        U_upper, U_upper_se: ``(U_2, ..., U_L)`` of the layers above the first
            (:meth:`~attnpaths.network.AttentionNetwork.layer_order_parameters`) and their Monte-Carlo standard
            errors, ``[n_l, n_l]`` in path order (``h_l`` slowest); empty for one layer.
        variance_se: ``[P_test]`` Monte-Carlo standard error of the posterior variance ``sd ** 2`` of ``f`` per test
            point (:func:`variance_and_se`); ``None`` where a run did not keep it.
        mean_variance, mean_variance_se: the posterior variance of ``f`` averaged over the test points and its
            Monte-Carlo standard error, from the ESS of the per-draw average of ``(f - <f>) ** 2`` (the test
            points' errors share the draws, so they are not independent); ``None`` where a run did not keep it.
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
    U_upper: tuple = ()
    U_upper_se: tuple = ()
    variance_se: np.ndarray | None = None
    mean_variance: float | None = None
    mean_variance_se: float | None = None


def _mean_and_se(draws: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean over chains and draws of ``[C, S, ...]`` and its Monte-Carlo standard error ``sd / sqrt(ESS)``."""
    ess = _usable_ess(effective_sample_size(draws).numpy())
    return draws.mean(dim=(0, 1)).numpy(), draws.flatten(0, 1).std(dim=0).numpy() / np.sqrt(ess)


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


def variance_and_se(draws) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Posterior variance of every entry of ``draws`` ``[C, S, B]`` (chains, draws, test points) and its
    Monte-Carlo standard error, and the same for the variance averaged over the ``B`` entries.

    The variance is the unbiased variance over all ``C S`` draws, the mean of the squared deviations
    ``d = (f - <f>) ** 2`` up to the factor ``C S / (C S - 1)``; its standard error is ``sd(d) / sqrt(ESS(d))``
    with the ESS of ``d`` itself (:func:`~attnpaths.sampler.effective_sample_size`), not that of ``f``: the
    squares decorrelate at their own rate. The average over the entries is the mean of the per-draw average of
    ``d``, a single series whose ESS accounts for the correlation that the shared draws put between the
    entries' errors.

    Args:
        draws: ``[C, S, B]``, ``S >= 4``.

    Returns:
        ``(variance [B], variance_se [B], mean_variance, mean_variance_se)``.
    """
    draws = torch.as_tensor(draws, dtype=torch.float64)
    if draws.ndim != 3 or draws.shape[1] < 4 or draws.shape[0] * draws.shape[1] < 2:
        raise ValueError(f"draws must have shape [C, S >= 4, B], got {tuple(draws.shape)}")
    total = draws.shape[0] * draws.shape[1]
    factor = total / (total - 1)  # the unbiased variance, as torch.var
    squares = (draws - draws.mean(dim=(0, 1))).square_().mul_(factor)  # [C, S, B], in place: as large as draws
    variance, variance_se = _mean_and_se(squares)
    average = squares.mean(dim=2)[..., None]  # [C, S, 1]
    mean_variance, mean_variance_se = _mean_and_se(average)
    return variance, variance_se, float(mean_variance[0]), float(mean_variance_se[0])


def _usable_ess(ess: np.ndarray) -> np.ndarray:
    """ESS floored at 1: very short runs can give a non-positive or undefined estimate (Geyer's initial
    sequence ends at its first pair), for which one effective draw is the conservative reading."""
    return np.where(np.isfinite(ess) & (ess >= 1), ess, 1.0)


@dataclass(frozen=True)
class PrecisionTarget:
    """Sequential stopping of a sampler on the precision of the order parameters it draws: the network's ``U``
    (eq-sampled-u) or the exact density's (eq-exact-density).

    A run keeps drawing until every entry of every layer's order parameter has a Monte-Carlo standard error
    ``sd / sqrt(ESS)`` (as ``SampledPoint.U_se``) of at most ``relative_se`` times its scale
    ``sqrt(|U_ii U_jj|)`` (:func:`~attnpaths.experiments.finite_width.entry_scale`), or its maximum of draws. It looks after ``min_draws`` draws per chain and then
    each time the kept draws have grown by the factor ``growth``: a few looks on a geometric schedule, so the
    stopping rule moves an estimate by a small fraction of its standard error. Used as ``stop`` of
    :meth:`attnpaths.sampler.PosteriorSampler.run` and of
    :func:`attnpaths.order_parameter_posterior.sample_order_parameters`; a run that reaches its target early costs
    only what the target needs, and one that does not keeps its maximum.

    Attributes:
        relative_se: the target, in ``(0, 1)``.
        min_draws: draws per chain before the first look (>= 8: the ESS of shorter runs means little).
        growth: factor between looks, > 1.
    """

    relative_se: float
    min_draws: int = 25
    growth: float = 1.25

    def __post_init__(self):
        if not 0 < float(self.relative_se) < 1:
            raise ValueError(f"relative_se must lie in (0, 1), got {self.relative_se!r}")
        if isinstance(self.min_draws, bool) or not isinstance(self.min_draws, int) or self.min_draws < 8:
            raise ValueError(f"min_draws must be an integer >= 8, got {self.min_draws!r}")
        if not float(self.growth) > 1:
            raise ValueError(f"growth must be > 1, got {self.growth!r}")

    def checkpoints(self, num_samples: int) -> list[int]:
        """Draws per chain at which a run of at most ``num_samples`` looks: ``min_draws``, then each look
        ``ceil(growth x)`` of the one before, below ``num_samples``."""
        looks, draws = [], self.min_draws
        while draws < num_samples:
            looks.append(draws)
            draws = max(draws + 1, int(np.ceil(self.growth * draws)))
        return looks

    def relative_errors(self, order_parameters: torch.Tensor, upper_order_parameters=()) -> list[np.ndarray]:
        """``se / sqrt(|U_ii U_jj|)`` of every layer's ``U``, first layer first, from draws ``[C, s, n, n]``."""
        errors = []
        for draws in (order_parameters, *upper_order_parameters):
            mean, se = _mean_and_se(draws.cpu())
            scale = entry_scale(mean)
            errors.append(se / np.where(scale > 0, scale, np.inf))
        return errors

    def reached(self, order_parameters: torch.Tensor, upper_order_parameters=()) -> bool:
        """Whether the draws kept so far meet the target in every entry of every layer."""
        return all(
            bool(np.all(e <= self.relative_se)) for e in self.relative_errors(order_parameters, upper_order_parameters)
        )


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
    target: PrecisionTarget | None = None,
) -> SampledPoint:
    """Sample the finite network's posterior at width ``N`` (blocked Gibbs, :mod:`attnpaths.sampler`).

    Args:
        data: path features (training data condition the posterior; the ``"test"`` split gives the accuracy).
        width: ``N`` (every layer).
        temperature: likelihood variance ``T``.
        generator: the source of all randomness of the run.
        num_warmup, num_samples, num_chains: sweeps discarded per chain, draws kept per chain (the most, with
            ``target``), chains.
        device: where the sampler's linear algebra runs (:class:`~attnpaths.sampler.PosteriorSampler`).
        target: stop as soon as ``U`` is this precise (:class:`PrecisionTarget`); ``None`` keeps every draw.
    """
    width = positive_int(width, "width")
    network = AttentionNetwork(data.network.attention, width)
    sampler = PosteriorSampler(network, data.y, temperature, features=data.features, device=device)
    samples = sampler.run(generator, num_warmup, num_samples, num_chains, progress=progress, stop=target)
    # f on the test set once ([C, S, B], the largest array of a run): its variance and diagnostics, as
    # samples.predictor_variance and samples.diagnostics compute them
    predictor = samples.predictor_samples(data.features_test)
    mean = samples.predict(data.features_test).numpy()
    sd = predictor.flatten(0, 1).var(dim=0).sqrt().numpy()
    ess = _usable_ess(effective_sample_size(predictor).numpy())
    max_predictor_rhat = float(split_rhat(predictor).max())
    _, variance_se, mean_variance, mean_variance_se = variance_and_se(predictor)
    del predictor
    mean_se = sd / np.sqrt(ess)
    order = data.network.plot_order
    U_ess = _usable_ess(effective_sample_size(samples.order_parameters).numpy())
    U_sd = samples.order_parameters.flatten(0, 1).std(dim=0).numpy()
    U_flat = samples.order_parameter().numpy()
    upper = [_mean_and_se(u.cpu()) for u in samples.upper_order_parameters]
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
            "max_samples": num_samples,
            "num_warmup": samples.num_warmup,
            "min_predictor_ess": float(ess.min()),
            "median_predictor_ess": float(np.median(ess)),
            "max_predictor_rhat": max_predictor_rhat,
            "min_U_ess": float(U_ess.min()),
            "max_U_rhat": float(split_rhat(samples.order_parameters).max()),
        },
        U_upper=tuple(m for m, _ in upper),
        U_upper_se=tuple(se for _, se in upper),
        variance_se=variance_se,
        mean_variance=mean_variance,
        mean_variance_se=mean_variance_se,
    )


@dataclass(frozen=True)
class ExactOrderParameter:
    """The exact finite-width posterior mean of ``U`` (:mod:`attnpaths.order_parameter_posterior`, (eq-exact-density)) at one
    width, in figure order: ``U`` and its Monte-Carlo standard error ``U_se`` (``[n, n]``), ``mode`` (the
    density's mode), ``diagnostics`` (``wall_time_s``, chains, draws, ``min_ess``, ``max_rhat``, ``acceptance``),
    ``scaled``: ``{c: ExactOrderParameter}``, the same density with the entropy weighted by ``c`` (width
    ``round(c N)``: the entropy is the only term of (eq-exact-density) proportional to ``N``), where planned, and
    ``U_upper``, ``U_upper_se``: the means of ``U_2, ..., U_L`` and their errors, in path order (empty for one
    layer); ``mean_variance``, ``mean_variance_se``: the network's posterior variance of ``f`` on the test set
    from the exact density (:func:`exact_predictive_variance`), averaged over the test points, and its
    Monte-Carlo error (None where not computed)."""

    width: int
    U: np.ndarray
    U_se: np.ndarray
    mode: np.ndarray
    diagnostics: dict
    scaled: dict = dataclasses.field(default_factory=dict)
    U_upper: tuple = ()
    U_upper_se: tuple = ()
    mean_variance: float | None = None
    mean_variance_se: float | None = None


def exact_order_parameter(
    data: PathData,
    width: int,
    temperature: float,
    generator: torch.Generator,
    *,
    num_chains: int = 32,
    num_warmup: int = 300,
    num_samples: int = 300,
    thin: int = 4,
    progress: bool = True,
    target: PrecisionTarget | None = None,
) -> ExactOrderParameter:
    """Sample the exact posterior (eq-exact-density) of the order parameters of ``data``'s network at width ``N`` (every layer)
    and summarise ``U_1`` in figure order (:func:`attnpaths.order_parameter_posterior.sample_order_parameters`);
    with a ``target`` (:class:`PrecisionTarget`) the chains stop once every layer's mean is that precise,
    ``num_samples`` being the most they store."""
    width = positive_int(width, "width")
    draws = sample_order_parameters(
        data.features,
        data.y,
        heads=data.network.heads,
        width=width,
        temperature=temperature,
        generator=generator,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        thin=thin,
        progress=progress,
        stop=target,
    )
    order = data.network.plot_order
    mean_variance, mean_variance_se = exact_predictive_variance(data, draws.U, temperature)
    return ExactOrderParameter(
        width=width,
        mean_variance=mean_variance,
        mean_variance_se=mean_variance_se,
        U=reorder(draws.mean, order),
        U_se=reorder(draws.mc_se, order),
        mode=reorder(draws.mode, order),
        diagnostics={
            "wall_time_s": draws.wall_time_s,
            "num_chains": int(draws.U.shape[0]),
            "num_samples": int(draws.U.shape[1]),
            "max_samples": num_samples,
            "min_ess": float(draws.ess.min()),
            "max_rhat": float(draws.rhat.max()),
            "acceptance": draws.acceptance,
        },
        U_upper=tuple(draws.upper_mean),
        U_upper_se=tuple(draws.upper_mc_se),
    )


@dataclass(frozen=True)
class SamplingPlan:
    """How long to sample at one width: the network's Gibbs sampler (``warmup`` sweeps, ``draws`` kept per
    chain, ``chains``) and, unless ``exact_chains`` is None, the exact order-parameter posterior
    (``exact_chains``, ``exact_warmup``, ``exact_draws``, ``exact_thin``; see :func:`exact_order_parameter`), and
    the same density with its entropy weighted by each of ``exact_scales`` (``exact_scaled_draws`` draws per
    chain, default ``exact_draws``): the neighbouring actions of
    :func:`attnpaths.experiments.finite_width.entropy_weight_agreement`. With a ``target``
    (:class:`PrecisionTarget`) the network's sampler stops once its ``U`` is that precise, ``draws`` being the
    most it keeps; with an ``exact_target`` every exact run stops once its mean is that precise."""

    width: int
    warmup: int
    draws: int
    chains: int
    exact_chains: int | None = None
    exact_warmup: int = 300
    exact_draws: int = 300
    exact_thin: int = 4
    exact_scales: tuple = ()
    exact_scaled_draws: int | None = None
    target: PrecisionTarget | None = None
    exact_target: PrecisionTarget | None = None


def sample_width(
    data: PathData, plan: SamplingPlan, temperature: float, seed: int, identity: tuple = (), device="cpu"
) -> tuple[SampledPoint, ExactOrderParameter | None]:
    """Posterior samples of the network (:func:`sample_posterior`) and, if planned, the exact mean of ``U``
    (:func:`exact_order_parameter`) at ``plan.width``, both from one generator seeded with
    :func:`~attnpaths.engine.task_seed` ``(seed, *identity, plan.width)`` (the network's run first): one task of
    :func:`sample_widths`."""
    generator = task_generator(seed, *identity, plan.width)
    point = sample_posterior(
        data,
        plan.width,
        temperature,
        generator,
        num_warmup=plan.warmup,
        num_samples=plan.draws,
        num_chains=plan.chains,
        progress=False,
        device=device,
        target=plan.target,
    )
    if plan.exact_chains is None:
        return point, None
    exact = exact_order_parameter(
        data,
        plan.width,
        temperature,
        generator,
        num_chains=plan.exact_chains,
        num_warmup=plan.exact_warmup,
        num_samples=plan.exact_draws,
        thin=plan.exact_thin,
        progress=False,
        target=plan.exact_target,
    )
    for c in plan.exact_scales:
        exact.scaled[float(c)] = exact_order_parameter(
            data,
            scaled_width(plan.width, c),
            temperature,
            generator,
            num_chains=plan.exact_chains,
            num_warmup=plan.exact_warmup,
            num_samples=plan.exact_scaled_draws or plan.exact_draws,
            thin=plan.exact_thin,
            progress=False,
            target=plan.exact_target,
        )
    return point, exact


def exact_predictive_variance(data: PathData, U, temperature: float, max_draws: int = 256) -> tuple[float, float]:
    """The finite network's posterior variance of ``f`` on ``data``'s test points from draws of ``U_1`` from the
    exact density (eq-exact-density), averaged over the test points, and its Monte-Carlo error.

    Given ``U_1`` the output is a Gaussian process with kernel ``K(U_1)`` (:mod:`attnpaths.order_parameter_posterior`),
    so by the law of total variance ``Var f(x) = E[kappa - k^T (K + T I)^{-1} k] + Var[<f(x) | U_1>]`` over the
    density, exactly: the saddle point's variance (eq-predictor at one ``U``) is its large-``N`` limit. Evaluated
    at up to ``max_draws`` draws, evenly spaced in every chain; the error is the jackknife over the chains (they
    are independent; the draws of a chain are not).

    Args:
        U: ``[C, S, n, n]`` draws of ``U_1`` in the network's path order (``OrderParameterSamples.U``), ``C >= 2``.

    Returns:
        ``(test-set average of Var f, its Monte-Carlo standard error)``.
    """
    U = torch.as_tensor(U, dtype=torch.float64)
    if U.ndim != 4 or U.shape[0] < 2:
        raise ValueError(f"U must have shape [C >= 2, S, n, n], got {tuple(U.shape)}")
    chains, per_chain = U.shape[:2]
    keep = np.unique(np.linspace(0, per_chain - 1, max(1, int_at_least(max_draws, "max_draws", 2) // chains)).round())
    means, variances = (np.array([[f(data.features, data.y, data.features_test, U[c, int(s)], temperature)
                                   for s in keep] for c in range(chains)])
                        for f in (mean_predictor, predictor_variance))  # fmt: skip  # [C, S', B] each

    def total(rows):  # E[Var f | U] + Var[<f | U>], averaged over the test points
        return float((variances[rows].mean(axis=(0, 1)) + means[rows].reshape(-1, means.shape[2]).var(axis=0)).mean())

    leave_one_out = np.array([total(np.delete(np.arange(chains), c)) for c in range(chains)])
    se = float(np.sqrt((chains - 1) / chains * np.sum((leave_one_out - leave_one_out.mean()) ** 2)))
    return total(np.arange(chains)), se


def scaled_width(width: int, scale: float) -> int:
    """``round(scale N)``: the width at which the action (eq-action) and the exact density (eq-exact-density) equal
    those at width ``N`` with the entropy weighted by ``scale`` (exactly when ``scale N`` is an integer; raises
    ``ValueError`` otherwise, since the weight would then differ from ``scale``)."""
    width = positive_int(width, "width")
    scale = positive_real(scale, "scale")
    scaled = round(scale * width)
    if abs(scaled - scale * width) > 1e-9 * width or scaled < 1:
        raise ValueError(f"scale * width must be a positive integer, got scale={scale:g}, width={width}")
    return int(scaled)


def _plans_and_temperatures(plans, temperature) -> tuple[list, list]:
    plans = list(plans)
    if not plans or not all(isinstance(p, SamplingPlan) for p in plans):
        raise ValueError(f"plans must be a non-empty list of SamplingPlan, got {plans!r}")
    try:
        temperatures = [float(T) for T in temperature]
    except TypeError:
        temperatures = [temperature] * len(plans)
    if len(temperatures) != len(plans):
        raise ValueError(f"temperature must be one number or one per plan ({len(plans)}), got {len(temperatures)}")
    return plans, [positive_real(T, "temperature") for T in temperatures]


def _by_width(plans, results) -> tuple[dict, dict]:
    points = {p.width: r[0] for p, r in zip(plans, results)}
    exact = {p.width: r[1] for p, r in zip(plans, results) if r[1] is not None}
    return points, exact


def sample_widths(
    data: PathData,
    plans,
    temperature,
    seed: int,
    *,
    network_index: int | None = None,
    progress: bool = True,
    device="cpu",
) -> tuple[dict, dict]:
    """:func:`sample_width` at every plan's width, one task per width (:func:`~attnpaths.engine.map_tasks`).

    Args:
        plans: :class:`SamplingPlan` per width.
        temperature: ``T`` of every width, or a sequence with one ``T`` per plan.
        seed, network_index: the generator of width ``N`` is seeded with ``task_seed(seed, network_index, N)``,
            or with ``task_seed(seed, N)`` when ``network_index`` is ``None``: several networks sampled with one
            seed each get their own index (the ``k``-th network of :func:`sample_networks` has index ``k``).
        device: where the sampler's linear algebra runs (``"cpu"`` or ``"cuda"``).

    Returns:
        ``({width: SampledPoint}, {width: ExactOrderParameter})`` in the order of ``plans`` (the second only for
        the plans with an exact run).
    """
    plans, temperatures = _plans_and_temperatures(plans, temperature)
    identity = () if network_index is None else (int_at_least(network_index, "network_index", 0),)
    results = map_tasks(
        sample_width,
        [dict(plan=plan, temperature=T) for plan, T in zip(plans, temperatures)],
        description="sampled widths",
        progress=progress,
        shared=dict(data=data, seed=seed, identity=identity, device=device),
    )
    return _by_width(plans, results)


def sample_networks(networks: dict, plans, temperature, seed: int, *, progress: bool = True, device="cpu") -> dict:
    """:func:`sample_widths` of several networks, ``networks`` ``{key: PathData}``, the ``k``-th (in order) with
    ``network_index = k``: the same numbers as one call per network, but every width of every network is one task
    of a single :func:`~attnpaths.engine.map_tasks`, so the long runs of different networks share the workers
    instead of each network's longest run leaving the other workers idle.

    Returns:
        ``{key: ({width: SampledPoint}, {width: ExactOrderParameter})}``.
    """
    plans, temperatures = _plans_and_temperatures(plans, temperature)
    networks = dict(networks)
    if not networks or not all(isinstance(d, PathData) for d in networks.values()):
        raise ValueError(f"networks must be a non-empty dict of PathData, got {networks!r}")
    tasks = [
        dict(data=data, identity=(k,), plan=plan, temperature=T)
        for k, data in enumerate(networks.values())
        for plan, T in zip(plans, temperatures)
    ]
    results = map_tasks(
        sample_width, tasks, description="sampled widths", progress=progress, shared=dict(seed=seed, device=device)
    )
    n = len(plans)
    return {key: _by_width(plans, results[k * n : (k + 1) * n]) for k, key in enumerate(networks)}


def finite_width_epsilon(width, num_paths: int) -> float:
    """``(n + 1) / N``: the relative scale of the finite-width difference between the theory's ``U`` and the
    posterior mean of ``U`` (a scale for figures, never a test tolerance).

    The theory is the saddle point of the action, exact as ``N, P -> infinity``; the posterior mean at
    finite ``N`` differs from it by ``O(1/N)``. The scale chosen: given the layers above, the ``N`` columns
    of the path weights ``e_pi`` (eq-sampled-u) are i.i.d. Gaussian, so ``U = e e^T / N`` is Wishart in ``n = n_paths``
    dimensions, whose exact log-density carries ``(N - n - 1) log det U`` where the action (eq-action) has
    ``N log det U``: the terms the saddle point drops are of relative size ``(n + 1) / N``. The coefficient
    of the resulting shift is not derived here, so this is a scale, not a bound. Where it is affordable the
    shift is computed exactly instead (:func:`exact_order_parameter`); the HMC chapter shows that the measured
    shifts are of this order.
    """
    width = positive_int(width, "width")
    num_paths = positive_int(num_paths, "num_paths")
    return (num_paths + 1) / width


# --------------------------------------------------------------------------------------------------------
# plans, summaries and tables of sampled widths (a chapter's results file and its sampler table)


def sampling_plans(
    widths,
    warmup,
    draws,
    chains,
    *,
    exact_chains: int | None = None,
    exact_warmup: int = 300,
    exact_draws: int = 300,
    exact_thin: int = 4,
    exact_scales=(),
    exact_scaled_draws: int | None = None,
    relative_se: float | None = None,
    exact_relative_se: float | None = None,
    min_draws: int = 25,
) -> list[SamplingPlan]:
    """One :class:`SamplingPlan` per sampled width, from a chapter's parameter lists.

    Args:
        widths, warmup, draws, chains: one entry per sampled width ``N``: the network sampler's warm-up sweeps,
            draws kept per chain (the most, with ``relative_se``) and chains.
        relative_se, exact_relative_se, min_draws: the :class:`PrecisionTarget` of the network's sampler and of
            the exact runs at every width (``None``: keep every draw).
        exact_chains, exact_warmup, exact_draws, exact_thin: the exact order-parameter run of every width
            (:func:`exact_order_parameter`); ``exact_chains=None`` plans none.
        exact_scales, exact_scaled_draws: entropy weights of the neighbouring exact runs (see :class:`SamplingPlan`).
    """
    widths, warmup, draws, chains = (list(v) for v in (widths, warmup, draws, chains))
    if not widths or not len(warmup) == len(draws) == len(chains) == len(widths):
        raise ValueError(
            f"warmup, draws and chains must give one value per sampled width ({len(widths)} widths), "
            f"got {len(warmup)}, {len(draws)} and {len(chains)}"
        )
    exact = (
        {}
        if exact_chains is None
        else dict(
            exact_chains=positive_int(exact_chains, "exact_chains"),
            exact_warmup=positive_int(exact_warmup, "exact_warmup"),
            exact_draws=positive_int(exact_draws, "exact_draws"),
            exact_thin=positive_int(exact_thin, "exact_thin"),
            exact_scales=tuple(positive_real(c, "exact_scales") for c in exact_scales),
            exact_scaled_draws=None
            if exact_scaled_draws is None
            else positive_int(exact_scaled_draws, "exact_scaled_draws"),
        )
    )
    target = None if relative_se is None else PrecisionTarget(relative_se, min_draws)
    if exact_relative_se is not None:
        exact["exact_target"] = PrecisionTarget(exact_relative_se, min_draws)
    return [
        SamplingPlan(
            positive_int(w, "widths"),
            positive_int(a, "warmup"),
            positive_int(d, "draws"),
            positive_int(c, "chains"),
            **exact,
            target=target,
        )
        for w, a, d, c in zip(widths, warmup, draws, chains)
    ]


def sampled_accuracy_record(points: dict) -> dict:
    """``{"N": [n_s], "accuracy": [n_s], "mc_sd": [n_s]}``: the sampled mean predictor's test accuracy and its
    Monte-Carlo standard deviation (:func:`accuracy_mc_sd`) at every sampled width of ``points``
    (``{width: SampledPoint}``, as returned by :func:`sample_widths`)."""
    return {
        "N": list(points),
        "accuracy": [p.accuracy for p in points.values()],
        "mc_sd": [p.accuracy_mc_sd for p in points.values()],
    }


def sampler_record(points: dict) -> dict:
    """Per sampled width (key ``str(N)``): the sampler's diagnostics (:attr:`SampledPoint.diagnostics`) with the
    ESS (``U_ess``) and the Monte-Carlo standard error (``U_mc_se``) of every entry of the sampled ``U``
    (eq-sampled-u), ``[n, n]`` in figure order."""
    return {str(w): dict(p.diagnostics, U_ess=p.U_ess, U_mc_se=p.U_se) for w, p in points.items()}


def exact_record(exacts: dict) -> dict:
    """Per width (key ``str(N)``) of ``exacts`` (``{width: ExactOrderParameter}``): the exact posterior mean of
    ``U`` (eq-exact-density), its Monte-Carlo standard error ``U_mc_se``, the density's ``mode`` (all
    ``[n, n]``, figure order) and the Metropolis run's diagnostics; under ``scaled`` (key ``f"{c:g}"``) the
    same for the runs with the entropy weighted by ``c``."""
    record = {}
    for w, e in exacts.items():
        record[str(w)] = {"U": e.U, "U_mc_se": e.U_se, "mode": e.mode, **e.diagnostics}
        if e.U_upper:
            record[str(w)]["U_upper"] = {
                f"U_{l + 2}": {"U": U, "U_mc_se": se} for l, (U, se) in enumerate(zip(e.U_upper, e.U_upper_se))
            }
        if e.scaled:
            record[str(w)]["scaled"] = {
                f"{c:g}": {"width": s.width, "U": s.U, "U_mc_se": s.U_se, **s.diagnostics} for c, s in e.scaled.items()
            }
    return record


def largest_accuracy_difference(points: dict, reference_accuracy: dict) -> float:
    """``max_N |A_sampled(N) - A_reference(N)|`` over the sampled widths of ``points``.

    Args:
        points: ``{width: SampledPoint}``; reference_accuracy: ``{width: accuracy}`` holding every sampled width
            (e.g. the theory's accuracy, eq-predictor).
    """
    missing = [w for w in points if w not in reference_accuracy]
    if not points or missing:
        raise ValueError(f"reference_accuracy must hold every sampled width {list(points)}, missing {missing}")
    return float(max(abs(p.accuracy - reference_accuracy[w]) for w, p in points.items()))


def saddle_point_z_max(points: dict, theory_U: dict) -> dict:
    """Per sampled width, the largest ``|U_sampled - U_theory| / se`` over the entries of ``U``: how many
    Monte-Carlo standard errors the samples (eq-sampled-u) lie from the saddle point (eq-action).

    Args:
        points: ``{width: SampledPoint}``; theory_U: ``{width: [n, n]}`` the theory's ``U`` in figure order,
            holding every sampled width.
    Returns:
        ``{width: z}``.
    """
    missing = [w for w in points if w not in theory_U]
    if missing:
        raise ValueError(f"theory_U must hold every sampled width {list(points)}, missing {missing}")
    return {w: float(np.abs((p.U - theory_U[w]) / p.U_se).max()) for w, p in points.items()}


def finite_width_shift(points: dict, exacts: dict, theory_U: dict) -> dict:
    """The diagonal of ``U`` at every sampled width relative to the saddle point, for the network's samples
    (eq-sampled-u) and for the exact posterior mean (eq-exact-density): ``U_ii / U_theory,ii - 1``, an
    ``O(1/N)`` shift (:func:`finite_width_epsilon`).

    Args:
        points: ``{width: SampledPoint}``; exacts: ``{width: ExactOrderParameter}`` and theory_U:
            ``{width: [n, n]}`` (figure order), both holding every sampled width.
    Returns:
        a dict with ``"N": [n_s]``, ``"relative_diagonal_shift": [n_s, n]``, ``"relative_mc_se": [n_s, n]``,
        ``"exact_relative_diagonal_shift": [n_s, n]``, ``"exact_relative_mc_se": [n_s, n]`` and
        ``"epsilon": [n_s]``, the
        standard errors relative to the theory's diagonal and ``epsilon = (n + 1) / N``.
    """
    widths = list(points)
    missing = [w for w in widths if w not in exacts or w not in theory_U]
    if not widths or missing:
        raise ValueError(f"exacts and theory_U must hold every sampled width {widths}, missing {missing}")
    theory_diag = np.array([np.diag(theory_U[w]) for w in widths])

    def diagonal(matrices):
        return np.array([np.diag(m) for m in matrices])

    return {
        "N": widths,
        "relative_diagonal_shift": diagonal(points[w].U for w in widths) / theory_diag - 1,
        "relative_mc_se": diagonal(points[w].U_se for w in widths) / theory_diag,
        "exact_relative_diagonal_shift": diagonal(exacts[w].U for w in widths) / theory_diag - 1,
        "exact_relative_mc_se": diagonal(exacts[w].U_se for w in widths) / theory_diag,
        "epsilon": [finite_width_epsilon(w, theory_diag.shape[1]) for w in widths],
    }


def exact_density_dimension(heads) -> int:
    """Number of free numbers of the exact order-parameter density (eq-exact-density): the distinct entries
    of every symmetric ``U_l`` (size ``n_l = H_l ... H_L``) and the scalar ``U_a``,
    ``sum_l n_l (n_l + 1) / 2 + 1``."""
    heads = heads_tuple(heads)
    sizes = [int(np.prod(heads[l:])) for l in range(len(heads))]
    return sum(n * (n + 1) // 2 for n in sizes) + 1


def kept_draws(diagnostics: dict) -> str:
    """``"S"``, or ``"S of M"`` when a run stopped on its :class:`PrecisionTarget` after ``S`` of its most ``M``
    draws per chain (``diagnostics``: a run's ``num_samples`` and ``max_samples``)."""
    kept = diagnostics["num_samples"]
    most = diagnostics.get("max_samples", kept)
    return str(kept) if most == kept else f"{kept} of {most}"


def diagnostics_table(runs: dict) -> str:
    """Markdown table of the sampler diagnostics (sec-hmc-sampler): per network and sampled width, the network
    sampler's chains, draws kept (and the most it could keep, when it stopped on a :class:`PrecisionTarget`) and
    warm-up, the min / median ESS and max split R-hat of the test predictions, the min ESS of ``U`` and the largest
    relative standard error of its entries (``se / sqrt(|U_ii U_jj|)``, what the target bounds) and the wall time,
    and the exact-density run's chains, draws, min ESS, max R-hat and time.

    Args:
        runs: ``{network label: (points, exacts)}`` with ``points`` ``{width: SampledPoint}`` and ``exacts``
            ``{width: ExactOrderParameter}`` holding every sampled width.
    """
    lines = [
        "| network | N | chains x draws (warm-up) | min / median ESS of f | max R-hat of f | min ESS of U "
        "| max relative se of U | wall time (s) | exact mean: chains x draws, min ESS, max R-hat, time (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, (points, exacts) in runs.items():
        missing = [w for w in points if w not in exacts]
        if missing:
            raise ValueError(f"runs[{name!r}] must have an exact run at every sampled width, missing {missing}")
        for w, p in points.items():
            d, e = p.diagnostics, exacts[w].diagnostics
            draws = kept_draws(d)
            relative_se = np.max(p.U_se / entry_scale(p.U))
            lines.append(
                f"| {name} | {w} | {d['num_chains']} x {draws} ({d['num_warmup']}) | "
                f"{d['min_predictor_ess']:.0f} / {d['median_predictor_ess']:.0f} | "
                f"{d['max_predictor_rhat']:.3f} | "
                f"{d['min_U_ess']:.0f} | {relative_se:.4f} | {d['wall_time_s']:.1f} | "
                f"{e['num_chains']} x {kept_draws(e)}, "
                f"{e['min_ess']:.0f}, {e['max_rhat']:.3f}, {e['wall_time_s']:.1f} |"
            )
    return "\n".join(lines)
