"""Blocked Gibbs (:mod:`attnpaths.sampler`) against numpyro's NUTS on JAX, the sampler the authors used.

The authors sample the posterior (sec-model-network) with numpyro's NUTS at its default settings (target acceptance
0.8, maximal tree depth 10, diagonal mass matrix adapted in windows during the warm-up) in JAX's default
float32. This benchmark runs that sampler on the CPU, in float64 (the package's precision) and in float32,
on the same posterior as :func:`attnpaths_book.benchmarks.sampler.potential_energy`, and compares it with the
blocked Gibbs sampler by the effective sample size per second of the predictor on test points (the minimum
over the test points; ESS and split R-hat from :func:`attnpaths.sampler.effective_sample_size` and
:func:`attnpaths.sampler.split_rhat`).

Stopping rule. After the warm-up, every chain draws ``round_samples`` more samples per round until the split
R-hat of the predictor is at most ``rhat_target`` at every test point, or ``max_samples`` draws per chain
are reached, or the next round would overrun ``time_budget_s`` (estimated from the last round): the report
says which, with the R-hat after every round.

Wall times. Chains run one after the other in one process (numpyro's default when the machine has one
device), each timed on its own: the ESS per second of a sampler is the ESS of all its chains over the sum
of their wall times, warm-up (Gibbs: burn-in) included. JAX's one-off compilation of the NUTS step is timed
separately and not charged to the chains. The process's CPU time during each chain is recorded too: on a
machine shared with other work, the ESS per CPU second is the less load-dependent figure.

Uncertainty of the ratio: spread over independent repeats. Every chain is an independent run (its own
prior start, warm-up and adaptation), so each gives an estimate ``min_b ESS_c(b) / t_c`` of a sampler's
ESS per second from that chain alone; the ratio's uncertainty is the standard error of the difference of
the mean log estimates of the two samplers (a factor ``exp(log_se)`` either way, about 68 %). With few
draws per chain the single-chain ESS is rough, and so is this uncertainty: read it as an order of magnitude.

Threads: torch is pinned to ``--threads`` (default 1) during the run, and XLA to one thread
(``XLA_FLAGS``) when ``--threads 1`` and JAX was not imported before :func:`main`.

Needs the optional dependencies of the ``bench`` extra (``pip install -e .[bench]``: jax, numpyro).
``jax_enable_x64`` is switched on only around the float64 runs and restored afterwards.

Cost. At ``T = 0.01`` the adapted step sizes are about 4e-3 to 1e-2 and NUTS builds trees of 500-1000 leapfrog
steps, each a gradient of the layer-by-layer potential (about 2-3 ms in float64 on one core, somewhat less
in float32): an iteration takes seconds, so the warm-up alone of a few chains takes minutes and R-hat <= 1.01
needs hours on such a machine; hence the time budget. A short warm-up can leave a chain with a step size too
large for the posterior's narrow directions: ``mean_accept_prob`` far below the target and ``divergences``
in the report show it.

Command line: ``python -m attnpaths_book bench numpyro_nuts --help``. The report, with its provenance
(:mod:`attnpaths_book.benchmarks.record`), is written to ``--output``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from attnpaths.network import AttentionNetwork, NetworkWeights, predictor_from_input_weights
from attnpaths.sampler import PosteriorSampler, PosteriorSamples, effective_sample_size, split_rhat
from attnpaths_book.benchmarks.record import (
    VERSIONED_PACKAGES,
    committed_record_path,
    make_record,
    start_record,
    write_record,
)
from attnpaths_book.benchmarks.sampler import SUMMARY_KEYS, _hmc_inputs, _random_inputs, _summary, print_summaries

INSTALL_HINT = 'pip install -e ".[bench]"'
"""How to install the optional dependencies of this benchmark (the ``bench`` extra of ``pyproject.toml``)."""

PRECISIONS = ("float64", "float32")
SINGLE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
VERSIONED = VERSIONED_PACKAGES + ("jax", "jaxlib", "numpyro")


def require_numpyro():
    """Import and return ``(jax, numpyro)``; ``ModuleNotFoundError`` naming the ``bench`` extra if either is
    missing."""
    try:
        import jax
        import numpyro
    except ImportError as err:
        raise ModuleNotFoundError(
            f"the numpyro benchmark needs jax and numpyro, the optional 'bench' dependencies of attnpaths "
            f"({err}): install them with {INSTALL_HINT}"
        ) from err
    return jax, numpyro


def pin_xla_threads(threads: int) -> str | None:
    """Ask XLA for one CPU thread when ``threads == 1``, by ``XLA_FLAGS``; effective only if JAX is not
    imported yet. Returns the ``XLA_FLAGS`` in force (``None`` if unset)."""
    if threads == 1 and "jax" not in sys.modules:
        flags = os.environ.get("XLA_FLAGS", "")
        if SINGLE_THREAD_XLA_FLAGS not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} {SINGLE_THREAD_XLA_FLAGS}".strip()
    return os.environ.get("XLA_FLAGS")


@contextlib.contextmanager
def x64(enabled: bool):
    """Set JAX's ``jax_enable_x64`` to ``enabled`` inside the block; the previous value is restored after."""
    jax, _ = require_numpyro()
    previous = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", bool(enabled))
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


