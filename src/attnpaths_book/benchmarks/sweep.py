"""Benchmark: the speed-up of a sweep with the number of Dask workers, measured and projected.

``python -m attnpaths_book bench sweep [--num-sets 20] [--workers 1 2] [--output PATH]`` times the hmc chapter's
largest sweep, the 4-path theory over the paper's widths on independently drawn data sets with its GP
lines and kernel PCs (:func:`attnpaths.hmc.bands.data_set_band`, one task per data set), in-process
(``K = 1``) and on an embedded ``LocalCluster`` of ``K`` single-threaded workers, and checks that every run
gives the same numbers bit for bit.

The projection to more workers schedules the measured task times greedily, longest first, on ``k``
workers (the makespan of that schedule is what ``k`` workers need when every task costs what it cost here,
with no communication); its ratio to the sum of the task times is the projected speed-up. With ``n`` tasks
the speed-up cannot exceed ``n``, and the longest task bounds it earlier when task times differ.
"""

from __future__ import annotations

import argparse
import heapq
import sys
import time
from pathlib import Path

import numpy as np
import torch

from attnpaths import engine
from attnpaths.hmc import bands as ex
from attnpaths.hmc.networks import four_path_network
from attnpaths_book.benchmarks.record import committed_record_path, finish_record, start_record


def timed_band_member(**arguments) -> tuple[dict, float]:
    """:func:`attnpaths.hmc.bands.band_member` and its wall time in s (one task)."""
    start = time.perf_counter()
    member = ex.band_member(**arguments)
    return member, time.perf_counter() - start


def same_member(a: dict, b: dict) -> bool:
    """Whether two results of :func:`attnpaths.hmc.bands.band_member` hold the same numbers, bit for bit
    (accuracy, U, GP accuracies and label fractions)."""
    return (
        np.array_equal(a["accuracy"], b["accuracy"])
        and np.array_equal(a["U"], b["U"])
        and a["gp"] == b["gp"]
        and a["label_fraction"] == b["label_fraction"]
    )


def projected_makespan(task_seconds, workers: int) -> float:
    """Wall time of ``task_seconds`` scheduled longest first on ``workers`` identical workers."""
    loads = [0.0] * workers
    for seconds in sorted(task_seconds, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + float(seconds))
    return max(loads)


def run_sweep(num_sets: int, seed: int, client=None) -> tuple[list, float]:
    """The band sweep, timed: ``(members with their task times, wall time in s)``."""
    data_sets = ex.draw_data_sets(num_sets, torch.Generator().manual_seed(seed))
    shared = dict(
        network_factory=four_path_network,
        widths=ex.PAPER_WIDTHS,
        temperature=ex.PAPER_TEMPERATURE,
        gp_references=True,
        pc_width=100,
        pc_components=5,
    )
    start = time.perf_counter()
    results = engine.map_tasks(
        timed_band_member,
        [dict(data_set=pair) for pair in data_sets],
        description="band (bench)",
        shared=shared,
        engine=client,
    )
    return results, time.perf_counter() - start


def main(argv=None) -> int:
    """Entry point of ``python -m attnpaths_book bench sweep``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m attnpaths_book bench sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--num-sets",
        type=int,
        default=20,
        help="data sets, i.e. tasks (default: 20, as the paper profile of the hmc chapter)",
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], metavar="K")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--project",
        type=int,
        nargs="+",
        default=[1, 2, 4, 8, 16, 32],
        metavar="K",
        help="worker counts of the projection",
    )
    parser.add_argument("--output", type=Path, default=committed_record_path("sweep"))
    args = parser.parse_args(argv)
    if args.num_sets < 1 or any(k < 1 for k in args.workers + args.project):
        parser.error("--num-sets and every worker count must be >= 1")
    started = start_record("sweep", argv)
    runs, reference = [], None
    for workers in args.workers:
        with engine.start_engine(workers=workers) as chosen:
            client = engine.client_for(chosen.address) if chosen.address else None
            if client is not None:
                client.wait_for_workers(workers, timeout=120)
                client.run(lambda: __import__("attnpaths.hmc.bands"))  # imports are not part of the sweep
            results, wall_s = run_sweep(args.num_sets, args.seed, client)
        members = [member for member, _ in results]
        if reference is None:
            reference = members
        runs.append(
            {
                "workers": workers,
                "engine": chosen.mode,
                "wall_s": round(wall_s, 3),
                "task_seconds": [round(s, 4) for _, s in results],
                "identical_to_first_run": all(same_member(a, b) for a, b in zip(members, reference)),
            }
        )
        print(f"sweep of {args.num_sets} tasks on {workers} worker(s): {wall_s:.1f} s", flush=True)
    base = runs[0]
    tasks = base["task_seconds"]
    total = float(sum(tasks))
    report = {
        "sweep": "hmc data_set_band, 4-path network, paper widths, GP lines and PCs",
        "num_tasks": args.num_sets,
        "runs": runs,
        "speedup": {str(r["workers"]): round(base["wall_s"] / r["wall_s"], 3) for r in runs},
        "projection": {
            str(k): {
                "makespan_s": round(projected_makespan(tasks, k), 3),
                "speedup": round(total / projected_makespan(tasks, k), 3),
            }
            for k in args.project
        },
    }
    finish_record(started, report, args.output)
    return 0 if all(r["identical_to_first_run"] for r in runs) else 1
