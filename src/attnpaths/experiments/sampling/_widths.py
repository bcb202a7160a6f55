"""Plans of sampled widths and their runs: the network's sampler and the exact density at every width of one or
several networks, one task per width (:func:`~attnpaths.engine.map_tasks`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..._validation import int_at_least, positive_int, positive_real
from ...engine import map_tasks, task_generator
from ..path_data import PathData
from ._exact import ExactOrderParameter, exact_order_parameter, scaled_width
from ._network import PrecisionTarget, SampledPoint, sample_posterior


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
    options = dict(
        num_chains=plan.exact_chains,
        num_warmup=plan.exact_warmup,
        thin=plan.exact_thin,
        progress=False,
        target=plan.exact_target,
    )
    exact = exact_order_parameter(data, plan.width, temperature, generator, num_samples=plan.exact_draws, **options)
    for c in plan.exact_scales:
        exact.scaled[float(c)] = exact_order_parameter(
            data,
            scaled_width(plan.width, c),
            temperature,
            generator,
            num_samples=plan.exact_scaled_draws or plan.exact_draws,
            **options,
        )
    return point, exact


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
