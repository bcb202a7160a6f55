"""The whole book as one PDF, made from the built HTML by headless Chromium, offline.

``python -m attnpaths_book pdf`` (and ``book``, after the HTML, where Chromium is installed) opens every page of
``_build/html`` in the toc's order (``_toc.yml``; after a toc page come the pages generated under it, the API
reference's module pages) from ``file://`` in headless Chromium (:mod:`attnpaths_book.browser`) with every
host unreachable, waits until MathJax has typeset it and its images have loaded, hides the sidebars, header
and navigation with injected print CSS, and prints it with the DevTools ``Page.printToPDF`` on A4. A page
that requested something that failed, wrote an error to the console, showed a broken image or whose MathJax
did not finish stops the build with :class:`PdfFailed`, naming the page.

The printed pages are joined with ``pypdf`` (:func:`join_book`) behind a title page and a printed table of
contents (chapter titles and page numbers); the outline (bookmarks) has one entry per toc page at its first
page, with the generated pages below their chapter's. Links between pages and to anchors lead to their place in
the one file. Page numbers are printed in the footer by Chromium (``displayHeaderFooter`` and
``footerTemplate``) on a blank document of as many pages as the book, which is laid over the book page by
page, so that the numbers run through the whole book rather than restart with every printed page.

The PDF records the HTML it was printed from (:func:`html_key`, in its metadata): :func:`is_current` tells
whether it still matches the built HTML, so that ``book`` prints it again only when a page changed, and
:func:`publish` puts the copy the book's first page links into the HTML only when it matches (the link is
shown only then; otherwise a stale copy is removed and the link stays hidden).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from attnpaths_book.chapters import toc_docnames
from attnpaths_book.layout import BookLayout, Progress, silent
from attnpaths_book.results import atomic_write_text

PDF_NAME = "attnpaths.pdf"
"""The file name of the book's PDF, in ``_build/pdf/`` and, for the link on the book's first page, in the
HTML's ``_static/``."""

GENERATED = "generated"
"""The folder, beside a toc page, of the pages generated for it (autosummary's ``:toctree: generated`` in
``book/api/index.md``): printed after that page, in the order it links them."""

A4_INCHES = (8.27, 11.69)
MARGINS_INCHES = {"marginTop": 0.55, "marginBottom": 0.75, "marginLeft": 0.6, "marginRight": 0.6}
"""Page margins; the bottom one holds the page number."""

PAGE_TIMEOUT_S = 120
"""How long a page may take to load (the browser's page-load timeout), and then to typeset its mathematics and
load its images."""

HTML_KEY_FIELD = "/AttnpathsHtml"
"""The PDF's metadata field holding :func:`html_key` of the HTML it was printed from."""

LINK_SHOWN = '<p class="pdf-link">'
LINK_HIDDEN = '<p class="pdf-link" hidden>'
"""The paragraph of the book's first page that links the PDF (``book/intro.md`` writes it hidden):
:func:`publish` shows it only while the HTML holds a copy of the PDF printed from that HTML."""

PRINT_CSS = """
.bd-header, .bd-header-announcement, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-header-article,
.header-article, .prev-next-area, .prev-next-footer, .bd-footer, .bd-footer-article, .bd-footer-content,
footer, #pst-back-to-top, .headerlink, .skip-link, .search-button, .theme-switch-button, .pdf-link,
.sidebar-toggle, .toggle-button, .copybtn, #pst-scroll-pixel-helper { display: none !important; }
html, body { background: white !important; }
.bd-page-width, .bd-container, .bd-container__inner, .bd-main, .bd-content, .bd-article-container,
.bd-article { max-width: 100% !important; width: 100% !important; margin: 0 !important; padding: 0 !important; }
figure, img, mjx-container[display="true"], table, .cell_output { break-inside: avoid; }
img { max-width: 100% !important; height: auto !important; }
h1, h2, h3, h4 { break-after: avoid; }
#jb-print-docs-body h1, article h1 { font-size: 2.2em !important; }
pre { white-space: pre-wrap !important; word-break: break-word; }
"""
"""Injected into every page before it is printed: only the article, as wide as the paper."""

NO_CODE_CSS = ".cell > .cell_input, .cell > details.above-input { display: none !important; }"
"""With ``code=False``: code cells folded to their outputs."""

