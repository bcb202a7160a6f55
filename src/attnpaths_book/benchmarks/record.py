"""Benchmark records: a benchmark's report saved as JSON together with where and how it was measured.

A benchmark takes far longer than a chapter (the sampler comparison: about 25 minutes), so the book does not
run it; the reproducibility chapter reads the *committed* record of the last run instead
(``attnpaths_book/benchmarks/records/<name>.json``, shipped with the package) and shows its provenance next to its
numbers. ``python -m attnpaths_book bench sampler --output PATH`` writes a new record; writing it over the
committed one is how the book's numbers are refreshed.

Record layout (JSON object)::

    {"benchmark": name, "command": "python -m attnpaths_book bench ...", "started_utc", "finished_utc": ISO 8601,
     "package_version", "commit": git commit of the measured sources when the run started (null outside a
     git checkout), "commit_dirty": bool | null (uncommitted changes to tracked files at the start),
     "machine": {"platform", "processor", "cpu_count", "load_average_1min_start", "load_average_1min" (at the
                 end)}, "versions": {"python", "torch", ...},
     "report": the benchmark's own report}

The provenance comes from :mod:`attnpaths_book.provenance`.
"""

from __future__ import annotations

import contextlib
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
