"""Benchmark: how the exact posterior sampler's cost, and its effective samples per second, grow with the width
``N`` and the number of training examples ``P``.

``python -m attnpaths_book bench sampler_growth [--quick] [--output PATH] [...]``

The blocked Gibbs sampler (:class:`attnpaths.sampler.PosteriorSampler`) samples the posterior of the 4-path
network of the hidden-Markov-chain task (:func:`attnpaths.hmc.four_path_network`, sec-hmc-theory) at
``T = 0.01``, on one thread (``torch.set_num_threads``, restored afterwards): against ``N`` (every layer) on the
authors' training set of ``P = 100`` sequences, and against ``P`` (the authors' training sets of ``P`` sequences)
at ``N = 10``. Every point runs ``--chains`` chains (along the sampler's chain axis) of ``--warmup`` discarded and
``--samples`` kept sweeps from prior draws, with a fresh ``torch.Generator().manual_seed(--seed)``, and reports the
wall time per sweep, the smallest effective sample size (ESS, ArviZ) of the predictor over 100 test sequences,
that ESS per second of wall time (warm-up included) and per kept sweep, and the largest split R-hat.

Expected growth of the time per sweep (the cost stated by :class:`~attnpaths.sampler.PosteriorSampler`):
``P^3`` (a ``P x P`` Cholesky factor per block) and ``P^2`` (each block's ``P x P`` Gram matrix) against ``P``;
``N^2`` (routing the data through the ``N x N`` weights) and ``N`` (the Gram matrices) against ``N``; each
series is fitted by a power law (``fit_exponent``) and by the two expected terms
plus a constant (``fit_two_terms``). The ESS per sweep measures how well the
chains mix, which the width and the data set change; its exponent is reported as measured, over the points whose
chains converged (largest split R-hat at most :data:`RHAT_LIMIT`): a point whose chains did not converge within
its sweeps is reported, but its ESS is not trusted.

The machine's load is recorded at the start and at the end (:mod:`attnpaths_book.benchmarks.record`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from attnpaths.network import AttentionNetwork
from attnpaths.sampler import PosteriorSampler
from attnpaths_book.benchmarks._fits import fit_exponent, growth_fits, largest_two_text
from attnpaths_book.benchmarks.record import committed_record_path, finish_record, start_record, torch_threads

TEMPERATURE = 0.01
"""Likelihood variance of every posterior of the benchmark (that of the sampler comparison and of Figure 2)."""
NUM_TEST = 100
"""Test sequences on which the predictor's ESS is measured."""
EXPECTED_EXPONENTS = {"width": (2.0, 1.0), "examples": (3.0, 2.0)}
"""The two growing terms of the time per sweep against ``N`` and against ``P``."""
RHAT_LIMIT = 1.05
"""Largest split R-hat of the predictor at which a point's ESS is trusted; the ESS fits use only such points."""


def sample_point(width: int, num_train: int, *, chains: int, warmup: int, samples: int, seed: int) -> dict:
    """Run the sampler on the posterior at width ``width`` on the authors' training set of ``num_train`` sequences.

    Returns:
        ``{"width", "num_train", "ms_per_sweep", "wall_time_s", "min_predictor_ess",
        "min_predictor_ess_per_s", "min_predictor_ess_per_sweep", "max_predictor_rhat"}``.
    """
    from attnpaths import hmc

    train, test = hmc.paper_train_set(num_train), hmc.paper_test_set(NUM_TEST)
    network = AttentionNetwork(hmc.four_path_network(train).attention, width=width)
    sampler = PosteriorSampler(network, train.y, TEMPERATURE, x=train.x)
    run = sampler.run(torch.Generator().manual_seed(seed), warmup, samples, chains, progress=False)
    diagnostics = run.diagnostics(network.features(test.x))
    return {
        "width": width,
        "num_train": num_train,
        "ms_per_sweep": 1e3 * run.wall_time_s / (warmup + samples),
        "wall_time_s": run.wall_time_s,
        "min_predictor_ess": diagnostics["min_predictor_ess"],
        "min_predictor_ess_per_s": diagnostics["min_predictor_ess_per_s"],
        "min_predictor_ess_per_sweep": diagnostics["min_predictor_ess"] / (chains * samples),
        "max_predictor_rhat": diagnostics["max_predictor_rhat"],
        "converged": bool(diagnostics["max_predictor_rhat"] <= RHAT_LIMIT),
    }


