"""The whole book as one PDF, made from the built HTML by headless Chromium, offline.

``python -m attnpaths_book pdf`` (and ``book``, after the HTML, where Chromium is installed) opens every page of
``_build/html`` (``_toc.yml``; after a toc page come the pages generated under it, the API reference's module
pages) from ``file://`` in headless Chromium (:mod:`attnpaths_book.browser`; :data:`PRINTING_BROWSERS` sessions
at once, the joined file in the toc's order) with every host unreachable, waits until MathJax has typeset it and
its images have loaded, hides the sidebars, header and navigation with injected print CSS, and prints it with the
DevTools ``Page.printToPDF`` on A4. A page that requested something that failed, wrote an error to the
console, showed a broken image or whose MathJax did not finish stops the build with :class:`PdfFailed`, naming
the page.

The printed pages are joined with ``pypdf`` (``join_book``) behind a title page and a printed table of
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
import concurrent.futures
import contextlib
import hashlib
import html
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from attnpaths_book._pdf_join import (
    chapter_starts,
    footer_template,
    front_matter_html,
    join_book,
    numbers_html,
    page_count,
)
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

Inspect = Callable[[Any, "BookPage"], None]
"""A reader of a loaded page, called by :func:`build_pdf` before the page is printed: ``inspect(driver, page)``."""

PRINTING_BROWSERS = 2
"""How many Chromium sessions print the book's pages at once by default. One session leaves part of two cores
idle while a page loads and typesets; two print faster, though not twice as fast, since Chromium already keeps
more than one core busy for a page."""

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
figure, img, mjx-container[display="true"], tr { break-inside: avoid; }
img { max-width: 100% !important; height: auto !important; }
h1, h2, h3, h4 { break-after: avoid; }
.pst-scrollable-table-container, .table-wrapper, .cell_output, .output { overflow: visible !important; }
table { width: 100% !important; max-width: 100% !important; font-size: 0.8em !important; }
th, td, th code, td code, th .pre, td .pre { white-space: normal !important; overflow-wrap: anywhere; }
#jb-print-docs-body h1, article h1 { font-size: 2.2em !important; }
pre { white-space: pre-wrap !important; word-break: break-word; }
"""
"""Injected into every page before it is printed, to show only the article, as wide as the paper. Tables are
fitted to the page (their scrolling containers, which print clipped, are opened; cells wrap, long code names
anywhere; a smaller font); only figures, images, displayed equations and table rows are kept whole, since a tall
table or cell output that must not break leaves the rest of its page empty."""

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
"""Console errors that every page of a Jupyter Book 1 build shows and that change nothing printed. Jupyter Book
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


def _article(html: str) -> str:
    """The page's own content: its ``<article>`` element, without the navigation every page repeats (the sidebar
    links every generated page from every page of the toc); the whole text where there is none."""
    start = html.find("<article")
    end = html.find("</article>", start)
    return html[start:end] if 0 <= start < end else html


def book_pages(layout: BookLayout, html_dir=None) -> list[BookPage]:
    """The pages of the built book in reading order: the toc's documents (``_toc.yml``), each followed by the pages
    generated under it that its content links to (``<folder>/generated/<name>.html``, in the order of first link),
    each printed once, after the first page that links it. Raises ``FileNotFoundError`` naming the first page that
    was not built."""
    html_dir = Path(layout.html_dir if html_dir is None else html_dir)
    pages = []
    seen = set()
    for docname in toc_docnames(layout.toc):
        path = html_dir / f"{docname}.html"
        if not path.is_file():
            raise FileNotFoundError(
                f"page {docname} of the book was not built: {path} is missing (build the HTML first: "
                "python -m attnpaths_book book)"
            )
        pages.append(BookPage(docname, path))
        folder = docname.rpartition("/")[0]
        for target in _GENERATED_LINK.findall(_article(path.read_text(encoding="utf-8"))):
            generated = path.parent / f"{target}.html"
            if generated not in seen and generated.is_file():
                seen.add(generated)
                pages.append(BookPage(f"{folder}/{target}" if folder else target, generated, 1))
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


def print_page(driver, page: BookPage, code: bool = True, inspect: Inspect | None = None) -> PrintedPage:
    """Open ``page`` from ``file://``, wait until it is typeset with its images loaded, hide everything but the
    article and print it; ``inspect(driver, page)``, where given, reads the page in between, as a screen shows
    it (see :func:`build_pdf`). Raises :class:`PdfFailed` naming the page if a request failed, the console shows
    an error, an image did not load or MathJax did not finish."""
    _drain_logs(driver)
    url, what = page.path.resolve().as_uri(), f"page {page.docname} ({page.path})"
    _load(driver, url, what)
    late = f"did not finish typesetting its mathematics (MathJax) or loading its images within {PAGE_TIMEOUT_S} s"
    with _browser_errors(what, late):
        driver.set_script_timeout(PAGE_TIMEOUT_S)
        state = driver.execute_async_script(WAIT_FOR_PAGE)
    problems = [*state["problems"], *_failures(driver, url)]
    if problems:
        raise PdfFailed(f"page {page.docname} ({page.path}): " + "; ".join(problems))
    if inspect is not None:
        inspect(driver, page)
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
    with _browser_errors(what, f"did not load within the page-load timeout ({PAGE_TIMEOUT_S} s)"):
        driver.get(url)


@contextlib.contextmanager
def _browser_errors(what: str, late: str):
    """:class:`PdfFailed` naming ``what`` for the browser's errors in the block: ``late`` for a timeout."""
    from selenium.common.exceptions import TimeoutException, WebDriverException

    try:
        yield
    except TimeoutException as err:
        raise PdfFailed(f"{what}: {late}") from err
    except WebDriverException as err:
        raise PdfFailed(f"{what}: the browser failed: {err.msg}") from err


