"""Where the book's files live: sources at the repository root, everything generated under ``_build/``."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TIMINGS_FILE = "_timings.json"
Progress = Callable[[str], None]
"""A progress callback: receives one line of text (the command line prints it; the library never does)."""


def silent(message: str) -> None:
    """The default progress callback: says nothing."""


@dataclass(frozen=True)
class BookLayout:
    """Paths of one book checkout.

    ``root`` holds ``_config.yml``, ``_toc.yml`` and the chapter sources (``book/*.md``). Generated files:

    - ``_build/executed/``: the Sphinx source folder: executed chapter notebooks at the toc paths
      (``book/<chapter>.ipynb``) and copies of the book's other files;
    - ``_build/results/<chapter>.json``: the chapters' results files, ``_build/results/_timings.json`` the
      wall time and peak memory of each chapter per profile;
    - ``_build/failed/<chapter>.ipynb``: the partly executed notebook of the last failed run of a chapter;
    - ``_build/html/``: the HTML book.
    """

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "_config.yml"

    @property
    def toc(self) -> Path:
        return self.root / "_toc.yml"

    @property
    def package_dir(self) -> Path:
        """The library's sources (``src/attnpaths``), which every chapter depends on."""
        return self.root / "src" / "attnpaths"

    @property
    def package_dirs(self) -> tuple[Path, Path]:
        """The sources a chapter can execute: the library and the book's companion (``src/attnpaths_book``)."""
        return (self.package_dir, self.root / "src" / "attnpaths_book")

    @property
    def build_dir(self) -> Path:
        return self.root / "_build"

    @property
    def executed_dir(self) -> Path:
        return self.build_dir / "executed"

    @property
    def results_dir(self) -> Path:
        return self.build_dir / "results"

    @property
    def failed_dir(self) -> Path:
        return self.build_dir / "failed"

    @property
    def html_dir(self) -> Path:
        return self.build_dir / "html"

    @property
    def timings(self) -> Path:
        return self.results_dir / TIMINGS_FILE

    @property
    def lock(self) -> Path:
        return self.build_dir / ".lock"

    @property
    def baselines_dir(self) -> Path:
        return self.root / "tests" / "baselines"

    def executed_notebook(self, docname: str) -> Path:
        """Executed notebook of the chapter at toc path ``docname`` (e.g. ``book/intro``)."""
        return self.executed_dir / f"{docname}.ipynb"

    def results_file(self, chapter: str) -> Path:
        return self.results_dir / f"{chapter}.json"

    def relative(self, path: Path) -> str:
        """``path`` relative to the root when it lies inside it (so executed notebooks show portable paths)."""
        path = Path(path)
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)


def find_root(start=None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) holding ``_toc.yml`` and
    ``_config.yml``; raises ``FileNotFoundError`` if there is none."""
    start = Path.cwd() if start is None else Path(start)
    for folder in (start.resolve(), *start.resolve().parents):
        if (folder / "_toc.yml").is_file() and (folder / "_config.yml").is_file():
            return folder
    raise FileNotFoundError(f"no book here: neither {start} nor a folder above it holds _toc.yml and _config.yml")


SUITE_BOOK = "tests-book"
"""Folder in ``_build/`` of the book that the test suite and ``refresh-baselines`` execute (:func:`suite_book`)."""
NOT_MIRRORED = ("_build", ".git", ".pytest_cache")


def suite_book(root) -> BookLayout:
    """The book that the test suite and ``refresh-baselines`` execute and read: ``<root>/_build/tests-book/``, a
    folder whose entries are links to the checkout's (``book/``, ``src/``, ``tests/``, ``_config.yml``,
    ``_toc.yml``, ...) and whose ``_build/`` is its own. Executing it never reads, refuses or replaces what the
    reader built in ``<root>/_build/`` (a paper-profile run keeps its cache), and relative to it the results
    folder is ``_build/results``, as the smoke baselines record. The links are made anew on each call, so the
    folder follows the checkout's entries."""
    root = Path(root).resolve()
    mirror = root / "_build" / SUITE_BOOK
    mirror.mkdir(parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in root.iterdir() if entry.name not in NOT_MIRRORED}
    for link in mirror.iterdir():
        if link.is_symlink() and (link.name not in wanted or Path(os.readlink(link)) != wanted[link.name]):
            link.unlink()
    for name, entry in wanted.items():
        if not (mirror / name).is_symlink():
            (mirror / name).symlink_to(entry)
    return BookLayout(mirror)


LOCK_POLL_S = 0.2
"""How often a run waiting for the build lock tries again."""


@contextmanager
def book_lock(layout: BookLayout, progress: Progress = silent):
    """Hold the checkout's build lock, ``_build/.lock``, so that two runs or builds in the same checkout never
    interleave. Not re-entrant: take it once per operation.

    The lock is an advisory ``flock`` on the file, which the operating system releases when its holder ends,
    however it ends: the lock of a killed process never blocks. The holder records its PID, command and start
    time in the file. While another process holds the lock, this one waits and says so through ``progress``,
    naming the lock file and the holder's PID and command (again if the holder changes), then says when it got
    the lock.
    """
    layout.build_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(layout.lock, os.O_RDWR | os.O_CREAT, 0o644)  # never truncated before it is held
    try:
        _acquire(fd, layout, progress)
        try:
            command = shlex.join([Path(sys.orig_argv[0]).name, *sys.orig_argv[1:]])
            holder = {"pid": os.getpid(), "command": command, "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _parse_holder(text: str) -> dict | None:
    try:
        holder = json.loads(text)
    except ValueError:  # empty (free, or being written)
        return None
    return holder if isinstance(holder, dict) and {"pid", "command", "since"} <= holder.keys() else None


def _describe(holder: dict | None) -> str:
    if holder is None:
        return "another process (it has not recorded its PID yet)"
    try:
        os.kill(holder["pid"], 0)
        alive = True
    except ProcessLookupError:
        alive = False
    except PermissionError:  # exists, owned by another user
        alive = True
    state = "" if alive else "; it has ended, but a process it started still holds the lock"
    return f"PID {holder['pid']} ({holder['command']}, since {holder['since']}{state})"


def _acquire(fd: int, layout: BookLayout, progress: Progress) -> None:
    """Take the lock on ``fd``, polling every :data:`LOCK_POLL_S` while another process holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    lock = layout.relative(layout.lock)
    start, reported, last = time.monotonic(), False, None
    while True:
        holder = _parse_holder(os.pread(fd, 65536, 0).decode(errors="replace"))
        waited = time.monotonic() - start
        # the holder writes its record right after taking the lock: give it a second before naming no one
        if holder is not None and holder != last or not reported and waited > 1.0:
            progress(f"waiting for the build lock {lock} of this checkout, held by {_describe(holder)} ...")
            reported, last = True, holder
        time.sleep(LOCK_POLL_S)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            continue
    if reported:
        progress(f"got the build lock {lock} after waiting {time.monotonic() - start:.1f} s")
