"""Paper records: each chapter's paper-profile results, committed with their provenance.

The paper profile takes minutes per chapter, too long for the test suite to run it. ``python -m attnpaths_book
record-paper`` executes the paper profile of the chapters whose cached execution is stale and copies each
chapter's results file (``_build/results/<chapter>.json``) into ``tests/paper_records/<chapter>.json``;
``tests/book/test_paper_records.py`` recomputes the deterministic numbers of every record from the record's own
parameters. A results file of another profile, or of a paper run with ``--set`` overrides, is refused.

Record layout (JSON object)::

    {"chapter": name, "command": "python -m attnpaths_book record-paper ...", "recorded_utc": ISO 8601,
     "package_version", "commit": git commit of the checkout when recorded (null outside a git checkout),
     "commit_dirty": bool | null (uncommitted changes to tracked files then),
     "versions": {"python", "numpy", "scipy", "torch", "matplotlib"} when recorded,
     "machine": {"platform", "processor", "cpu_count"} when recorded (:mod:`attnpaths_book.provenance`),
     "execution": {"parameters": every parameter the chapter ran with, "overrides": {}, "wall_s",
                   "peak_rss_mib", "cache_key", "command": the command line of the run that executed the chapter
                   ("command" above is the one that recorded it, perhaps without executing anything), "current": whether the chapter's source, the package code it executes
                   and the versions were still those of the run when it was recorded},
     "results": the results file ({"chapter", "profile": "paper", "parameters", "package_version", "values"})}

The command line replaces a record only when the new one has the same numbers (the provenance is then
refreshed) or when the change is accepted (``--accept``); :func:`compare_records` says what changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from attnpaths_book import provenance
from attnpaths_book.cache import EXECUTION_METADATA, PackageCode
from attnpaths_book.chapters import Chapter, resolve_parameters
from attnpaths_book.layout import BookLayout
from attnpaths_book.numeric_diff import Comparison, compare_json
from attnpaths_book.records import read_keyed, record_text
from attnpaths_book.results import atomic_write_text
from attnpaths_book.runner import current_key, is_fresh, notebook_chapters
from attnpaths_book.store import verify_results

PROFILE = "paper"
REQUIRED_KEYS = ("chapter", "command", "recorded_utc", "commit", "commit_dirty", "versions", "execution", "results")
RESULTS_KEYS = ("chapter", "profile", "parameters", "package_version", "values")


def records_dir(layout: BookLayout) -> Path:
    """The folder of the committed paper records, ``tests/paper_records/``."""
    return layout.root / "tests" / "paper_records"


def record_path(layout: BookLayout, chapter: Chapter) -> Path:
    """The chapter's paper record, ``tests/paper_records/<chapter>.json``."""
    return records_dir(layout) / f"{chapter.name}.json"


def _execution(layout: BookLayout, chapter: Chapter) -> dict:
    """The execution record stored in the chapter's executed notebook; it must be a paper run without
    overrides."""
    path = layout.existing(layout.executed_notebook(chapter.docname), chapter.name, "executed notebook", PROFILE)
    execution = nbformat.read(path, as_version=4).metadata.get(EXECUTION_METADATA)
    if not isinstance(execution, dict) or execution.get("profile") != PROFILE:
        found = execution.get("profile") if isinstance(execution, dict) else None
        raise ValueError(
            f"chapter {chapter.name!r}: {layout.relative(path)} was executed with the {found!r} "
            f"profile, not the paper profile: run "
            f"`python -m attnpaths_book run {chapter.name} --profile paper`"
        )
    if execution.get("overrides"):
        raise ValueError(
            f"chapter {chapter.name!r}: its paper run had the overrides {execution['overrides']} "
            f"(--set); a record holds the paper profile itself: run "
            f"`python -m attnpaths_book run {chapter.name} --profile paper`"
        )
    return execution


def read_paper_results(layout: BookLayout, chapter: Chapter) -> dict:
    """The chapter's results file, which must hold the paper profile's results.

    Raises ``FileNotFoundError`` naming the chapter when the file is missing, ``ValueError`` naming the
    chapter and the profile found when it is not the paper profile's or names another chapter.
    """
    path = layout.existing(layout.results_file(chapter.name), chapter.name, "results file", PROFILE)
    results = verify_results(layout.results_dir, chapter.name)
    missing = [key for key in RESULTS_KEYS if key not in results]
    if missing:
        raise ValueError(
            f"chapter {chapter.name!r}: {layout.relative(path)} is not a results file (missing the keys {missing})"
        )
    if results["profile"] != PROFILE:
        raise ValueError(
            f"chapter {chapter.name!r}: {layout.relative(path)} holds the {results['profile']!r} "
            f"profile's results, not the paper profile's: run "
            f"`python -m attnpaths_book run {chapter.name} --profile paper` first"
        )
    if results["chapter"] != chapter.name:
        raise ValueError(
            f"chapter {chapter.name!r}: {layout.relative(path)} holds the results of chapter {results['chapter']!r}"
        )
    return results


