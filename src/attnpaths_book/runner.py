"""Run the book's chapters: those whose cache key changed, in the order of ``_toc.yml``.

With an engine of several workers (:func:`attnpaths.engine.start_engine`), independent chapters execute
concurrently, as many at a time as the engine has workers, so that their tasks keep the cluster busy; a
report chapter waits for every chapter before it. Each chapter's kernel receives the engine's environment,
which sends the chapter's tasks to the cluster. The numbers do not depend on the engine
(:mod:`attnpaths.engine`), so the cache key does not include it.

A report chapter (front matter ``attnpaths: {report: true}``, e.g. ``reproducibility``) shows the results
and run times of the chapters before it, so its key includes their keys: it runs again whenever one of them
did. Runs hold the checkout's build lock (:func:`~attnpaths_book.layout.book_lock`): a second run in the same
checkout waits for the first, naming the PID that holds the lock. Holding it, a run removes the working
folders that killed runs left in ``_build/``. A chapter's results file, executed notebook and timing are
replaced only when it succeeded (:mod:`attnpaths_book.executor`).
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from attnpaths.results import atomic_write_text
from attnpaths.provenance import versions
from attnpaths_book.cache import EXECUTION_METADATA, PackageCode, chapter_key, stored_key
from attnpaths_book.chapters import Chapter, book_chapters, find_chapter, resolve_parameters
from attnpaths.engine import Engine
from attnpaths_book.executor import Execution, execute_chapter, remove_stale_run_folders, stop_running_chapters
from attnpaths_book.layout import TIMINGS_FILE, BookLayout, Progress, book_lock, silent


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
                code: PackageCode, env: dict) -> str:
    """The cache key the chapter would get now (for a report chapter, from the stored keys before it).

    ``code`` reads the package sources under ``layout.package_dir`` (one instance serves every chapter of a
    command); ``env`` holds the library versions (:func:`attnpaths.provenance.versions`)."""
    upstream = ()
    if chapter.report:
        before = chapters[:[c.name for c in chapters].index(chapter.name)]
        upstream = tuple(stored_key(layout.executed_notebook(c.docname)) for c in before)
    return chapter_key(chapter.source, parameters, code.chapter_digest(chapter.notebook), upstream, env)


def is_fresh(layout: BookLayout, chapter: Chapter, key: str) -> bool:
    """Whether the executed notebook carries ``key`` and the chapter's results file exists."""
    return (stored_key(layout.executed_notebook(chapter.docname)) == key
            and layout.results_file(chapter.name).is_file())


def stale_chapters(layout: BookLayout, profile: str) -> list[str]:
    """Names of the chapters that :func:`run_book` would execute for ``profile`` (a report chapter counts as
    stale when any chapter before it is)."""
    chapters = notebook_chapters(layout)
    code, env = PackageCode(*layout.package_dirs), versions()
    stale = []
    for chapter in chapters:
        parameters = resolve_parameters(chapter, profile, results_dir=layout.relative(layout.results_dir))
        key = current_key(layout, chapter, parameters, chapters, code, env)
        if stale and chapter.report or not is_fresh(layout, chapter, key):
            stale.append(chapter.name)
    return stale


def read_timings(results_dir) -> dict:
    """The recorded run times, ``{profile: {chapter: {"wall_s", "peak_rss_mib", "cache_key", "finished"}}}``
    (``{}`` before the first run). Each entry is the last run of that chapter in that profile."""
    path = Path(results_dir) / TIMINGS_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


_timings_lock = threading.Lock()


def _record_timing(layout: BookLayout, execution: Execution, engine: Engine | None) -> None:
    """Store the wall time, peak memory and engine of a profile run (runs with overrides are not recorded).
    With a cluster engine the peak memory is the chapter's kernel's only: its tasks ran in the workers."""
    with _timings_lock:
        timings = read_timings(layout.results_dir)
        timings.setdefault(execution.profile, {})[execution.chapter] = {
            "wall_s": execution.wall_s, "peak_rss_mib": execution.peak_rss_mib, "cache_key": execution.cache_key,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "engine": engine.mode if engine else "in-process", "workers": engine.workers if engine else 1,
        }
        atomic_write_text(layout.timings, json.dumps(timings, indent=1, sort_keys=True) + "\n")


