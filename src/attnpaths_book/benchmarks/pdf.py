"""Benchmark: the whole book's PDF, its pages and how long it takes to print, on this machine.

``python -m attnpaths_book bench pdf [--profile paper] [--output PATH]`` prints the built HTML book (``_build/html``,
made by ``python -m attnpaths_book book``) into ``_build/pdf/attnpaths.pdf`` as ``book`` does, and records the
number of pages, those of the title page and the table of contents, the pages of each chapter (with the pages
generated under it), the bytes and the wall time. The
README's page count is this record's (``tests/book/test_readme_times.py``). The record (``records/pdf.json`` by
default) carries the provenance of :mod:`attnpaths_book.benchmarks.record`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnpaths_book import pdf
from attnpaths_book.benchmarks.record import committed_record_path, finish_record, start_record
from attnpaths_book.layout import BookLayout, find_root


def chapter_pages(report: pdf.PdfReport, pages: list[pdf.BookPage]) -> dict[str, int]:
    """``{docname: pages}`` of every chapter (a toc page), the pages generated under it included."""
    starts = [(page.docname, report.starts[page.docname]) for page in pages if page.level == 0]
    ends = [start for _, start in starts[1:]] + [report.pages + 1]
    return {docname: end - start for (docname, start), end in zip(starts, ends)}


def main(argv=None) -> int:
    """Entry point of ``python -m attnpaths_book bench pdf``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m attnpaths_book bench pdf", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="paper", help="the profile the HTML was built from (its title page)")
    parser.add_argument("--output", type=Path, default=committed_record_path("pdf"))
    args = parser.parse_args(argv)
    started = start_record("pdf", argv)
    layout = BookLayout(find_root())
    report = pdf.build_pdf(layout, progress=print, progress_bar=False, profile=args.profile)
    pages = pdf.book_pages(layout)
    result = {
        "profile": args.profile,
        "pages": report.pages,
        "bytes": report.size,
        "wall_s": round(report.seconds, 1),
        "front_matter_pages": min(report.starts.values()) - 1,
        "chapter_pages": chapter_pages(report, pages),
    }
    print(f"{report.pages} pages, {report.size / 2**20:.1f} MiB in {report.seconds:.0f} s", flush=True)
    finish_record(started, result, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
