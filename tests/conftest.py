"""Shared fixtures: tiny throw-away books for the runner's tests, and the built HTML book for the browser test.
Shared functions and constants are in ``helpers.py``."""

from __future__ import annotations

import pytest

from attnpaths.book import runner, site
from attnpaths.book.chapters import book_chapters
from attnpaths.book.layout import BookLayout
from helpers import ROOT


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
