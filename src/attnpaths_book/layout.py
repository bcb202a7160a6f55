"""Where the book's files live: sources at the repository root, everything generated under ``_build/``."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TIMINGS_FILE = "_timings.json"
EXECUTED_FOLDER = "executed"
"""Folder of the executed notebooks in ``_build/``, beside the results folder ``results``."""
Progress = Callable[[str], None]
"""A progress callback, which receives one line of text (the command line prints it; the library never does)."""


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
        """The book's configuration, ``<root>/_config.yml``."""
        return self.root / "_config.yml"

    @property
    def toc(self) -> Path:
        """The table of contents, ``<root>/_toc.yml``."""
        return self.root / "_toc.yml"

    @property
    def package_dir(self) -> Path:
        """The library's sources (``src/attnpaths``), which every chapter depends on."""
        return self.root / "src" / "attnpaths"

    @property
    def package_dirs(self) -> tuple[Path, Path]:
        """The sources a chapter can execute, the library and the book's companion (``src/attnpaths_book``)."""
        return (self.package_dir, self.root / "src" / "attnpaths_book")

    @property
    def build_dir(self) -> Path:
        """The folder of everything generated, ``<root>/_build``."""
        return self.root / "_build"

    @property
    def executed_dir(self) -> Path:
        """The executed chapter notebooks, the Sphinx source folder (``_build/executed``)."""
        return self.build_dir / EXECUTED_FOLDER

    @property
    def results_dir(self) -> Path:
        """The chapters' results files (``_build/results``)."""
        return self.build_dir / "results"

    @property
    def failed_dir(self) -> Path:
        """The partly executed notebooks of the chapters' last failed runs (``_build/failed``)."""
        return self.build_dir / "failed"

    @property
    def html_dir(self) -> Path:
        """The HTML book (``_build/html``)."""
        return self.build_dir / "html"

    @property
    def timings(self) -> Path:
        """The wall time and peak memory of each chapter per profile (``_build/results/_timings.json``)."""
        return self.results_dir / TIMINGS_FILE

    @property
    def lock(self) -> Path:
        """The lock file that one run of the book at a time holds (``_build/.lock``)."""
        return self.build_dir / ".lock"

    @property
    def baselines_dir(self) -> Path:
        """The regression baselines, ``<root>/tests/baselines``."""
        return self.root / "tests" / "baselines"

    def executed_notebook(self, docname: str) -> Path:
        """Executed notebook of the chapter at toc path ``docname`` (e.g. ``book/intro``)."""
        return self.executed_dir / f"{docname}.ipynb"

    def results_file(self, chapter: str) -> Path:
        """The results file of ``chapter`` (its name, e.g. ``intro``), ``_build/results/<chapter>.json``."""
        return self.results_dir / f"{chapter}.json"

    def existing(self, path: Path, chapter: str, what: str, profile: str = "smoke") -> Path:
        """``path``, chapter ``chapter``'s ``what``: ``FileNotFoundError`` saying which run makes it when it is
        missing."""
        if not Path(path).is_file():
            option = "" if profile == "smoke" else f" --profile {profile}"
            raise FileNotFoundError(
                f"chapter {chapter!r} has no {what} at {self.relative(path)}: "
                f"run `python -m attnpaths_book run {chapter}{option}`"
            )
        return Path(path)

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
def book_lock(layout: BookLayout, progress: Progress = silent, wait: bool = True):
    """Hold the checkout's build lock, so that two runs or builds in the same checkout never interleave. Not
    re-entrant: take it once per operation. Yields ``True`` once held; with ``wait=False``, yields ``False`` at once
    (holding nothing) when another process holds it.

    The lock is an advisory ``flock`` on the build folder ``_build/`` itself (deleting it would delete the run's
    files too) and on the lock file ``_build/.lock`` (for file systems that cannot lock folders, as NFS); the
    operating system releases both when their holder ends, however it ends: the lock of a killed process never
    blocks. Deleting ``_build/.lock`` while a run holds it lets no second run in, where the file system can lock
    the folder (local file systems can; where it cannot, only the lock file is locked, and its deletion does). The holder records its PID,
    command and start time in ``_build/.lock``. While another process holds the lock, this one waits and says so
    through ``progress``, naming the lock file and the holder's PID and command (again if the holder changes), then
    says when it got the lock.
    """
    fds = _acquire(layout, progress, wait)
    if fds is None:
        yield False
        return
    record = fds[-1]
    try:
        command = shlex.join([Path(sys.orig_argv[0]).name, *sys.orig_argv[1:]])
        holder = {"pid": os.getpid(), "command": command, "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
        os.ftruncate(record, 0)
        os.pwrite(record, (json.dumps(holder) + "\n").encode(), 0)
        yield True
    finally:
        os.ftruncate(record, 0)
        _release(fds)


def _open_lock(layout: BookLayout) -> list[int]:
    """Descriptors of the build folder and of the lock file (created, never truncated before it is held)."""
    layout.build_dir.mkdir(parents=True, exist_ok=True)
    folder = os.open(layout.build_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return [folder, os.open(layout.lock, os.O_RDWR | os.O_CREAT, 0o644)]
    except BaseException:
        os.close(folder)
        raise


def _take(fds: list[int]) -> bool:
    """Lock every descriptor of :func:`_open_lock` without waiting: all of them (``True``) or none."""
    taken = []
    for fd in fds:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken.append(fd)
        except BlockingIOError:
            _release(taken, close=False)
            return False
        except OSError:  # a file system that cannot lock a folder (NFS): the lock file alone serves
            if fd != fds[0]:
                _release(taken, close=False)
                raise
    return True


def _release(fds: list[int], close: bool = True) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):  # a folder that could not be locked; closing releases anyway
            fcntl.flock(fd, fcntl.LOCK_UN)
        if close:
            os.close(fd)


def _still_there(fds: list[int], layout: BookLayout) -> bool:
    """Whether the build folder and the lock file are still those the descriptors locked (a folder or file deleted
    or replaced between its opening and its locking is locked by no one else)."""
    try:
        paths = [os.stat(layout.build_dir), os.stat(layout.lock)]
    except FileNotFoundError:
        return False
    return all((os.fstat(fd).st_dev, os.fstat(fd).st_ino) == (p.st_dev, p.st_ino) for fd, p in zip(fds, paths))


def _read_holder(layout: BookLayout) -> dict | None:
    try:
        return _parse_holder(layout.lock.read_text(errors="replace"))
    except OSError:  # deleted meanwhile
        return None


def _parse_holder(text: str) -> dict | None:
    try:
        holder = json.loads(text)
    except ValueError:  # empty (free, or being written)
        return None
    return holder if isinstance(holder, dict) and {"pid", "command", "since"} <= holder.keys() else None


def lock_holder(layout: BookLayout) -> str:
    """Who holds the checkout's build lock, as its record in ``_build/.lock`` says (PID, command, since when)."""
    return _describe(_read_holder(layout))


def _describe(holder: dict | None) -> str:
    if holder is None:
        return "another process (it has not recorded its PID in the lock file)"
    alive = process_alive(holder["pid"]) if isinstance(holder["pid"], int) else True
    state = "" if alive else "; it has ended, but a process it started still holds the lock"
    return f"PID {holder['pid']} ({holder['command']}, since {holder['since']}{state})"


def _acquire(layout: BookLayout, progress: Progress, wait: bool) -> list[int] | None:
    """Take the lock (:func:`_open_lock`, :func:`_take`), polling every :data:`LOCK_POLL_S` while another process
    holds it; ``None`` at once when it does and ``wait`` is false."""
    lock = layout.relative(layout.lock)
    start, reported, last = time.monotonic(), False, None
    while True:
        fds = _open_lock(layout)
        if _take(fds):
            if _still_there(fds, layout):
                break
            _release(fds)  # locked a folder or file that was replaced meanwhile: lock the current ones
            continue
        _release(fds)
        if not wait:
            return None
        holder = _read_holder(layout)
        waited = time.monotonic() - start
        # the holder writes its record right after taking the lock: give it a second before naming no one
        if holder is not None and holder != last or not reported and waited > 1.0:
            progress(f"waiting for the build lock {lock} of this checkout, held by {_describe(holder)} ...")
            reported, last = True, holder
        time.sleep(LOCK_POLL_S)
    if reported:
        progress(f"got the build lock {lock} after waiting {time.monotonic() - start:.1f} s")
    return fds


# --------------------------------------------------------------------------------------------------------
# the working folders of runs and who owns them

RUN_FOLDER_PREFIX = ".run-"
"""Prefix of the working folders of running chapters in ``_build/``: ``.run-<chapter>-<owner>-<random>``."""
_OWNED_RUN_FOLDER = re.compile(r"-(\d+)\.(\d+)-[a-z0-9_]+$")


def _process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, Linux ``/proc``); ``None`` when it has ended (a zombie
    has) or where there is no ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


