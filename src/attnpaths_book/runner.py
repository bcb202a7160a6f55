"""Run the book's chapters: those whose cache key changed, in the order of ``_toc.yml`` with the report chapters
last (:func:`attnpaths_book.chapters.execution_order`).

With an engine of several workers (:func:`attnpaths.engine.start_engine`), independent chapters execute
concurrently, as many at a time as the engine has workers, so that their tasks keep the cluster busy, and no more
than fit in memory: a chapter starts only when its expected peak memory fits beside the expected peaks of the
running ones (:func:`expected_peaks`, :func:`memory_budget_mib`; the first pending chapter that fits goes first, and a
chapter too large for the budget runs alone); a report chapter waits for every chapter executed before it. Each
chapter's kernel receives the engine's environment,
which sends the chapter's tasks to the cluster. The numbers do not depend on the engine
(:mod:`attnpaths.engine`), so the cache key does not include it.

A report chapter (front matter ``attnpaths: {report: true}``: the introduction's answers to the paper's
claims, ``reproducibility``) shows the results and run times of the chapters executed before it, so its key
includes their keys: it runs again whenever one of them did. Runs hold the checkout's build lock (:func:`~attnpaths_book.layout.book_lock`): a second run in the same
checkout waits for the first, naming the PID that holds the lock. Holding it, a run removes the working
folders that killed runs left in ``_build/``. A chapter's results file, executed notebook and timing are
made current together, only when it succeeded, and a unit whose files no longer match their manifest's checksums
is stale (:mod:`attnpaths_book.store`).
"""

from __future__ import annotations

import json
import math
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from attnpaths.engine import Engine
from attnpaths_book import store
from attnpaths_book.cache import PackageCode, chapter_key
from attnpaths_book.chapters import Chapter, book_chapters, execution_order, find_chapter, resolve_parameters
from attnpaths_book.executor import execute_chapter, remove_stale_run_folders, stop_running_chapters
from attnpaths_book.layout import BookLayout, Progress, book_lock, lock_holder, silent
from attnpaths_book.provenance import versions
from attnpaths_book.store import read_timings  # noqa: F401  (the reproducibility chapter reads it from here)


@dataclass(frozen=True)
class Outcome:
    """What happened to one chapter: executed now, or taken from the cache (``execution`` then holds the
    record of the run that produced it)."""

    chapter: str
    executed: bool
    execution: dict


def notebook_chapters(layout: BookLayout) -> list[Chapter]:
    """The executable chapters of the toc, in the order they execute (:func:`~attnpaths_book.chapters.execution_order`)."""
    return execution_order(book_chapters(layout))


def current_key(
    layout: BookLayout, chapter: Chapter, parameters: dict, chapters: list[Chapter], code: PackageCode, env: dict
) -> str:
    """The cache key the chapter would get now (for a report chapter, from the keys of the current units
    before it).

    ``code`` reads the package sources under ``layout.package_dir`` (one instance serves every chapter of a
    command); ``env`` holds the library versions (:func:`attnpaths_book.provenance.versions`)."""
    upstream = ()
    if chapter.report:
        before = chapters[: [c.name for c in chapters].index(chapter.name)]
        upstream = tuple(_current_unit_key(layout, c) for c in before)
    return chapter_key(chapter.source, parameters, code.chapter_digest(chapter.notebook), upstream, env)


def _current_unit_key(layout: BookLayout, chapter: Chapter) -> str | None:
    state = store.unit_state(layout.root, layout.results_dir, chapter.name)
    return state.manifest["cache_key"] if state.fresh else None


def unit_state(layout: BookLayout, chapter: Chapter, key: str) -> store.UnitState:
    """Whether the chapter's current unit (results file, executed notebook, manifest) is whole and carries
    ``key`` (:func:`attnpaths_book.store.unit_state`), with the reason when it is not."""
    return store.unit_state(layout.root, layout.results_dir, chapter.name, key)


def is_fresh(layout: BookLayout, chapter: Chapter, key: str) -> bool:
    """Whether the chapter's unit is whole (its files match their manifest's checksums) and carries ``key``."""
    return unit_state(layout, chapter, key).fresh


