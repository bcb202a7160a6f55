"""What the book keeps on disk, read back with checks: every JSON file through :func:`read_json`, and each
chapter's outputs as one unit that a manifest makes current.

A chapter's **unit** is what one successful execution leaves: its results file
(``_build/results/<chapter>.json``), its executed notebook (``_build/executed/<docname>.ipynb``) and its entry in
the run times (``_build/results/_timings.json``). The **manifest** ``_build/results/.manifests/<chapter>.json``
records the execution (cache key, profile, parameters) and the SHA-256 of the results file and of the notebook.
A unit is current only when its manifest exists and both files match their checksums: a results file that was
edited, truncated or replaced by hand, or a notebook that was, makes the chapter stale, and every reader that
verifies (:func:`verify_results`) says which file and why instead of returning its numbers.

:func:`commit_unit` makes a new unit current:

1. every new file is written to a temporary file beside its target (a folder that cannot be written, a full
   disk: the error names the file, and nothing has changed);
2. a **journal** (``.manifests/<chapter>.journal/``) keeps hard links to the files about to be replaced and
   the checksum of the new manifest;
3. the results file, the notebook and the timings are renamed into place, then the manifest: the rename of the
   manifest is the commit;
4. the journal is removed.

An error in step 3 puts the journalled files back before it is raised. A process killed in step 3 leaves the
journal, and :func:`recover` (which every command that reads or writes units calls first, holding the build
lock) completes the unit's story: it keeps the new unit when the new manifest is in place and otherwise puts
the previous files back. Either way the files on disk are one whole unit, the previous one or the new one.

The checksums detect damage and edits; they are no protection against someone who rewrites a file and its
manifest together.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from attnpaths.json_files import DamagedFile, read_json
from attnpaths_book.layout import TIMINGS_FILE

__all__ = [
    "CommitFailed",
    "DamagedFile",
    "UnitState",
    "commit_unit",
    "manifest_path",
    "read_json",
    "read_manifest",
    "read_timings",
    "recover",
    "sha256_of",
    "unit_state",
    "verify_results",
]

MANIFEST_FOLDER = ".manifests"
"""Folder of the manifests, inside the results folder (so that a reader who knows only the results folder,
like the reproducibility chapter, can verify what it reads)."""
JOURNAL_SUFFIX = ".journal"
JOURNAL_FILE = "journal.json"


class CommitFailed(OSError):
    """A chapter's new unit could not be made current; the previous unit is unchanged (the message says so)."""


def sha256_of(path) -> str:
    """SHA-256 of the file's bytes, hexadecimal."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def manifest_path(results_dir, chapter: str) -> Path:
    return Path(results_dir) / MANIFEST_FOLDER / f"{chapter}.json"


def _journal_dir(results_dir, chapter: str) -> Path:
    return Path(results_dir) / MANIFEST_FOLDER / f"{chapter}{JOURNAL_SUFFIX}"


def read_manifest(results_dir, chapter: str) -> dict | None:
    """The chapter's manifest, ``None`` when it has none; :class:`DamagedFile` when it is damaged."""
    path = manifest_path(results_dir, chapter)
    if not path.is_file():
        return None
    manifest = read_json(path, "manifest")
    if (
        not isinstance(manifest.get("files"), dict)
        or not {"results", "notebook"} <= manifest["files"].keys()
        or not isinstance(manifest.get("cache_key"), str)
    ):
        raise DamagedFile(
            path, "this manifest lacks its cache key or the checksums of the results file and the executed notebook"
        )
    return manifest


@dataclass(frozen=True)
class UnitState:
    """Whether a chapter's unit is current for a cache key: ``fresh``, and when it is not, ``reason`` (one line
    naming the file and what is wrong, or that the code or parameters changed). ``manifest`` is the unit's
    manifest when it could be read."""

    fresh: bool
    reason: str
    manifest: dict | None = None


