"""Benchmark: the wall time of the test suite, the README's test command and its fast tier, on this machine.

``python -m attnpaths_book bench tests [--tier full fast] [--output PATH]`` runs, in a fresh process each and in
the order given, ``python -m pytest -n 2`` (``full``: the README's test command, everything CI runs, the smoke book
built once inside it) and ``python -m pytest -m "not slow" -n 2`` (``fast``: the tests that need no book, cluster,
browser, long chain or long computation), both in two processes of pytest-xdist, and
records each run's wall time and pytest's summary line. When a run fails the benchmark writes no record and exits
with its status, so a record that the README quotes is one of a passing suite. The record
(``records/tests.json`` by default) carries the provenance of :mod:`attnpaths_book.benchmarks.record`.

The full tier's time depends on what the build folder holds when it starts (an executed smoke book is reused
when current): the record says whether ``_build/html`` existed at the start of each run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from attnpaths_book.benchmarks.record import committed_record_path, finish_record, start_record
from attnpaths_book.layout import SUITE_BOOK, BookLayout, find_root

TIERS = {"full": ["-n", "2"], "fast": ["-m", "not slow", "-n", "2"]}
"""The tiers and the arguments they add to ``python -m pytest`` (README, "Tests")."""


def run_tier(root: Path, tier: str) -> dict:
    """Run one tier of the test suite at ``root`` in a fresh process; returns its record."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {sorted(TIERS)}, got {tier!r}")
    html_at_start = (BookLayout(root).build_dir / SUITE_BOOK / "_build" / "html").is_dir()  # the tests' own book
    start = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *TIERS[tier]], cwd=root, capture_output=True, text=True
    )
    wall_s = time.perf_counter() - start
    lines = [line for line in completed.stdout.splitlines() if line.strip()]
    summary = next(
        (line.strip("= ") for line in reversed(lines) if " in " in line and ("passed" in line or "failed" in line)), ""
    )
    return {
        "tier": tier,
        "command": " ".join(["python -m pytest", *(f'"{a}"' if " " in a else a for a in TIERS[tier])]),
        "wall_s": round(wall_s, 1),
        "returncode": completed.returncode,
        "summary": summary,
        "book_html_at_start": html_at_start,
    }


def main(argv=None) -> int:
    """Entry point of ``python -m attnpaths_book bench tests``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m attnpaths_book bench tests", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tier",
        choices=sorted(TIERS),
        nargs="+",
        default=["full", "fast"],
        help="tiers to run, in this order (default: full fast)",
    )
    parser.add_argument("--output", type=Path, default=committed_record_path("tests"))
    args = parser.parse_args(argv)
    started = start_record("tests", argv)
    root = find_root()
    runs = []
    for tier in args.tier:
        print(f"tests, {tier} tier ...", flush=True)
        runs.append(run_tier(root, tier))
        print(f"  {runs[-1]['wall_s']:.0f} s: {runs[-1]['summary'] or 'no summary'}", flush=True)
    failed = [run for run in runs if run["returncode"] != 0]
    if failed:
        print(
            f"error: the {failed[0]['tier']} tier failed (status {failed[0]['returncode']}: "
            f"{failed[0]['summary']}); no record is written, its time is not that of a passing suite",
            file=sys.stderr,
        )
        return failed[0]["returncode"]
    finish_record(started, {"runs": runs}, args.output)
    return 0
