"""Build the HTML book from the executed notebooks.

The Sphinx source folder is ``_build/executed/``: the executor writes the chapters there as executed
notebooks at their toc paths (``_build/executed/book/intro.ipynb``), and :func:`sync_sources` copies the
book's other files (pages such as ``book/references.md``, ``book/references.bib``, images) next to them.
Jupyter Book then builds it with the root's ``_config.yml`` and ``_toc.yml`` (the one source of truth), notebooks not
executed again (``execute_notebooks: off``), warnings as errors, into ``_build/html``.

The API pages (``book/api/``) are generated from the docstrings of the package: Sphinx imports ``attnpaths``
from the checkout being built (``<root>/src`` comes first on its ``PYTHONPATH``), and the package sources are
part of what the HTML is built from (:func:`source_digest`).
"""

from __future__ import annotations

import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from attnpaths.json_files import DamagedFile, read_json
from attnpaths_book.chapters import Chapter
from attnpaths_book.executor import ANSI_ESCAPE
from attnpaths_book.layout import BookLayout, book_lock
from attnpaths_book.results import atomic_write_text

BUILD_STAMP = ".attnpaths-build.json"
JUPYTER_BOOK = "import sys; from jupyter_book.cli.main import main; sys.exit(main())"
IGNORED = ("__pycache__", ".ipynb_checkpoints")
DOCUMENT_SUFFIXES = (".md", ".ipynb")


class BuildFailed(RuntimeError):
    """Sphinx reported an error or a warning (the message holds its output)."""


def _book_files(layout: BookLayout, chapters: list[Chapter]) -> dict[str, Path]:
    """Files to copy into the source folder, ``{relative path: repository file}``: the toc's pages and the
    files under ``book/`` that are no documents (bibliography, images, data for figures). Notebook chapters
    come from the executor; markdown files that are not in the toc are not part of the book."""
    files = {}
    book_dir = layout.root / "book"
    for path in sorted(book_dir.rglob("*")) if book_dir.is_dir() else []:
        if path.is_file() and path.suffix not in DOCUMENT_SUFFIXES and not set(IGNORED) & set(path.parts):
            files[path.relative_to(layout.root).as_posix()] = path
    for chapter in chapters:
        if not chapter.is_notebook:
            files[chapter.source.relative_to(layout.root).as_posix()] = chapter.source
    return files


def sync_sources(layout: BookLayout, chapters: list[Chapter]) -> None:
    """Make ``_build/executed`` hold exactly the executed notebooks and the book's other files (unchanged
    files are not touched, so Sphinx rebuilds only what changed)."""
    missing = [c.name for c in chapters if c.is_notebook and not layout.executed_notebook(c.docname).is_file()]
    if missing:
        raise FileNotFoundError(
            f"chapters not executed yet: {', '.join(missing)} (run `python -m attnpaths_book book`)"
        )
    wanted = {f"{c.docname}.ipynb" for c in chapters if c.is_notebook}
    for relative, path in _book_files(layout, chapters).items():
        target = layout.executed_dir / relative
        wanted.add(relative)
        if not (target.is_file() and filecmp.cmp(path, target, shallow=False)):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    for path in sorted(layout.executed_dir.rglob("*"), reverse=True):
        relative = path.relative_to(layout.executed_dir).as_posix()
        if path.is_file() and relative not in wanted:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _package_sources(layout: BookLayout) -> dict[str, Path]:
    """The package's Python sources, ``{relative path: file}``: the API pages are made from their docstrings."""
    return {
        path.relative_to(layout.root).as_posix(): path
        for folder in layout.package_dirs
        if folder.is_dir()
        for path in sorted(folder.rglob("*.py"))
        if not set(IGNORED) & set(path.parts)
    }


def source_digest(layout: BookLayout, chapters: list[Chapter]) -> str:
    """Hash of everything the HTML is built from: config, toc, executed notebooks, the book's other files and
    the package sources (the API pages)."""
    digest = hashlib.sha256()
    inputs = {
        "_config.yml": layout.config,
        "_toc.yml": layout.toc,
        **_book_files(layout, chapters),
        **_package_sources(layout),
    }
    inputs.update({f"{c.docname}.ipynb": layout.executed_notebook(c.docname) for c in chapters if c.is_notebook})
    for relative in sorted(inputs):
        digest.update(relative.encode() + b"\0")
        path = inputs[relative]
        digest.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"missing")
    return digest.hexdigest()


def sphinx_environment(layout: BookLayout, environ=None) -> dict[str, str]:
    """The environment of the Sphinx build: ``environ`` (default ``os.environ``) with the checkout's ``src``
    first on ``PYTHONPATH`` when it holds the package, so that autodoc documents the sources being built, not
    another installed copy."""
    env = dict(os.environ if environ is None else environ)
    if layout.package_dir.is_dir():
        src = str(layout.package_dir.parent)
        env["PYTHONPATH"] = os.pathsep.join([src, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    return env


def build_html(layout: BookLayout, chapters: list[Chapter], profile: str) -> Path:
    """Build ``_build/html`` from the executed chapters (Sphinx warnings are errors: :class:`BuildFailed`).
    Returns the path of ``index.html``."""
    with book_lock(layout):
        return _build_html(layout, chapters, profile)


def _build_html(layout: BookLayout, chapters: list[Chapter], profile: str) -> Path:
    sync_sources(layout, chapters)
    command = [sys.executable, "-c", JUPYTER_BOOK, "build", str(layout.executed_dir), "--path-output", str(layout.root)]
    command += ["--config", str(layout.config), "--toc", str(layout.toc)]
    command += ["--warningiserror", "--nitpick", "--keep-going", "--quiet"]
    done = subprocess.run(command, cwd=layout.root, capture_output=True, text=True, env=sphinx_environment(layout))
    if done.returncode != 0:
        output = ANSI_ESCAPE.sub("", f"{done.stdout}\n{done.stderr}").strip()
        raise BuildFailed(f"the Sphinx build failed (warnings are errors):\n{output}")
    stamp = {"profile": profile, "digest": source_digest(layout, chapters)}
    atomic_write_text(layout.html_dir / BUILD_STAMP, json.dumps(stamp) + "\n")
    return layout.html_dir / "index.html"


def _stamp(html_dir) -> dict:
    """The build stamp of the HTML in ``html_dir`` (empty when it is missing or damaged: it then says nothing of
    what was built)."""
    path = Path(html_dir) / BUILD_STAMP
    try:
        stamp = read_json(path, "build stamp") if path.is_file() else {}
    except DamagedFile:
        return {}
    return stamp if isinstance(stamp, dict) else {}


def stamp_profile(html_dir) -> str | None:
    """The profile that the HTML in ``html_dir`` was built from, as its build stamp says (``None`` without a
    readable stamp); unlike :func:`built_profile`, whether the sources changed since is not asked."""
    profile = _stamp(html_dir).get("profile")
    return profile if isinstance(profile, str) else None


def built_profile(layout: BookLayout, chapters: list[Chapter]) -> str | None:
    """The profile of ``_build/html`` if it was built from exactly the current sources, else ``None``."""
    stamp = _stamp(layout.html_dir)
    return stamp.get("profile") if stamp and stamp.get("digest") == source_digest(layout, chapters) else None
