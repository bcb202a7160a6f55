"""Benchmark: the theory's solver at large ``P``, the Gram route streamed in chunks against the dense route.

``python -m attnpaths_book bench scale [--quick] [--task hmc|image] [--output PATH] [...]``

On the hidden-Markov-chain task (the paper's :class:`attnpaths.hmc.data.HMCTask`, the 4-path network
:func:`attnpaths.hmc.four_path_network`, heads ``(2, 2)``, ``N = 10``, ``T = 0.01``: the hmc chapter's problem,
``N0 = 231``, ``D = N0 n_paths = 924``), the training set of ``P`` sequences is made in chunks of ``--chunk-size``
(:class:`attnpaths.hmc.streams.HMCChunks`, seed ``--seed``: chunk ``k`` from its own seed, so every row of the same
``P`` has the same examples; its path features by :class:`attnpaths.paths.FactoredPathFeatures`, or by
:func:`attnpaths.paths.path_features` with ``--exact-features``: the same up to rounding) and solved two ways:

* ``gram``: the chunks streamed into the Gram statistics (:func:`attnpaths.streaming.gram_statistics`,
  in-process: no chunk's features outlive it) and :func:`attnpaths.theory.solve_from_statistics`; memory a few
  ``[D, D]`` matrices whatever ``P``, time one pass over the examples plus a solve whose cost does not grow with
  ``P``. At ``P = 10^3, 10^4, 10^5`` and at every ``P`` of a dense row.
* ``dense``: the chunks concatenated and :func:`attnpaths.theory.solve` with ``route="feature"`` (the ``[P, P]``
  kernel and its Cholesky factor), at the sizes whose memory estimate (the solver's own, with the features) is at
  most ``--dense-memory-gib`` and that are at most ``--dense-max`` (time: the factorisation grows as ``P^3``);
  the sizes left out are listed with the reason.

Every row runs in a fresh Python process (so its peak resident memory, ``getrusage(RUSAGE_SELF).ru_maxrss`` at its
end, is its own; the memory after the imports is recorded beside it) with one thread everywhere
(:func:`attnpaths.engine.use_one_thread`: torch and the BLAS pools); its wall time is split into making the
features, accumulating the statistics (Gram) and solving. Where both routes ran, the record compares them: the
ratio of their wall times and the relative differences of ``U`` (largest entry difference over the largest entry,
every layer) and of the action. The dense route may stop uncertified at large ``P`` (``converged`` false: the
trust region collapses where the rounding of its ``P``-term sums is above the gradient tolerance, ``1e-8``); its
``U`` is then as precise as that rounding allows, and the row says so.

The largest Gram row is then run once more with its chunks made on ``--threads`` threads of its one process
(default: the CPUs available; :func:`attnpaths.engine.start_engine` with ``threads=True``): the machine's cores
in one process, each chunk on one thread, so the same statistics bit for bit; the record gives its wall time, the
speed-up over the one-thread row and whether the two solutions are the same bits (``threaded``).

``--task image``: the one-shot image task at the authors' model size instead (:data:`IMAGE_MODEL`,
:data:`attnpaths.oneshot.training.AUTHORS_TRAINING`: 8x8 patches of 3 copies of each grayscale pixel, ``N0 = 192``,
``T = 48`` tokens, 2 layers of 4 heads, 16 paths, ``D = 3072``), its training episodes drawn from the training
classes of the rendered glyph data set (:func:`attnpaths.oneshot.load_glyph_dataset` with the default
:class:`~attnpaths.oneshot.GlyphDatasetConfig`, cached under ``_build/cache``) by
:class:`attnpaths.oneshot.streams.EpisodeChunks` (chunk ``k`` from its own seed, as above; features by
:class:`~attnpaths.paths.FactoredPathFeatures`, which scores the tokens' coordinates on the encoder's
:meth:`~attnpaths.oneshot.sequences.SequenceEncoder.input_basis`, unless ``--exact-features``), and solved at the authors' width
``N = 512`` and ``T = 0.01`` (``IMAGE_THEORY``). Timing only: untrained attention. No trained weights exist at
that size; the solver's cost does not depend on the weights' values, so the attention is the query/key maps of
the untrained model of :func:`attnpaths.oneshot.training.initial_model` (weights drawn from
``torch.Generator().manual_seed(AUTHORS_TRAINING.seed)``, 42; the label embedding from the same seed), and its
``U`` and action mean nothing for the chapter. Loading the data set and building the model are timed apart
(``setup_s``), outside ``wall_s``. Its dense rows are at most ``P = 2000`` by default (``--dense-max``); its
record goes to ``scale_image.json`` by default.

The machine's load is recorded at the start and at the end (:mod:`attnpaths_book.benchmarks.record`).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from attnpaths_book.benchmarks._scale_row import (
    GRADIENT_TOLERANCE,
    HEADS,
    IMAGE_ATTENTION_NOTE,
    IMAGE_THEORY,
    TEMPERATURE,
    WIDTH,
    image_setup,
    measure_row,
)
from attnpaths_book.benchmarks.record import committed_record_path, finish_record, start_record

GRAM_SIZES = (1000, 10_000, 100_000)
"""``P`` of the Gram rows (with the dense rows' sizes added)."""
DENSE_CANDIDATES = (1000, 2000, 4000, 8000, 10_000, 16_000)
"""``P`` tried for the dense rows, kept where they fit ``--dense-memory-gib`` and ``--dense-max``."""
QUICK_TASK = dict(seq_len=5, feature_width=8)
"""The task of ``--quick``: sequences of 5 tokens with 8 features (``N0 = 14``, ``D = 56``)."""
QUICK_GRAM_SIZES, QUICK_DENSE_CANDIDATES, QUICK_DENSE_MAX = (20, 80), (40, 80), 40
"""``--quick``: the Gram rows' and the dense candidates' ``P``, and the largest dense ``P`` (80 is left out)."""
TASKS = ("hmc", "image")
"""The choices of ``--task``, the hidden-Markov-chain task (default) or the one-shot image task."""
IMAGE_MODEL = {}
"""The fields of :data:`attnpaths.oneshot.training.AUTHORS_TRAINING` replaced in the image task's model (none, so
the authors' size, ``N0 = 192``, heads ``(4, 4)``)."""
IMAGE_GLYPHS = {}
"""The fields of :class:`attnpaths.oneshot.GlyphDatasetConfig` replaced in the image task's data set (none, so the
default set, 32x32 images, 20 instances of each class)."""
QUICK_IMAGE_MODEL = dict(width=8, qk_width=4, num_heads=2, patch_size=4, channels=1)
"""The image model of ``--quick``, 4x4 patches of 16x16 images, one copy of each pixel (``N0 = 16``, ``T = 48``),
2 layers of 2 heads (``D = 64``)."""
QUICK_IMAGE_GLYPHS = dict(instances_per_class=4, image_size=16, alphabets=("Latin", "Coptic", "Armenian"),
                          max_per_alphabet=5)  # fmt: skip
"""The data set of ``--quick --task image``, 5 classes of 4 instances in each split, rendered without a cache."""
IMAGE_DENSE_MAX = 2000
"""The image task's largest dense ``P`` by default (with ``--quick``, :data:`QUICK_DENSE_MAX`)."""
TIME_RATIO_BOUND = 1.0
"""Bound checked on the committed record, of the Gram route's wall time at the largest ``P`` (``10^5``, features
included) over the dense route's at its largest ``P`` (``8000``): 12.5 times the examples in no more time."""


# --------------------------------------------------------------------------------------------------------
# sizes and comparisons


def _problem_shape(task: dict, problem: str = "hmc") -> tuple[int, tuple[int, ...], int]:
    """``(N0, heads, width)`` of the problem's theory (``problem``, ``task`` as in :func:`run_row`)."""
    if problem == "image":
        from dataclasses import replace

        from attnpaths.oneshot.training import AUTHORS_TRAINING

        config = replace(AUTHORS_TRAINING, **task["model"])
        return config.channels * config.patch_size**2, (config.num_heads,) * config.num_layers, IMAGE_THEORY["width"]
    from attnpaths.hmc import HMCTask

    return HMCTask(**task).input_width, HEADS, WIDTH


def dense_memory_gib(P: int, task: dict, problem: str = "hmc") -> float:
    """The dense row's memory estimate: the solver's (:func:`attnpaths.theory.solve`'s check before it allocates,
    feature route) and the concatenated features ``[P, N0, n_paths]``, in GiB."""
    from attnpaths.theory._minimise import _solver_memory, architecture

    n0, heads, width = _problem_shape(task, problem)
    n = math.prod(heads)
    solver, _ = _solver_memory(P, n0, n, architecture(heads, width), "feature")
    return (solver + 8.0 * P * n0 * n) / 2**30


def dense_sizes(
    candidates, task: dict, memory_gib: float, largest: int, problem: str = "hmc"
) -> tuple[list[int], list[dict]]:
    """The dense rows' ``P`` among ``candidates`` and the ones left out, each with its reason."""
    kept, skipped = [], []
    for P in candidates:
        estimate = dense_memory_gib(P, task, problem)
        if estimate > memory_gib:
            reason = f"memory estimate {estimate:.2f} GiB > {memory_gib:g} GiB"
        elif P > largest:
            reason = f"P > {largest} (time: the dense factorisation grows as P^3)"
        else:
            kept.append(P)
            continue
        skipped.append({"P": P, "memory_estimate_gib": estimate, "reason": reason})
    return kept, skipped


def compare(gram: dict, dense: dict) -> dict:
    """The two routes at one ``P``: the ratio of wall times (dense over Gram) and the relative differences of
    ``U`` (largest entry difference over the largest entry of the dense ``U``, all layers) and of the action."""
    import numpy as np

    difference = max(
        float(np.abs(np.array(a) - np.array(b)).max()) for a, b in zip(gram["U_layers"], dense["U_layers"])
    )
    scale = max(float(np.abs(np.array(b)).max()) for b in dense["U_layers"])
    return {
        "P": gram["P"],
        "time_ratio_dense_over_gram": dense["wall_s"] / gram["wall_s"],
        "solve_time_ratio_dense_over_gram": dense["solve_s"] / (gram["accumulate_s"] + gram["solve_s"]),
        "U_relative_difference": difference / scale,
        "action_relative_difference": abs(gram["action"] - dense["action"]) / abs(dense["action"]),
        "gram_converged": gram["converged"],
        "dense_converged": dense["converged"],
        "dense_gradient_norm": dense["gradient_norm"],
    }


def compare_threaded(one_thread: dict, threaded: dict) -> dict:
    """The Gram route at one ``P`` on one thread and on the threads of one process: the wall times, their ratio
    (the speed-up), and whether the two solutions are the same bits (they should: every chunk's statistics are
    made on one thread and merged in chunk order)."""
    return {
        "P": threaded["P"],
        "threads": threaded["task_threads"],
        "wall_s": threaded["wall_s"],
        "one_thread_wall_s": one_thread["wall_s"],
        "speedup": one_thread["wall_s"] / threaded["wall_s"],
        "peak_rss_mib": threaded["peak_rss_mib"],
        "same_U_bits": one_thread["U_layers"] == threaded["U_layers"] and one_thread["action"] == threaded["action"],
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attnpaths_book bench scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a check that everything runs)")
    parser.add_argument(
        "--task",
        choices=TASKS,
        default="hmc",
        help="hmc: the hidden-Markov-chain task (default); image: the one-shot task at the authors' size "
        "(timing only: untrained attention)",
    )
    parser.add_argument("--chunk-size", type=int, help="examples per chunk (default 1000, quick 20)")
    parser.add_argument(
        "--dense-memory-gib", type=float, default=4.0, help="largest memory estimate of a dense row, GiB"
    )
    parser.add_argument("--dense-max", type=int, help="largest P of a dense row (default 8000; image task 2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gram-sizes", type=int, nargs="+", help=f"P of the Gram rows (default {list(GRAM_SIZES)})")
    parser.add_argument("--gram-only", action="store_true", help="no dense rows (e.g. for P = 10^6 alone)")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Gram rows: stream the chunks over an embedded cluster of this many one-thread worker processes "
        "(default 1: in the row's process; the statistics are the same bits)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="the largest Gram row is run again with its chunks made on this many threads of its one process "
        "(default: the CPUs available; 1: not run again; the statistics are the same bits)",
    )
    parser.add_argument(
        "--exact-features",
        action="store_true",
        help="the path features by attnpaths.paths.path_features (default: FactoredPathFeatures, equal up to rounding)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="where the record goes (default: the committed record, scale.json; with --task image, scale_image.json)",
    )
    return parser