def unit_state(root, results_dir, chapter: str, key: str | None = None) -> UnitState:
    """Check the chapter's unit: its manifest exists and is whole, its files match their checksums, and (when
    ``key`` is given) its cache key is ``key``. Paths in the manifest are relative to ``root``."""
    root = Path(root)
    try:
        manifest = read_manifest(results_dir, chapter)
    except DamagedFile as err:
        return UnitState(False, str(err))
    if manifest is None:
        return UnitState(False, "never executed (no manifest)")
    for role in ("results", "notebook"):
        entry = manifest["files"][role]
        path = root / entry["path"]
        if not path.is_file():
            return UnitState(False, f"its {role} file {entry['path']} is missing", manifest)
        if sha256_of(path) != entry["sha256"]:
            return UnitState(
                False,
                f"its {role} file {entry['path']} does not match the SHA-256 its manifest "
                "records: it was edited or damaged since the run that wrote it",
                manifest,
            )
    if key is not None and manifest["cache_key"] != key:
        return UnitState(
            False, "its sources, the package code it runs, its parameters or the library versions changed", manifest
        )
    return UnitState(True, "", manifest)


def verify_results(results_dir, chapter: str) -> dict:
    """The chapter's results, read from ``<results_dir>/<chapter>.json`` after checking the file against the
    SHA-256 of its manifest. Raises :class:`DamagedFile` when the file was edited or damaged, or when it has no
    manifest (it was not written by a successful run of the book's runner), and ``FileNotFoundError`` when it
    is missing."""
    path = Path(results_dir) / f"{chapter}.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no results for chapter {chapter!r} at {path}: run `python -m attnpaths_book run {chapter}`"
        )
    manifest = read_manifest(results_dir, chapter)
    if manifest is None:
        raise DamagedFile(
            path,
            f"this results file has no manifest ({manifest_path(results_dir, chapter)}): it "
            "was not written by a successful run of the book's runner",
        )
    if sha256_of(path) != manifest["files"]["results"]["sha256"]:
        raise DamagedFile(
            path,
            "this results file does not match the SHA-256 its manifest records: it was edited "
            f"or damaged since the run that wrote it; run `python -m attnpaths_book run {chapter}`",
        )
    return read_json(path, "results file")


_COMMITS = threading.Lock()
"""Commits of one process one at a time: chapters executing in several threads share the timings file."""


