"""What the book keeps on disk, read back with checks: every JSON file through
:func:`~attnpaths.json_files.read_json`, and each chapter's outputs as one unit that a manifest makes current.

A chapter's **unit** is what one successful execution leaves: its results file
(``_build/results/<chapter>.json``), its executed notebook (``_build/executed/<docname>.ipynb``) and its entry in
the run times (``_build/results/_timings.json``). The **manifest** ``_build/results/.manifests/<chapter>.json``
records the execution (cache key, profile, parameters) and the SHA-256 of the results file and of the notebook.
A unit is current only when its manifest exists and both files match their checksums: a results file that was
edited, truncated or replaced by hand, or a notebook that was, makes the chapter stale, and every reader that
verifies (:func:`verify_results`) says which file and why instead of returning its numbers.

Every key a reader uses is checked when the manifest is read (:func:`read_manifest`): one of the wrong shape makes
the chapter stale, and the reason names the file and the key, as for the record of run times (:func:`read_timings`).

:func:`commit_unit` makes a new unit current:

1. every new file is written to a temporary file beside its target (``.<name>.<8 characters>.tmp``; a folder that
   cannot be written, a full disk: the error names the file, and nothing has changed);
2. a **journal** (``.manifests/<chapter>.journal/``) keeps a copy of each file about to be replaced (a hard link,
   or a copy where the file lies on another file system) and records, per file, its target (relative to the
   results folder or the executed notebooks' folder, the only folders a unit lies in, :func:`unit_folders`), the
   SHA-256 of its kept copy and of its new content, the SHA-256 of the new manifest, and a checksum of itself;
3. the results file, the notebook and the timings are renamed into place, then the manifest: the rename of the
   manifest is the commit;
4. the journal is removed.

An error in step 3 rolls back before it is raised, and a process killed in step 3 (or in a roll-back) leaves the
journal, which :func:`recover` (which every command that reads or writes units calls first, holding the build
lock) finishes: it keeps the new unit when the new manifest is in place and otherwise rolls back, touching only
what the commit replaced (a target holding anything but the commit's new content is left alone), so that it can
be run again after it was interrupted. Either way the files on disk are one whole unit, the previous one or the
new one. When a file cannot be put back (its folder became read-only), the chapter is stale, the journal stays
for the next command, and the chapter's next commit replaces it.

The checksums detect damage and edits; they are no protection against someone who rewrites a file and its
manifest (or a journal and its checksum) together.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from attnpaths.checkpoints import file_sha256 as sha256_of  # the SHA-256 of a file's bytes, hexadecimal
from attnpaths.checkpoints import is_sha256
from attnpaths.json_files import NUMBER, OBJECT, TEXT, DamagedFile, read_json, require_key
from attnpaths_book.layout import EXECUTED_FOLDER, TIMINGS_FILE, Progress, silent

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
    "unit_folders",
    "unit_state",
    "verify_results",
]

MANIFEST_FOLDER = ".manifests"
"""Folder of the manifests, inside the results folder (so that a reader who knows only the results folder,
like the reproducibility chapter, can verify what it reads)."""
JOURNAL_SUFFIX = ".journal"
JOURNAL_FILE = "journal.json"
ROLES = ("results", "notebook", "timings", "manifest")
"""The files of a unit, in the order a commit renames them into place (the manifest last: its rename commits)."""
TEMPORARY = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
"""Name of a temporary file that a commit or a roll-back writes beside a unit's file: ``.<name>.<8 characters>.tmp``."""
FOLDER_NAMES = ("results", "executed")
"""How a journal names the folders of :func:`unit_folders`: a target ``executed/book/theory.ipynb``."""

