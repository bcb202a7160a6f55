"""One row of :mod:`attnpaths_book.benchmarks.scale`: the features made and the theory solved by one route at one
``P``, in a fresh Python process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings

HEADS, WIDTH, TEMPERATURE = (2, 2), 10, 0.01
"""The hmc chapter's problem: the 4-path network, width 10 in every layer, likelihood variance 0.01."""
IMAGE_THEORY = dict(width=512, temperature=0.01)
"""The image task's theory, the authors' width ``N = 512`` in both layers and the likelihood variance 0.01."""
GRADIENT_TOLERANCE = 1e-8
"""The solver's default stopping rule (:func:`attnpaths.theory.solve`), used by every row."""


class _TimedChunks:
    """A chunk generator that adds the seconds spent making chunks to ``seconds`` (in this process only)."""

    def __init__(self, chunks):
        self.chunks, self.seconds = chunks, 0.0

    def __call__(self, k):
        start = time.perf_counter()
        try:
            return self.chunks(k)
        finally:
            self.seconds += time.perf_counter() - start


def _peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _hmc_chunks(spec: dict):
    """The hmc row's chunks and theory options: ``(chunks, options)``."""
    from attnpaths.hmc import HMCTask, four_path_network
    from attnpaths.hmc.streams import HMCChunks

    task = HMCTask(**spec["task"])
    chunks = HMCChunks(task, four_path_network(task).attention, **_stream(spec))
    return chunks, dict(heads=HEADS, width=WIDTH, temperature=TEMPERATURE)


def _stream(spec: dict) -> dict:
    """The options of a row's chunks: seed, examples, chunk size and how the path features are made."""
    factored = not spec.get("exact_features", False)
    return dict(seed=spec["seed"], num_examples=spec["P"], chunk_size=spec["chunk_size"], factored_features=factored)


def image_setup(task: dict):
    """The image task's training classes, encoder and attention (``task``: ``{"glyphs": fields of
    GlyphDatasetConfig, "model": fields of TrainingConfig}`` replaced in the defaults and in
    :data:`attnpaths.oneshot.training.AUTHORS_TRAINING`): ``(classes, encoder, attention, config)``, the attention
    of the untrained model (timing only)."""
    from dataclasses import replace

    from attnpaths.oneshot import GlyphDatasetConfig, load_glyph_dataset
    from attnpaths.oneshot.training import AUTHORS_TRAINING, initial_model

    glyphs = dict(task["glyphs"])
    if "alphabets" in glyphs:
        glyphs["alphabets"] = tuple(glyphs["alphabets"])
    quick = bool(glyphs)  # a small set: rendered each time, not cached
    dataset = load_glyph_dataset(
        GlyphDatasetConfig(**glyphs), cache_dir=None if quick else os.path.join("_build", "cache"), progress=False
    )
    config = replace(AUTHORS_TRAINING, **task["model"])
    model, encoder, _ = initial_model(config, dataset.train.image_size)
    return dataset.train, encoder, model.attention(), config


def _image_chunks(spec: dict):
    """The image row's chunks and theory options: ``(chunks, options)``."""
    from attnpaths.oneshot.streams import EpisodeChunks

    classes, encoder, attention, _ = image_setup(spec["task"])
    return EpisodeChunks(classes, encoder, attention, **_stream(spec)), dict(heads=attention.heads, **IMAGE_THEORY)


def run_row(spec: dict) -> dict:
    """Make the features and solve one row (``spec``: ``route``, ``P``, ``chunk_size``, ``seed``, ``problem``
    (``"hmc"`` or ``"image"``) and ``task``: the :class:`attnpaths.hmc.data.HMCTask` fields, or the image task's
    of :func:`image_setup`); the row's report, without its peak memory."""
    import torch

    from attnpaths.streaming import gram_statistics
    from attnpaths.theory import CertificateWarning, architecture, solve, solve_from_statistics
    from attnpaths.theory._minimise import _solver_memory

    image = spec.get("problem", "hmc") == "image"
    start = time.perf_counter()
    chunks, options = (_image_chunks if image else _hmc_chunks)(spec)
    setup_s = time.perf_counter() - start
    timed = _TimedChunks(chunks)
    options = dict(options, gradient_tolerance=GRADIENT_TOLERANCE)
    n0 = chunks.attention.input_width
    D = n0 * chunks.attention.num_paths
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificateWarning)  # recorded in the row's "converged"
        if spec["route"] == "gram":
            if spec.get("workers", 1) > 1:
                statistics, worker_rss = _streamed_on_workers(chunks, spec["workers"])
            elif spec.get("threads", 1) > 1:
                statistics = _streamed_on_threads(chunks, spec["threads"])
            else:
                # one chunk a round: in this process nothing runs in parallel, and a round's statistics are held
                # at once (16 by default: 1.2 GB at the image task's D = 3072); the sums do not depend on it
                statistics = gram_statistics(
                    timed, chunks.num_chunks, engine=_in_process(), chunks_per_round=1, progress=False
                )
            data_s = time.perf_counter() - start
            solution = solve_from_statistics(statistics, **options)
        else:
            parts = [timed(k) for k in range(chunks.num_chunks)]
            features, y = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
            del parts
            data_s = time.perf_counter() - start
            solution = solve(features, y, route="feature", **options)
    wall_s = time.perf_counter() - start
    if spec["route"] == "gram" and spec.get("workers", 1) > 1:
        features_s = None  # made on the workers, inside their tasks: not timed apart from the accumulation
    elif spec["route"] == "gram" and spec.get("threads", 1) > 1:
        features_s, worker_rss = None, []  # made inside the tasks, at once: not timed apart from the accumulation
    else:
        features_s, worker_rss = timed.seconds, []
    arch = architecture(options["heads"], options["width"])
    memory, _ = _solver_memory(
        spec["P"], n0, chunks.attention.num_paths, arch, "gram" if spec["route"] == "gram" else "feature"
    )
    return {
        "route": spec["route"],
        "P": spec["P"],
        "D": D,
        "chunks": chunks.num_chunks,
        "wall_s": wall_s,
        "features_s": features_s,
        "accumulate_s": (data_s - (features_s or 0.0)) if spec["route"] == "gram" else 0.0,
        "solve_s": wall_s - data_s,
        "iterations": solution.iterations,
        "converged": bool(solution.converged),
        "gradient_norm": solution.gradient_norm,
        "hessian_min_eigenvalue": solution.hessian_min_eigenvalue,
        "action": solution.action,
        "U_layers": [U.tolist() for U in solution.U_layers],
        "solver_memory_estimate_gib": memory / 2**30,
        **({"workers": spec["workers"], "worker_peak_rss_mib": worker_rss} if worker_rss else {}),
        **({"task_threads": spec["threads"]} if spec["route"] == "gram" and spec.get("threads", 1) > 1 else {}),
        **({"setup_s": setup_s, "attention": IMAGE_ATTENTION_NOTE} if image else {}),
    }