def _check_precision(dtype: str) -> str:
    if dtype not in PRECISIONS:
        raise ValueError(f"dtype must be one of {PRECISIONS}, got {dtype!r}")
    return dtype


def jax_potential_energy(network: AttentionNetwork, x, y, temperature: float, dtype: str = "float64"):
    """JAX version of :func:`attnpaths_book.benchmarks.sampler.potential_energy`, the negative log posterior (sec-model-network)::

        E(theta) = sum_blocks |W|^2 / (2 s) + |y - f(x; theta)|^2 / (2 T)

    with ``f`` computed layer by layer as in (eq-forward) (``x^(0) = V0 x / sqrt(N0)``, ``x^(l) = sum_h V^(l,h)
    x^(l-1) Omega^(l,h) / sqrt(H_l N_l)``, the last layer read out by the token readout ``omega^(L,h)``,
    ``f = a . xbar^(L) / sqrt(N_a)``) from the attention matrices, computed once (in float64, by torch) and
    then cast to ``dtype`` together with ``x`` and ``y``.

    Args:
        network: the network (attention, widths, prior variances).
        x: ``[P, N0, T_seq]`` training inputs.
        y: ``[P]`` labels.
        temperature: likelihood variance ``T``.
        dtype: ``"float64"`` (needs ``jax_enable_x64``, see :func:`x64`) or ``"float32"``.

    Returns:
        a function of a dict ``{"V_0": [N_1, N0], "V_1": [H_1, N_2, N_1], ..., "a": [N_a]}`` of JAX arrays
        returning the scalar energy.
    """
    jax, _ = require_numpyro()
    import jax.numpy as jnp

    _check_precision(dtype)
    if dtype == "float64" and not jax.config.jax_enable_x64:
        raise ValueError("dtype='float64' needs JAX's jax_enable_x64: build the potential inside x64(True)")
    if not isinstance(temperature, numbers.Real) or isinstance(temperature, bool) or not temperature > 0:
        raise ValueError(f"temperature must be a real number > 0, got {temperature!r}")
    x = torch.as_tensor(x, dtype=torch.float64)
    y = torch.as_tensor(y, dtype=torch.float64)
    if x.ndim != 3 or x.shape[1] != network.input_width or y.shape != (x.shape[0],):
        raise ValueError(
            f"x must have shape [P, {network.input_width}, T] and y shape [P], got "
            f"{tuple(x.shape)} and {tuple(y.shape)}"
        )
    matrices = [jnp.asarray(m.numpy(), dtype=dtype) for m in network.attention.matrices(x)]
    inputs, labels = jnp.asarray(x.numpy(), dtype=dtype), jnp.asarray(y.numpy(), dtype=dtype)
    names = list(network.weight_shapes())
    variances = dict(zip(names, network.variances))
    heads, widths, num_layers = network.heads, network.widths, network.num_layers
    input_norm = math.sqrt(network.input_width)

    def energy(params: dict):
        hidden = jnp.matmul(params["V_0"], inputs) / input_norm  # [P, N_1, T]
        for l, omega in enumerate(matrices, start=1):
            norm = math.sqrt(heads[l - 1] * widths[l - 1])
            routed = jnp.matmul(params[f"V_{l}"][None], hidden[:, None])  # V^(l,h) x^(l-1): [P, H, N_{l+1}, T]
            if l < num_layers:  # sum_h (V^(l,h) x^(l-1)) Omega^(l,h)
                hidden = jnp.matmul(routed, omega).sum(axis=1) / norm
            else:  # token readout of the last layer: omega [P, H, T]
                hidden = jnp.einsum("phnt,pht->pn", routed, omega) / norm
        f = hidden @ params["a"] / math.sqrt(widths[-1])
        prior = sum((params[name] ** 2).sum() / (2 * variances[name]) for name in names)
        return prior + ((labels - f) ** 2).sum() / (2 * temperature)

    return energy