def chapter_states(layout: BookLayout, profile: str) -> list[tuple[str, str | None]]:
    """``(chapter, reason)`` for every executable chapter in execution order: ``reason`` is ``None`` when
    :func:`run_book` would take the chapter from the cache, else why it would execute it (a report chapter
    executes when any chapter before it does)."""
    chapters = notebook_chapters(layout)
    code, env = PackageCode(*layout.package_dirs), versions()
    states, any_stale = [], False
    for chapter in chapters:
        parameters = resolve_parameters(chapter, profile, results_dir=layout.relative(layout.results_dir))
        state = unit_state(layout, chapter, current_key(layout, chapter, parameters, chapters, code, env))
        if state.fresh and state.manifest.get("profile") != profile:
            state = store.UnitState(False, f"its current run is of the {state.manifest.get('profile')!r} profile")
        reason = None if state.fresh else state.reason
        if reason is None and chapter.report and any_stale:
            reason = "a chapter before it executes"
        any_stale = any_stale or reason is not None
        states.append((chapter.name, reason))
    return states


def stale_chapters(layout: BookLayout, profile: str) -> list[str]:
    """Names of the chapters that :func:`run_book` would execute for ``profile`` (a report chapter counts as
    stale when any chapter before it is)."""
    return [name for name, reason in chapter_states(layout, profile) if reason is not None]


def status(layout: BookLayout, profile: str, progress: Progress = silent) -> list[tuple[str, str | None]]:
    """:func:`chapter_states` after finishing, holding the build lock, the commits a killed run left half done
    (so that a status reports the units a next run would find). It never waits: while another process holds the
    lock, it says who through ``progress`` and reads the units as they are."""
    with book_lock(layout, progress, wait=False) as held:
        if held:
            store.recover(layout.results_dir, progress=progress)
    if not held:
        progress(
            f"the build lock {layout.relative(layout.lock)} is held by {lock_holder(layout)}: showing the chapters "
            "as they are now, without waiting for it (a chapter it is committing may show as stale)"
        )
    return chapter_states(layout, profile)


def _prepare(layout: BookLayout, progress: Progress = silent) -> None:
    """What every command that executes does first, holding the build lock: finish the commits a killed run
    left half done (saying through ``progress`` what it refused or could not finish), remove the working folders
    of killed runs, and check that the record of run times can be read (a damaged one is reported before
    anything executes, not after)."""
    store.recover(layout.results_dir, progress=progress)
    remove_stale_run_folders(layout)
    try:
        store.read_timings(layout.results_dir)
    except store.DamagedFile as err:
        raise store.DamagedFile(
            err.path,
            f"{err.reason}. It records run times only: delete it and run again "
            "(the chapters' results are not affected)",
        ) from None


def _run(
    layout: BookLayout,
    chapter: Chapter,
    parameters: dict,
    key: str,
    overrides: dict,
    force: bool,
    label: str,
    progress: Progress,
    progress_bar: bool,
    engine: Engine | None = None,
) -> Outcome:
    state = unit_state(layout, chapter, key)
    if not force and state.fresh:
        record = state.manifest["execution"]
        ran = record.get("wall_s")
        ran = f" (ran in {ran:.1f} s)" if isinstance(ran, (int, float)) and not isinstance(ran, bool) else ""
        progress(f"{label} {chapter.name}: up to date{ran}")
        return Outcome(chapter.name, False, record)
    why = "forced" if force else state.reason
    progress(f"{label} {chapter.name}: executing ({parameters['profile']} profile; {why}) ...")
    # runs with overrides are not profile runs: their times are not recorded. With a cluster engine the peak
    # memory is the chapter's kernel's only: its tasks ran in the workers.
    timing = (
        None
        if overrides
        else {"engine": engine.mode if engine else "in-process", "workers": engine.workers if engine else 1}
    )
    execution = execute_chapter(
        layout,
        chapter,
        parameters,
        key,
        overrides,
        progress_bar,
        environment=engine.environment if engine else None,
        timing=timing,
    )
    progress(f"{label} {chapter.name}: done in {execution.wall_s:.1f} s, peak memory {execution.peak_rss_mib:.0f} MiB")
    return Outcome(chapter.name, True, execution.as_dict())


def run_book(
    layout: BookLayout,
    profile: str,
    force: bool = False,
    progress: Progress = silent,
    progress_bar: bool = False,
    engine: Engine | None = None,
) -> list[Outcome]:
    """Execute every stale chapter of the toc for ``profile``; ``force`` re-executes every chapter.

    Chapters run in execution order (toc order, the report chapters last), up to ``engine.workers`` at a time (one at a time without an engine); a
    report chapter starts when every chapter before it has finished. The first failure
    (:class:`~attnpaths_book.executor.ChapterFailed`) stops the run: no further chapter starts, the running
    ones finish, and the failure is raised. Returns the outcomes in execution order.
    """
    with book_lock(layout, progress):
        _prepare(layout, progress)
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
        peaks = expected_peaks(layout, profile)
        return _run_concurrently(
            chapters, run, concurrency, peaks=[peaks.get(c.name, 0.0) for c in chapters], budget=memory_budget_mib()
        )