def _run(layout: BookLayout, chapter: Chapter, parameters: dict, key: str, overrides: dict, force: bool,
         label: str, progress: Progress, progress_bar: bool, engine: Engine | None = None) -> Outcome:
    if not force and is_fresh(layout, chapter, key):
        notebook = json.loads(layout.executed_notebook(chapter.docname).read_text())
        record = notebook["metadata"][EXECUTION_METADATA]
        progress(f"{label} {chapter.name}: up to date (ran in {record['wall_s']:.1f} s)")
        return Outcome(chapter.name, False, record)
    progress(f"{label} {chapter.name}: executing ({parameters['profile']} profile) ...")
    execution = execute_chapter(layout, chapter, parameters, key, overrides, progress_bar,
                                environment=engine.environment if engine else None)
    if not overrides:
        _record_timing(layout, execution, engine)
    progress(f"{label} {chapter.name}: done in {execution.wall_s:.1f} s, peak memory {execution.peak_rss_mib:.0f} MiB")
    return Outcome(chapter.name, True, execution.as_dict())


def run_book(layout: BookLayout, profile: str, force: bool = False, progress: Progress = silent,
             progress_bar: bool = False, engine: Engine | None = None) -> list[Outcome]:
    """Execute every stale chapter of the toc for ``profile``; ``force`` re-executes every chapter.

    Chapters run in toc order, up to ``engine.workers`` at a time (one at a time without an engine); a
    report chapter starts when every chapter before it has finished. The first failure
    (:class:`~attnpaths_book.executor.ChapterFailed`) stops the run: no further chapter starts, the running
    ones finish, and the failure is raised. Returns the outcomes in toc order.
    """
    with book_lock(layout, progress):
        remove_stale_run_folders(layout)
        chapters = notebook_chapters(layout)
        code, env = PackageCode(*layout.package_dirs), versions()
        results_dir = layout.relative(layout.results_dir)
        planned = [resolve_parameters(c, profile, results_dir=results_dir) for c in chapters]
        labels = [f"[{number}/{len(chapters)}]" for number in range(1, len(chapters) + 1)]

        def run(i: int) -> Outcome:
            # a report chapter's key holds the stored keys of the chapters before it: computed when it starts
            key = current_key(layout, chapters[i], planned[i], chapters, code, env)
            return _run(layout, chapters[i], planned[i], key, {}, force, labels[i], progress, progress_bar, engine)

        concurrency = engine.workers if engine is not None else 1
        if concurrency == 1:
            return [run(i) for i in range(len(chapters))]
        return _run_concurrently(chapters, run, concurrency)


def _run_concurrently(chapters: list[Chapter], run, concurrency: int) -> list[Outcome]:
    """``run(i)`` for every chapter, ``concurrency`` at a time, a report chapter after all before it."""
    outcomes: dict[int, Outcome] = {}
    pending = list(range(len(chapters)))
    running: dict = {}
    failure = None
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="chapter")
    try:
        while pending or running:
            while failure is None and pending and len(running) < concurrency:
                i = pending[0]
                if chapters[i].report and (running or any(j < i for j in pending[1:])):
                    break  # the report waits for every chapter before it
                pending.pop(0)
                running[pool.submit(run, i)] = i
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                i = running.pop(future)
                try:
                    outcomes[i] = future.result()
                except Exception as err:
                    failure = failure or err
        if failure is not None:
            raise failure
        return [outcomes[i] for i in range(len(chapters))]
    except BaseException:
        stop_running_chapters()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_chapter(layout: BookLayout, name: str, profile: str, overrides: dict | None = None, force: bool = False,
                progress: Progress = silent, progress_bar: bool = False, engine: Engine | None = None) -> Outcome:
    """Execute one chapter for ``profile`` with validated ``overrides`` (skipped when its cached execution
    has the same key, unless ``force``); its tasks go to ``engine`` (in the kernel's process without one)."""
    with book_lock(layout, progress):
        remove_stale_run_folders(layout)
        chapters = notebook_chapters(layout)
        chapter = find_chapter(chapters, name)
        parameters = resolve_parameters(chapter, profile, overrides, results_dir=layout.relative(layout.results_dir))
        overrides = {k: parameters[k] for k in (overrides or {})}
        key = current_key(layout, chapter, parameters, chapters, PackageCode(*layout.package_dirs), versions())
        return _run(layout, chapter, parameters, key, overrides, force, "[1/1]", progress, progress_bar, engine)