def make_record(layout: BookLayout, chapter: Chapter, command: str) -> dict:
    """The record of the chapter's current paper results (see the module docstring for its layout).

    Args:
        layout: the book checkout.
        chapter: an executable chapter of the book.
        command: the command line that makes the record (stored as provenance).

    Raises ``FileNotFoundError`` / ``ValueError`` (see :func:`read_paper_results`) when the results file or
    the executed notebook is missing or not from a paper run without overrides.
    """
    if not chapter.is_notebook:
        raise ValueError(f"chapter must be an executable chapter, got the page {chapter.name!r}")
    results = read_paper_results(layout, chapter)
    execution = _execution(layout, chapter)
    ran_with = execution.get("parameters") or {}
    differing = sorted(k for k, v in results["parameters"].items() if k in ran_with and ran_with[k] != v)
    if differing:
        raise ValueError(
            f"chapter {chapter.name!r}: its results file and its executed notebook come from different "
            f"runs (parameters {differing} differ): run `python -m attnpaths_book run {chapter.name} "
            "--profile paper`"
        )
    chapters = notebook_chapters(layout)
    # a load now says nothing of the run; the records written before this one do not make the code dirty
    found = provenance.collect(
        layout.root, load=False, ignore=[records_dir(layout).relative_to(layout.root).as_posix()]
    )
    key = current_key(
        layout, chapter, execution["parameters"], chapters, PackageCode(*layout.package_dirs), found["versions"]
    )
    return {
        "chapter": chapter.name,
        "command": command,
        "recorded_utc": provenance.utc_now(),
        **found,
        "execution": {
            "parameters": execution["parameters"],
            "overrides": execution.get("overrides", {}),
            "wall_s": execution.get("wall_s"),
            "peak_rss_mib": execution.get("peak_rss_mib"),
            "command": execution.get("command"),
            "cache_key": execution.get("cache_key"),
            "current": is_fresh(layout, chapter, key),
        },
        "results": results,
    }


def read_record(path) -> dict:
    """Read a paper record; ``FileNotFoundError`` naming the file if it is missing, ``ValueError`` if it lacks
    one of the required keys."""
    absent = FileNotFoundError(f"no paper record at {path}: run `python -m attnpaths_book record-paper`")
    return read_keyed(path, "paper record", REQUIRED_KEYS, absent)


def write_record(layout: BookLayout, chapter: Chapter, record: dict) -> Path:
    """Write ``record`` (from :func:`make_record`) to the chapter's record file; returns its path."""
    text = record_text(record, REQUIRED_KEYS)
    if record["chapter"] != chapter.name:
        raise ValueError(f"record must be chapter {chapter.name!r}'s, got chapter {record['chapter']!r}'s")
    return atomic_write_text(record_path(layout, chapter), text)


def compare_records(old: dict, new: dict) -> Comparison:
    """Compare the results (parameters and values) of two records of one chapter, number by number; the
    provenance, run times and other volatile values are not compared (see :mod:`~attnpaths_book.numeric_diff`)."""
    for name, record in (("old", old), ("new", new)):
        if not isinstance(record, dict) or "results" not in record:
            raise ValueError(f"{name} must be a paper record (a dict with a 'results' entry)")
    return compare_json(old["results"], new["results"])


def record_problems(layout: BookLayout, chapter: Chapter, record: dict) -> list[str]:
    """Why ``record`` is not a well-formed paper record of the chapter's current paper profile (empty list:
    it is one): missing keys, another chapter or profile, overrides, or parameters that differ from those the
    chapter's paper profile gives now."""
    missing = [key for key in REQUIRED_KEYS if key not in record]
    if missing:
        return [f"the record lacks the keys {missing}"]
    problems = []
    results, execution = record["results"], record["execution"]
    missing = [key for key in RESULTS_KEYS if key not in results]
    if missing:
        problems.append(f"its results lack the keys {missing}")
    if record["chapter"] != chapter.name or results.get("chapter") != chapter.name:
        problems.append(
            f"it is the record of chapter {record['chapter']!r} ({results.get('chapter')!r} in its results)"
        )
    if results.get("profile") != PROFILE:
        problems.append(f"it holds the {results.get('profile')!r} profile's results, not the paper profile's")
    if execution.get("overrides"):
        problems.append(f"its run had the overrides {execution['overrides']}")
    parameters = resolve_parameters(chapter, PROFILE, results_dir=layout.relative(layout.results_dir))
    expected = json.loads(json.dumps(parameters))
    recorded = execution.get("parameters")
    if recorded != expected:
        differing = sorted(k for k in set(expected) | set(recorded or {}) if (recorded or {}).get(k) != expected.get(k))
        problems.append(
            f"it was made with other parameters than the chapter's paper profile now gives (differing: {differing})"
        )
    if not results.get("values"):
        problems.append("its results hold no values")
    return problems
