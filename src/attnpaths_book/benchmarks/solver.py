"""Benchmark: the theory's saddle-point solver against the original method, and how its cost grows.

``python -m attnpaths_book bench solver [--quick] [--output PATH] [...]``

**Speed.** On two problems, in the same process and on one thread (``torch.set_num_threads`` and, for the
solver's numpy and scipy work, ``threadpoolctl``'s BLAS limit; both restored afterwards), the median wall time
over repeats of :func:`attnpaths.theory.solve` (trust-region Newton with the exact Hessian, certified) against
the original method, Adam on the same action (:func:`adam_minimise`, learning rate 0.1, stopped when
``max |dloss/dU| < 1e-5``):

* ``hmc``: the 4-path network of the hidden-Markov-chain task (:func:`attnpaths.hmc.four_path_network`) on the
  authors' training set, ``N = 10``, ``P = 100``, ``T = 0.01``;
* ``image``: a 16-path problem of the one-shot image task's sizes (:func:`image_problem`, ``P = 600``) that needs
  no training: query/key maps drawn at three times the usual initialisation scale make the attention about as
  sharp as the trained model's and the problem about as well conditioned as the one-shot chapter's (the same
  Newton iteration counts at ``N = 10``); ``N = 10``, ``T = 0.1``.

Adam on the image problem takes minutes; ``--adam-time-limit`` stops it, and the ratio is then a lower bound
(``adam_converged`` false).

**Growth.** Solve time against ``P`` (the 4-path HMC network, ``N = 10``, ``T = 0.01``) and against the number of
paths (2 layers of 2, 4, 8 random bilinear heads on HMC sequences of 7 tokens with 8 features, ``N0 = 16``,
``P = 200``, ``T = 0.1``; two runs each, the 64-path one takes minutes), with log-log exponents fitted to the
time per Newton iteration (``fit_exponent``) and a two-term cost model (``fit_two_terms``) whose terms are the expected ones: ``P^2`` (kernel, whitening and
contractions over the examples) and ``P^3`` (Cholesky factorisation, and the Hessian's products in the sample
space) against ``P``; ``n^4`` (the Hessian of ``D ~ n^2 / 2`` order-parameter entries has ``D^2`` entries) and
``n^6`` (its factorisation, ``D^3``) against the number of paths ``n``, with a constant for the operations on small
arrays where there are enough sizes. The crossover is where the two growing terms of the fit are equal; the exponent
between the two largest sizes shows which term the largest problems are in.

The machine's load is recorded at the start and at the end (:mod:`attnpaths_book.benchmarks.record`): wall times on
a shared machine are noisy, and the record says so.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from attnpaths.action import EnergyEvaluator, entropy, gp_order_parameters
from attnpaths.kernels import kernel_from_scaled, scaled_features
from attnpaths.theory import CertificateWarning, architecture, solve
from attnpaths_book.benchmarks._fits import fit_exponent, growth_fits, largest_two_text
from attnpaths_book.benchmarks.record import committed_record_path, finish_record, start_record, torch_threads

#: Targets of the solver (wall time on one thread) and of its speed-up over Adam on the HMC problem.
TARGETS = {"hmc_ms": 5.0, "image_ms": 500.0, "hmc_speedup": 1000.0}


# --------------------------------------------------------------------------------------------------------
# the original method


def adam_minimise(
    features,
    y,
    heads,
    widths,
    temperature: float,
    variances=1.0,
    *,
    lr: float = 0.1,
    gradient_tolerance: float = 1e-5,
    max_steps: int = 50000,
    time_limit: float | None = None,
) -> dict:
    """The authors' minimisation of the action on the package's action (eq-action): one full matrix per
    ``U_l`` (``U_1, ..., U_L``), symmetrised as ``(U + U^T) / 2`` at every evaluation, the GP values as start,
    the loss ``(S_ent + S_en) / max(N_1, ..., N_a)``, Adam (default betas) with learning rate ``lr``, stopped
    when the largest entry of the gradient of the loss is below ``gradient_tolerance``.

    Args:
        features: ``[P, N0, n_paths]`` path features; y: ``[P]`` labels; heads, widths, temperature, variances:
            as :func:`attnpaths.theory.solve`.
        max_steps: Adam steps at most; time_limit: seconds at most (None: no limit).

    Returns:
        dict with ``U_layers`` (numpy), ``action`` (``S`` at the last iterate, ``inf`` if it left the
        positive-definite domain), ``steps``, ``converged``, ``max_gradient`` and ``seconds``.
    """
    arch = architecture(heads, widths, variances)
    X = scaled_features(features, arch.variances[0])
    labels = torch.as_tensor(y, dtype=torch.float64)
    eye = torch.eye(X.shape[0], dtype=torch.float64)
    params = [U.clone().requires_grad_(True) for U in gp_order_parameters(arch)[0]]
    optimiser = torch.optim.Adam(params, lr=lr)
    scale = max(arch.widths)

    def action(layers):
        chol, info = torch.linalg.cholesky_ex(kernel_from_scaled(X, layers[0], X) + temperature * eye)
        if int(info) != 0:
            return None
        alpha = torch.cholesky_solve(labels[:, None], chol)[:, 0]
        return entropy(layers, arch) + 2.0 * torch.log(torch.diagonal(chol)).sum() + labels @ alpha

    start = time.perf_counter()
    steps, converged, largest, value = 0, False, math.inf, None
    while True:
        optimiser.zero_grad()
        layers = [(U + U.T) / 2 for U in params]
        value = action(layers)
        if value is None or not torch.isfinite(value):
            value = None
            break
        (value / scale).backward()
        largest = max(float(U.grad.abs().max()) for U in params)
        if largest < gradient_tolerance:
            converged = True
            break
        if steps >= max_steps or (time_limit is not None and time.perf_counter() - start > time_limit):
            break
        optimiser.step()
        steps += 1
    seconds = time.perf_counter() - start
    layers = [((U + U.T) / 2).detach() for U in params]
    return {
        "U_layers": [U.numpy() for U in layers],
        "action": math.inf if value is None else float(value.detach()),
        "steps": steps,
        "converged": converged,
        "max_gradient": largest,
        "seconds": seconds,
    }


# --------------------------------------------------------------------------------------------------------
# problems


def hmc_problem(num_train: int = 100, **task):
    """``(features [P, 231, 4], y, heads)``: the 4-path HMC network on the authors' training set of ``num_train``
    examples (``task``: :class:`attnpaths.hmc.data.HMCTask` fields)."""
    from attnpaths.hmc import four_path_network, paper_train_set
    from attnpaths.paths import path_features

    train = paper_train_set(num_train, **task)
    network = four_path_network(train)
    return path_features(train.x, network.attention), train.y.to(torch.float64), network.heads


def image_problem(
    num_train: int = 600,
    *,
    heads: int = 4,
    qk_width: int = 32,
    scale: float = 3.0,
    seed: int = 0,
    alphabets=("Latin", "Greek", "Coptic", "N'Ko"),
    image_size: int = 32,
    cache_dir: str | None = os.path.join("_build", "cache"),
):
    """``(features [P, N0, heads^2], y, (heads, heads))``: class-sorted one-shot episodes of rendered glyphs
    (:func:`attnpaths.oneshot.load_image_dataset`, 20 instances per class), encoded by a fresh
    :class:`~attnpaths.oneshot.sequences.SequenceEncoder` (8 x 8 patches, one channel: ``N0 = 64``), and the paths
    of 2 layers of ``heads`` query/key heads (average pooling) with ``Q, K ~ N(0, scale^2 / N0)`` entries of
    width ``qk_width``. Randomness: ``numpy.random.default_rng(seed)`` and ``torch.Generator().manual_seed(seed)``.
    """
    from attnpaths.attention import Attention, AttentionLayer
    from attnpaths.oneshot import GlyphDatasetConfig, load_image_dataset
    from attnpaths.oneshot.episodes import class_sorted_sequences
    from attnpaths.oneshot.sequences import SequenceEncoder
    from attnpaths.paths import path_features

    config = GlyphDatasetConfig(instances_per_class=20, alphabets=tuple(alphabets), image_size=image_size, seed=0)
    dataset = load_image_dataset(config=config, progress=False, cache_dir=cache_dir)
    rng = np.random.default_rng(seed)
    encoder = SequenceEncoder.create(rng, image_size=image_size)
    generator = torch.Generator().manual_seed(seed)
    n0 = encoder.input_width

    def draw():
        return torch.randn(heads, qk_width, n0, generator=generator, dtype=torch.float64) * (scale / math.sqrt(n0))

    attention = Attention(tuple(AttentionLayer(Q=draw(), K=draw()) for _ in range(2)), readout="average_pooling")
    episodes = class_sorted_sequences(dataset.train, num_train, encoder, rng)
    return path_features(episodes.x, attention), episodes.y.to(torch.float64), attention.heads


def paths_problem(
    heads_per_layer: int, num_train: int = 200, *, seq_len: int = 7, feature_width: int = 8, seed: int = 0
):
    """``(features [P, N0, H^2], y, (H, H))``: HMC sequences of ``seq_len`` tokens with ``feature_width``
    features (``N0 = feature_width + seq_len + 1``) through 2 layers of ``H`` random bilinear heads
    (``W ~ N(0, 1/N0^2)``, last-token readout), drawn with ``torch.Generator().manual_seed(seed)``."""
    from attnpaths.attention import Attention, AttentionLayer
    from attnpaths.hmc import paper_train_set
    from attnpaths.paths import path_features

    train = paper_train_set(num_train, seq_len=seq_len, feature_width=feature_width)
    n0 = train.x.shape[1]
    generator = torch.Generator().manual_seed(seed)
    layers = tuple(
        AttentionLayer(W=torch.randn(heads_per_layer, n0, n0, generator=generator, dtype=torch.float64) / n0)
        for _ in range(2)
    )
    attention = Attention(layers, readout="last_token")
    return path_features(train.x, attention), train.y.to(torch.float64), attention.heads


# --------------------------------------------------------------------------------------------------------
# timing and fits


def time_solver(features, y, heads, width, temperature: float, repeats: int, warmup: bool = True) -> dict:
    """Median wall time of :func:`attnpaths.theory.solve` over ``repeats`` runs (after one unmeasured run if
    ``warmup``), with the iterations and the certificate of the solution."""
    if warmup:
        solve(features, y, heads=heads, width=width, temperature=temperature)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        solution = solve(features, y, heads=heads, width=width, temperature=temperature)
        seconds.append(time.perf_counter() - start)
    median = float(np.median(seconds))
    return {
        "ms": 1e3 * median,
        "ms_all": [round(1e3 * s, 4) for s in seconds],
        "iterations": solution.iterations,
        "ms_per_iteration": 1e3 * median / max(solution.iterations, 1),
        "converged": bool(solution.converged),
        "gradient_norm": solution.gradient_norm,
        "hessian_min_eigenvalue": solution.hessian_min_eigenvalue,
        "action": solution.action,
        "solution": solution,
    }


# --------------------------------------------------------------------------------------------------------
# the benchmark


def compare(name: str, problem, width, temperature: float, repeats: int, adam_repeats: int, adam: dict) -> dict:
    """The solver against Adam on one problem: medians, ratio and the distance between their answers."""
    features, y, heads = problem
    timed = time_solver(features, y, heads, width, temperature, repeats)
    solution = timed.pop("solution")
    runs = [adam_minimise(features, y, heads, width, temperature, **adam) for _ in range(adam_repeats)]
    adam_ms = 1e3 * float(np.median([r["seconds"] for r in runs]))
    last = runs[-1]
    report = {
        "problem": name,
        "num_train": int(features.shape[0]),
        "input_width": int(features.shape[1]),
        "heads": list(heads),
        "width": width,
        "temperature": temperature,
        "solver": timed,
        "adam": {
            "ms": adam_ms,
            "ms_all": [round(1e3 * r["seconds"], 2) for r in runs],
            "steps": last["steps"],
            "converged": last["converged"],
            "max_gradient": last["max_gradient"],
            "action": last["action"],
            "action_excess": last["action"] - solution.action,
            "max_abs_difference_U": max(
                float(np.abs(a - b).max()) for a, b in zip(last["U_layers"], solution.U_layers)
            ),
            **{key: value for key, value in adam.items() if key != "time_limit"},
            "time_limit_s": adam.get("time_limit"),
        },
        "speedup": adam_ms / timed["ms"],
        "speedup_is_lower_bound": not last["converged"],
    }
    return report


def growth(
    label: str, sizes, problems, width, temperature: float, repeats: int, exponents, warmup: bool = True
) -> dict:
    """Solve times over a family of problems and the fits of ``fit_exponent`` and ``fit_two_terms``."""
    rows = []
    for size, problem in zip(sizes, problems):
        features, y, heads = problem()
        timed = time_solver(features, y, heads, width, temperature, repeats, warmup)
        timed.pop("solution")
        P, n0, n = features.shape
        rows.append(
            {
                label: size,
                "num_train": int(P),
                "input_width": int(n0),
                "heads": list(heads),
                "energy_route": EnergyEvaluator.cheaper_route(P, n0, n),
                **timed,
            }
        )
        print(
            f"  {label}={size}: {timed['ms']:.1f} ms, {timed['iterations']} iterations "
            f"({timed['ms_per_iteration']:.2f} ms each, {rows[-1]['energy_route']} space)",
            flush=True,
        )
    fits = growth_fits(sizes, [r["ms_per_iteration"] for r in rows], exponents, "iteration")
    solves = fit_exponent(sizes, [r["ms"] for r in rows])
    return {"width": width, "temperature": temperature, "rows": rows, **fits, "exponent_per_solve": solves}


def _speed(quick: bool, repeats: int, adam_repeats: int, adam: dict, cache_dir) -> dict:
    """The solver against Adam on the two problems, printed as they end."""
    print("speed: solver against Adam", flush=True)
    image = (
        dict(num_train=24, heads=2, alphabets=("Latin", "Greek"), image_size=16)
        if quick
        else dict(num_train=600, heads=4)
    )
    problems = {
        "hmc": compare("hmc", hmc_problem(20 if quick else 100), 10, 0.01, repeats, adam_repeats, adam),
        "image": compare("image", image_problem(**image, cache_dir=cache_dir), 10, 0.1, max(1, repeats // 3), 1, adam),
    }
    for name, row in problems.items():
        bound = ">= " if row["speedup_is_lower_bound"] else ""
        print(
            f"  {name}: solver {row['solver']['ms']:.2f} ms ({row['solver']['iterations']} iterations), "
            f"Adam {row['adam']['ms']:.0f} ms ({row['adam']['steps']} steps), speed-up {bound}{row['speedup']:.0f}x",
            flush=True,
        )
    return problems


def _growth_series(quick: bool, repeats: int) -> tuple[dict, dict]:
    """The solve time against ``P`` and against the number of paths, each with its fits."""
    print("growth with the number of examples P (4-path HMC network)", flush=True)
    sizes_P = [20, 30, 40] if quick else [100, 200, 400, 800, 1400, 2000]
    by_examples = growth(
        "P", sizes_P, [lambda P=P: hmc_problem(P) for P in sizes_P], 10, 0.01, max(1, repeats // 7), (3.0, 2.0)
    )
    heads, num_paths_train = ([2, 3], 20) if quick else ([2, 4, 8], 200)
    print(f"growth with the number of paths (2 layers of H heads, N0 = 16, P = {num_paths_train})", flush=True)
    by_paths = growth(
        "paths",
        [h * h for h in heads],
        [lambda h=h: paths_problem(h, num_paths_train) for h in heads],
        10,
        0.1,
        1 if quick else 2,
        (6.0, 4.0),
        warmup=False,
    )
    return by_examples, by_paths


def main(argv=None) -> dict:
    """Entry point of ``python -m attnpaths_book bench solver``; prints a summary and returns the report."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m attnpaths_book bench solver", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a check that everything runs)")
    parser.add_argument("--repeats", type=int, help="solver runs per problem (default 21, quick 3)")
    parser.add_argument("--adam-repeats", type=int, help="Adam runs on the HMC problem (default 3)")
    parser.add_argument("--adam-lr", type=float, default=0.1)
    parser.add_argument(
        "--adam-tolerance",
        type=float,
        default=1e-5,
        help="Adam stops when the largest entry of the gradient of its loss is below this",
    )
    parser.add_argument("--adam-max-steps", type=int, default=50000)
    parser.add_argument("--adam-time-limit", type=float, default=300.0, help="seconds per Adam run at most")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads and numpy/scipy BLAS threads (pinned, restored afterwards)",
    )
    parser.add_argument("--cache-dir", default=os.path.join("_build", "cache"), help="rendered glyphs cache")
    parser.add_argument("--output", type=Path, default=committed_record_path("solver"))
    args = parser.parse_args(argv)
    if args.threads < 1 or (args.repeats is not None and args.repeats < 1):
        parser.error("--threads and --repeats must be >= 1")
    quick = args.quick
    repeats = args.repeats or (2 if quick else 21)
    adam_repeats = args.adam_repeats or (1 if quick else 3)
    adam = {
        "lr": args.adam_lr,
        "gradient_tolerance": args.adam_tolerance,
        "max_steps": 20 if quick else args.adam_max_steps,
        "time_limit": args.adam_time_limit,
    }
    started = start_record("solver", argv)
    with (
        torch_threads(args.threads),
        warnings.catch_warnings(),
        threadpool_limits(limits=args.threads, user_api="blas"),
    ):
        warnings.simplefilter("ignore", CertificateWarning)  # recorded in each row's "converged"
        problems = _speed(quick, repeats, adam_repeats, adam, args.cache_dir)
        by_examples, by_paths = _growth_series(quick, repeats)
    report = {
        "threads": args.threads,
        "quick": quick,
        "repeats": repeats,
        "note": "wall times on a machine shared with other work: read them with the load averages",
        "targets": TARGETS,
        "problems": problems,
        "growth": {"examples": by_examples, "paths": by_paths},
    }
    for key, fit in (("examples", by_examples), ("paths", by_paths)):
        print(
            f"{key}: exponent {fit['exponent_per_iteration']:.2f} per iteration over all sizes, "
            f"{largest_two_text(fit, 'iteration')}"
        )
    finish_record(started, report, args.output)
    return report