def _settings(parser: argparse.ArgumentParser, argv: list[str]) -> dict:
    """The options with their defaults filled in (they depend on ``--quick`` and ``--task``), checked."""
    from attnpaths.engine import default_workers

    args = parser.parse_args(argv)
    quick = args.quick
    chunk_size = args.chunk_size or (20 if quick else 1000)
    image = args.task == "image"
    dense_max = args.dense_max or (QUICK_DENSE_MAX if quick else IMAGE_DENSE_MAX if image else 8000)
    threads = default_workers() if args.threads is None else args.threads
    if (
        chunk_size < 2 or chunk_size % 2 or args.seed < 0 or args.dense_memory_gib <= 0 or args.workers < 1
        or threads < 1
    ):  # fmt: skip
        parser.error(
            "--chunk-size must be an even integer >= 2, --seed >= 0, --dense-memory-gib > 0, --workers >= 1 and "
            "--threads >= 1"
        )
    if args.gram_sizes is not None and any(P < 2 or P % 2 for P in args.gram_sizes):
        parser.error(f"--gram-sizes must be even integers >= 2, got {args.gram_sizes}")
    if image:
        task = {
            "glyphs": QUICK_IMAGE_GLYPHS if quick else IMAGE_GLYPHS,
            "model": QUICK_IMAGE_MODEL if quick else IMAGE_MODEL,
        }
    else:
        task = QUICK_TASK if quick else {}
    if args.gram_only:
        dense_P, skipped = [], []
    else:
        dense_P, skipped = dense_sizes(
            QUICK_DENSE_CANDIDATES if quick else DENSE_CANDIDATES, task, args.dense_memory_gib, dense_max, args.task
        )
    default_gram = QUICK_GRAM_SIZES if quick else GRAM_SIZES
    gram_P = sorted(set(default_gram if args.gram_sizes is None else args.gram_sizes) | set(dense_P))
    return dict(
        args=args, image=image, task=task, chunk_size=chunk_size, dense_max=dense_max, threads=threads,
        dense_P=dense_P, skipped=skipped, gram_P=gram_P,
    )  # fmt: skip