WAIT_FOR_PAGE = """
const done = arguments[arguments.length - 1];
const problems = [];
const images = [...document.images];
for (const image of images) if (image.loading === 'lazy') image.loading = 'eager';
const loaded = images.map(image => image.complete ? Promise.resolve() : new Promise(resolve => {
    image.addEventListener('load', resolve, {once: true});
    image.addEventListener('error', resolve, {once: true});
}));
const math = document.querySelectorAll('.math').length;
let typeset;
if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    typeset = MathJax.startup.promise.then(() => null, error => 'MathJax failed: ' + error);
} else {
    typeset = Promise.resolve(math ? 'MathJax did not start (' + math + ' formulas not typeset)' : null);
}
Promise.all([typeset, ...loaded]).then(([mathProblem]) => document.fonts.ready.then(() => {
    if (mathProblem) problems.push(mathProblem);
    const untypeset = [...document.querySelectorAll('.math')].filter(m => !m.querySelector('mjx-container'));
    if (untypeset.length && !mathProblem)
        problems.push('MathJax did not typeset ' + untypeset.length + ' formulas, e.g. '
                      + untypeset[0].textContent.trim().slice(0, 60));
    const errors = document.querySelectorAll('mjx-merror');
    if (errors.length) problems.push('TeX errors: ' + [...errors].map(e => e.textContent).join('; ').slice(0, 200));
    const broken = images.filter(image => !(image.complete && image.naturalWidth > 0));
    if (broken.length) problems.push('images that did not load: ' + broken.map(i => i.getAttribute('src')).join(', '));
    const heading = document.querySelector('article h1') || document.querySelector('h1');
    const title = heading ? heading.textContent.replace(/[#\\u00b6]\\s*$/, '').trim() : document.title;
    done({problems, title});
}));
"""
"""Waits until MathJax has typeset the page (``MathJax.startup.promise``), its images have loaded and its
fonts are ready; returns what went wrong and the page's title (its first heading)."""


HARMLESS_CONSOLE_ERRORS = (
    "Identifier 'THEBE_JS_URL' has already been declared",
    "Got invalid theme mode",
)
"""Console errors that every page of a Jupyter Book 1 build shows and that change nothing printed: Jupyter Book
writes sphinx-thebe's settings script twice (the second declaration of its constant fails; thebe is off), and
the theme reports that no colour mode was stored before it falls back to its default. Any other console error
stops the build."""


class PdfFailed(RuntimeError):
    """A page of the book could not be printed as it reads in the browser (the message names the page)."""


@dataclass(frozen=True)
class BookPage:
    """One HTML page of the book to print.

    Attributes:
        docname: the page's path in the HTML without ``.html`` (``book/model``, ``book/api/generated/attnpaths.paths``).
        path: the built HTML file.
        level: 0 for a toc page (a chapter), 1 for a page generated under one.
    """

    docname: str
    path: Path
    level: int = 0


@dataclass(frozen=True)
class PrintedPage:
    """One page of the book printed: its title (the first heading), level (0 chapter, 1 under it), PDF and the
    ``file://`` URL it was printed from (what links to it from other pages point at)."""

    docname: str
    title: str
    level: int
    pdf: bytes
    url: str = ""


@dataclass(frozen=True)
class PdfReport:
    """What :func:`build_pdf` made: the file, its number of pages and bytes, the toc pages' first pages (1-based,
    ``{docname: page}``) and the seconds it took."""

    path: Path
    pages: int
    size: int
    starts: dict[str, int]
    seconds: float


def default_output(layout: BookLayout) -> Path:
    """Where ``pdf`` writes the book by default: ``_build/pdf/attnpaths.pdf``."""
    return layout.build_dir / "pdf" / PDF_NAME


def html_copy(html_dir) -> Path:
    """Where the HTML book keeps its copy of the PDF, which the link on its first page reaches offline."""
    return Path(html_dir) / "_static" / PDF_NAME


_GENERATED_LINK = re.compile(rf'href="({GENERATED}/[^"#?]+)\.html[#"]')