def _temporary_beside(target: Path, text: str) -> Path:
    """Write ``text`` into a new temporary file in ``target``'s folder (created if needed); returns its path.
    An error names the target."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise CommitFailed(f"cannot write {target}: {err.strerror or err}") from err
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(name, 0o644)  # mkstemp creates owner-only files; the book's files are for every reader
    except OSError as err:
        Path(name).unlink(missing_ok=True)
        raise CommitFailed(f"cannot write {target}: {err.strerror or err}") from err
    return Path(name)


def _keep(path: Path, backup: Path) -> None:
    """Keep the current ``path`` as ``backup`` (a hard link: instant and no space; a copy where links fail)."""
    try:
        os.link(path, backup)
    except OSError:
        shutil.copy2(path, backup)


def read_timings(results_dir) -> dict:
    """The recorded run times, ``{profile: {chapter: {"wall_s", "peak_rss_mib", "cache_key", "finished", ...}}}``
    (``{}`` before the first run); :class:`DamagedFile` naming the file when it is damaged."""
    path = Path(results_dir) / TIMINGS_FILE
    if not path.is_file():
        return {}
    timings = read_json(path, "record of run times")
    if not all(isinstance(v, dict) and all(isinstance(e, dict) for e in v.values()) for v in timings.values()):
        raise DamagedFile(path, "this record of run times must map each profile to {chapter: {wall_s, ...}}")
    return timings


def commit_unit(
    root, results_dir, chapter: str, files: dict[str, tuple[Path, str]], manifest: dict, timing: dict | None = None
) -> dict:
    """Make a chapter's new unit current (see the module docstring): ``files`` maps ``"results"`` and
    ``"notebook"`` to ``(target path, text)``; ``timing`` is the chapter's new entry in the timings file under
    ``manifest["profile"]`` (``None``: the timings are left alone). ``manifest`` is completed with the files'
    relative paths and checksums and written last. Returns the manifest. Raises :class:`CommitFailed` (the
    previous unit unchanged) when a file cannot be written, :class:`DamagedFile` when the timings file is."""
    root, results_dir = Path(root), Path(results_dir)
    targets = {role: Path(path) for role, (path, _) in files.items()}
    texts = {role: text for role, (_, text) in files.items()}
    manifest = {
        **manifest,
        "chapter": chapter,
        "committed": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "files": {
            role: {"path": _relative(root, targets[role]), "sha256": _sha256_text(texts[role])}
            for role in ("results", "notebook")
        },
    }
    manifest_text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    texts["manifest"] = manifest_text
    with _COMMITS:
        recover(results_dir, chapter)
        if timing is not None:  # read under the lock: chapters of one run commit from several threads
            timings = read_timings(results_dir)
            timings.setdefault(manifest["profile"], {})[chapter] = timing
            targets["timings"] = results_dir / TIMINGS_FILE
            texts["timings"] = json.dumps(timings, indent=1, sort_keys=True) + "\n"
        targets["manifest"] = manifest_path(results_dir, chapter)  # the last rename: the commit
        temporaries: dict[str, Path] = {}
        try:
            for role, target in targets.items():
                temporaries[role] = _temporary_beside(target, texts[role])
            journal = _write_journal(results_dir, chapter, targets, _sha256_text(manifest_text))
        except BaseException:
            for temporary in temporaries.values():
                temporary.unlink(missing_ok=True)
            raise
        try:
            for role in targets:
                os.replace(temporaries[role], targets[role])
        except BaseException as err:
            for temporary in temporaries.values():
                temporary.unlink(missing_ok=True)
            _roll_back(journal)
            if isinstance(err, OSError):
                raise CommitFailed(
                    f"cannot replace {targets[role]}: {err.strerror or err}; the previous results, "
                    "notebook and timings are unchanged"
                ) from err
            raise
        shutil.rmtree(journal, ignore_errors=True)
    return manifest


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _write_journal(results_dir: Path, chapter: str, targets: dict[str, Path], new_manifest_sha256: str) -> Path:
    """Hard links to the files a commit will replace, and what they were, in the chapter's journal folder;
    complete once ``journal.json`` exists (written last)."""
    journal = _journal_dir(results_dir, chapter)
    shutil.rmtree(journal, ignore_errors=True)
    try:
        journal.mkdir(parents=True)
        entries = {}
        for role, target in targets.items():
            if target.is_file():
                _keep(target, journal / role)
                entries[role] = {"target": str(target.resolve()), "kept": role}
            else:
                entries[role] = {"target": str(target.resolve()), "kept": None}
        record = json.dumps({"files": entries, "new_manifest_sha256": new_manifest_sha256})
        (journal / f"{JOURNAL_FILE}.tmp").write_text(record)
        os.replace(journal / f"{JOURNAL_FILE}.tmp", journal / JOURNAL_FILE)
    except OSError as err:
        shutil.rmtree(journal, ignore_errors=True)
        raise CommitFailed(
            f"cannot keep the previous files of chapter {chapter!r} in {journal}: "
            f"{err.strerror or err}; nothing was changed"
        ) from err
    return journal


def _roll_back(journal: Path) -> None:
    """Put back the files that ``journal`` kept (and remove those that did not exist before), then remove it."""
    record = read_json(journal / JOURNAL_FILE, "commit journal")
    for entry in record["files"].values():
        target = Path(entry["target"])
        if entry["kept"] is None:
            target.unlink(missing_ok=True)
        else:
            os.replace(journal / entry["kept"], target)
    shutil.rmtree(journal, ignore_errors=True)


def recover(results_dir, chapter: str | None = None) -> list[str]:
    """Finish the commits that a killed process left half done (every chapter's, or ``chapter``'s): a journal
    whose new manifest is in place is removed (the new unit is whole), any other puts the previous files back.
    Returns the chapters whose previous unit was put back. Call it holding the build lock."""
    folder = Path(results_dir) / MANIFEST_FOLDER
    if not folder.is_dir():
        return []
    journals = [_journal_dir(results_dir, chapter)] if chapter else sorted(folder.glob(f"*{JOURNAL_SUFFIX}"))
    restored = []
    for journal in journals:
        if not journal.is_dir():
            continue
        name = journal.name[: -len(JOURNAL_SUFFIX)]
        if not (journal / JOURNAL_FILE).is_file():  # killed while writing the journal: nothing was replaced yet
            shutil.rmtree(journal, ignore_errors=True)
            continue
        record = read_json(journal / JOURNAL_FILE, "commit journal")
        current = manifest_path(results_dir, name)
        if current.is_file() and sha256_of(current) == record["new_manifest_sha256"]:
            shutil.rmtree(journal, ignore_errors=True)
        else:
            _roll_back(journal)
            restored.append(name)
    return restored