def process_alive(pid: int, started: int | None = None) -> bool:
    """Whether process ``pid`` lives, and (when ``started`` is given and ``/proc`` tells) is the process that
    started then, not a later one given the same PID."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user; /proc may hide it (hidepid): alive, as far as we know
        start = _process_start(pid)
        return start is None or not started or start == started
    except (OverflowError, ValueError):
        return False
    start = _process_start(pid)
    if Path("/proc/self/stat").is_file() and start is None:
        return False  # a zombie: it has ended
    return not started or start is None or start == started


def new_run_folder(layout: BookLayout, chapter: str) -> Path:
    """Make a private working folder for one execution of ``chapter`` in ``_build/``, named after its owner, this
    process (PID and start time), so that another run removes it only once its owner has ended
    (:func:`run_folder_in_use`)."""
    layout.build_dir.mkdir(parents=True, exist_ok=True)
    owner = f"{os.getpid()}.{_process_start(os.getpid()) or 0}"
    return Path(tempfile.mkdtemp(dir=layout.build_dir, prefix=f"{RUN_FOLDER_PREFIX}{chapter}-{owner}-"))


def run_folder_in_use(folder: Path) -> bool:
    """Whether the working folder ``folder`` (:func:`new_run_folder`) belongs to a living process: this one, or
    another still running. A folder whose name records no owner (an earlier version's) is in no one's use."""
    owner = _OWNED_RUN_FOLDER.search(Path(folder).name)
    return owner is not None and process_alive(int(owner.group(1)), int(owner.group(2)))