def book_pages(layout: BookLayout, html_dir=None) -> list[BookPage]:
    """The pages of the built book in reading order: the toc's documents (``_toc.yml``), each followed by the pages
    generated under it that its HTML links to (``<folder>/generated/<name>.html``, in the order of first link).
    Raises ``FileNotFoundError`` naming the first page that was not built."""
    html_dir = Path(layout.html_dir if html_dir is None else html_dir)
    pages = []
    for docname in toc_docnames(layout.toc):
        path = html_dir / f"{docname}.html"
        if not path.is_file():
            raise FileNotFoundError(
                f"page {docname} of the book was not built: {path} is missing (build the HTML first: "
                "python -m attnpaths_book book)"
            )
        pages.append(BookPage(docname, path))
        folder = docname.rpartition("/")[0]
        seen = set()
        for target in _GENERATED_LINK.findall(path.read_text(encoding="utf-8")):
            if target not in seen and (path.parent / f"{target}.html").is_file():
                seen.add(target)
                pages.append(BookPage(f"{folder}/{target}" if folder else target, path.parent / f"{target}.html", 1))
    return pages


def book_metadata(layout: BookLayout) -> dict[str, str]:
    """The title and author of the book from ``_config.yml`` (empty strings where it gives none)."""
    config = yaml.safe_load(layout.config.read_text()) or {}
    return {"title": str(config.get("title") or ""), "author": str(config.get("author") or "")}


_IMAGE_SOURCE = re.compile(r'<img\b[^>]*\bsrc="([^"#?]+)"')


def html_key(pages: list[BookPage], code: bool = True) -> str:
    """A SHA-256 of what the PDF of ``pages`` shows: each page's HTML (with the PDF link's paragraph read as shown,
    whether it is or not: the link is not printed), the local images it shows and whether code is printed."""
    digest = hashlib.sha256(f"code={bool(code)}\0".encode())
    for page in pages:
        text = page.path.read_text(encoding="utf-8")
        digest.update(page.docname.encode() + b"\0" + text.replace(LINK_HIDDEN, LINK_SHOWN).encode() + b"\0")
        for source in sorted(set(_IMAGE_SOURCE.findall(text))):
            image = page.path.parent / html.unescape(source)
            if "://" not in source and image.is_file():
                digest.update(source.encode() + b"\0" + hashlib.sha256(image.read_bytes()).digest())
    return digest.hexdigest()


def recorded_key(pdf_path) -> str | None:
    """The :func:`html_key` a PDF written by :func:`build_pdf` records (``None``: no such PDF, an unreadable
    one or one that records none)."""
    from pypdf import PdfReader

    try:
        metadata = PdfReader(pdf_path).metadata
    except Exception:  # noqa: BLE001 - a missing or damaged PDF is simply not current
        return None
    key = metadata.get(HTML_KEY_FIELD) if metadata is not None else None
    return str(key) if key is not None else None


def is_current(pdf_path, layout: BookLayout, html_dir=None, code: bool = True) -> bool:
    """Whether the PDF at ``pdf_path`` was printed from the HTML as it is now (every page of :func:`book_pages`
    and its images, by content); ``False`` when either is missing."""
    if not Path(pdf_path).is_file():
        return False
    try:
        pages = book_pages(layout, html_dir)
    except FileNotFoundError:
        return False
    return recorded_key(pdf_path) == html_key(pages, code)


def publish(layout: BookLayout, html_dir=None, pdf_path=None) -> bool:
    """Give the HTML book its copy of the PDF (:func:`html_copy`) and show the link to it on the toc's pages that
    hold :data:`LINK_HIDDEN`, if the PDF at ``pdf_path`` (default :func:`default_output`) was printed from this
    HTML with its code; otherwise remove a copy left from an earlier build and hide the link. Returns whether the
    link is shown."""
    html_dir = Path(layout.html_dir if html_dir is None else html_dir)
    pdf_path = Path(default_output(layout) if pdf_path is None else pdf_path)
    current = is_current(pdf_path, layout, html_dir)
    copy = html_copy(html_dir)
    if current:
        copy.parent.mkdir(parents=True, exist_ok=True)
        if not (copy.is_file() and copy.read_bytes() == pdf_path.read_bytes()):
            partial = copy.with_name(copy.name + ".partial")
            shutil.copyfile(pdf_path, partial)
            partial.replace(copy)
    else:
        copy.unlink(missing_ok=True)
    before, after = (LINK_HIDDEN, LINK_SHOWN) if current else (LINK_SHOWN, LINK_HIDDEN)
    for docname in toc_docnames(layout.toc):
        page = html_dir / f"{docname}.html"
        text = page.read_text(encoding="utf-8") if page.is_file() else ""
        if before in text:
            atomic_write_text(page, text.replace(before, after))
    return current


