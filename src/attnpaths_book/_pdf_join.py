"""Joining the printed pages of the book's PDF (no browser, pypdf only): the front matter, the chapters with
their links resolved to pages, and the page numbers; used by :mod:`attnpaths_book.pdf`."""

from __future__ import annotations

import html
import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnpaths_book.pdf import PrintedPage


def page_count(pdf: bytes) -> int:
    """The number of pages of a PDF given as bytes."""
    from pypdf import PdfReader

    return len(PdfReader(io.BytesIO(pdf)).pages)


def chapter_starts(front_pages: int, printed: list[PrintedPage]) -> list[int]:
    """The first page (1-based, in the joined book) of each printed page, after ``front_pages`` pages of front
    matter."""
    if front_pages < 0:
        raise ValueError(f"front_pages must be >= 0, got {front_pages}")
    starts, page = [], front_pages + 1
    for part in printed:
        count = page_count(part.pdf)
        if count < 1:
            raise ValueError(f"printed page {part.docname} has no pages")
        starts.append(page)
        page += count
    return starts


def join_book(front: bytes, printed: list[PrintedPage], numbers: bytes | None = None, title: str = ""):
    """Join the front matter and the printed pages into one ``pypdf.PdfWriter``.

    The outline has one bookmark per page of level 0 (a chapter) at its first page, and below it one per page of
    level 1 that follows it. Links keep working in the one file: a link to an anchor of its own page (Chromium
    names it by the element's id, and two pages may use the same id) and a link to another printed page (its
    ``file://`` URL, with or without an anchor) go to that place in the joined book; other links to local files
    (pages that are not printed, such as the index) are removed, links to the web are kept. ``numbers``, a PDF
    with as many pages as the joined book, is laid over it page by page from the second page on (the title page
    carries no number). Returns ``(writer, starts)``, ``starts`` the first page (1-based) of each printed page
    as :func:`chapter_starts` gives it.
    """
    from pypdf import PdfReader, PdfWriter

    if printed and printed[0].level != 0:
        raise ValueError(f"the first printed page must be a chapter (level 0), got level {printed[0].level}")
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(front)), import_outline=False)
    front_pages = len(writer.pages)
    starts = chapter_starts(front_pages, printed)
    readers = [PdfReader(io.BytesIO(part.pdf)) for part in printed]
    anchors = [_anchors(reader, start - 1) for reader, start in zip(readers, starts)]
    for reader in readers:
        writer.append(reader, import_outline=False)
    urls = {part.url: k for k, part in enumerate(printed) if part.url}
    for k, (reader, start) in enumerate(zip(readers, starts)):
        for index in range(start - 1, start - 1 + len(reader.pages)):
            _resolve_links(writer, writer.pages[index], anchors[k], urls, starts, anchors)
    if numbers is not None:
        overlay = PdfReader(io.BytesIO(numbers))
        if len(overlay.pages) != len(writer.pages):
            raise ValueError(
                f"numbers must have as many pages as the book ({len(writer.pages)}), got {len(overlay.pages)}"
            )
        for index in range(1, len(writer.pages)):
            writer.pages[index].merge_page(overlay.pages[index])
            writer.pages[index].compress_content_streams()  # merging writes the page's content uncompressed
    parent = None
    for part, start in zip(printed, starts):
        item = writer.add_outline_item(
            title=part.title, page_number=start - 1, parent=None if part.level == 0 else parent, is_open=False
        )
        if part.level == 0:
            parent = item
    if title:
        writer.add_metadata({"/Title": title})
    writer.page_mode = "/UseOutlines"
    writer.compress_identical_objects(remove_duplicates=True, remove_unreferenced=True)  # each part's fonts
    return writer, starts


Anchor = tuple[int, float | None, float | None]
"""Where an anchor points in the joined book: page index, left and top (``None``: keep the viewer's)."""


def _anchors(reader, offset: int) -> dict[str, Anchor]:
    """The named destinations of one printed page, ``{name without a leading slash: anchor}``, its pages counted
    from ``offset`` in the joined book."""
    found = {}
    for name, destination in reader.named_destinations.items():
        try:
            page = reader.get_destination_page_number(destination)
        except Exception:  # noqa: BLE001 - a destination without a page leads nowhere: leave it out
            continue
        if page >= 0:
            found[str(name).lstrip("/")] = (offset + page, destination.left, destination.top)
    return found