def _print_pages(pages: list[BookPage], code: bool, browsers: int, done, inspect: Inspect | None) -> list[PrintedPage]:
    """Every page printed, in the order of ``pages``, by ``browsers`` Chromium sessions that each take the next
    page not yet taken, the largest HTML first (so that a long page does not start last); ``done()`` after each.
    The first failure in time (or an interruption of the caller) drops the pages not yet taken, the sessions
    stop after the page they are printing, and that failure is raised."""
    pending = sorted(range(len(pages)), key=lambda k: -pages[k].path.stat().st_size)
    printed: list[PrintedPage | None] = [None] * len(pages)
    failures: list[BaseException] = []
    lock = threading.Lock()

    def stop(failure: BaseException) -> None:
        with lock:
            pending.clear()
            failures.append(failure)

    def session() -> None:
        from attnpaths_book.browser import start_browser

        try:
            with start_browser(logs=True, page_load_timeout_s=PAGE_TIMEOUT_S) as driver:
                while True:
                    with lock:
                        if not pending:
                            return
                        k = pending.pop(0)
                    printed[k] = print_page(driver, pages[k], code, inspect)
                    with lock:
                        done()
        except BaseException as failure:
            stop(failure)

    with concurrent.futures.ThreadPoolExecutor(browsers, thread_name_prefix="pdf-browser") as pool:
        futures = [pool.submit(session) for _ in range(browsers)]
        try:
            concurrent.futures.wait(futures)
        except BaseException as interruption:  # Ctrl-C: the sessions take no more pages
            stop(interruption)
            raise
    if failures:
        raise failures[0]
    return printed


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
    browsers: int = PRINTING_BROWSERS,
    inspect: Inspect | None = None,
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
        browsers: how many Chromium sessions print the pages at once (each prints whole pages; the joined file
            does not depend on it).
        inspect: called as ``inspect(driver, page)`` in the session that prints ``page`` (a :class:`BookPage`),
            once the page is loaded and typeset and before the print style hides its sidebars: a check of what
            a reader's screen shows reads every page in the same load as the printing (the test suite's browser
            checks do). It may resize the window if it restores it; it runs in the printing threads, so what
            it collects must be safe to write from several at once (e.g. one dict entry per page).

    Raises :class:`PdfFailed` naming the page that could not be printed, ``FileNotFoundError`` when a page was
    not built or Chromium is not installed, ``ValueError`` when ``browsers`` is not an integer >= 1.
    """
    from tqdm.auto import tqdm

    from attnpaths_book.browser import start_browser

    if isinstance(browsers, bool) or not isinstance(browsers, int) or browsers < 1:
        raise ValueError(f"browsers must be an integer >= 1, got {browsers!r}")
    start = time.perf_counter()
    output = Path(default_output(layout) if output is None else output)
    pages = book_pages(layout, html_dir)
    key = html_key(pages, code)
    metadata = book_metadata(layout)
    browsers = min(browsers, max(len(pages), 1))
    with tqdm(total=len(pages), desc="printing the book", unit="page", disable=not progress_bar) as bar:
        printed = _print_pages(pages, code, browsers, bar.update, inspect)
    progress(f"printed {len(pages)} pages of the book in {time.perf_counter() - start:.1f} s ({browsers} at once)")
    with (
        tempfile.TemporaryDirectory(prefix="attnpaths-pdf-") as scratch,
        start_browser(logs=True, page_load_timeout_s=PAGE_TIMEOUT_S) as driver,
    ):
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
    first_pages = {p.docname: s for p, s in zip(printed, starts)}
    report = PdfReport(output, len(writer.pages), output.stat().st_size, first_pages, time.perf_counter() - start)
    progress(
        f"wrote {layout.relative(output)}: {report.pages} pages, {report.size / 2**20:.1f} MiB, {report.seconds:.1f} s"
    )
    return report
