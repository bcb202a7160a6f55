"""Benchmark records: a benchmark's report saved as JSON together with where and how it was measured, in the
layout of :mod:`attnpaths_book.records` (``"benchmark"``: the benchmark module's name, ``"command"``: ``python -m
attnpaths_book bench NAME ARGS...``).

A benchmark takes far longer than a chapter (the sampler comparison: about 25 minutes), so the book does not
run it; the reproducibility chapter reads the *committed* record of the last run instead
(``attnpaths_book/benchmarks/records/<name>.json``, shipped with the package) and shows its provenance next to its
numbers. ``python -m attnpaths_book bench sampler --output PATH`` writes a new record; writing it over the
committed one is how the book's numbers are refreshed.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

from attnpaths_book import records
from attnpaths_book.records import VERSIONED_PACKAGES, make_record, read_record, write_record

RECORDS_DIR = Path(__file__).with_name("records")

__all__ = [
    "RECORDS_DIR",
    "VERSIONED_PACKAGES",
    "committed_record_path",
    "start_record",
    "make_record",
    "read_record",
    "write_record",
    "finish_record",
    "run_command",
    "torch_threads",
]


def committed_record_path(name: str) -> Path:
    """Path of the record shipped with the package for benchmark ``name``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a benchmark module name (an identifier), got {name!r}")
    return RECORDS_DIR / f"{name}.json"


def start_record(name: str, argv: list[str], packages=VERSIONED_PACKAGES) -> dict:
    """:func:`attnpaths_book.records.start_record` for ``python -m attnpaths_book bench NAME ARGV...``."""
    committed_record_path(name)  # validates the name
    return records.start_record(
        name, " ".join(["python -m attnpaths_book bench", name, *argv]), Path(__file__).parent, packages
    )


def finish_record(started: dict, report: dict, output) -> Path:
    """Write ``report`` with the provenance ``started`` to ``output`` and print where it went."""
    path = write_record(make_record(started, report), output)
    print(f"record written to {path}")
    return path


def run_command(command: list, cwd, what: str, env=None) -> subprocess.CompletedProcess:
    """Run ``command`` in ``cwd`` (environment ``env``, default this process's), its output captured;
    ``RuntimeError`` naming ``what``, with the end of the output, when it fails."""
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(
            f"{what} failed (status {completed.returncode}):\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
        )
    return completed


@contextlib.contextmanager
def torch_threads(threads: int):
    """Pin torch to ``threads`` threads inside the block; the previous setting is restored after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