def _destination(writer, anchor: Anchor):
    from pypdf.generic import ArrayObject, FloatObject, NameObject, NullObject

    page, left, top = anchor
    position = [FloatObject(v) if v is not None else NullObject() for v in (left, top)]
    return ArrayObject([writer.pages[page].indirect_reference, NameObject("/XYZ"), *position, NullObject()])


def _resolve_links(writer, page, own: dict[str, Anchor], urls: dict[str, int], starts: list[int], anchors) -> None:
    """Rewrite the links of one page of the joined book: anchors of its own printed page (``own``) and links to
    printed pages (``urls``: URL -> position in ``starts`` and ``anchors``) become explicit destinations; other
    links to local files are dropped."""
    from pypdf.generic import ArrayObject, NameObject

    if "/Annots" not in page:
        return
    kept = ArrayObject()
    for reference in page["/Annots"].get_object():
        annotation = reference.get_object()
        action = annotation.get("/A")
        action = action.get_object() if action is not None else None
        named = annotation.get("/Dest")
        if named is None and action is not None and action.get("/S") == "/GoTo":
            named = action.get("/D")
        if isinstance(named, str):  # an anchor of the page itself, by name
            anchor = own.get(named.lstrip("/"))
            if anchor is not None:
                annotation.pop("/A", None)
                annotation[NameObject("/Dest")] = _destination(writer, anchor)
            kept.append(reference)
            continue
        if action is None or action.get("/S") != "/URI":
            kept.append(reference)
            continue
        url = str(action.get("/URI", ""))
        base, _, fragment = url.partition("#")
        target = urls.get(base)
        if target is not None:
            anchor = anchors[target].get(fragment) if fragment else None
            del annotation["/A"]
            annotation[NameObject("/Dest")] = (
                _destination(writer, anchor)
                if anchor is not None
                else ArrayObject([writer.pages[starts[target] - 1].indirect_reference, NameObject("/Fit")])
            )
            kept.append(reference)
        elif not url.startswith("file:"):
            kept.append(reference)
    page[NameObject("/Annots")] = kept


def front_matter_html(metadata: dict[str, str], subtitle: str, entries: list[tuple[str, int, int]]) -> str:
    """The HTML of the title page and the table of contents: ``entries`` are ``(title, level, first page)``."""
    rows = "\n".join(
        f'<li class="level{level}"><span class="name">{html.escape(name)}</span><span class="dots"></span>'
        f'<span class="page">{page}</span></li>'
        for name, level, page in entries
    )
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(metadata["title"])}</title><style>
body {{ font-family: sans-serif; color: #222; }}
.title {{ height: 9.2in; display: flex; flex-direction: column; justify-content: center; text-align: center;
         break-after: page; }}
.title h1 {{ font-size: 28pt; margin: 0 0 0.4in; }}
.title p {{ font-size: 13pt; margin: 0.08in; }}
h2 {{ font-size: 18pt; }}
ol {{ list-style: none; padding: 0; margin: 0; }}
li {{ display: flex; align-items: baseline; font-size: 11pt; margin: 0.05in 0; break-inside: avoid; }}
li.level1 {{ font-size: 9pt; margin: 0.01in 0 0.01in 0.3in; color: #444; }}
.dots {{ flex: 1; border-bottom: 1px dotted #999; margin: 0 0.08in; }}
</style></head><body>
<div class="title"><h1>{html.escape(metadata["title"])}</h1><p>{html.escape(metadata["author"])}</p>
<p>{html.escape(subtitle)}</p></div>
<h2>Contents</h2><ol>
{rows}
</ol></body></html>
"""


def numbers_html(pages: int, title: str) -> str:
    """An HTML document of ``pages`` blank pages; printed with :func:`footer_template`, each carries its number."""
    blank = '<div style="break-after: page; height: 1px"></div>'
    return f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head><body>' + (
        blank * (pages - 1) + '<div style="height: 1px"></div></body></html>'
    )


def footer_template(title: str) -> str:
    """Chromium's footer: the book's title on the left, the page number and count on the right."""
    return (
        '<div style="font-size: 8px; font-family: sans-serif; color: #555; width: 100%; margin: 0 0.6in; '
        f'display: flex; justify-content: space-between;"><span>{html.escape(title)}</span>'
        '<span><span class="pageNumber"></span> / <span class="totalPages"></span></span></div>'
    )
