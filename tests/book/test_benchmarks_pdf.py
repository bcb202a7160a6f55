"""The PDF benchmark (``bench pdf``): its count of each chapter's pages, and the committed record."""

from __future__ import annotations

import json
from pathlib import Path

from attnpaths_book import pdf
from attnpaths_book.benchmarks.pdf import chapter_pages
from attnpaths_book.benchmarks.record import RECORDS_DIR
from attnpaths_book.chapters import toc_docnames
from attnpaths_book.layout import BookLayout, find_root


def test_a_chapter_counts_its_own_pages_and_those_generated_under_it():
    pages = [
        pdf.BookPage("book/intro", Path("intro.html")),
        pdf.BookPage("book/api/index", Path("index.html")),
        pdf.BookPage("book/api/generated/attnpaths.paths", Path("paths.html"), 1),
        pdf.BookPage("book/references", Path("references.html")),
    ]
    starts = {"book/intro": 3, "book/api/index": 7, "book/api/generated/attnpaths.paths": 9, "book/references": 12}
    report = pdf.PdfReport(path=Path("book.pdf"), pages=13, size=1, starts=starts, seconds=1.0)
    assert chapter_pages(report, pages) == {"book/intro": 4, "book/api/index": 5, "book/references": 2}


def test_the_committed_record_counts_every_page_of_every_chapter_of_the_toc():
    report = json.loads((RECORDS_DIR / "pdf.json").read_text())["report"]
    layout = BookLayout(find_root())
    assert sorted(report["chapter_pages"]) == sorted(toc_docnames(layout.toc))
    assert all(count >= 1 for count in report["chapter_pages"].values())
    assert report["front_matter_pages"] + sum(report["chapter_pages"].values()) == report["pages"]
