"""Blocked Gibbs (:mod:`attnpaths.sampler`) against pyro's NUTS on the same posterior (sec-hmc-theory).

The authors sample the posterior with NUTS (numpyro, default settings). Here pyro's NUTS (torch based) samples
the same posterior (eq-forward, sec-model-network) and both samplers run in the same process on the same data;
the figure of merit is the effective sample size per second of wall time of the predictor on test points (the
minimum over the test points: the slowest-mixing quantity bounds what a run can claim). Both samplers start
from prior draws.

Threads are pinned with ``torch.set_num_threads`` (default 1) for the duration of the comparison, so that
ratios are comparable between machines and runs; the previous setting is restored afterwards.

Randomness: pyro draws from torch's global generator. The NUTS runs are therefore wrapped in
``torch.random.fork_rng`` and seeded from the caller's ``torch.Generator``: the caller's global state is
left untouched and the same generator seed gives the same samples.

Command line (``python -m attnpaths_book.benchmarks.sampler --help``): the defaults compare the samplers on the
N = 10 posterior of the 4-path HMC network (``--data hmc``, P = 100, T = 0.01, 100 test points; 1 chain,
NUTS 50 + 50 iterations, Gibbs 100 + 1000 sweeps); ``--data random`` uses random inputs of the same sizes.
At T = 0.01 NUTS adapts to step sizes of about 4e-3 and mostly builds trees of the maximal depth 10, so
the default run takes about 25 minutes (one thread; NUTS is nearly all of it). The NUTS ESS from 50 draws is
itself rough, so read the ratio as an order of magnitude. The report is written with its provenance
(:mod:`attnpaths_book.benchmarks.record`) to ``--output``; the reproducibility chapter shows the committed record.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

from attnpaths.network import AttentionNetwork, NetworkWeights
from attnpaths.sampler import PosteriorSampler, PosteriorSamples, effective_sample_size
from attnpaths_book.benchmarks.record import committed_record_path, finish_record, start_record, torch_threads


def potential_energy(network: AttentionNetwork, x, y, temperature: float):
    """Negative log posterior density (sec-model-network; up to a constant), as a function of the weights.

    ``E(theta) = sum_blocks |W|^2 / (2 s) + |y - f(x; theta)|^2 / (2 T)`` with ``f`` computed layer by layer
    (:meth:`~attnpaths.network.AttentionNetwork.forward`, eq-forward) from attention matrices precomputed once, as in
    the authors' code: independent of the path algebra that the Gibbs sampler uses. Handing NUTS this
    function (rather than a pyro model) avoids pyro's per-step model tracing, which costs more than the
    network itself at the sizes of the tests.

    Args:
        network: the network (attention, widths, prior variances).
        x: ``[P, N0, T_seq]`` training inputs.
        y: ``[P]`` labels.
        temperature: likelihood variance ``T``.

    Returns:
        a function of a dict ``{"V_0": [N_1, N0], "V_1": ..., "a": [N_a]}`` returning a scalar tensor.
    """
    x = torch.as_tensor(x, dtype=torch.float64)
    y = torch.as_tensor(y, dtype=torch.float64)
    matrices = network.attention.matrices(x)
    names = list(network.weight_shapes())
    variances = dict(zip(names, network.variances))

    def energy(params: dict) -> torch.Tensor:
        weights = NetworkWeights(V0=params["V_0"], V=tuple(params[name] for name in names[1:-1]), a=params["a"])
        f = network.forward(x, weights, matrices=matrices)
        prior = sum((params[name] ** 2).sum() / (2 * variances[name]) for name in names)
        return prior + ((y - f) ** 2).sum() / (2 * temperature)

    return energy


def run_nuts(
    network: AttentionNetwork,
    x,
    y,
    temperature: float,
    generator: torch.Generator,
    num_warmup: int,
    num_samples: int,
    num_chains: int = 1,
    *,
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 10,
    progress: bool = False,
    stats: dict | None = None,
) -> PosteriorSamples:
    """Sample the posterior with pyro's NUTS (adaptive step size, diagonal mass matrix; numpyro's defaults).

    Chains run one after the other (no worker processes), each initialised with a prior draw. If ``stats`` is
    a dict, it receives ``"potential_evaluations"`` (calls of the potential energy, all chains, warm-up
    included: one per leapfrog step plus the tree's initial points) and ``"step_sizes"`` (the adapted step
    size of each chain), which explain NUTS's cost per draw.

    Returns:
        :class:`~attnpaths.sampler.PosteriorSamples` (``[num_chains, num_samples, ...]``), so the same
        predictions and diagnostics apply as for the Gibbs sampler; ``wall_time_s`` covers all chains.
    """
    from pyro.infer import MCMC, NUTS

    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    potential = potential_energy(network, x, y, temperature)
    calls = [0]

    def energy(params):
        calls[0] += 1
        return potential(params)

    step_sizes = []
    input_weights, overlaps = [], []
    start = time.perf_counter()
    for _ in range(num_chains):
        initial = network.sample_prior(generator).as_dict()
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            kernel = NUTS(potential_fn=energy, target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth)
            mcmc = MCMC(
                kernel,
                num_samples=num_samples,
                warmup_steps=num_warmup,
                initial_params=initial,
                disable_progbar=not progress,
            )
            mcmc.run()
        step_sizes.append(float(kernel.step_size))
        drawn = mcmc.get_samples()
        weights = NetworkWeights(
            V0=drawn["V_0"], V=tuple(drawn[f"V_{l}"] for l in range(1, network.num_layers + 1)), a=drawn["a"]
        )
        input_weights.append(network.path_input_weights(weights))
        overlaps.append(network.sampled_order_parameter(weights, per_sample=True))
    if stats is not None:
        stats.update(potential_evaluations=calls[0], step_sizes=step_sizes)
    return PosteriorSamples(
        path_input_weights=torch.stack(input_weights),
        order_parameters=torch.stack(overlaps),
        temperature=float(temperature),
        num_warmup=num_warmup,
        wall_time_s=time.perf_counter() - start,
    )


def _summary(samples: PosteriorSamples, diagnostics: dict) -> dict:
    return {
        "wall_time_s": samples.wall_time_s,
        "num_chains": samples.num_chains,
        "num_samples": samples.num_samples,
        "min_predictor_ess": diagnostics["min_predictor_ess"],
        "median_predictor_ess": diagnostics["predictor_ess"].median().item(),
        "max_predictor_rhat": diagnostics["max_predictor_rhat"],
        "min_predictor_ess_per_s": diagnostics["min_predictor_ess_per_s"],
        "min_order_parameter_ess": diagnostics["order_parameter_ess"].min().item(),
        "sampled_order_parameter": samples.order_parameter().tolist(),
    }


def compare_samplers(
    network: AttentionNetwork,
    x,
    y,
    x_test,
    temperature: float,
    generator: torch.Generator,
    *,
    num_warmup: int = 100,
    num_samples: int = 100,
    num_chains: int = 2,
    gibbs_warmup: int | None = None,
    gibbs_samples: int | None = None,
    y_test=None,
    num_threads: int = 1,
    progress: bool = False,
) -> dict:
    """Run Gibbs and NUTS on the same posterior and compare ESS per second of ``f`` on test points.

    Args:
        network, x, y, temperature: the posterior (eq-forward, sec-model-network).
        x_test: ``[B, N0, T_seq]`` test inputs on which the predictor's ESS is measured.
        generator: source of randomness for both samplers.
        num_warmup, num_samples, num_chains: NUTS settings (and the Gibbs ones unless given separately).
        gibbs_warmup, gibbs_samples: Gibbs sweeps (default: the NUTS numbers).
        y_test: optional test labels: adds the accuracy of each sampler's mean predictor.
        num_threads: torch threads during the comparison.

    Returns:
        dict with ``"gibbs"`` and ``"nuts"`` summaries (wall time, min / median predictor ESS, max R-hat,
        ESS per second, sampled U; for NUTS also ``potential_evaluations_per_iteration`` and the adapted
        ``step_sizes``), ``"ess_per_s_ratio"`` (Gibbs / NUTS), ``"max_mean_predictor_z"``
        (largest difference of the two mean predictors in units of their combined Monte-Carlo standard
        error: a check that both sample the same posterior) and the sizes.
    """
    with torch_threads(num_threads):
        sampler = PosteriorSampler(network, y, temperature, x=x)
        test_features = network.features(x_test)
        gibbs = sampler.run(
            generator,
            num_warmup if gibbs_warmup is None else gibbs_warmup,
            num_samples if gibbs_samples is None else gibbs_samples,
            num_chains,
            progress=progress,
        )
        stats = {}
        nuts = run_nuts(
            network, x, y, temperature, generator, num_warmup, num_samples, num_chains, progress=progress, stats=stats
        )
    runs = {"gibbs": gibbs, "nuts": nuts}
    diagnostics = {name: samples.diagnostics(test_features) for name, samples in runs.items()}
    report = {
        "sizes": posterior_sizes(network, sampler.features.shape[0], test_features, temperature, num_threads),
        **{name: _summary(runs[name], diagnostics[name]) for name in runs},
    }
    iterations = num_chains * (num_warmup + num_samples)
    report["nuts"]["potential_evaluations_per_iteration"] = stats["potential_evaluations"] / iterations
    report["nuts"]["step_sizes"] = stats["step_sizes"]
    report["ess_per_s_ratio"] = report["gibbs"]["min_predictor_ess_per_s"] / report["nuts"]["min_predictor_ess_per_s"]
    report["max_mean_predictor_z"] = mean_predictor_z(gibbs, nuts, test_features)
    add_test_accuracy(report, runs, test_features, y_test)
    return report


def posterior_sizes(network: AttentionNetwork, num_train: int, test_features, temperature: float, threads: int) -> dict:
    """The ``sizes`` of a comparison's report: the posterior's and the test set's, and the torch threads."""
    return {
        "num_train": int(num_train),
        "num_test": int(test_features.shape[0]),
        "input_width": network.input_width,
        "heads": list(network.heads),
        "widths": list(network.widths),
        "temperature": float(temperature),
        "num_threads": threads,
    }