def _run_rows(settings: dict) -> tuple[list[dict], list[dict]]:
    """Every row, each in its own process, printed as it ends: ``(rows, threaded rows)``."""
    args, gram_P, threads = settings["args"], settings["gram_P"], settings["threads"]
    rows, threaded_rows = [], []
    print(
        f"{'route':>6} {'P':>7} {'wall s':>9} {'features s':>10} {'solve s':>8} {'peak RSS MiB':>12} "
        f"{'iterations':>10} converged",
        flush=True,
    )
    threaded_P = [gram_P[-1]] if threads > 1 and args.workers == 1 else []
    for route, sizes, extra in (
        ("gram", gram_P, {"workers": args.workers}),
        ("dense", settings["dense_P"], {}),
        ("gram", threaded_P, {"threads": threads}),
    ):
        for P in sizes:
            spec = {
                "route": route,
                "P": P,
                "chunk_size": settings["chunk_size"],
                "seed": args.seed,
                "problem": args.task,
                "task": settings["task"],
                "exact_features": args.exact_features,
                **extra,
            }
            row = measure_row(spec)
            (threaded_rows if "threads" in extra else rows).append(row)
            print(
                f"{route:>6} {P:>7} {row['wall_s']:>9.2f} {row['features_s'] or math.nan:>10.2f} "
                f"{row['solve_s']:>8.2f} {row['peak_rss_mib']:>12.0f} {row['iterations']:>10} {row['converged']}"
                + (
                    f" (workers' peak RSS MiB: {[round(m) for m in row['worker_peak_rss_mib']]})"
                    if "workers" in row
                    else ""
                )
                + (f" ({row['task_threads']} threads of one process)" if "task_threads" in row else ""),
                flush=True,
            )
    return rows, threaded_rows