@dataclass
class NutsRun:
    """A numpyro NUTS run: the samples and what explains their cost.

    Attributes:
        samples: ``[C, S, ...]`` samples (path form, float64); ``wall_time_s`` is the sum of the chains' times.
        dtype: the precision asked for.
        draw_dtype: the precision of the weights the chains produced (a check that JAX ran in ``dtype``).
        chain_wall_times_s: ``[C]`` wall time of each chain (prior draw, initialisation, warm-up, sampling).
        chain_cpu_times_s: ``[C]`` CPU time of the process during each chain (all its threads).
        compile_time_s: JAX's compilation of the NUTS step (once per run, not in the chains' times).
        step_sizes: ``[C]`` adapted step sizes.
        potential_evaluations: ``[C]`` leapfrog steps (gradient evaluations of the potential), warm-up included.
        iterations: NUTS iterations per chain (warm-up included).
        max_depth_fraction: fraction of the sampling iterations that built a tree of the maximal depth.
        divergences: ``[C]`` divergent transitions after the warm-up.
        mean_accept_prob: ``[C]`` mean acceptance statistic after the warm-up.
        rhat_history: ``[(draws per chain, max split R-hat over the test points, elapsed s)]`` after every round.
        stop_reason: ``"rhat"``, ``"max_samples"`` or ``"time_budget"``.
    """

    samples: PosteriorSamples
    dtype: str
    draw_dtype: str
    chain_wall_times_s: list[float]
    chain_cpu_times_s: list[float]
    compile_time_s: float
    step_sizes: list[float]
    potential_evaluations: list[int]
    iterations: int
    max_depth_fraction: float
    divergences: list[int]
    mean_accept_prob: list[float]
    rhat_history: list[tuple[int, float, float]] = field(default_factory=list)
    stop_reason: str = ""

    @property
    def converged(self) -> bool:
        return self.stop_reason == "rhat"


