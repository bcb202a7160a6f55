"""Run the book's chapters: those whose cache key changed, in the order of ``_toc.yml``.

A report chapter (front matter ``attnpaths: {report: true}``, e.g. ``reproducibility``) shows the results
and run times of the chapters before it, so its key includes their keys: it runs again whenever one of them
did. Runs hold the checkout's build lock (:func:`~attnpaths.book.layout.book_lock`): a second run in the same
checkout waits for the first, naming the PID that holds the lock. Holding it, a run removes the working
folders that killed runs left in ``_build/``. A chapter's results file, executed notebook and timing are
replaced only when it succeeded (:mod:`attnpaths.book.executor`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from ..results import atomic_write_text
from .cache import EXECUTION_METADATA, chapter_key, environment, package_digest, stored_key
from .chapters import Chapter, book_chapters, find_chapter, resolve_parameters
from .executor import Execution, execute_chapter, remove_stale_run_folders
from .layout import TIMINGS_FILE, BookLayout, Progress, book_lock, silent


@dataclass(frozen=True)
class Outcome:
    """What happened to one chapter: executed now, or taken from the cache (``execution`` then holds the
    record of the run that produced it)."""

    chapter: str
    executed: bool
    execution: dict


def notebook_chapters(layout: BookLayout) -> list[Chapter]:
    """The executable chapters of the toc, in order."""
    return [c for c in book_chapters(layout) if c.is_notebook]


def current_key(layout: BookLayout, chapter: Chapter, parameters: dict, chapters: list[Chapter],
                package: str, env: dict) -> str:
    """The cache key the chapter would get now (for a report chapter, from the stored keys before it)."""
    upstream = ()
    if chapter.report:
        before = chapters[:[c.name for c in chapters].index(chapter.name)]
        upstream = tuple(stored_key(layout.executed_notebook(c.docname)) for c in before)
    return chapter_key(chapter.source, parameters, package, upstream, env)


def is_fresh(layout: BookLayout, chapter: Chapter, key: str) -> bool:
    """Whether the executed notebook carries ``key`` and the chapter's results file exists."""
    return (stored_key(layout.executed_notebook(chapter.docname)) == key
            and layout.results_file(chapter.name).is_file())


def stale_chapters(layout: BookLayout, profile: str) -> list[str]:
    """Names of the chapters that :func:`run_book` would execute for ``profile`` (a report chapter counts as
    stale when any chapter before it is)."""
    chapters = notebook_chapters(layout)
    package, env = package_digest(layout.package_dir), environment()
    stale = []
    for chapter in chapters:
        parameters = resolve_parameters(chapter, profile, results_dir=layout.relative(layout.results_dir))
        key = current_key(layout, chapter, parameters, chapters, package, env)
        if stale and chapter.report or not is_fresh(layout, chapter, key):
            stale.append(chapter.name)
    return stale


def read_timings(results_dir) -> dict:
    """The recorded run times, ``{profile: {chapter: {"wall_s", "peak_rss_mib", "cache_key", "finished"}}}``
    (``{}`` before the first run). Each entry is the last run of that chapter in that profile."""
    path = Path(results_dir) / TIMINGS_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _record_timing(layout: BookLayout, execution: Execution) -> None:
    """Store the wall time and peak memory of a profile run (runs with overrides are not recorded)."""
    timings = read_timings(layout.results_dir)
    timings.setdefault(execution.profile, {})[execution.chapter] = {
        "wall_s": execution.wall_s, "peak_rss_mib": execution.peak_rss_mib, "cache_key": execution.cache_key,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    atomic_write_text(layout.timings, json.dumps(timings, indent=1, sort_keys=True) + "\n")


def _run(layout: BookLayout, chapter: Chapter, parameters: dict, key: str, overrides: dict, force: bool,
         label: str, progress: Progress, progress_bar: bool) -> Outcome:
    if not force and is_fresh(layout, chapter, key):
        notebook = json.loads(layout.executed_notebook(chapter.docname).read_text())
        record = notebook["metadata"][EXECUTION_METADATA]
        progress(f"{label} {chapter.name}: up to date (ran in {record['wall_s']:.1f} s)")
        return Outcome(chapter.name, False, record)
    progress(f"{label} {chapter.name}: executing ({parameters['profile']} profile) ...")
    execution = execute_chapter(layout, chapter, parameters, key, overrides, progress_bar)
    if not overrides:
        _record_timing(layout, execution)
    progress(f"{label} {chapter.name}: done in {execution.wall_s:.1f} s, peak memory {execution.peak_rss_mib:.0f} MiB")
    return Outcome(chapter.name, True, execution.as_dict())


def run_book(layout: BookLayout, profile: str, force: bool = False, progress: Progress = silent,
             progress_bar: bool = False) -> list[Outcome]:
    """Execute every stale chapter of the toc for ``profile``, in order; stops at the first failure
    (:class:`~attnpaths.book.executor.ChapterFailed`). ``force`` re-executes every chapter."""
    with book_lock(layout, progress):
        remove_stale_run_folders(layout)
        chapters = notebook_chapters(layout)
        package, env = package_digest(layout.package_dir), environment()
        results_dir = layout.relative(layout.results_dir)
        planned = [resolve_parameters(c, profile, results_dir=results_dir) for c in chapters]
        outcomes = []
        for number, (chapter, parameters) in enumerate(zip(chapters, planned), start=1):
            key = current_key(layout, chapter, parameters, chapters, package, env)
            label = f"[{number}/{len(chapters)}]"
            outcomes.append(_run(layout, chapter, parameters, key, {}, force, label, progress, progress_bar))
        return outcomes


def run_chapter(layout: BookLayout, name: str, profile: str, overrides: dict | None = None, force: bool = False,
                progress: Progress = silent, progress_bar: bool = False) -> Outcome:
    """Execute one chapter for ``profile`` with validated ``overrides`` (skipped when its cached execution
    has the same key, unless ``force``)."""
    with book_lock(layout, progress):
        remove_stale_run_folders(layout)
        chapters = notebook_chapters(layout)
        chapter = find_chapter(chapters, name)
        parameters = resolve_parameters(chapter, profile, overrides, results_dir=layout.relative(layout.results_dir))
        overrides = {k: parameters[k] for k in (overrides or {})}
        key = current_key(layout, chapter, parameters, chapters, package_digest(layout.package_dir), environment())
        return _run(layout, chapter, parameters, key, overrides, force, "[1/1]", progress, progress_bar)