_DIGEST = (is_sha256, "a SHA-256 (64 hexadecimal digits)")
_DIGEST_OR_NULL = (lambda v: v is None or is_sha256(v), "null or a SHA-256 (64 hexadecimal digits)")
MANIFEST_KEYS = {
    "cache_key": TEXT,
    "profile": TEXT,
    "execution": OBJECT,
    "files.results.path": TEXT,
    "files.results.sha256": _DIGEST,
    "files.notebook.path": TEXT,
    "files.notebook.sha256": _DIGEST,
}
"""What a manifest must hold, by (dotted) key, and of which kind: what the readers of units use."""
TIMING_KEYS = {"wall_s": NUMBER, "peak_rss_mib": NUMBER, "cache_key": TEXT}
"""What each chapter's entry in the record of run times must hold."""


class CommitFailed(OSError):
    """A chapter's new unit could not be made current; the previous unit is unchanged (the message says so)."""


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def unit_folders(results_dir) -> tuple[Path, Path]:
    """The folders a chapter's unit lies in: the results folder (with the manifests and the timings) and the
    executed notebooks' folder beside it, ``<results_dir>/../executed`` (``BookLayout.executed_dir``). A commit
    writes, and a recovery changes, files in these folders only."""
    results_dir = Path(results_dir)
    return results_dir, results_dir.parent / EXECUTED_FOLDER


def manifest_path(results_dir, chapter: str) -> Path:
    """Where the chapter's manifest lives, ``<results_dir>/.manifests/<chapter>.json``."""
    return Path(results_dir) / MANIFEST_FOLDER / f"{chapter}.json"


def read_manifest(results_dir, chapter: str) -> dict | None:
    """The chapter's manifest, ``None`` when it has none; :class:`DamagedFile` naming the file (and the key) when
    it is damaged or lacks a key of ``MANIFEST_KEYS``."""
    path = manifest_path(results_dir, chapter)
    if not path.is_file():
        return None
    manifest = read_json(path, "manifest")
    for key, kind in MANIFEST_KEYS.items():
        require_key(path, "manifest", manifest, key, kind)
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


def _temporary_name(target: Path) -> Path:
    return target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"


def _temporary_beside(target: Path, data: bytes) -> Path:
    """Write ``data`` into a new temporary file in ``target``'s folder (created if needed); returns its path.
    An error names the target."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise CommitFailed(f"cannot write {target}: {err.strerror or err}") from err
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(name, 0o644)  # mkstemp creates owner-only files; the book's files are for every reader
    except OSError as err:
        _unlink_quietly(Path(name))
        raise CommitFailed(f"cannot write {target}: {err.strerror or err}") from err
    return Path(name)


def _unlink_quietly(*paths: Path) -> None:
    """Remove temporary files where possible: one that cannot be removed (a folder made read-only) is left for
    :func:`recover`, and must not hide the error being handled."""
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def _is_regular_file(path: Path) -> bool:
    """``path`` is a regular file itself, not a link to one (a link could lead outside the checkout)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _keep(path: Path, backup: Path) -> None:
    """Keep the current ``path`` as ``backup`` (a hard link: instant and no space; a copy where links fail, as
    across file systems). Links are not followed."""
    try:
        os.link(path, backup, follow_symlinks=False)
    except OSError:
        shutil.copy2(path, backup, follow_symlinks=False)


def _put_back(kept: Path, target: Path) -> None:
    """Replace ``target`` by the file ``kept``: linked or copied to a temporary file beside the target, then
    renamed, so that nothing is renamed across file systems and ``kept`` stays where it is."""
    temporary = _temporary_name(target)
    try:
        _keep(kept, temporary)
        os.replace(temporary, target)
    except BaseException:
        _unlink_quietly(temporary)
        raise


def read_timings(results_dir) -> dict:
    """The recorded run times, ``{profile: {chapter: {"wall_s", "peak_rss_mib", "cache_key", "finished", ...}}}``
    (``{}`` before the first run); :class:`DamagedFile` naming the file (and the key) when it is damaged."""
    path = Path(results_dir) / TIMINGS_FILE
    if not path.is_file():
        return {}
    what = "record of run times"
    timings = read_json(path, what)
    for profile, chapters in timings.items():
        require_key(path, what, timings, (profile,), OBJECT)
        for chapter in chapters:
            for key, kind in TIMING_KEYS.items():
                require_key(path, what, timings, (profile, chapter, key), kind)
    return timings


