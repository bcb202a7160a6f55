"""The built book in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``, which
``.ci/run`` installs) with every other host unreachable shows every page as a reader would see it, including that
no display equation, table or image of any page is wider than its column in a desktop and in a narrow window.

Every page is read in the browser session that prints it into the book's PDF (``printed_book``,
tests/book/conftest.py; what is read: ``page_view.py``), so that each page is loaded once for both; the index's
redirect and the checks' own tests load pages from a local HTTP server on 127.0.0.1."""

import functools
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from book_helpers import API_PAGES_DIR, api_modules, browser_or_skip
from helpers import ROOT
from page_view import COLUMN_WIDTHS, IMAGES_WITHOUT_ALT, WIDE_CONTENT
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from attnpaths_book.chapters import toc_docnames

DOCNAMES = toc_docnames(ROOT / "_toc.yml")
PAGES = DOCNAMES + [f"{API_PAGES_DIR}/{module}" for module in api_modules()]
"""Every page of the book: the toc's documents and the API pages generated from the docstrings."""


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        """Keep the test output clean."""


@pytest.fixture(scope="module")
def site_url(built_book):
    handler = functools.partial(QuietHandler, directory=str(built_book.html_dir))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    with browser_or_skip(reachable=["127.0.0.1"]) as session:  # no network but ours
        yield session


def open_page(browser, url):
    browser.get(url)
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return document.readyState") == "complete")


def has_wide_candidates(docname) -> bool:
    """Whether ``book/<docname>.md`` shows a display equation, a table or a figure (what the column check measures)."""
    source = (ROOT / f"{docname}.md").read_text()
    return bool(re.search(r"^\$\$|^```\{math\}|^\|.*\|$|\{glue:figure\}|^```\{figure\}|\{glue:md\}", source, re.M))


def first_heading(docname):
    """The text of the first level-1 heading of ``book/<docname>.md``."""
    source = (ROOT / f"{docname}.md").read_text()
    return next(line[2:].strip() for line in source.splitlines() if line.startswith("# "))


def test_index_leads_to_the_first_chapter(browser, site_url):
    open_page(browser, f"{site_url}/index.html")
    first = f"{site_url}/{DOCNAMES[0]}.html"
    try:
        WebDriverWait(browser, 30).until(lambda b: b.current_url == first)
    except TimeoutException:
        pass  # the assertion below reports where the index led
    assert browser.current_url == first, f"index.html led to {browser.current_url}, not to {first}"
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return document.readyState") == "complete")
    heading = browser.find_element(By.CSS_SELECTOR, "article h1").text
    assert heading.rstrip("#").strip() == first_heading(DOCNAMES[0]), heading


def test_every_page_of_the_book_was_read(printed_book):
    """The pages the PDF printed, and so read, are every page of the book: none is left unchecked."""
    assert sorted(printed_book.views) == sorted(PAGES)


@pytest.mark.parametrize("docname", PAGES)
def test_page_renders_and_fits_its_column(printed_book, docname):
    """What a reader sees (headings, typeset mathematics, images, no error markers, no resources from outside the
    built book), then the column check at each window width of ``COLUMN_WIDTHS``, read in one load of the page."""
    view = printed_book.views.get(docname)
    assert view is not None, f"{docname} was not printed, so not read"
    assert not view.failure, f"{docname} could not be read: {view.failure}"
    assert view.heading, f"{docname}: no heading"
    assert not view.untypeset, f"{docname}: mathematics not typeset: {list(view.untypeset[:5])}"
    assert not view.tex_errors, f"{docname}: {view.tex_errors} TeX errors"
    assert not view.raw_tex, f"{docname}: raw TeX in the page: {view.raw_tex[:5]}"
    assert not view.broken_images, f"{docname}: images that did not load or have no size: {view.broken_images}"
    assert not view.figures_without_image, f"{docname}: {view.figures_without_image} figures without an image"
    assert not view.error_markers, f"{docname}: {list(view.error_markers)}"
    # a myst-nb glue error shows "glue key ..." in a chapter; the API pages speak of glue keys (the recorder's)
    for marker in ("[?]", "??", "Traceback", *(("glue key",) if docname in DOCNAMES else ())):
        assert marker not in view.text, f"{docname}: the page shows {marker!r}"
    assert not view.foreign_resources, f"{docname}: resources from outside the book: {view.foreign_resources}"
    assert sorted(view.columns) == sorted(COLUMN_WIDTHS)
    for width, found in view.columns.items():
        assert found["window"] == width
        assert not found["problems"], f"{docname} at {width} px: wider than their column: {found['problems']}"
    if docname in DOCNAMES and has_wide_candidates(docname):  # the check saw what the page shows
        assert min(found["checked"] for found in view.columns.values()) > 0, (
            f"{docname}: the column check found no equation, table or image to measure"
        )


def test_intro_shows_its_figure(printed_book):
    assert printed_book.views[DOCNAMES[0]].figure_images_with_alt


@pytest.mark.parametrize("docname", DOCNAMES)
def test_every_image_of_a_chapter_has_alt_text(printed_book, docname):
    view = printed_book.views[docname]
    assert not view.images_without_alt, f"{docname}: images without alt text: {view.images_without_alt}"
    if "{glue:figure}" in (ROOT / f"{docname}.md").read_text():  # the check saw the chapter's figures
        assert view.figure_images_with_alt


def test_the_alt_check_sees_an_image_without_alt(browser, site_url):
    open_page(browser, f"{site_url}/{DOCNAMES[0]}.html")
    assert not browser.execute_script(IMAGES_WITHOUT_ALT)
    browser.execute_script("""
        const article = document.querySelector('article');
        for (const alt of [null, '', 'plot.png']) {
            const image = document.createElement('img');
            image.src = 'plot.png';
            if (alt !== null) image.alt = alt;
            article.appendChild(image);
        }""")
    assert browser.execute_script(IMAGES_WITHOUT_ALT) == ["plot.png"] * 3


def test_the_column_check_sees_what_sticks_out(browser, site_url):
    """The check itself: on a real page, an injected wide table and a wide display equation are reported; the
    same table inside a container that scrolls horizontally is not."""
    open_page(browser, f"{site_url}/{DOCNAMES[0]}.html")
    baseline = browser.execute_script(WIDE_CONTENT)
    browser.execute_script("""
        const article = document.querySelector('article');
        const block = document.createElement('div');
        block.innerHTML = '<table id="wide-table"><tr><td style="min-width: 3000px">wide</td></tr></table>'
            + '<div style="overflow-x: auto"><table id="scrolled-table"><tr><td style="min-width: 3000px">'
            + 'scrolled</td></tr></table></div>'
            + '<div class="math"><mjx-container display="true"><mjx-math style="display: inline-block; '
            + 'width: 3000px">wide formula</mjx-math></mjx-container></div>';
        article.appendChild(block);""")
    found = browser.execute_script(WIDE_CONTENT)
    assert found["checked"] == baseline["checked"] + 3
    new = [(p["kind"], p["text"]) for p in found["problems"] if p not in baseline["problems"]]
    assert sorted(new) == [("equation", "wide formula"), ("table", "wide")], new  # the injected formula has no id