def _int_at_least(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    return int(value)


def run_numpyro_nuts(
    network: AttentionNetwork,
    x,
    y,
    temperature: float,
    key,
    test_features,
    *,
    dtype: str = "float64",
    num_warmup: int = 100,
    num_chains: int = 4,
    round_samples: int = 10,
    max_samples: int = 1000,
    rhat_target: float = 1.01,
    time_budget_s: float | None = None,
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 10,
    progress: bool = False,
) -> NutsRun:
    """Sample the posterior (sec-model-network) with numpyro's NUTS until the predictor's split R-hat reaches ``rhat_target``.

    Chains run one after the other, each from a prior draw (sec-model-network) made with its own key. After ``num_warmup``
    adaptation iterations, rounds of ``round_samples`` draws per chain follow until ``max_b R-hat(f(x_b))
    <= rhat_target`` over the test points, or ``max_samples`` draws per chain, or until the next round would
    end after ``time_budget_s`` (counted from the start of the run; ``None``: no limit). The warm-up and the
    first round always run.

    Args:
        network, x, y, temperature: the posterior (eq-forward, sec-model-network).
        key: JAX PRNG key (``jax.random.PRNGKey(seed)``), the source of all randomness.
        test_features: ``[B, N0, n_paths]`` path features of the test inputs on which R-hat is measured.
        dtype: ``"float64"`` or ``"float32"``; ``jax_enable_x64`` is set accordingly during the run.
        num_warmup, num_chains, round_samples, max_samples, rhat_target, time_budget_s: as above.
        target_accept_prob, max_tree_depth: NUTS settings (numpyro's defaults).
        progress: tqdm bar over the NUTS iterations.

    Returns:
        :class:`NutsRun`.
    """
    jax, _ = require_numpyro()
    from numpyro.infer import NUTS

    _check_precision(dtype)
    num_warmup = _int_at_least(num_warmup, "num_warmup", 0)
    num_chains = _int_at_least(num_chains, "num_chains", 1)
    round_samples = _int_at_least(round_samples, "round_samples", 1)
    max_samples = _int_at_least(max_samples, "max_samples", round_samples)
    max_tree_depth = _int_at_least(max_tree_depth, "max_tree_depth", 1)
    if not isinstance(rhat_target, numbers.Real) or not rhat_target > 1:
        raise ValueError(f"rhat_target must be a real number > 1, got {rhat_target!r}")
    if time_budget_s is not None and (not isinstance(time_budget_s, numbers.Real) or not time_budget_s > 0):
        raise ValueError(f"time_budget_s must be a number > 0 or None, got {time_budget_s!r}")
    if not 0 < target_accept_prob < 1:
        raise ValueError(f"target_accept_prob must be in (0, 1), got {target_accept_prob!r}")
    features = network.check_features(test_features)
    names = list(network.weight_shapes())
    max_steps = 2**max_tree_depth - 1

    with x64(dtype == "float64"):
        try:
            keys = jax.random.split(key, num_chains)
        except (TypeError, ValueError) as err:
            raise ValueError(f"key must be a JAX PRNG key (jax.random.PRNGKey(seed)), got {key!r}") from err
        potential = jax_potential_energy(network, x, y, temperature, dtype)
        kernel = NUTS(potential_fn=potential, target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth)
        start = time.perf_counter()
        chains, wall_times, cpu_times = [], [0.0] * num_chains, [0.0] * num_chains
        evaluations = [0] * num_chains
        draws = [[] for _ in range(num_chains)]
        bar = tqdm(
            total=num_chains * (num_warmup + round_samples), desc=f"NUTS ({dtype})", disable=not progress, leave=False
        )

        def advance(c: int, state, iterations: int, keep: bool):
            began, cpu_began = time.perf_counter(), time.process_time()
            for _ in range(iterations):
                state = step(state)
                jax.block_until_ready(state)
                evaluations[c] += int(state.num_steps)
                if keep:
                    draws[c].append(
                        (
                            jax.tree.map(np.asarray, state.z),
                            int(state.num_steps),
                            bool(state.diverging),
                            float(state.accept_prob),
                        )
                    )
                bar.update()
            wall_times[c] += time.perf_counter() - began
            cpu_times[c] += time.process_time() - cpu_began
            return state

        def initial_state(c: int):
            prior_key, chain_key = jax.random.split(keys[c])
            init = {
                name: jax.random.normal(k, shape, dtype=dtype) * math.sqrt(s)
                for (name, shape), s, k in zip(
                    network.weight_shapes().items(), network.variances, jax.random.split(prior_key, len(names))
                )
            }
            return kernel.init(chain_key, num_warmup, init_params=init, model_args=(), model_kwargs={})

        # JAX compiles the prior draw, the initialisation and the NUTS step once for all chains (same shapes and
        # warm-up schedule); this first pass is timed as compilation, not charged to a chain
        began = time.perf_counter()
        step = jax.jit(lambda s: kernel.sample(s, (), {})).lower(initial_state(0)).compile()
        compile_time = time.perf_counter() - began
        for c in range(num_chains):
            began, cpu_began = time.perf_counter(), time.process_time()
            state = initial_state(c)
            wall_times[c] += time.perf_counter() - began
            cpu_times[c] += time.process_time() - cpu_began
            chains.append(advance(c, state, num_warmup, keep=False))
        step_sizes = [float(state.adapt_state.step_size) for state in chains]

        input_weights = [[] for _ in range(num_chains)]
        overlaps = [[] for _ in range(num_chains)]
        history = []
        while True:
            round_began = time.perf_counter()
            for c in range(num_chains):
                done = len(draws[c])
                chains[c] = advance(c, chains[c], round_samples, keep=True)
                new = [z for z, *_ in draws[c][done:]]
                weights = NetworkWeights(
                    V0=_stack(new, "V_0"),
                    V=tuple(_stack(new, f"V_{l}") for l in range(1, len(names) - 1)),
                    a=_stack(new, "a"),
                )
                input_weights[c].append(network.path_input_weights(weights))
                overlaps[c].append(network.sampled_order_parameter(weights, per_sample=True))
            predictor = predictor_from_input_weights(torch.stack([torch.cat(w) for w in input_weights]), features)
            max_rhat = split_rhat(predictor).max().item()
            num_drawn = len(draws[0])
            history.append((num_drawn, max_rhat, time.perf_counter() - start))
            stop_reason = stop_reason_after_round(
                max_rhat,
                num_drawn,
                time.perf_counter() - start,
                time.perf_counter() - round_began,
                rhat_target=rhat_target,
                round_samples=round_samples,
                max_samples=max_samples,
                time_budget_s=time_budget_s,
            )
            if stop_reason:
                break
            bar.total += num_chains * round_samples
        bar.close()

    kept = [d for chain in draws for d in chain]
    samples = PosteriorSamples(
        path_input_weights=torch.stack([torch.cat(w) for w in input_weights]),
        order_parameters=torch.stack([torch.cat(o) for o in overlaps]),
        temperature=float(temperature),
        num_warmup=num_warmup,
        wall_time_s=sum(wall_times),
    )
    return NutsRun(
        samples=samples,
        dtype=dtype,
        draw_dtype=str(draws[0][0][0]["a"].dtype),
        chain_wall_times_s=wall_times,
        chain_cpu_times_s=cpu_times,
        compile_time_s=compile_time,
        step_sizes=step_sizes,
        potential_evaluations=evaluations,
        iterations=num_warmup + len(draws[0]),
        max_depth_fraction=sum(steps >= max_steps for _, steps, _, _ in kept) / len(kept),
        divergences=[sum(d for _, _, d, _ in chain) for chain in draws],
        mean_accept_prob=[float(np.mean([p for *_, p in chain])) for chain in draws],
        rhat_history=history,
        stop_reason=stop_reason,
    )


def stop_reason_after_round(
    max_rhat: float,
    draws_per_chain: int,
    elapsed_s: float,
    last_round_s: float,
    *,
    rhat_target: float,
    round_samples: int,
    max_samples: int,
    time_budget_s: float | None,
) -> str:
    """The stopping rule of :func:`run_numpyro_nuts` after a round of draws: ``"rhat"`` when ``max_rhat <=
    rhat_target`` (NaN never is), else ``"max_samples"`` when another round would pass ``max_samples`` draws
    per chain, else ``"time_budget"`` when another round as long as the last would end after ``time_budget_s``
    (``None``: no budget), else ``""`` (go on)."""
    if max_rhat <= rhat_target:
        return "rhat"
    if draws_per_chain + round_samples > max_samples:
        return "max_samples"
    if time_budget_s is not None and elapsed_s + last_round_s > time_budget_s:
        return "time_budget"
    return ""


def _stack(draws: list[dict], name: str) -> torch.Tensor:
    """``[S, ...]`` float64 tensor of one weight block over draws (float32 draws are widened exactly)."""
    return torch.from_numpy(np.stack([z[name] for z in draws]).astype(np.float64))


def run_gibbs_chains(
    network: AttentionNetwork,
    x,
    y,
    temperature: float,
    generator: torch.Generator,
    num_warmup: int,
    num_samples: int,
    num_chains: int,
    *,
    progress: bool = False,
) -> tuple[PosteriorSamples, list[float], list[float]]:
    """``num_chains`` independent single-chain Gibbs runs (each timed alone), stacked along the chain axis.

    Returns:
        ``(samples [C, S, ...], wall times [C], CPU times of the process [C])``; ``samples.wall_time_s`` is the
        sum of the wall times.
    """
    num_chains = _int_at_least(num_chains, "num_chains", 1)
    sampler = PosteriorSampler(network, y, temperature, x=x)
    runs, cpu_times = [], []
    for _ in range(num_chains):
        cpu_began = time.process_time()
        runs.append(sampler.run(generator, num_warmup, num_samples, 1, progress=progress))
        cpu_times.append(time.process_time() - cpu_began)
    times = [run.wall_time_s for run in runs]
    samples = PosteriorSamples(
        path_input_weights=torch.cat([run.path_input_weights for run in runs]),
        order_parameters=torch.cat([run.order_parameters for run in runs]),
        temperature=float(temperature),
        num_warmup=num_warmup,
        wall_time_s=sum(times),
    )
    return samples, times, cpu_times


def per_chain_min_ess_per_s(samples: PosteriorSamples, wall_times, features) -> list[float]:
    """Each chain's own estimate of the ESS per second: ``min_b ESS_c(f(x_b)) / t_c`` (ESS of that chain
    alone, split in halves). Returns ``[C]``."""
    predictor = samples.predictor_samples(features)
    return [effective_sample_size(predictor[c : c + 1]).min().item() / t for c, t in enumerate(wall_times)]


def ratio_over_repeats(gibbs: list[float], nuts: list[float]) -> dict:
    """Ratio of two samplers' ESS per second from independent repeats (one estimate per chain).

    ``log r = mean(log g_c) - mean(log n_c)``, standard error ``sqrt(var(log g) / C_g + var(log n) / C_n)``
    (sample variances; ``None`` with fewer than two repeats of either sampler).

    Returns:
        dict with ``geometric_mean_ratio``, ``log_se``, ``interval_68`` (``r exp(-+ log_se)``) and ``method``.
    """
    log_g, log_n = np.log(np.asarray(gibbs, dtype=float)), np.log(np.asarray(nuts, dtype=float))
    ratio = float(np.exp(log_g.mean() - log_n.mean()))
    if len(log_g) < 2 or len(log_n) < 2:
        log_se = None
        interval = None
    else:
        log_se = float(math.sqrt(log_g.var(ddof=1) / len(log_g) + log_n.var(ddof=1) / len(log_n)))
        interval = [ratio * math.exp(-log_se), ratio * math.exp(log_se)]
    return {
        "geometric_mean_ratio": ratio,
        "log_se": log_se,
        "interval_68": interval,
        "method": "spread over independent repeats: each chain's own min-over-test-points ESS per second",
    }


def _cpu_summary(summary: dict, cpu_times: list[float]) -> dict:
    """CPU-time fields of a sampler's summary: less sensitive than wall time to other work on the machine."""
    return {
        "chain_cpu_times_s": cpu_times,
        "cpu_time_s": sum(cpu_times),
        "min_predictor_ess_per_cpu_s": summary["min_predictor_ess"] / sum(cpu_times),
    }


def mean_predictor_z(a: PosteriorSamples, b: PosteriorSamples, features) -> float:
    """Largest difference of two samplers' mean predictors over the test points in units of their combined
    Monte-Carlo standard error (each from its own ESS, at least one draw's worth)."""
    squared = []
    for samples in (a, b):
        ess = effective_sample_size(samples.predictor_samples(features))
        squared.append(samples.predictor_variance(features) / torch.clamp(torch.nan_to_num(ess, nan=1.0), min=1.0))
    difference = a.predict(features) - b.predict(features)
    return (difference.abs() / torch.sqrt(sum(squared))).max().item()


def compare(
    network: AttentionNetwork,
    x,
    y,
    x_test,
    temperature: float,
    seed: int,
    *,
    precisions=PRECISIONS,
    num_chains: int = 4,
    num_warmup: int = 100,
    round_samples: int = 10,
    max_samples: int = 1000,
    rhat_target: float = 1.01,
    time_budget_s: float | None = None,
    gibbs_warmup: int = 100,
    gibbs_samples: int = 1000,
    y_test=None,
    num_threads: int = 1,
    progress: bool = False,
) -> dict:
    """Gibbs and numpyro's NUTS (each precision in ``precisions``) on the same posterior; see the module text.

    Randomness: Gibbs from ``torch.Generator().manual_seed(seed)``, NUTS from ``jax.random.PRNGKey(seed)``
    (the same key for every precision).

    Returns:
        the report: ``sizes``, ``gibbs`` and ``nuts_<precision>`` summaries (wall time, min / median predictor
        ESS, max R-hat, ESS per second, per-chain estimates; for NUTS also the stopping rule's history and
        outcome, step sizes, gradient evaluations, compile time), ``ess_per_s_ratio``, ``ess_per_cpu_s_ratio``
        and ``ess_per_s_ratio_repeats`` (Gibbs / NUTS, per precision) and ``max_mean_predictor_z`` (per
        precision).
    """
    jax, _ = require_numpyro()
    precisions = tuple(_check_precision(p) for p in precisions)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        features = network.features(x_test)
        gibbs, gibbs_times, gibbs_cpu_times = run_gibbs_chains(
            network,
            x,
            y,
            temperature,
            torch.Generator().manual_seed(seed),
            gibbs_warmup,
            gibbs_samples,
            num_chains,
            progress=progress,
        )
        nuts = {
            p: run_numpyro_nuts(
                network,
                x,
                y,
                temperature,
                jax.random.PRNGKey(seed),
                features,
                dtype=p,
                num_warmup=num_warmup,
                num_chains=num_chains,
                round_samples=round_samples,
                max_samples=max_samples,
                rhat_target=rhat_target,
                time_budget_s=time_budget_s,
                progress=progress,
            )
            for p in precisions
        }
    finally:
        torch.set_num_threads(previous_threads)
    report = {
        "sizes": {
            "num_train": int(torch.as_tensor(y).shape[0]),
            "num_test": int(features.shape[0]),
            "input_width": network.input_width,
            "heads": list(network.heads),
            "widths": list(network.widths),
            "temperature": float(temperature),
            "num_threads": num_threads,
            "xla_flags": os.environ.get("XLA_FLAGS"),
            "seed": seed,
        },
        "gibbs": _summary(gibbs, gibbs.diagnostics(features)),
        "ess_per_s_ratio": {},
        "ess_per_cpu_s_ratio": {},
        "ess_per_s_ratio_repeats": {},
        "max_mean_predictor_z": {},
    }
    gibbs_per_chain = per_chain_min_ess_per_s(gibbs, gibbs_times, features)
    report["gibbs"].update(
        num_warmup=gibbs_warmup,
        chain_wall_times_s=gibbs_times,
        per_chain_min_predictor_ess_per_s=gibbs_per_chain,
        **_cpu_summary(report["gibbs"], gibbs_cpu_times),
    )
    for p, run in nuts.items():
        summary = _summary(run.samples, run.samples.diagnostics(features))
        iterations = num_chains * run.iterations
        summary.update(
            num_warmup=num_warmup,
            draw_dtype=run.draw_dtype,
            chain_wall_times_s=run.chain_wall_times_s,
            **_cpu_summary(summary, run.chain_cpu_times_s),
            per_chain_min_predictor_ess_per_s=per_chain_min_ess_per_s(run.samples, run.chain_wall_times_s, features),
            compile_time_s=run.compile_time_s,
            step_sizes=run.step_sizes,
            potential_evaluations_per_iteration=sum(run.potential_evaluations) / iterations,
            min_predictor_ess_per_1000_evaluations=1000 * summary["min_predictor_ess"] / sum(run.potential_evaluations),
            max_tree_depth_fraction=run.max_depth_fraction,
            divergences=run.divergences,
            mean_accept_prob=run.mean_accept_prob,
            rhat_target=rhat_target,
            time_budget_s=time_budget_s,
            rhat_history=[
                {"draws_per_chain": n, "max_predictor_rhat": r, "elapsed_s": t} for n, r, t in run.rhat_history
            ],
            stop_reason=run.stop_reason,
            converged=run.converged,
        )
        report[f"nuts_{p}"] = summary
        report["ess_per_s_ratio"][p] = report["gibbs"]["min_predictor_ess_per_s"] / summary["min_predictor_ess_per_s"]
        report["ess_per_cpu_s_ratio"][p] = (
            report["gibbs"]["min_predictor_ess_per_cpu_s"] / summary["min_predictor_ess_per_cpu_s"]
        )
        report["ess_per_s_ratio_repeats"][p] = ratio_over_repeats(
            gibbs_per_chain, summary["per_chain_min_predictor_ess_per_s"]
        )
        report["max_mean_predictor_z"][p] = mean_predictor_z(gibbs, run.samples, features)
    if y_test is not None:
        y_test = torch.as_tensor(y_test, dtype=torch.float64)
        for name, samples in [("gibbs", gibbs)] + [(f"nuts_{p}", run.samples) for p, run in nuts.items()]:
            correct = torch.sign(samples.predict(features)) == y_test
            report[name]["test_accuracy"] = correct.to(torch.float64).mean().item()
    return report


def main(argv=None):
    """Command-line entry point; prints the report and returns it (exit status 2 when jax or numpyro is
    missing, with the command that installs them)."""
    parser = argparse.ArgumentParser(
        prog="python -m attnpaths_book bench numpyro_nuts", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--data",
        choices=("hmc", "random"),
        default="hmc",
        help="HMC task (4-path network of Figure 2) or random inputs of the same sizes",
    )
    parser.add_argument("--width", type=int, default=10, help="N (all widths)")
    parser.add_argument("--temperature", type=float, default=0.01)
    parser.add_argument("--num-train", type=int, default=100)
    parser.add_argument("--num-test", type=int, default=100)
    parser.add_argument("--input-width", type=int, default=231, help="N0 of --data random")
    parser.add_argument("--num-tokens", type=int, default=31, help="sequence length of --data random")
    parser.add_argument(
        "--precision",
        nargs="+",
        choices=PRECISIONS,
        default=list(PRECISIONS),
        help="NUTS precisions to run (float32: the authors' JAX default)",
    )
    parser.add_argument("--num-chains", type=int, default=4, help="chains of each sampler (independent repeats)")
    parser.add_argument("--num-warmup", type=int, default=100, help="NUTS warm-up (adaptation) iterations per chain")
    parser.add_argument("--round-samples", type=int, default=10, help="NUTS draws per chain between R-hat checks")
    parser.add_argument("--max-samples", type=int, default=1000, help="NUTS draws per chain at most")
    parser.add_argument("--rhat-target", type=float, default=1.01, help="stop when max split R-hat <= this")
    parser.add_argument(
        "--time-budget-s",
        type=float,
        default=None,
        help="wall-time budget of each precision's NUTS run (no new round past it)",
    )
    parser.add_argument("--gibbs-warmup", type=int, default=100, help="Gibbs burn-in sweeps per chain")
    parser.add_argument("--gibbs-samples", type=int, default=1000, help="Gibbs samples per chain")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (and one XLA thread when 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true")
    parser.add_argument(
        "--output",
        default=os.path.join("_build", "results", "bench_numpyro_nuts.json"),
        help="where to write the report with its provenance; the committed record is "
        + str(committed_record_path("numpyro_nuts")),
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    pin_xla_threads(args.threads)
    try:
        require_numpyro()
    except ModuleNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    started = start_record("numpyro_nuts", argv, packages=VERSIONED)
    if args.data == "hmc":
        attention, x, y, x_test, y_test = _hmc_inputs(args.num_train, args.num_test)
    else:
        attention, x, y, x_test, y_test = _random_inputs(
            torch.Generator().manual_seed(args.seed), args.num_train, args.num_test, args.input_width, args.num_tokens
        )
    network = AttentionNetwork(attention, width=args.width)
    report = compare(
        network,
        x,
        y,
        x_test,
        args.temperature,
        args.seed,
        precisions=tuple(dict.fromkeys(args.precision)),
        num_chains=args.num_chains,
        num_warmup=args.num_warmup,
        round_samples=args.round_samples,
        max_samples=args.max_samples,
        rhat_target=args.rhat_target,
        time_budget_s=args.time_budget_s,
        gibbs_warmup=args.gibbs_warmup,
        gibbs_samples=args.gibbs_samples,
        y_test=y_test,
        num_threads=args.threads,
        progress=args.progress,
    )
    _print_report(report)
    path = write_record(make_record(started, report), args.output)
    print(f"record written to {path}")
    return report


def _print_report(report: dict) -> None:
    columns = ["gibbs"] + [name for name in report if name.startswith("nuts_")]
    print_summaries(
        report["sizes"],
        {name: report[name] for name in columns},
        SUMMARY_KEYS + ("min_predictor_ess_per_cpu_s", "potential_evaluations_per_iteration", "compile_time_s"),
    )
    for name in columns[1:]:
        precision = name.removeprefix("nuts_")
        repeats = report["ess_per_s_ratio_repeats"][precision]
        spread = (
            f", over chains {repeats['geometric_mean_ratio']:.3g} x/÷ {math.exp(repeats['log_se']):.2g}"
            if repeats["log_se"] is not None
            else ""
        )
        summary = report[name]
        print(
            f"NUTS {precision}: stopped by {summary['stop_reason']} after {summary['num_samples']} draws per chain "
            f"(max R-hat {summary['max_predictor_rhat']:.4g}, target {summary['rhat_target']}); "
            f"ESS/s ratio Gibbs / NUTS {report['ess_per_s_ratio'][precision]:.3g}{spread} "
            f"(per CPU second {report['ess_per_cpu_s_ratio'][precision]:.3g}); "
            f"max |<f>_Gibbs - <f>_NUTS| / MC error {report['max_mean_predictor_z'][precision]:.3g}"
        )


if __name__ == "__main__":
    main()
