"""Cost of the one-shot model's gradient-descent training at the authors' size, on the CPU or a CUDA GPU.

``python -m attnpaths_book bench training [--device cpu|cuda] [--steps K] [--threads T] [--output PATH]`` times
``K`` Adam steps of the model of :data:`attnpaths.oneshot.training.AUTHORS_TRAINING` (N = 512, G = 128,
2 layers x 4 heads, N0 = 192, 48 tokens, batch 128) after two warm-up steps, and the validation pass that
training runs every ``validate_every`` steps, then projects the wall time of the whole run:

    total = steps * (step time) + (steps / validate_every) * (validation time)

A step is what :func:`attnpaths.oneshot.training.fit` does per step: draw and encode a batch of episodes on
the CPU, move it to the device, forward, backward and Adam. The images are random (their content does not
change the cost). The record (``attnpaths_book.benchmarks.record``) is written to ``--output``; the committed
ones, ``records/training_cpu.json`` and ``records/training_cuda.json``, are what the one-shot chapter shows.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict, replace

import numpy as np
import torch

from attnpaths.devices import torch_device
from attnpaths.oneshot.imagesets import ImageClasses
from attnpaths.oneshot.sequences import sample_sequences
from attnpaths.oneshot.training import (
    AUTHORS_TRAINING,
    TrainingConfig,
    accuracy,
    initial_model,
    make_optimiser,
    training_step,
)
from attnpaths_book.benchmarks.record import RECORDS_DIR, make_record, start_record, write_record


def record_path(device: str) -> str:
    """Path of the committed record of the benchmark on ``device`` (``"cpu"`` or ``"cuda"``; checked by name
    only, so the CUDA record's path is known on a machine without a GPU)."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be one of ('cpu', 'cuda'), got {device!r}")
    return str(RECORDS_DIR / f"training_{device}.json")


def _random_classes(image_size: int, rng: np.random.Generator, num_classes: int = 20, instances: int = 20):
    images = rng.uniform(size=(num_classes, instances, image_size, image_size)).astype(np.float32)
    return ImageClasses(images, tuple(f"c{k}" for k in range(num_classes)), ("random",) * num_classes)


def _synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_training(
    config: TrainingConfig = AUTHORS_TRAINING,
    *,
    device="cpu",
    steps: int = 5,
    warmup: int = 2,
    image_size: int = 32,
    seed: int = 0,
) -> dict:
    """Measure the wall time of training steps and of one validation pass of ``config``'s model.

    Args:
        config: model sizes, batch size, number of steps and validation settings of the run to project.
        device: ``"cpu"`` or ``"cuda"`` (``ValueError`` if CUDA is asked for and unavailable).
        steps: timed steps (after ``warmup`` untimed ones).
        warmup: untimed steps first (memory allocation, kernel selection).
        image_size: side of the (random) images; ``image_size / patch_size`` squared patches an image.
        seed: seed of the random images and episodes.

    Returns:
        The measurements and their projection,
        ``{"device", "device_name", "num_threads", "sizes": {...}, "step_seconds": [steps],
        "median_step_s", "validation_s", "config": asdict(config), "projected_total_s",
        "projected_total_hours"}``.
    """
    device = torch_device(device, "device")
    for name, value, least in (("steps", steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    rng = np.random.default_rng(seed)
    classes = _random_classes(image_size, rng)
    model, encoder, _ = initial_model(config, image_size)
    model.to(device)
    optimiser = make_optimiser(model, config)
    seconds = []
    for k in range(warmup + steps):
        _synchronise(device)
        start = time.perf_counter()
        batch = sample_sequences(classes, config.batch_size, encoder, rng, dtype=torch.float32)
        loss = training_step(model, optimiser, batch)
        float(loss)  # as fit() does: the loss comes back to the CPU every step
        _synchronise(device)
        if k >= warmup:
            seconds.append(time.perf_counter() - start)
    validation = sample_sequences(classes, config.validation_sequences, encoder, rng, dtype=torch.float32)
    accuracy(model, validation)  # warm-up of the inference shapes
    _synchronise(device)
    start = time.perf_counter()
    accuracy(model, validation)
    _synchronise(device)
    validation_s = time.perf_counter() - start
    median = float(np.median(seconds))
    validations = config.steps // config.validate_every + (config.steps % config.validate_every != 0)
    total = config.steps * median + validations * validation_s
    return {
        "device": device.type,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "num_threads": torch.get_num_threads(),
        "sizes": {
            "width": config.width,
            "qk_width": config.qk_width,
            "num_layers": config.num_layers,
            "num_heads": config.num_heads,
            "input_width": encoder.input_width,
            "num_tokens": encoder.num_tokens,
            "batch_size": config.batch_size,
            "parameters": int(sum(p.numel() for p in model.parameters())),
        },
        "config": asdict(config),
        "timed_steps": steps,
        "step_seconds": seconds,
        "median_step_s": median,
        "validation_s": validation_s,
        "num_validations": validations,
        "projected_total_s": total,
        "projected_total_hours": total / 3600,
    }


def main(argv=None) -> dict:
    """Command-line entry point; prints the report and returns it."""
    parser = argparse.ArgumentParser(prog="python -m attnpaths_book bench training", description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--steps", type=int, default=5, help="timed training steps (after 2 warm-up steps)")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--commit",
        help="commit of the measured sources, recorded instead of what git reads where it runs (for a "
        "copy of the tree on another machine, whose git metadata may be missing or stale)",
    )
    parser.add_argument(
        "--output",
        help="where to write the record (default: _build/results/bench_training_DEVICE.json); "
        "the book reads the committed records training_cpu.json and training_cuda.json in " + str(RECORDS_DIR),
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch_device(args.device, "--device")
    started = start_record("training", argv)
    if args.commit and args.commit != started["commit"]:
        started.update(
            commit=args.commit, commit_note=f"given with --commit; git where it ran read {started['commit']}"
        )
    report = time_training(replace(AUTHORS_TRAINING), device=device, steps=args.steps, seed=args.seed)
    output = args.output or os.path.join("_build", "results", f"bench_training_{device.type}.json")
    path = write_record(make_record(started, report), output)
    print(
        f"device {report['device']} ({report['device_name'] or 'CPU'}), {report['num_threads']} threads, "
        f"{report['sizes']['parameters']} parameters"
    )
    print(
        f"median step {report['median_step_s']:.4g} s over {args.steps} steps; validation pass "
        f"{report['validation_s']:.4g} s"
    )
    print(
        f"projected {AUTHORS_TRAINING.steps} steps + {report['num_validations']} validations: "
        f"{report['projected_total_hours']:.3g} h"
    )
    print(f"record written to {path}")
    return report


if __name__ == "__main__":
    main()