def _comparisons(rows: list[dict], threaded_rows: list[dict], dense_P: list[int]) -> tuple[dict, list, list]:
    """The rows by route and ``P``, and the printed comparisons: ``(by_route, threaded, comparisons)``."""
    by_route = {route: {row["P"]: row for row in rows if row["route"] == route} for route in ("gram", "dense")}
    threaded = [compare_threaded(by_route["gram"][row["P"]], row) for row in threaded_rows]
    for t in threaded:
        print(
            f"P = {t['P']}: {t['threads']} threads in one process, {t['wall_s']:.1f} s against {t['one_thread_wall_s']:.1f}"
            f" s on one thread (speed-up {t['speedup']:.2f}); the same U bit for bit: {t['same_U_bits']}"
        )
    comparisons = [compare(by_route["gram"][P], by_route["dense"][P]) for P in dense_P]
    for c in comparisons:
        print(
            f"P = {c['P']}: dense/gram time {c['time_ratio_dense_over_gram']:.2f}, U relative difference "
            f"{c['U_relative_difference']:.2e}, action relative difference {c['action_relative_difference']:.2e}"
            + ("" if c["dense_converged"] else f" (dense uncertified, gradient norm {c['dense_gradient_norm']:.2g})")
        )
    return by_route, threaded, comparisons


