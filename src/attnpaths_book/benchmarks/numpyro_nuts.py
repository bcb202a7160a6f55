"""Blocked Gibbs (:mod:`attnpaths.sampler`) against numpyro's NUTS on JAX, the sampler the authors used.

The authors sample the posterior (sec-model-network) with numpyro's NUTS at its default settings (target acceptance
0.8, maximal tree depth 10, diagonal mass matrix adapted in windows during the warm-up) in JAX's default
float32. This benchmark runs that sampler on the CPU, in float64 (the package's precision) and in float32,
on the same posterior as :func:`attnpaths_book.benchmarks.sampler.potential_energy`, and compares it with the
blocked Gibbs sampler by the effective sample size per second of the predictor on test points (the minimum
over the test points; ESS and split R-hat from :func:`attnpaths.sampler.effective_sample_size` and
:func:`attnpaths.sampler.split_rhat`).

Stopping rule: after the warm-up, rounds of draws until the predictor's split R-hat reaches its target, a draw
limit or a time budget (``run_numpyro_nuts``); the report says which, with the R-hat after every round.

Wall times. Chains run one after the other in one process (numpyro's default when the machine has one
device), each timed on its own: the ESS per second of a sampler is the ESS of all its chains over the sum
of their wall times, warm-up (Gibbs: burn-in) included. JAX's one-off compilation of the NUTS step is timed
separately and not charged to the chains. The process's CPU time during each chain is recorded too: on a
machine shared with other work, the ESS per CPU second is the less load-dependent figure.

Uncertainty of the ratio: every chain is an independent run (its own prior start, warm-up and adaptation),
so each gives its own estimate of a sampler's ESS per second (:func:`per_chain_min_ess_per_s`), and the ratio's
spread over them is :func:`ratio_over_repeats`. With few draws per chain the single-chain ESS is rough, and so
is this uncertainty: read it as an order of magnitude.

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
import math
import os
import sys
import time

import numpy as np
import torch

from attnpaths.network import AttentionNetwork
from attnpaths.sampler import PosteriorSampler, PosteriorSamples, effective_sample_size
from attnpaths_book.benchmarks._numpyro_run import (
    PRECISIONS,
    NutsRun,
    _check_precision,
    _int_at_least,
    pin_xla_threads,
    require_numpyro,
    run_numpyro_nuts,
)
from attnpaths_book.benchmarks._numpyro_run import jax_potential_energy as jax_potential_energy
from attnpaths_book.benchmarks._numpyro_run import stop_reason_after_round as stop_reason_after_round
from attnpaths_book.benchmarks._numpyro_run import x64 as x64
from attnpaths_book.benchmarks.record import VERSIONED_PACKAGES, finish_record, start_record, torch_threads
from attnpaths_book.benchmarks.sampler import (
    SUMMARY_KEYS,
    _summary,
    add_posterior_arguments,
    add_run_arguments,
    add_test_accuracy,
    mean_predictor_z,
    posterior_inputs,
    posterior_sizes,
    print_summaries,
)

VERSIONED = VERSIONED_PACKAGES + ("jax", "jaxlib", "numpyro")


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
        The report, with ``sizes``, ``gibbs`` and ``nuts_<precision>`` summaries (wall time, min / median predictor
        ESS, max R-hat, ESS per second, per-chain estimates; for NUTS also the stopping rule's history and
        outcome, step sizes, gradient evaluations, compile time), ``ess_per_s_ratio``, ``ess_per_cpu_s_ratio``
        and ``ess_per_s_ratio_repeats`` (Gibbs / NUTS, per precision) and ``max_mean_predictor_z`` (per
        precision).
    """
    jax, _ = require_numpyro()
    precisions = tuple(_check_precision(p) for p in precisions)
    settings = dict(num_warmup=num_warmup, num_chains=num_chains, round_samples=round_samples, progress=progress)
    stopping = dict(max_samples=max_samples, rhat_target=rhat_target, time_budget_s=time_budget_s)
    with torch_threads(num_threads):
        features, key = network.features(x_test), jax.random.PRNGKey(seed)
        generator = torch.Generator().manual_seed(seed)
        gibbs, gibbs_times, gibbs_cpu_times = run_gibbs_chains(
            network, x, y, temperature, generator, gibbs_warmup, gibbs_samples, num_chains, progress=progress
        )
        nuts = {
            p: run_numpyro_nuts(network, x, y, temperature, key, features, dtype=p, **settings, **stopping)
            for p in precisions
        }
    sizes = posterior_sizes(network, torch.as_tensor(y).shape[0], features, temperature, num_threads)
    report = {
        "sizes": {**sizes, "xla_flags": os.environ.get("XLA_FLAGS"), "seed": seed},
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
        summary = _nuts_summary(run, features, num_chains * run.iterations, num_warmup, rhat_target, time_budget_s)
        report[f"nuts_{p}"] = summary
        for ratio, per in (("ess_per_s_ratio", "per_s"), ("ess_per_cpu_s_ratio", "per_cpu_s")):
            report[ratio][p] = report["gibbs"][f"min_predictor_ess_{per}"] / summary[f"min_predictor_ess_{per}"]
        report["ess_per_s_ratio_repeats"][p] = ratio_over_repeats(
            gibbs_per_chain, summary["per_chain_min_predictor_ess_per_s"]
        )
        report["max_mean_predictor_z"][p] = mean_predictor_z(gibbs, run.samples, features)
    add_test_accuracy(
        report, {"gibbs": gibbs, **{f"nuts_{p}": run.samples for p, run in nuts.items()}}, features, y_test
    )
    return report


def _nuts_summary(run: NutsRun, features, iterations: int, num_warmup: int, rhat_target, time_budget_s) -> dict:
    summary = _summary(run.samples, run.samples.diagnostics(features))
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
        rhat_history=[{"draws_per_chain": n, "max_predictor_rhat": r, "elapsed_s": t} for n, r, t in run.rhat_history],
        stop_reason=run.stop_reason,
        converged=run.converged,
    )
    return summary


def main(argv=None):
    """Command-line entry point; prints the report and returns it (exit status 2 when jax or numpyro is
    missing, with the command that installs them)."""
    parser = argparse.ArgumentParser(
        prog="python -m attnpaths_book bench numpyro_nuts", description=__doc__.split("\n")[0]
    )
    add_posterior_arguments(parser, "HMC task (4-path network of Figure 2) or random inputs of the same sizes")
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
        help="wall-time budget of each precision's NUTS run (no new round past it)",
    )
    parser.add_argument("--gibbs-warmup", type=int, default=100, help="Gibbs burn-in sweeps per chain")
    parser.add_argument("--gibbs-samples", type=int, default=1000, help="Gibbs samples per chain")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (and one XLA thread when 1)")
    add_run_arguments(parser, "numpyro_nuts", "where to write the report with its provenance; the committed record is ")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    pin_xla_threads(args.threads)
    try:
        require_numpyro()
    except ModuleNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    started = start_record("numpyro_nuts", argv, packages=VERSIONED)
    network, x, y, x_test, y_test = posterior_inputs(args, torch.Generator().manual_seed(args.seed))
    settings = ("num_chains", "num_warmup", "round_samples", "max_samples", "rhat_target", "time_budget_s")
    report = compare(
        network,
        x,
        y,
        x_test,
        args.temperature,
        args.seed,
        precisions=tuple(dict.fromkeys(args.precision)),
        **{name: getattr(args, name) for name in settings + ("gibbs_warmup", "gibbs_samples", "progress")},
        y_test=y_test,
        num_threads=args.threads,
    )
    _print_report(report)
    finish_record(started, report, args.output)
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