def commit_unit(
    root, results_dir, chapter: str, files: dict[str, tuple[Path, str]], manifest: dict, timing: dict | None = None
) -> dict:
    """Make a chapter's new unit current (see the module docstring): ``files`` maps ``"results"`` and
    ``"notebook"`` to ``(target path, text)``, targets in :func:`unit_folders`; ``timing`` is the chapter's new
    entry in the timings file under ``manifest["profile"]`` (``None``: the timings are left alone). ``manifest`` is
    completed with the files' relative paths and checksums and written last. Returns the manifest. Raises
    :class:`CommitFailed` when a file cannot be written (the previous unit unchanged, or, when it could not be put
    back either, the chapter stale: the message says which), :class:`DamagedFile` when the timings file is
    damaged, ``ValueError`` when a target lies outside :func:`unit_folders`."""
    root, results_dir = Path(root), Path(results_dir)
    if sorted(files) != ["notebook", "results"]:
        raise ValueError(f"files must map 'results' and 'notebook' to (target, text), got the keys {sorted(files)}")
    targets = {role: Path(path) for role, (path, _) in files.items()}
    data = {role: text.encode() for role, (_, text) in files.items()}
    manifest = {
        **manifest,
        "chapter": chapter,
        "committed": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "files": {
            role: {"path": _relative(root, targets[role]), "sha256": _sha256_bytes(data[role])}
            for role in ("results", "notebook")
        },
    }
    data["manifest"] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    with _COMMITS:
        recover(results_dir, chapter)
        if timing is not None:  # read under the lock: chapters of one run commit from several threads
            timings = read_timings(results_dir)
            timings.setdefault(manifest["profile"], {})[chapter] = timing
            targets["timings"] = results_dir / TIMINGS_FILE
            data["timings"] = (json.dumps(timings, indent=1, sort_keys=True) + "\n").encode()
        targets["manifest"] = manifest_path(results_dir, chapter)  # the last rename: the commit
        names = {role: _journal_name(results_dir, target) for role, target in targets.items()}
        temporaries: dict[str, Path] = {}
        try:
            for role, target in targets.items():
                temporaries[role] = _temporary_beside(target, data[role])
            journal = _write_journal(results_dir, chapter, targets, names, data)
        except BaseException:
            _unlink_quietly(*temporaries.values())
            raise
        try:
            for role in targets:
                os.replace(temporaries[role], targets[role])
        except BaseException as err:
            _unlink_quietly(*temporaries.values())  # a folder that turned read-only must not skip the roll-back
            _raise_after_roll_back(results_dir, journal, chapter, targets[role], err)
        shutil.rmtree(journal, ignore_errors=True)
    return manifest


def _raise_after_roll_back(results_dir: Path, journal: Path, chapter: str, target: Path, err: BaseException):
    """Roll back the commit whose rename onto ``target`` raised ``err``, then raise: for an ``OSError``, a
    :class:`CommitFailed` in one line saying whether the previous unit is back; otherwise (an interrupt) ``err``,
    the journal left for the next command when the roll-back could not finish."""
    try:
        _roll_back(journal, _read_journal(journal, results_dir, chapter)[0])
    except (OSError, DamagedFile) as failure:
        if not isinstance(err, OSError):
            raise err from failure
        raise CommitFailed(
            f"cannot replace {target}: {_reason(err)}, and the previous files could not all be put back "
            f"({_reason(failure)}): chapter {chapter!r} is stale until a later command puts them back from "
            f"{journal} or its next run replaces them"
        ) from err
    if isinstance(err, OSError):
        raise CommitFailed(
            f"cannot replace {target}: {_reason(err)}; the previous results, notebook and timings are unchanged"
        ) from err
    raise err