def main(argv=None) -> dict:
    """Entry point of ``python -m attnpaths_book bench scale``; prints a table and returns the report."""
    argv = sys.argv[1:] if argv is None else list(argv)
    settings = _settings(_parser(), argv)
    args, image, task = settings["args"], settings["image"], settings["task"]
    gram_P, dense_P = settings["gram_P"], settings["dense_P"]
    if image:
        image_setup(task)  # renders and caches the data set once, before the rows (each loads it)
    started = start_record("scale", argv)
    rows, threaded_rows = _run_rows(settings)
    by_route, threaded, comparisons = _comparisons(rows, threaded_rows, dense_P)
    largest_gram = by_route["gram"][gram_P[-1]]
    largest_dense = by_route["dense"][dense_P[-1]] if dense_P else None
    _, heads, width = _problem_shape(task, args.task)
    report = {
        "quick": args.quick,
        "threads": 1,
        "problem": args.task,
        "task": task,
        "heads": list(heads),
        "width": width,
        "temperature": IMAGE_THEORY["temperature"] if image else TEMPERATURE,
        "gradient_tolerance": GRADIENT_TOLERANCE,
        "chunk_size": settings["chunk_size"],
        "features": "path_features" if args.exact_features else "FactoredPathFeatures",
        "seed": args.seed,
        "dense_memory_gib": args.dense_memory_gib,
        "dense_max": settings["dense_max"],
        "gram_sizes": gram_P,
        "workers": args.workers,
        "dense_sizes": dense_P,
        "dense_skipped": settings["skipped"],
        "rows": rows,
        "threaded_rows": threaded_rows,
        "threaded": threaded,
        "comparisons": comparisons,
        "time_ratio_bound": TIME_RATIO_BOUND,
        "largest_gram_over_largest_dense_time": (
            None if largest_dense is None else largest_gram["wall_s"] / largest_dense["wall_s"]
        ),
        "note": "wall times on a machine shared with other work: read them with the load averages; each row ran in "
        "a fresh process, its peak RSS includes the Python and torch imports (rss_after_imports_mib)"
        + (f"; {IMAGE_ATTENTION_NOTE}" if image else ""),
    }
    if largest_dense is not None:
        print(
            f"Gram at P = {gram_P[-1]} over dense at P = {dense_P[-1]}: "
            f"{report['largest_gram_over_largest_dense_time']:.2f} of the time"
        )
    finish_record(started, report, args.output or committed_record_path("scale_image" if image else "scale"))
    return report


if __name__ == "__main__":
    main()