def growth(label: str, sizes, rows: list[dict]) -> dict:
    """The rows of one series (``label``: ``"width"`` or ``"examples"``) with the fits of their growth: the
    power-law exponents of the time per sweep (all sizes and the largest two), the two-term model of
    :data:`EXPECTED_EXPONENTS`, and the exponents of the ESS per second and per sweep over the points whose chains
    converged (``ess_sizes``; None where fewer than two did)."""
    ms = [row["ms_per_sweep"] for row in rows]
    trusted = [(size, row) for size, row in zip(sizes, rows) if row["converged"]]

    def ess_exponent(key):
        if len(trusted) < 2:
            return None
        return fit_exponent([size for size, _ in trusted], [row[key] for _, row in trusted])

    return {
        "sizes": list(sizes),
        "rows": rows,
        **growth_fits(sizes, ms, EXPECTED_EXPONENTS[label], "sweep"),
        "ess_sizes": [size for size, _ in trusted],
        "exponent_ess_per_s": ess_exponent("min_predictor_ess_per_s"),
        "exponent_ess_per_sweep": ess_exponent("min_predictor_ess_per_sweep"),
    }


def main(argv=None) -> dict:
    """Entry point of ``python -m attnpaths_book bench sampler_growth``; prints a summary and returns the report."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog="python -m attnpaths_book bench sampler_growth", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a check that everything runs)")
    parser.add_argument("--widths", type=int, nargs="+", help="widths N at P = 100 (default 10 30 100 300)")
    parser.add_argument(
        "--num-train",
        type=int,
        nargs="+",
        help="training-set sizes P at N = 10 (default 50 100 200 400 800)",
    )
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, help="discarded sweeps per chain (default 100)")
    parser.add_argument("--samples", type=int, help="kept sweeps per chain (default 400)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (pinned, restored afterwards)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=committed_record_path("sampler_growth"))
    args = parser.parse_args(argv)
    quick = args.quick
    widths = args.widths or ([10, 20] if quick else [10, 30, 100, 300])
    sizes = args.num_train or ([20, 40] if quick else [50, 100, 200, 400, 800])
    for option, values, least in (("--widths", widths, 1), ("--num-train", sizes, 2)):
        if values[0] < least or any(b <= a for a, b in zip(values, values[1:])):
            parser.error(f"{option} must be strictly increasing integers >= {least}, got {values}")
    warmup = args.warmup if args.warmup is not None else (5 if quick else 100)
    samples = args.samples if args.samples is not None else (20 if quick else 400)
    if args.threads < 1 or args.chains < 1 or warmup < 0 or samples < 4:
        parser.error("--threads and --chains must be >= 1, --warmup >= 0 and --samples >= 4")
    settings = {"chains": args.chains, "warmup": warmup, "samples": samples, "seed": args.seed}
    started = start_record("sampler_growth", argv)
    series = {}
    with torch_threads(args.threads):
        for label, values, point in (
            ("width", widths, lambda v: sample_point(v, 100, **settings)),
            ("examples", sizes, lambda v: sample_point(10, v, **settings)),
        ):
            print(
                f"growth with {'the width N (P = 100)' if label == 'width' else 'the examples P (N = 10)'}", flush=True
            )
            rows = []
            for value in values:
                rows.append(point(value))
                row = rows[-1]
                print(
                    f"  {label}={value}: {row['ms_per_sweep']:.2f} ms per sweep, min ESS "
                    f"{row['min_predictor_ess']:.0f} ({row['min_predictor_ess_per_s']:.3g}/s), "
                    f"max R-hat {row['max_predictor_rhat']:.3f}",
                    flush=True,
                )
            series[label] = growth(label, values, rows)
    report = {
        "threads": args.threads,
        "quick": quick,
        "temperature": TEMPERATURE,
        "num_test": NUM_TEST,
        **settings,
        "note": "wall times on a machine shared with other work: read them with the load averages",
        "growth": series,
    }
    for label, fit in series.items():
        print(
            f"{label}: time per sweep exponent {fit['exponent_per_sweep']:.2f} over all sizes, "
            f"{largest_two_text(fit, 'sweep')}; ESS/s exponent {fit['exponent_ess_per_s']} over the converged "
            f"sizes {fit['ess_sizes']}"
        )
    finish_record(started, report, args.output)
    return report


if __name__ == "__main__":
    main()