def _reason(err: Exception) -> str:
    """What went wrong, in a few words: an OS error's text (without the paths), a damaged file's message."""
    return str(err) if isinstance(err, DamagedFile) or not err.strerror else err.strerror


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _where(path: Path) -> Path:
    """``path`` with its folder resolved: the file a rename or an unlink of ``path`` acts on (not a link's target)."""
    return path.parent.resolve() / path.name


def _journal_name(results_dir: Path, target: Path) -> str:
    """How a journal names ``target``: relative to the one of :func:`unit_folders` it lies in (``ValueError`` for
    a target elsewhere)."""
    where = _where(target)
    for name, folder in zip(FOLDER_NAMES, unit_folders(results_dir)):
        if where.is_relative_to(folder.resolve()):
            return f"{name}/{where.relative_to(folder.resolve()).as_posix()}"
    folders = " or ".join(str(f) for f in unit_folders(results_dir))
    raise ValueError(f"the files of a chapter's unit must lie in {folders}, got {target}")


def _journal_target(results_dir: Path, name: str) -> Path | None:
    """The target a journal names ``name``; ``None`` when the name leaves :func:`unit_folders`."""
    parts = name.split("/")
    if len(parts) < 2 or parts[0] not in FOLDER_NAMES or any(p in ("", ".", "..") or "\0" in p for p in parts[1:]):
        return None
    folder = unit_folders(results_dir)[FOLDER_NAMES.index(parts[0])]
    target = folder.joinpath(*parts[1:])
    return target if _where(target).is_relative_to(folder.resolve()) else None


def _journal_dir(results_dir, chapter: str) -> Path:
    return Path(results_dir) / MANIFEST_FOLDER / f"{chapter}{JOURNAL_SUFFIX}"


def _seal(record: dict) -> dict:
    """``record`` with its checksum ``sha256``: the SHA-256 of its canonical JSON without that key."""
    record = {k: v for k, v in record.items() if k != "sha256"}
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return {**record, "sha256": _sha256_bytes(canonical.encode())}


def _write_journal(
    results_dir: Path, chapter: str, targets: dict[str, Path], names: dict[str, str], data: dict[str, bytes]
) -> Path:
    """Keep the files a commit will replace in the chapter's journal folder, and record what each target held and
    will hold; complete once ``journal.json`` exists (written last). A journal that an earlier roll-back could not
    finish is replaced: this commit makes the chapter's files whole again, or rolls back to them as they are."""
    journal = _journal_dir(results_dir, chapter)
    _discard(journal)
    try:
        journal.mkdir(parents=True)
        files = {}
        for role, target in targets.items():
            kept = role if _is_regular_file(target) else None  # a link is replaced by the commit, never kept
            if kept:
                _keep(target, journal / kept)
            files[role] = {
                "target": names[role],
                "kept": kept,
                "kept_sha256": sha256_of(journal / kept) if kept else None,
                "new_sha256": _sha256_bytes(data[role]),
            }
        record = _seal({"chapter": chapter, "files": files, "new_manifest_sha256": files["manifest"]["new_sha256"]})
        (journal / f"{JOURNAL_FILE}.tmp").write_text(json.dumps(record, indent=1))
        os.replace(journal / f"{JOURNAL_FILE}.tmp", journal / JOURNAL_FILE)
    except OSError as err:
        _discard(journal)
        raise CommitFailed(
            f"cannot keep the previous files of chapter {chapter!r} in {journal}: "
            f"{err.strerror or err}; nothing was changed"
        ) from err
    return journal


@dataclass(frozen=True)
class _Entry:
    """One file of a journal: its target, its kept copy (``None``: the target did not exist), and the SHA-256 of
    the kept copy and of the new content."""

    target: Path
    kept: Path | None
    kept_sha256: str | None
    new_sha256: str


