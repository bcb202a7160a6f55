"""Shared fixtures: tiny throw-away books for the runner's tests, and the built HTML book for the browser test."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from attnpaths.book import runner, site
from attnpaths.book.chapters import book_chapters
from attnpaths.book.layout import BookLayout

ROOT = Path(__file__).resolve().parents[1]

FRONT_MATTER = {
    "jupytext": {"text_representation": {"extension": ".md", "format_name": "myst", "format_version": 0.13}},
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
}


def write_chapter(root: Path, name: str, parameters: str, body: str, profiles: dict | None = None,
                  report: bool = False) -> Path:
    """Write ``book/<name>.md``: a MyST notebook with a parameters cell (``profile`` and ``results_dir`` are
    added), then ``body`` as one code cell, then a cell writing the results ``values`` defined by ``body``."""
    meta = dict(FRONT_MATTER)
    settings = {"profiles": profiles or {"smoke": {}, "paper": {}}}
    if report:
        settings["report"] = True
    meta["attnpaths"] = settings
    parameters = textwrap.dedent(parameters).strip()
    parameters = (parameters + "\n" if parameters else "") + 'profile = "smoke"\nresults_dir = "_build/results"'
    text = (f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n\n# Chapter {name}\n\n"
            f"```{{code-cell}} ipython3\n:tags: [parameters]\n\n{parameters}\n```\n\n"
            f"```{{code-cell}} ipython3\n{textwrap.dedent(body).strip()}\n```\n\n"
            "```{code-cell} ipython3\nfrom attnpaths.results import write_results\n"
            f"write_results({name!r}, profile, {{}}, values, results_dir)\n```\n")
    path = root / "book" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_toc(root: Path, names: list[str]) -> None:
    """A ``_toc.yml`` listing ``book/<name>`` in order (the first is the root)."""
    toc = {"format": "jb-book", "root": f"book/{names[0]}", "chapters": [{"file": f"book/{n}"} for n in names[1:]]}
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))


@pytest.fixture
def tiny_book(tmp_path) -> BookLayout:
    """An empty book skeleton in a temporary folder: ``_config.yml``, a stand-in package source folder."""
    (tmp_path / "_config.yml").write_text("title: tiny\n")
    package = tmp_path / "src" / "attnpaths"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("# stand-in package sources: their digest enters the cache key\n")
    return BookLayout(tmp_path)


@pytest.fixture(scope="session")
def built_book() -> BookLayout:
    """The repository's HTML book in ``_build/html``: reused if it was built from the current executed
    chapters and those are up to date for their profile, else executed (smoke profile, cached) and built."""
    layout = BookLayout(ROOT)
    profile = site.built_profile(layout, book_chapters(layout))
    if profile is None or runner.stale_chapters(layout, profile):
        runner.run_book(layout, "smoke")
        site.build_html(layout, book_chapters(layout), "smoke")
    return layout
