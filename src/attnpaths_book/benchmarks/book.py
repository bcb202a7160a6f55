"""Benchmark: the whole book executed in one process per chapter, one chapter at a time, against the embedded
Dask cluster, on the same machine and commit.

``python -m attnpaths_book bench book [--profile paper] [--workers 1 2] [--html] [--output PATH]`` runs
``python -m attnpaths_book book --profile P --force --no-html --workers K`` for every ``K`` in turn (``K = 1``: every
task in the chapters' own processes, one chapter after the other; ``K > 1``: an embedded ``LocalCluster`` of
``K`` single-threaded workers with ``K`` chapters at a time) and records each run's wall time and the
per-chapter wall times and peak memory the runner stored, the fraction of the machine's CPU time that was busy
during the run, and each chapter's slowest cells (the stage timings papermill writes into the executed notebook:
where a chapter's time goes). With ``--html`` it then times ``python -m attnpaths_book book --profile P`` once
more, which finds every chapter current and only builds the HTML book: the README's first command is the last
run's execution plus that build. The record (``records/book.json`` by default) carries the provenance of
:mod:`attnpaths_book.benchmarks.record`; the reproducibility chapter reads it.

The one-shot chapter caches its trained model in ``_build/cache``: the record says, per run, whether the
cache held files when the run started (a run that trains the model takes minutes longer).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from attnpaths.json_files import read_json
from attnpaths_book.benchmarks.record import committed_record_path, finish_record, run_command, start_record
from attnpaths_book.chapters import PROFILES
from attnpaths_book.layout import BookLayout, find_root
from attnpaths_book.runner import notebook_chapters, read_timings

SLOWEST_CELLS = 3
"""Cells per chapter that the record lists by their execution time."""


def slowest_cells(notebook: Path, count: int = SLOWEST_CELLS) -> list[dict]:
    """The ``count`` code cells of an executed notebook that took longest, as ``{"cell": index among the code
    cells, "first_line": ..., "seconds": ...}``, slowest first (papermill's ``metadata.papermill.duration``)."""
    cells = [cell for cell in read_json(notebook, "executed notebook")["cells"] if cell["cell_type"] == "code"]
    timed = []
    for index, cell in enumerate(cells):
        duration = cell.get("metadata", {}).get("papermill", {}).get("duration")
        if duration is not None:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            first = next((line for line in source.splitlines() if line.strip() and not line.startswith("#")), "")
            timed.append({"cell": index, "first_line": first[:100], "seconds": round(float(duration), 2)})
    return sorted(timed, key=lambda c: -c["seconds"])[:count]


def cpu_times() -> tuple[float, float] | None:
    """``(busy, total)`` CPU time of this machine since boot, in clock ticks (``/proc/stat``), or ``None`` where
    there is no ``/proc/stat``."""
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle and iowait
    return sum(fields) - idle, sum(fields)


def busy_fraction(start: tuple[float, float] | None, end: tuple[float, float] | None) -> float | None:
    """The fraction of the machine's CPU time between two :func:`cpu_times` readings that was not idle: how well
    a run kept every core busy (whatever else ran on the machine counts as busy too)."""
    if start is None or end is None or end[1] <= start[1]:
        return None
    return round((end[0] - start[0]) / (end[1] - start[1]), 3)


def run_book(root: Path, profile: str, workers: int) -> dict:
    """Execute every chapter of the book at ``root`` with ``workers`` (forced); returns the run's record."""
    layout = BookLayout(root)
    cache = layout.build_dir / "cache"
    cache_warm = cache.is_dir() and any(cache.iterdir())
    cpu_start = cpu_times()
    command = [sys.executable, "-m", "attnpaths_book", "book", "--profile", profile, "--force", "--no-html"]
    start = time.perf_counter()
    completed = run_command([*command, "--workers", str(workers)], root, f"the book run with --workers {workers}")
    wall_s = time.perf_counter() - start
    busy = busy_fraction(cpu_start, cpu_times())
    timings = read_timings(layout.results_dir).get(profile, {})
    notebooks = {c.name: layout.executed_notebook(c.docname) for c in notebook_chapters(layout)}
    chapters = {}
    for name, entry in timings.items():
        chapters[name] = {k: entry[k] for k in ("wall_s", "peak_rss_mib", "engine", "workers") if k in entry}
        if notebooks.get(name) is not None and notebooks[name].is_file():
            chapters[name]["slowest_cells"] = slowest_cells(notebooks[name])
    return {
        "workers": workers,
        "wall_s": round(wall_s, 2),
        "cpu_busy_fraction": busy,
        "model_cache_warm_at_start": cache_warm,
        "engine_line": next((line for line in completed.stdout.splitlines() if line.startswith("engine:")), ""),
        "chapters": chapters,
    }


def build_html(root: Path, profile: str) -> float:
    """Wall time (s) of ``python -m attnpaths_book book --profile P --no-pdf`` right after a run of every chapter:
    the chapters are current, so it only builds the HTML book (not its PDF, which needs Chromium)."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "attnpaths_book", "book", "--profile", profile, "--no-pdf"]
    completed = run_command(command, root, "the HTML build")
    wall_s = time.perf_counter() - start
    if "chapters: 0 executed" not in completed.stdout:
        raise RuntimeError("the HTML build executed chapters again: the timed run did not leave them current")
    return wall_s


def main(argv=None) -> int:
    """Entry point of ``python -m attnpaths_book bench book``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m attnpaths_book bench book", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=PROFILES, default="paper")
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[1, 2],
        metavar="K",
        help="engines to compare, by worker count (default: 1 2)",
    )
    parser.add_argument(
        "--html", action="store_true", help="after the runs, time the HTML build of the last run's executed chapters"
    )
    parser.add_argument("--output", type=Path, default=committed_record_path("book"))
    args = parser.parse_args(argv)
    if any(k < 1 for k in args.workers):
        parser.error(f"--workers must be integers >= 1, got {args.workers}")
    started = start_record("book", argv)
    root = find_root()
    runs = []
    for workers in args.workers:
        print(f"book, {args.profile} profile, --workers {workers} ...", flush=True)
        runs.append(run_book(root, args.profile, workers))
        print(f"  {runs[-1]['wall_s']:.0f} s", flush=True)
    report = {"profile": args.profile, "runs": runs}
    if args.html:
        print("HTML build ...", flush=True)
        report["html_wall_s"] = round(build_html(root, args.profile), 2)
        report["book_wall_s"] = round(runs[-1]["wall_s"] + report["html_wall_s"], 2)
        print(f"  {report['html_wall_s']:.0f} s; execution and HTML {report['book_wall_s']:.0f} s", flush=True)
    if len(runs) >= 2 and runs[0]["workers"] == 1:
        report["speedup"] = {str(r["workers"]): round(runs[0]["wall_s"] / r["wall_s"], 3) for r in runs[1:]}
    finish_record(started, report, args.output)
    return 0