def _read_journal(journal: Path, results_dir: Path, chapter: str) -> tuple[dict[str, _Entry], str]:
    """The entries of ``journal`` (by role) and the SHA-256 of its new manifest, checked before anything acts on
    them: its checksum, its shape, its chapter, targets inside :func:`unit_folders`, kept copies named by plain
    file names inside the journal's folder. :class:`DamagedFile` naming the journal file and what is wrong."""
    path, what = journal / JOURNAL_FILE, "commit journal"
    record = read_json(path, what)
    if "sha256" not in record:  # as the journals of earlier versions, which named their targets by absolute paths
        raise DamagedFile(path, "this commit journal lacks its checksum, the key sha256")
    checksum = require_key(path, what, record, "sha256", _DIGEST)
    if _seal(record)["sha256"] != checksum:
        raise DamagedFile(path, "this commit journal does not match its checksum sha256: it was edited or damaged")
    if require_key(path, what, record, "chapter", TEXT) != chapter:
        raise DamagedFile(path, f"this commit journal's key chapter is {record['chapter']!r}, not {chapter!r}")
    new_manifest = require_key(path, what, record, "new_manifest_sha256", _DIGEST)
    files = require_key(path, what, record, "files", OBJECT)
    if not files or not set(files) <= set(ROLES):
        raise DamagedFile(path, f"this commit journal's key files must map some of {', '.join(ROLES)}")
    entries = {}
    for role in files:
        name = require_key(path, what, record, ("files", role, "target"), TEXT)
        target = _journal_target(results_dir, name)
        if target is None:
            raise DamagedFile(
                path,
                f"this commit journal's key files.{role}.target names {name!r}, which is not inside the results "
                "folder or the executed notebooks' folder",
            )
        kept = require_key(path, what, record, ("files", role, "kept"), _KEPT)
        kept_sha256 = require_key(path, what, record, ("files", role, "kept_sha256"), _DIGEST_OR_NULL)
        if (kept is None) != (kept_sha256 is None):
            raise DamagedFile(path, f"this commit journal's keys files.{role}.kept and kept_sha256 disagree")
        new_sha256 = require_key(path, what, record, ("files", role, "new_sha256"), _DIGEST)
        entries[role] = _Entry(target, None if kept is None else journal / kept, kept_sha256, new_sha256)
    return entries, new_manifest


def _plain_name_or_null(kept) -> bool:
    """A kept copy's name: a file name in the journal's folder (no folder part), not the journal file's."""
    return kept is None or (
        isinstance(kept, str)
        and kept not in ("", ".", "..", JOURNAL_FILE, f"{JOURNAL_FILE}.tmp")
        and not set(kept) & {"/", "\\", "\0"}
    )


_KEPT = (_plain_name_or_null, "null or the name of a file in the journal's folder")


def _roll_back(journal: Path, entries: dict[str, _Entry]) -> None:
    """Put back the previous files of the targets that hold their commit's new content, remove those that the
    commit created, then remove ``journal``. A target holding its previous content (never replaced, or already
    put back) or anything else is left alone, so the roll-back touches only what its commit replaced and can be
    run again after it was interrupted. Raises ``OSError`` when a file cannot be put back and
    :class:`DamagedFile` when the journal's copy of one is missing or damaged; the journal is then left as is."""
    # the manifest first: its rename made the commit, so undoing it first leaves no moment at which a later
    # recovery would take the old files under the new manifest for the new unit
    for role in reversed([r for r in ROLES if r in entries]):
        entry = entries[role]
        current = sha256_of(entry.target) if entry.target.is_file() else None
        if current == entry.kept_sha256 or current not in (entry.new_sha256, None):
            continue
        if entry.kept is None:
            entry.target.unlink(missing_ok=True)
            continue
        if entry.kept.is_symlink() or not entry.kept.is_file() or sha256_of(entry.kept) != entry.kept_sha256:
            raise DamagedFile(entry.kept, f"this copy of the previous {role} file {entry.target} is missing or damaged")
        try:
            _put_back(entry.kept, entry.target)
        except OSError as err:
            raise CommitFailed(f"cannot put back {entry.target}: {_reason(err)}") from err
    _discard(journal)


