"""Where the book's files live: sources at the repository root, everything generated under ``_build/``."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

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
        """The package sources that every chapter depends on."""
        return self.root / "src" / "attnpaths"

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


@contextmanager
def book_lock(layout: BookLayout, progress: Progress = silent):
    """Hold the checkout's build lock, ``_build/.lock`` (waits, saying so, while another run holds it), so that
    two runs or builds in the same checkout never interleave. Not re-entrant: take it once per operation."""
    layout.build_dir.mkdir(parents=True, exist_ok=True)
    with open(layout.lock, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another run in this checkout to finish (lock {layout.relative(layout.lock)})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
