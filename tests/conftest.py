"""Shared fixtures: tiny throw-away books for the runner's tests, and the built HTML book for the browser test.
Shared functions and constants are in ``helpers.py``."""

from __future__ import annotations

import pytest

from attnpaths_book import runner, site
from attnpaths_book.chapters import book_chapters
from attnpaths_book.layout import BookLayout
from helpers import ROOT, write_stand_in_packages


@pytest.fixture
def tiny_book(tmp_path) -> BookLayout:
    """An empty book skeleton in a temporary folder: ``_config.yml``, stand-in sources of the library and of its companion."""
    (tmp_path / "_config.yml").write_text("title: tiny\n")
    write_stand_in_packages(tmp_path)
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