def _discard(path: Path) -> None:
    """Remove a journal folder (or whatever stands at its path, a link not followed)."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def recover(results_dir, chapter: str | None = None, progress: Progress = silent) -> list[str]:
    """Finish the commits that a killed process left half done (every chapter's, or ``chapter``'s): a journal
    whose new manifest is in place is removed (the new unit is whole), any other is rolled back. A journal that is
    damaged, of the wrong shape or names files outside :func:`unit_folders` is removed without touching any file,
    and a roll-back that cannot finish leaves its journal for the next call; each says one line through
    ``progress``. Without ``chapter``, also removes the temporary files that killed commits left beside the units'
    files. Returns the chapters whose previous unit was put back. Call it holding the build lock."""
    folder = Path(results_dir) / MANIFEST_FOLDER
    if folder.is_symlink():  # its journals would name, and their removal reach, files elsewhere
        progress(f"refused the manifests' folder {folder}: it is a link, not a folder; remove it (a link only)")
        return []
    if not folder.is_dir():
        return []
    journals = [_journal_dir(results_dir, chapter)] if chapter else sorted(folder.glob(f"*{JOURNAL_SUFFIX}"))
    restored = [j.name[: -len(JOURNAL_SUFFIX)] for j in journals if _finish(Path(results_dir), j, progress)]
    if chapter is None:
        _remove_temporaries(Path(results_dir))
    return restored


def _finish(results_dir: Path, journal: Path, progress: Progress) -> bool:
    """Finish one journal (see :func:`recover`); whether the previous unit was put back."""
    chapter = journal.name[: -len(JOURNAL_SUFFIX)]
    if not journal.is_symlink() and not journal.is_dir():
        return False
    if not journal.is_symlink() and not (journal / JOURNAL_FILE).is_file():
        _discard(journal)  # killed while writing the journal: nothing was replaced yet
        return False
    try:
        if journal.is_symlink():
            raise DamagedFile(journal, "this commit journal is a link, not a folder")
        entries, new_manifest = _read_journal(journal, results_dir, chapter)
    except DamagedFile as err:
        _discard(journal)
        progress(
            f"refused the commit journal {err.path}: {err.reason}; removed it without touching any file it names "
            f"(chapter {chapter} is stale if its files do not match its manifest)"
        )
        return False
    current = manifest_path(results_dir, chapter)
    if current.is_file() and sha256_of(current) == new_manifest:
        _discard(journal)
        return False
    try:
        _roll_back(journal, entries)
    except DamagedFile as err:
        _discard(journal)
        progress(f"could not put back the previous files of chapter {chapter}: {err}; removed its journal: it is stale")
        return False
    except OSError as err:
        progress(
            f"could not put back the previous files of chapter {chapter} from {journal}: {_reason(err)}; it is stale "
            "until a later command puts them back or its next run replaces them"
        )
        return False
    return True


def _remove_temporaries(results_dir: Path) -> None:
    """Remove the temporary files (:data:`TEMPORARY`) that killed commits left beside the units' files: in the
    results folder, the manifests' folder and anywhere in the executed notebooks' folder (not following links)."""
    results, executed = unit_folders(results_dir)
    found = [path for folder in (results, results / MANIFEST_FOLDER) for path in folder.glob(".*.json.*.tmp")]
    for folder, _, names in os.walk(executed):  # the notebooks lie in subfolders (book/<chapter>.ipynb)
        found += [Path(folder) / name for name in names if ".ipynb." in name]
    _unlink_quietly(*(path for path in found if TEMPORARY.match(path.name) and not path.is_dir()))
