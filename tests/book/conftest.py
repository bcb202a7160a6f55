"""The book's tests: the companion (runner, executor, cache, CLI, reports, benchmarks, records) and the book
itself. Their fixtures: tiny throw-away books and the test run's own built book. They use the library tests'
helpers (``tests/library/helpers.py``) beside their own (``book_helpers.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "library"))  # the shared ``helpers``

from dataclasses import dataclass  # noqa: E402

import pytest  # noqa: E402
from book_helpers import require_browser, write_stand_in_packages  # noqa: E402
from helpers import ROOT  # noqa: E402

from attnpaths_book import pdf, runner, site  # noqa: E402
from attnpaths_book.chapters import book_chapters  # noqa: E402
from attnpaths_book.layout import BookLayout, suite_book  # noqa: E402


@pytest.fixture
def tiny_book(tmp_path) -> BookLayout:
    """An empty book skeleton in a temporary folder: ``_config.yml``, stand-in sources of the library and of its companion."""
    (tmp_path / "_config.yml").write_text("title: tiny\n")
    write_stand_in_packages(tmp_path)
    return BookLayout(tmp_path)


@pytest.fixture(scope="session")
def built_book() -> BookLayout:
    """The test run's own HTML book: the smoke profile executed and built in ``_build/tests-book/``
    (:func:`attnpaths_book.layout.suite_book`), reused when it is current (the cache keys include the CPU
    dispatch, so a run under another dispatch executes it again). It never reads or replaces what a reader
    built in ``_build/`` (a paper-profile run stays as it is). The chapters run on the engine the command line
    starts by default (an embedded cluster with a worker per CPU, as many chapters at a time), so the test
    run's one execution is the one ``python -m attnpaths_book book`` makes."""
    from filelock import FileLock

    from attnpaths.engine import start_engine

    # under -n its tests are one group that one test process runs (tests/conftest.py BOOK_GROUP); the lock keeps
    # another run's process (a second pytest in this checkout, or --dist without groups) waiting until it is current
    (ROOT / "_build").mkdir(exist_ok=True)
    with FileLock(str(ROOT / "_build" / "tests-book.lock")):
        layout = suite_book(ROOT)
        profile = site.built_profile(layout, book_chapters(layout))
        if profile != "smoke" or runner.stale_chapters(layout, "smoke"):
            with start_engine() as engine:
                runner.run_book(layout, "smoke", engine=engine)
            site.build_html(layout, book_chapters(layout), "smoke")
    return layout


@dataclass(frozen=True)
class PrintedBook:
    """The suite's smoke book printed: the PDF's report, and what a reader's screen shows of every page by docname
    (``page_view.PageView``), read in the same page loads."""

    report: pdf.PdfReport
    views: dict


@pytest.fixture(scope="session")
def printed_book(built_book) -> PrintedBook:
    """The smoke book printed into ``_build/tests-book/_build/pdf/attnpaths.pdf`` and copied into its HTML, as
    ``python -m attnpaths_book book`` does; every page is read as a screen shows it (``page_view.ScreenReader``)
    in the browser session that prints it, once typeset and before the print style, so that the browser checks
    and the PDF load each page once."""
    from page_view import ScreenReader

    require_browser()
    reader = ScreenReader(built_book.html_dir)
    report = pdf.build_pdf(built_book, progress_bar=False, profile="smoke", inspect=reader)
    assert pdf.publish(built_book, built_book.html_dir, report.path)
    return PrintedBook(report, reader.views)
