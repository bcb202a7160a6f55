"""Records of measurements: a report saved as JSON together with where and how it was measured.

Record layout (JSON object)::

    {"benchmark": name, "command": the command line that measured it, "started_utc", "finished_utc": ISO 8601,
     "package_version", "commit": git commit of the measured sources when the run started (null outside a
     git checkout), "commit_dirty": bool | null (uncommitted changes to tracked files at the start),
     "machine": {"platform", "processor", "cpu_count", "load_average_1min_start", "load_average_1min" (at the
                 end)}, "versions": {"python", "torch", ...},
     "report": the measurement's own report}

The provenance comes from ``attnpaths_book.provenance``; the book's benchmarks write such records and the
chapters read them (e.g. the measured cost of training in the one-shot chapter).
"""

from __future__ import annotations

import json
from pathlib import Path

from attnpaths.json_files import read_json

from . import provenance

REQUIRED_KEYS = ("benchmark", "command", "finished_utc", "commit", "machine", "versions", "report")
VERSIONED_PACKAGES = ("numpy", "scipy", "torch", "pyro-ppl")


def start_record(name: str, command: str, source_dir, packages=VERSIONED_PACKAGES) -> dict:
    """Provenance taken when a measurement starts (so that it names the code that ran, even if the checkout
    changes while it runs): ``command``, start time, and ``attnpaths_book.provenance.collect`` of the sources
    under ``source_dir`` for the versions of Python and of ``packages`` (package version, git commit and dirty
    flag, machine with the 1-minute load average at the start)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be an identifier, got {name!r}")
    collected = provenance.collect(Path(source_dir), packages, load=False)
    collected["machine"] = dict(collected["machine"], load_average_1min_start=provenance.load_average())
    return {"benchmark": name, "command": command, "started_utc": provenance.utc_now(), **collected}


def make_record(started: dict, report: dict) -> dict:
    """The record: the provenance from :func:`start_record`, the finishing time, the 1-minute load average at
    the end and the benchmark's ``report``."""
    machine = dict(started["machine"], load_average_1min=provenance.load_average())
    return {**started, "machine": machine, "finished_utc": provenance.utc_now(), "report": report}


def record_text(record: dict, required=REQUIRED_KEYS) -> str:
    """``record`` as the indented JSON of a record file; ``ValueError`` when it lacks one of the ``required`` keys."""
    missing = [key for key in required if key not in record]
    if missing:
        raise ValueError(f"record is missing the keys {missing}")
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def write_record(record: dict, path) -> Path:
    """Write ``record`` (from :func:`make_record`) as indented JSON; creates the folder. Returns the path."""
    text, path = record_text(record), Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def read_keyed(path, what: str, required, absent: Exception) -> dict:
    """The ``what`` at ``path``: ``absent`` is raised without the file, ``ValueError`` when it lacks a key."""
    path = Path(path)
    if not path.is_file():
        raise absent
    record = read_json(path, what)
    missing = [key for key in required if key not in record]
    if missing:
        raise ValueError(f"{what} {path} is missing the keys {missing}")
    return record


def read_record(path) -> dict:
    """Read a record; ``ValueError`` naming the file if it is missing or lacks one of the required keys."""
    absent = ValueError(f"no benchmark record at {path}: run the benchmark with --output {path}")
    return read_keyed(path, "benchmark record", REQUIRED_KEYS, absent)