def add_test_accuracy(report: dict, runs: dict, test_features, y_test) -> None:
    """Add each run's ``test_accuracy`` (its mean predictor's sign against ``y_test``; nothing if None) to its
    summary ``report[name]`` (``runs``: ``{name: PosteriorSamples}``)."""
    if y_test is not None:
        y_test = torch.as_tensor(y_test, dtype=torch.float64)
        for name, samples in runs.items():
            correct = torch.sign(samples.predict(test_features)) == y_test
            report[name]["test_accuracy"] = correct.to(torch.float64).mean().item()


def _hmc_inputs(num_train: int, num_test: int):
    from attnpaths import hmc

    train = hmc.paper_train_set(num_train)
    test = hmc.paper_test_set(num_test)
    return hmc.four_path_network(train).attention, train.x, train.y, test.x, test.y


def _random_inputs(generator, num_train: int, num_test: int, input_width: int = 231, num_tokens: int = 31):
    """Random stand-in of the HMC sizes: W-form heads ``(2, 2)`` with ``N(0, 1/N0^2)`` entries, Gaussian inputs,
    class-sorted +-1 labels."""
    from attnpaths.attention import Attention, AttentionLayer

    def draw(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    layers = tuple(AttentionLayer(W=draw(2, input_width, input_width) / input_width) for _ in range(2))
    labels = lambda n: torch.cat([torch.ones(n // 2), -torch.ones(n - n // 2)]).to(torch.float64)  # noqa: E731
    x, x_test = draw(num_train, input_width, num_tokens), draw(num_test, input_width, num_tokens)
    return Attention(layers, readout="last_token"), x, labels(num_train), x_test, labels(num_test)


def main(argv=None) -> dict:
    """Command-line entry point; prints the report and returns it."""
    parser = argparse.ArgumentParser(
        prog="python -m attnpaths_book.benchmarks.sampler", description=__doc__.split("\n")[0]
    )
    add_posterior_arguments(parser, "HMC task (4-path network) or random inputs")
    parser.add_argument("--num-warmup", type=int, default=50, help="NUTS warm-up per chain")
    parser.add_argument("--num-samples", type=int, default=50, help="NUTS samples per chain")
    parser.add_argument("--gibbs-warmup", type=int, default=100, help="Gibbs burn-in sweeps")
    parser.add_argument("--gibbs-samples", type=int, default=1000, help="Gibbs samples per chain")
    parser.add_argument("--num-chains", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (pinned for comparable ratios)")
    add_run_arguments(
        parser,
        "sampler",
        "where to write the report with its provenance (attnpaths_book.benchmarks.record); the book reads the "
        "committed record ",
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    started = start_record("sampler", argv)
    generator = torch.Generator().manual_seed(args.seed)
    network, x, y, x_test, y_test = posterior_inputs(args, generator)
    report = compare_samplers(
        network,
        x,
        y,
        x_test,
        args.temperature,
        generator,
        num_warmup=args.num_warmup,
        num_samples=args.num_samples,
        num_chains=args.num_chains,
        gibbs_warmup=args.gibbs_warmup,
        gibbs_samples=args.gibbs_samples,
        y_test=y_test,
        num_threads=args.threads,
        progress=args.progress,
    )
    _print_report(report)
    finish_record(started, report, args.output)
    return report


def add_posterior_arguments(parser: argparse.ArgumentParser, data_help: str) -> None:
    """The options of the posterior that the sampler benchmarks compare on: its data, width, temperature, sizes."""
    parser.add_argument("--data", choices=("hmc", "random"), default="hmc", help=data_help)
    parser.add_argument("--width", type=int, default=10, help="N (all widths)")
    parser.add_argument("--temperature", type=float, default=0.01)
    parser.add_argument("--num-train", type=int, default=100)
    parser.add_argument("--num-test", type=int, default=100)
    parser.add_argument("--input-width", type=int, default=231, help="N0 of --data random")
    parser.add_argument("--num-tokens", type=int, default=31, help="sequence length of --data random")


def add_run_arguments(parser: argparse.ArgumentParser, name: str, output_help: str) -> None:
    """``--seed``, ``--progress`` and ``--output`` (its help ends with benchmark ``name``'s committed record)."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true")
    parser.add_argument(
        "--output",
        default=os.path.join("_build", "results", f"bench_{name}.json"),
        help=output_help + str(committed_record_path(name)),
    )


def posterior_inputs(args: argparse.Namespace, generator: torch.Generator):
    """``(network, x, y, x_test, y_test)`` of the options of :func:`add_posterior_arguments` (``generator``
    draws the random inputs)."""
    if args.data == "hmc":
        attention, x, y, x_test, y_test = _hmc_inputs(args.num_train, args.num_test)
    else:
        attention, x, y, x_test, y_test = _random_inputs(
            generator, args.num_train, args.num_test, args.input_width, args.num_tokens
        )
    return AttentionNetwork(attention, width=args.width), x, y, x_test, y_test


def mean_predictor_z(a: PosteriorSamples, b: PosteriorSamples, features) -> float:
    """Largest difference of two samplers' mean predictors over the test points in units of their combined
    Monte-Carlo standard error (each from its own ESS, at least one draw's worth): a check that both sample
    the same posterior."""
    squared = []
    for samples in (a, b):
        ess = effective_sample_size(samples.predictor_samples(features))
        squared.append(samples.predictor_variance(features) / torch.clamp(torch.nan_to_num(ess, nan=1.0), min=1.0))
    difference = a.predict(features) - b.predict(features)
    return (difference.abs() / torch.sqrt(sum(squared))).max().item()


SUMMARY_KEYS = (
    "wall_time_s",
    "num_chains",
    "num_samples",
    "min_predictor_ess",
    "median_predictor_ess",
    "max_predictor_rhat",
    "min_predictor_ess_per_s",
    "min_order_parameter_ess",
    "test_accuracy",
)
"""The rows of :func:`print_summaries` (a summary without one of them leaves its cell empty)."""


def print_summaries(sizes: dict, summaries: dict, keys=SUMMARY_KEYS) -> None:
    """Print the posterior's sizes and one column per sampler run (``{column title: summary}``), a row per key."""
    print(
        f"posterior: P={sizes['num_train']}, N0={sizes['input_width']}, heads={sizes['heads']}, "
        f"widths={sizes['widths']}, T={sizes['temperature']}, threads={sizes['num_threads']}"
    )
    print(f"{'':36s}" + "".join(f"{name:>16s}" for name in summaries))
    for key in keys:
        if any(key in summary for summary in summaries.values()):
            cells = [f"{summary[key]:16.4g}" if key in summary else f"{'':16s}" for summary in summaries.values()]
            print(f"{key:36s}" + "".join(cells))


def _print_report(report: dict) -> None:
    print_summaries(report["sizes"], {"Gibbs": report["gibbs"], "NUTS": report["nuts"]})
    print(f"ESS/s ratio (Gibbs / NUTS): {report['ess_per_s_ratio']:.3g}")
    print(f"max |<f>_Gibbs - <f>_NUTS| / MC standard error over test points: {report['max_mean_predictor_z']:.3g}")


if __name__ == "__main__":
    main()