IMAGE_ATTENTION_NOTE = (
    "timing only: untrained attention (the query/key maps of attnpaths.oneshot.training.initial_model, weights "
    "drawn from torch.Generator().manual_seed(AUTHORS_TRAINING.seed)); U and the action mean nothing for the chapter"
)
"""Stated in every image row."""


def _streamed_on_workers(chunks, workers: int):
    """The Gram statistics of ``chunks`` streamed over an embedded cluster of ``workers`` one-thread processes
    (:func:`attnpaths.engine.start_engine`; the same bits as in-process), and each worker's peak resident memory
    in MiB at the end (the calling process's is the row's own)."""
    from attnpaths.engine import client_for, start_engine
    from attnpaths.streaming import gram_statistics

    with start_engine(workers=workers) as engine:
        statistics = gram_statistics(chunks, chunks.num_chunks, engine=engine, chunks_per_round=4 * workers,
                                     progress=False)  # fmt: skip
        rss = sorted(client_for(engine.address).run(_peak_rss_mib).values())
    return statistics, rss


def _streamed_on_threads(chunks, threads: int):
    """The Gram statistics of ``chunks`` streamed over ``threads`` threads of this process
    (``start_engine(workers=threads, threads=True)``; each task on one thread, the same bits as in-process)."""
    from attnpaths.engine import start_engine
    from attnpaths.streaming import gram_statistics

    with start_engine(workers=threads, threads=True) as engine:
        # two chunks in flight per thread: a round's statistics are held at once (7 MB each at D = 924)
        return gram_statistics(chunks, chunks.num_chunks, engine=engine, chunks_per_round=2 * threads, progress=False)


def _in_process():
    from attnpaths.engine import IN_PROCESS, Engine

    return Engine(IN_PROCESS, None, 1, None)


def _threads() -> dict:
    """The threads of this process's pools: ``{"torch": n, "blas": [n, ...]}`` (one entry per BLAS library)."""
    import torch
    from threadpoolctl import threadpool_info

    return {
        "torch": torch.get_num_threads(),
        "blas": sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}),
    }


def row_main(argv=None) -> None:
    """The child process of one row: ``spec`` (JSON) in ``argv[0]``; prints the row (JSON) as its last line."""
    from attnpaths.engine import use_one_thread

    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    use_one_thread()
    import attnpaths.hmc.streams  # noqa: F401
    import attnpaths.streaming  # noqa: F401  (the row's imports, before the memory after them)
    import attnpaths.theory  # noqa: F401

    if spec.get("problem") == "image":
        import attnpaths.oneshot.streams  # noqa: F401
        import attnpaths.oneshot.training  # noqa: F401

    rss_start = _peak_rss_mib()
    row = run_row(spec)
    row.update(rss_after_imports_mib=rss_start, peak_rss_mib=_peak_rss_mib(), threads=_threads())
    print(json.dumps(row), flush=True)


def measure_row(spec: dict) -> dict:
    """:func:`run_row` in a fresh Python process with one thread (the thread variables set before the libraries
    load) and the engine in-process; its row with the peak resident memory of that process."""
    from attnpaths.engine import SCHEDULER_ENV, THREAD_VARIABLES

    environment = dict(os.environ, **{name: "1" for name in THREAD_VARIABLES}, **{SCHEDULER_ENV: "in-process"})
    code = "import sys; from attnpaths_book.benchmarks._scale_row import row_main; row_main(sys.argv[1:])"
    completed = subprocess.run(
        [sys.executable, "-c", code, json.dumps(spec)], capture_output=True, text=True, env=environment
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the row {spec} failed (exit status {completed.returncode}):\n{completed.stderr[-4000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])