# -------------------------------------------------------------------------------------------------------
# joining (no browser): pypdf only


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


# -------------------------------------------------------------------------------------------------------
# printing (headless Chromium)


def _print(driver, header_footer: str | None = None) -> bytes:
    """The loaded page printed with ``Page.printToPDF`` on A4; with ``header_footer`` the footer template."""
    options = {
        "paperWidth": A4_INCHES[0],
        "paperHeight": A4_INCHES[1],
        "printBackground": True,
        "preferCSSPageSize": False,
        "displayHeaderFooter": header_footer is not None,
        **MARGINS_INCHES,
    }
    if header_footer is not None:
        options.update(headerTemplate="<span></span>", footerTemplate=header_footer)
    return base64.b64decode(driver.execute_cdp_cmd("Page.printToPDF", options)["data"])


def _drain_logs(driver) -> None:
    for kind in ("browser", "performance"):
        driver.get_log(kind)


def _failures(driver, page_url: str) -> list[str]:
    """Console errors and failed requests of the page at ``page_url`` since the logs were last read (reading
    empties them). Requests are those whose document is the page (its own scripts, styles, fonts, images and
    what they load); what the browser's own start page requests is not the book's."""
    import json

    problems = [
        f"console error: {entry['message']}"
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and not any(known in entry["message"] for known in HARMLESS_CONSOLE_ERRORS)
    ]
    requests = {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message.get("method") == "Network.requestWillBeSent" and params.get("documentURL") == page_url:
            requests[params.get("requestId")] = params.get("request", {}).get("url", "?")
        elif message.get("method") == "Network.loadingFailed" and params.get("requestId") in requests:
            if not params.get("canceled"):
                url = requests[params["requestId"]]
                problems.append(f"failed request {url[:200]}: {params.get('errorText', '?')}")
    return problems


def print_page(driver, page: BookPage, code: bool = True) -> PrintedPage:
    """Open ``page`` from ``file://``, wait until it is typeset with its images loaded, hide everything but the
    article and print it. Raises :class:`PdfFailed` naming the page if a request failed, the console shows an
    error, an image did not load or MathJax did not finish."""
    from selenium.common.exceptions import TimeoutException, WebDriverException

    _drain_logs(driver)
    url = page.path.resolve().as_uri()
    _load(driver, url, f"page {page.docname} ({page.path})")
    try:
        driver.set_script_timeout(PAGE_TIMEOUT_S)
        state = driver.execute_async_script(WAIT_FOR_PAGE)
    except TimeoutException as err:
        raise PdfFailed(
            f"page {page.docname} ({page.path}): did not finish typesetting its mathematics (MathJax) "
            f"or loading its images within {PAGE_TIMEOUT_S} s"
        ) from err
    except WebDriverException as err:
        raise PdfFailed(f"page {page.docname} ({page.path}): the browser failed: {err.msg}") from err
    problems = [*state["problems"], *_failures(driver, url)]
    if problems:
        raise PdfFailed(f"page {page.docname} ({page.path}): " + "; ".join(problems))
    css = PRINT_CSS + ("" if code else NO_CODE_CSS)
    driver.execute_script(
        "const style = document.createElement('style'); style.textContent = arguments[0]; "
        "document.head.appendChild(style);",
        css,
    )
    return PrintedPage(page.docname, state["title"] or page.docname, page.level, _print(driver), url)


def _load(driver, url: str, what: str) -> None:
    """Open ``url``; :class:`PdfFailed` naming ``what`` when it does not load within the browser's page-load
    timeout (:data:`PAGE_TIMEOUT_S` in :func:`build_pdf`) or the browser fails."""
    from selenium.common.exceptions import TimeoutException, WebDriverException

    try:
        driver.get(url)
    except TimeoutException as err:
        raise PdfFailed(f"{what}: did not load within the page-load timeout ({PAGE_TIMEOUT_S} s)") from err
    except WebDriverException as err:
        raise PdfFailed(f"{what}: the browser failed: {err.msg}") from err


def _print_document(driver, folder: Path, name: str, text: str, header_footer: str | None = None) -> bytes:
    """Print a page the PDF adds (the front matter, the page numbers), written to ``folder/name`` first."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    _load(driver, path.as_uri(), f"the PDF's own page {name} ({path})")
    return _print(driver, header_footer)


def build_pdf(
    layout: BookLayout,
    html_dir=None,
    output=None,
    code: bool = True,
    progress: Progress = silent,
    progress_bar: bool = True,
    profile: str | None = None,
) -> PdfReport:
    """Print every page of the built book (:func:`book_pages`) and join them into ``output`` (default
    :func:`default_output`) behind a title page and a table of contents, with bookmarks and page numbers.

    Args:
        layout: the book's checkout (``_toc.yml``, ``_config.yml``).
        html_dir: the built HTML (default ``_build/html``).
        output: the PDF to write (written whole, then moved into place).
        code: print code cells; ``False`` folds them to their outputs.
        progress: receives a line when the pages are printed and when the file is written.
        progress_bar: a tqdm bar with one step per page.
        profile: the execution profile named on the title page (``None``: none named).

    Raises :class:`PdfFailed` naming the page that could not be printed, ``FileNotFoundError`` when a page was
    not built or Chromium is not installed.
    """
    from tqdm.auto import tqdm

    from attnpaths_book.browser import start_browser

    start = time.perf_counter()
    output = Path(default_output(layout) if output is None else output)
    pages = book_pages(layout, html_dir)
    key = html_key(pages, code)
    metadata = book_metadata(layout)
    printed = []
    with (
        tempfile.TemporaryDirectory(prefix="attnpaths-pdf-") as scratch,
        start_browser(logs=True, page_load_timeout_s=PAGE_TIMEOUT_S) as driver,
    ):
        for page in tqdm(pages, desc="printing the book", unit="page", disable=not progress_bar):
            printed.append(print_page(driver, page, code))
        progress(f"printed {len(pages)} pages of the book in {time.perf_counter() - start:.1f} s")
        subtitle = "The whole book in one file" + (f", executed with the {profile} profile" if profile else "")
        subtitle += time.strftime(", built on %Y-%m-%d", time.gmtime())
        folder = Path(scratch)
        # the table of contents needs the chapters' first pages, which depend on its own length: print it with
        # provisional numbers at least as wide first, then again until its length settles
        widest = sum(page_count(p.pdf) for p in printed) + 99
        provisional = [(p.title, p.level, widest) for p in printed]
        front_pages = page_count(
            _print_document(driver, folder, "front.html", front_matter_html(metadata, subtitle, provisional))
        )
        for _ in range(3):
            starts = chapter_starts(front_pages, printed)
            entries = [(p.title, p.level, s) for p, s in zip(printed, starts)]
            front = _print_document(driver, folder, "front.html", front_matter_html(metadata, subtitle, entries))
            if page_count(front) == front_pages:
                break
            front_pages = page_count(front)
        else:
            raise PdfFailed("the table of contents does not settle on a number of pages")
        total = starts[-1] + page_count(printed[-1].pdf) - 1 if printed else front_pages
        numbers = _print_document(
            driver, folder, "numbers.html", numbers_html(total, metadata["title"]), footer_template(metadata["title"])
        )
    writer, starts = join_book(front, printed, numbers, metadata["title"])
    writer.add_metadata({HTML_KEY_FIELD: key})  # what is_current compares with the HTML
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    try:  # a failed write leaves the last good PDF, not a half-written file beside it
        with open(partial, "wb") as handle:
            writer.write(handle)
        partial.replace(output)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    report = PdfReport(
        output,
        len(writer.pages),
        output.stat().st_size,
        {p.docname: s for p, s in zip(printed, starts)},
        time.perf_counter() - start,
    )
    progress(
        f"wrote {layout.relative(output)}: {report.pages} pages, {report.size / 2**20:.1f} MiB, {report.seconds:.1f} s"
    )
    return report
