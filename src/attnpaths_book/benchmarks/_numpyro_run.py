"""numpyro's NUTS on the posterior (sec-model-network), run chain after chain in rounds until the predictor's
split R-hat is small enough: the JAX side of :mod:`attnpaths_book.benchmarks.numpyro_nuts`."""

from __future__ import annotations

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
from attnpaths.sampler import PosteriorSamples, split_rhat

INSTALL_HINT = 'pip install -e ".[bench]"'
"""How to install the optional dependencies of this benchmark (the ``bench`` extra of ``pyproject.toml``)."""

PRECISIONS = ("float64", "float32")
SINGLE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


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
    stopping = dict(
        rhat_target=rhat_target, round_samples=round_samples, max_samples=max_samples, time_budget_s=time_budget_s
    )
    with x64(dtype == "float64"):
        try:
            keys = jax.random.split(key, num_chains)
        except (TypeError, ValueError) as err:
            raise ValueError(f"key must be a JAX PRNG key (jax.random.PRNGKey(seed)), got {key!r}") from err
        potential = jax_potential_energy(network, x, y, temperature, dtype)
        kernel = NUTS(potential_fn=potential, target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth)
        start = time.perf_counter()
        bar = tqdm(
            total=num_chains * (num_warmup + round_samples), desc=f"NUTS ({dtype})", disable=not progress, leave=False
        )
        chains = _Chains(jax, kernel, keys, network, num_warmup, dtype, bar)
        # JAX compiles the prior draw, the initialisation and the NUTS step once for all chains (same shapes and
        # warm-up schedule); this first pass is timed as compilation, not charged to a chain
        compile_time = chains.compile()
        states = chains.warm_up()
        step_sizes = [float(state.adapt_state.step_size) for state in states]
        input_weights, overlaps, history, stop_reason = _sample_rounds(chains, states, features, start, **stopping)
        bar.close()
    draws = chains.draws
    kept = [d for chain in draws for d in chain]
    max_steps = 2**max_tree_depth - 1
    samples = PosteriorSamples(
        path_input_weights=torch.stack([torch.cat(w) for w in input_weights]),
        order_parameters=torch.stack([torch.cat(o) for o in overlaps]),
        temperature=float(temperature),
        num_warmup=num_warmup,
        wall_time_s=sum(chains.wall_times),
    )
    return NutsRun(
        samples=samples,
        dtype=dtype,
        draw_dtype=str(draws[0][0][0]["a"].dtype),
        chain_wall_times_s=chains.wall_times,
        chain_cpu_times_s=chains.cpu_times,
        compile_time_s=compile_time,
        step_sizes=step_sizes,
        potential_evaluations=chains.evaluations,
        iterations=num_warmup + len(draws[0]),
        max_depth_fraction=sum(steps >= max_steps for _, steps, _, _ in kept) / len(kept),
        divergences=[sum(d for _, _, d, _ in chain) for chain in draws],
        mean_accept_prob=[float(np.mean([p for *_, p in chain])) for chain in draws],
        rhat_history=history,
        stop_reason=stop_reason,
    )


class _Chains:
    """The chains of one run, advanced one after the other; each keeps its own wall and CPU time, gradient
    evaluations and kept draws ``(z, tree steps, diverging, acceptance)``."""

    def __init__(self, jax, kernel, keys, network: AttentionNetwork, num_warmup: int, dtype: str, bar):
        self.jax, self.kernel, self.keys, self.network = jax, kernel, keys, network
        self.num_warmup, self.dtype, self.bar = num_warmup, dtype, bar
        self.wall_times, self.cpu_times = [0.0] * len(keys), [0.0] * len(keys)
        self.evaluations = [0] * len(keys)
        self.draws = [[] for _ in range(len(keys))]
        self.step = None

    @contextlib.contextmanager
    def _timed(self, c: int):
        began, cpu_began = time.perf_counter(), time.process_time()
        yield
        self.wall_times[c] += time.perf_counter() - began
        self.cpu_times[c] += time.process_time() - cpu_began

    def initial_state(self, c: int):
        """Chain ``c``'s NUTS state at a prior draw (sec-model-network) made with its own key."""
        jax, network = self.jax, self.network
        prior_key, chain_key = jax.random.split(self.keys[c])
        init = {
            name: jax.random.normal(k, shape, dtype=self.dtype) * math.sqrt(s)
            for (name, shape), s, k in zip(
                network.weight_shapes().items(),
                network.variances,
                jax.random.split(prior_key, len(network.weight_shapes())),
            )
        }
        return self.kernel.init(chain_key, self.num_warmup, init_params=init, model_args=(), model_kwargs={})

    def compile(self) -> float:
        """Compile the NUTS step (from chain 0's initial state); returns the seconds it took."""
        began = time.perf_counter()
        kernel = self.kernel
        self.step = self.jax.jit(lambda s: kernel.sample(s, (), {})).lower(self.initial_state(0)).compile()
        return time.perf_counter() - began

    def warm_up(self) -> list:
        """Every chain's state after its initialisation and warm-up (both charged to the chain)."""
        states = []
        for c in range(len(self.keys)):
            with self._timed(c):
                state = self.initial_state(c)
            states.append(self.advance(c, state, self.num_warmup, keep=False))
        return states

    def advance(self, c: int, state, iterations: int, keep: bool):
        with self._timed(c):
            for _ in range(iterations):
                state = self.step(state)
                self.jax.block_until_ready(state)
                self.evaluations[c] += int(state.num_steps)
                if keep:
                    self.draws[c].append(
                        (
                            self.jax.tree.map(np.asarray, state.z),
                            int(state.num_steps),
                            bool(state.diverging),
                            float(state.accept_prob),
                        )
                    )
                self.bar.update()
        return state


def _sample_rounds(chains: _Chains, states: list, features, start: float, **stopping):
    """Rounds of ``round_samples`` draws per chain until :func:`stop_reason_after_round` says stop.

    Returns:
        ``(path input weights, order parameters, history, stop reason)``: the first two ``[C]`` lists of one
        tensor per round.
    """
    network, num_chains = chains.network, len(states)
    num_layers = len(network.weight_shapes()) - 2
    input_weights = [[] for _ in range(num_chains)]
    overlaps = [[] for _ in range(num_chains)]
    history = []
    while True:
        round_began = time.perf_counter()
        for c in range(num_chains):
            done = len(chains.draws[c])
            states[c] = chains.advance(c, states[c], stopping["round_samples"], keep=True)
            new = [z for z, *_ in chains.draws[c][done:]]
            weights = NetworkWeights(
                V0=_stack(new, "V_0"),
                V=tuple(_stack(new, f"V_{l}") for l in range(1, num_layers + 1)),
                a=_stack(new, "a"),
            )
            input_weights[c].append(network.path_input_weights(weights))
            overlaps[c].append(network.sampled_order_parameter(weights, per_sample=True))
        predictor = predictor_from_input_weights(torch.stack([torch.cat(w) for w in input_weights]), features)
        max_rhat = split_rhat(predictor).max().item()
        num_drawn = len(chains.draws[0])
        history.append((num_drawn, max_rhat, time.perf_counter() - start))
        stop_reason = stop_reason_after_round(
            max_rhat, num_drawn, time.perf_counter() - start, time.perf_counter() - round_began, **stopping
        )
        if stop_reason:
            return input_weights, overlaps, history, stop_reason
        chains.bar.total += num_chains * stopping["round_samples"]


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