MEMORY_SHARE = 0.9
"""The share of the memory available when a book run starts that its concurrently running chapters may expect to
hold at their peaks together; the rest is left to the engine's workers, whose memory grows with their tasks."""


def memory_budget_mib() -> float:
    """The memory, in MiB, that the chapters running at once may expect to hold together: :data:`MEMORY_SHARE` of
    the memory available now (``psutil.virtual_memory().available``)."""
    import psutil  # a dependency of dask.distributed, the engine

    return MEMORY_SHARE * psutil.virtual_memory().available / 2**20


def expected_peaks(layout: BookLayout, profile: str) -> dict[str, float]:
    """Each chapter's expected peak memory in MiB for ``profile``: the one measured by the last run on this machine
    (the record of run times), else the one in the chapter's committed paper record (paper profile), else none
    (the chapter is assumed to fit)."""
    peaks = {}
    if profile == "paper":
        for path in sorted((layout.root / "tests" / "paper_records").glob("*.json")):
            try:
                peak = json.loads(path.read_text())["execution"]["peak_rss_mib"]
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a record without a peak says nothing about the chapter's memory
            if _is_peak(peak):
                peaks[path.stem] = float(peak)
    for chapter, timing in store.read_timings(layout.results_dir).get(profile, {}).items():
        if _is_peak(timing["peak_rss_mib"]):
            peaks[chapter] = float(timing["peak_rss_mib"])
    return peaks


def _is_peak(value) -> bool:
    """Whether a recorded peak memory can be trusted for planning: a finite number of MiB, at least 0 (a damaged
    or hand-edited record's NaN or negative value would let chapters start beside anything, or never)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _next_chapter(chapters, pending, running, peaks, budget) -> int | None:
    """The first pending chapter that may start now, or ``None``: a report chapter only when every chapter before
    it has finished, any other when its expected peak fits beside the running ones' (or nothing runs)."""
    reserved = sum(peaks[j] for j in running.values())
    for position, i in enumerate(pending):
        if chapters[i].report:
            if running or position > 0:
                return None  # the report waits for every chapter before it
            return i
        if not running or reserved + peaks[i] <= budget:
            return i
    return None


def _run_concurrently(
    chapters: list[Chapter], run, concurrency: int, *, peaks: list[float] | None = None, budget: float = math.inf
) -> list[Outcome]:
    """``run(i)`` for every chapter, ``concurrency`` at a time and within ``budget`` MiB of expected peaks
    ``peaks`` (MiB per chapter), a report chapter after all before it."""
    peaks = list(peaks) if peaks is not None else [0.0] * len(chapters)
    outcomes: dict[int, Outcome] = {}
    pending = list(range(len(chapters)))
    running: dict = {}
    failure = None
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="chapter")
    try:
        while pending or running:
            while failure is None and pending and len(running) < concurrency:
                i = _next_chapter(chapters, pending, running, peaks, budget)
                if i is None:
                    break
                pending.remove(i)
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


def run_chapter(
    layout: BookLayout,
    name: str,
    profile: str,
    overrides: dict | None = None,
    force: bool = False,
    progress: Progress = silent,
    progress_bar: bool = False,
    engine: Engine | None = None,
) -> Outcome:
    """Execute one chapter for ``profile`` with validated ``overrides`` (skipped when its cached execution
    has the same key, unless ``force``); its tasks go to ``engine`` (in the kernel's process without one)."""
    with book_lock(layout, progress):
        _prepare(layout, progress)
        chapters = notebook_chapters(layout)
        chapter = find_chapter(chapters, name)
        parameters = resolve_parameters(chapter, profile, overrides, results_dir=layout.relative(layout.results_dir))
        overrides = {k: parameters[k] for k in (overrides or {})}
        key = current_key(layout, chapter, parameters, chapters, PackageCode(*layout.package_dirs), versions())
        return _run(layout, chapter, parameters, key, overrides, force, "[1/1]", progress, progress_bar, engine)
