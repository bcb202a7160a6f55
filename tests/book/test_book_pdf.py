"""The whole book as one PDF (:mod:`attnpaths_book.pdf`).

Without a browser (fast): which pages are printed in which order, and how the printed pages are joined (front
matter, outline, links, page numbers laid over), on tiny PDFs made here. With headless Chromium (slow, on the test
run's smoke book, ``built_book``): the one file holds every chapter under its title, every image its HTML shows,
no untypeset TeX, a bookmark per chapter at its first page; the book's first page links it; and a page with a
failed request, a console error or mathematics that MathJax did not typeset stops the build, naming the page.
Without Chromium the slow tests are skipped with the reason, and fail under ``CI=true``."""

import contextlib
import html
import io
import re
import threading
import time
import unicodedata
from pathlib import Path

import pytest
from book_helpers import require_browser, write_chapter, write_toc
from pypdf import PdfReader, PdfWriter
from pypdf.annotations import Link
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject, TextStringObject

from attnpaths_book import browser as browser_module
from attnpaths_book import cli, pdf, runner, site
from attnpaths_book.browser import start_browser
from attnpaths_book.layout import BookLayout


def tiny_pdf(*texts: str) -> bytes:
    """A PDF of A4 pages, one per text, each showing its text in Helvetica."""
    writer = PdfWriter()
    for text in texts:
        page = writer.add_blank_page(595, 842)
        font = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
        )
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 72 700 Td ({text}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def printed(docname, title, level, *texts):
    return pdf.PrintedPage(docname, title, level, tiny_pdf(*texts))


def written(writer) -> PdfReader:
    buffer = io.BytesIO()
    writer.write(buffer)
    return PdfReader(io.BytesIO(buffer.getvalue()))


PARTS = [
    printed("book/intro", "Introduction", 0, "intro one", "intro two"),
    printed("book/model", "The model", 0, "model one"),
    printed("book/api/index", "API reference", 0, "api index"),
    printed("book/api/generated/attnpaths.paths", "attnpaths.paths", 1, "paths one", "paths two"),
    printed("book/api/generated/attnpaths.kernels", "attnpaths.kernels", 1, "kernels one"),
]


def test_joined_book_has_the_front_matter_then_every_page_in_order():
    writer, starts = pdf.join_book(tiny_pdf("title", "contents"), PARTS, title="A book")
    reader = written(writer)
    texts = [page.extract_text().strip() for page in reader.pages]
    assert texts == ["title", "contents", "intro one", "intro two", "model one", "api index", "paths one",
                     "paths two", "kernels one"]  # fmt: skip
    assert starts == [3, 5, 6, 7, 9]
    assert starts == pdf.chapter_starts(2, PARTS)
    assert reader.metadata.title == "A book"


def test_outline_has_one_bookmark_per_chapter_at_its_first_page_and_the_generated_pages_below():
    writer, _ = pdf.join_book(tiny_pdf("title"), PARTS)
    reader = written(writer)
    outline = reader.outline
    top = [item for item in outline if not isinstance(item, list)]
    assert [item.title for item in top] == ["Introduction", "The model", "API reference"]
    assert [reader.get_destination_page_number(item) for item in top] == [1, 3, 4]
    children = outline[-1]  # pypdf lists an item's children right after it
    assert isinstance(children, list)
    assert [(c.title, reader.get_destination_page_number(c)) for c in children] == [
        ("attnpaths.paths", 5),
        ("attnpaths.kernels", 7),
    ]


def test_page_numbers_are_laid_over_every_page_but_the_title_page():
    front = tiny_pdf("title", "contents")
    total = 2 + sum(pdf.page_count(p.pdf) for p in PARTS)
    numbers = tiny_pdf(*(f"page {n}" for n in range(1, total + 1)))
    writer, _ = pdf.join_book(front, PARTS, numbers)
    texts = [page.extract_text() for page in written(writer).pages]
    assert "page 1" not in texts[0] and texts[0].strip() == "title"
    for number, text in enumerate(texts[1:], start=2):
        assert f"page {number}" in text, (number, text)
    assert "model one" in texts[4] and "page 5" in texts[4]


def linked_pdf(pages: int, anchors: dict[str, int], urls=(), named=()) -> bytes:
    """``pages`` pages with named destinations ``anchors`` (name -> page) and, on the first page, a link to each
    URL of ``urls`` and to each anchor named in ``named`` (as Chromium writes a link within the page)."""
    reader = PdfReader(io.BytesIO(tiny_pdf(*(f"page {n}" for n in range(pages)))))
    writer = PdfWriter(clone_from=reader)
    for name, page in anchors.items():
        writer.add_named_destination(name, page)
    for n, url in enumerate(urls):
        writer.add_annotation(0, Link(rect=(72, 600 - 30 * n, 200, 620 - 30 * n), url=url))
    for n, name in enumerate(named):
        link = writer.add_annotation(0, Link(rect=(300, 600 - 30 * n, 400, 620 - 30 * n), target_page_index=0))
        link.get_object()[NameObject("/Dest")] = TextStringObject(name)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def link_targets(reader, page) -> list:
    """Where the links of ``page`` lead: a page index for a destination in the file, else the URL."""
    targets = []
    for annotation in (a.get_object() for a in reader.pages[page].get("/Annots", [])):
        if "/Dest" in annotation:
            targets.append(reader.get_page_number(annotation["/Dest"][0].get_object()))
        else:
            targets.append(str(annotation["/A"]["/URI"]))
    return targets


def test_links_lead_to_their_place_in_the_joined_book_and_links_to_unprinted_files_are_dropped():
    intro, model, api = "file:///html/book/intro.html", "file:///html/book/model.html", "file:///html/api/m.html"
    parts = [
        pdf.PrintedPage("book/intro", "Intro", 0, linked_pdf(
            2, {"results": 1}, [model + "#results", model, api + "#nowhere", "file:///html/genindex.html",
                                "https://arxiv.org/abs/2405.15926"], ["results"]), intro),
        pdf.PrintedPage("book/model", "Model", 0, linked_pdf(3, {"results": 2}, named=["results"]), model),
        pdf.PrintedPage("book/api/generated/m", "m", 1, tiny_pdf("api"), api),
    ]  # fmt: skip
    writer, starts = pdf.join_book(tiny_pdf("title"), parts)
    assert starts == [2, 4, 7]
    reader = written(writer)
    # the model's own "results" anchor (its page 3, index 5), its first page, the API page, the intro's own anchor
    assert link_targets(reader, 1) == [5, 3, 6, "https://arxiv.org/abs/2405.15926", 2]
    assert link_targets(reader, 3) == [5]  # the same anchor name in another page leads to that page's own


def test_numbers_must_match_the_books_length():
    with pytest.raises(ValueError, match="numbers must have as many pages as the book"):
        pdf.join_book(tiny_pdf("title"), PARTS, tiny_pdf("1", "2"))


def test_the_first_printed_page_must_be_a_chapter():
    with pytest.raises(ValueError, match="first printed page must be a chapter"):
        pdf.join_book(tiny_pdf("title"), PARTS[3:])


def test_front_matter_lists_every_entry_with_its_page_and_escapes_titles():
    text = pdf.front_matter_html(
        {"title": "Paths & heads", "author": "us"}, "smoke", [("A <b> chapter", 0, 3), ("a.module", 1, 14)]
    )
    assert "Paths &amp; heads" in text and "A &lt;b&gt; chapter" in text
    assert text.count('<li class="level0">') == 1 and text.count('<li class="level1">') == 1
    assert '<span class="page">3</span>' in text and '<span class="page">14</span>' in text


def test_numbers_document_has_one_page_break_fewer_than_pages():
    assert pdf.numbers_html(5, "t").count("break-after: page") == 4
    assert 'class="pageNumber"' in pdf.footer_template("t") and 'class="totalPages"' in pdf.footer_template("t")


def built_html(root, pages: dict[str, str]):
    for docname, body in pages.items():
        path = root / "_build" / "html" / f"{docname}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><body><article>{body}</article></body></html>")


def test_book_pages_follow_the_toc_with_generated_pages_after_their_chapter(tiny_book):
    root = tiny_book.root
    write_toc(root, ["intro", "api/index", "end"])
    built_html(
        root,
        {
            "book/intro": "<h1>Intro</h1>",
            "book/api/index": '<a href="generated/m.b.html">b</a> <a href="generated/m.a.html#x">a</a> '
            '<a href="generated/m.b.html">b again</a> <a href="generated/gone.html">not built</a>',
            "book/api/generated/m.a": "<h1>m.a</h1>",
            "book/api/generated/m.b": "<h1>m.b</h1>",
            "book/end": "<h1>End</h1>",
        },
    )
    pages = pdf.book_pages(BookLayout(root))
    assert [(p.docname, p.level) for p in pages] == [
        ("book/intro", 0),
        ("book/api/index", 0),
        ("book/api/generated/m.b", 1),
        ("book/api/generated/m.a", 1),
        ("book/end", 0),
    ]
    assert all(p.path.is_file() for p in pages)


def test_a_generated_page_is_printed_once_after_the_first_page_whose_content_links_it(tiny_book):
    # every page's navigation links every generated page; only the article's links place them
    root = tiny_book.root
    write_toc(root, ["api/index", "api/companion"])
    nav = '<nav><a href="generated/m.a.html">a</a> <a href="generated/c.x.html">x</a></nav>'
    for docname, article in {
        "book/api/index": '<a href="generated/m.a.html">a</a>',
        "book/api/companion": '<a href="generated/c.x.html">x</a> <a href="generated/m.a.html">a again</a>',
    }.items():
        path = root / "_build" / "html" / f"{docname}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><body>{nav}<article>{article}</article></body></html>")
    built_html(root, {"book/api/generated/m.a": "<h1>m.a</h1>", "book/api/generated/c.x": "<h1>c.x</h1>"})
    assert [(p.docname, p.level) for p in pdf.book_pages(BookLayout(root))] == [
        ("book/api/index", 0),
        ("book/api/generated/m.a", 1),
        ("book/api/companion", 0),
        ("book/api/generated/c.x", 1),
    ]


def test_a_page_not_built_is_named(tiny_book):
    write_toc(tiny_book.root, ["intro", "model"])
    built_html(tiny_book.root, {"book/intro": "<h1>Intro</h1>"})
    with pytest.raises(FileNotFoundError, match="page book/model of the book was not built"):
        pdf.book_pages(tiny_book)


HTML_TEXT = {"alpha": "first version"}
"""What the stubbed HTML build of ``book_command`` writes on the page."""


def write_page(layout, text: str = "first version") -> Path:
    """The one page of the tiny book's HTML as Sphinx writes it: its first page, with the PDF link hidden."""
    page = layout.html_dir / "book" / "alpha.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(
        f"<!DOCTYPE html><html><body><article><h1>Alpha</h1>{pdf.LINK_HIDDEN}<a href=\"../_static/{pdf.PDF_NAME}\">"
        f"the whole book as one PDF</a></p><p>{text}</p></article></body></html>"
    )
    return page


@pytest.fixture
def book_command(tiny_book, monkeypatch):
    """``python -m attnpaths_book book`` on a one-chapter book with the execution and the HTML build stubbed
    (the build writes the page with the text in ``HTML_TEXT["alpha"]``)."""
    write_chapter(tiny_book.root, "alpha", "", "values = {}")
    write_toc(tiny_book.root, ["alpha"])
    monkeypatch.chdir(tiny_book.root)
    monkeypatch.setattr(runner, "run_book", lambda layout, profile, **kw: [])
    monkeypatch.setitem(HTML_TEXT, "alpha", "first version")

    def build_html(layout, chapters, profile):
        write_page(layout, HTML_TEXT["alpha"])
        return layout.html_dir / "index.html"

    monkeypatch.setattr(site, "build_html", build_html)
    return tiny_book


def keyed_pdf(layout, html_dir=None, code=True) -> bytes:
    """A one-page PDF recording the key of the HTML as it is now, as build_pdf writes it."""
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(tiny_pdf("book"))))
    writer.add_metadata({pdf.HTML_KEY_FIELD: pdf.html_key(pdf.book_pages(layout, html_dir), code)})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


@pytest.fixture
def printer(monkeypatch):
    """``pdf.build_pdf`` stubbed (a keyed one-page PDF; ``printer`` lists the calls) with a browser present."""
    calls = []

    def build(layout, html_dir, output, code=True, **kwargs):
        calls.append(output)
        path = pdf.default_output(layout) if output is None else output
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(keyed_pdf(layout, html_dir, code))
        return pdf.PdfReport(path, 1, path.stat().st_size, {}, 0.0)

    monkeypatch.setattr(browser_module, "missing_browser", lambda: None)
    monkeypatch.setattr(pdf, "build_pdf", build)
    return calls


def link_shown(layout) -> bool:
    text = (layout.html_dir / "book" / "alpha.html").read_text()
    assert (pdf.LINK_SHOWN in text) != (pdf.LINK_HIDDEN in text)
    return pdf.LINK_SHOWN in text


def test_the_book_command_without_chromium_skips_the_pdf_in_one_line(book_command, monkeypatch, capsys):
    monkeypatch.setattr(browser_module, "missing_browser", lambda: "chromium and chromedriver not on the PATH")
    monkeypatch.setattr(pdf, "build_pdf", lambda *a, **k: pytest.fail("the PDF was built without a browser"))
    assert cli.main(["book", "--workers", "1"]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "PDF" in line]
    assert said == ["skipped the PDF of the book: chromium and chromedriver not on the PATH"]


def test_the_book_command_makes_the_pdf_and_copies_it_into_the_html(book_command, printer, capsys):
    assert cli.main(["book", "--workers", "1"]) == 0
    copy = book_command.html_dir / "_static" / pdf.PDF_NAME
    assert copy.read_bytes() == pdf.default_output(book_command).read_bytes()
    assert "_static/attnpaths.pdf" in capsys.readouterr().out
    assert link_shown(book_command) and len(printer) == 1


def test_the_book_command_prints_the_pdf_again_only_when_the_html_changed(book_command, printer, capsys):
    assert cli.main(["book", "--workers", "1"]) == 0
    capsys.readouterr()
    assert cli.main(["book", "--workers", "1"]) == 0  # the HTML built again, the same
    said = [line for line in capsys.readouterr().out.splitlines() if "PDF" in line]
    assert said == ["the PDF of the book is current: _build/pdf/attnpaths.pdf was printed from this HTML"]
    assert len(printer) == 1 and link_shown(book_command)
    HTML_TEXT["alpha"] = "second version"
    assert cli.main(["book", "--workers", "1"]) == 0
    assert len(printer) == 2 and link_shown(book_command)
    assert pdf.is_current(pdf.default_output(book_command), book_command)


def test_a_stale_pdf_is_not_linked_and_its_copy_is_removed(book_command, printer, monkeypatch, capsys):
    assert cli.main(["book", "--workers", "1"]) == 0
    copy = pdf.html_copy(book_command.html_dir)
    assert copy.is_file() and link_shown(book_command)
    HTML_TEXT["alpha"] = "second version"
    monkeypatch.setattr(browser_module, "missing_browser", lambda: "chromium not on the PATH")
    capsys.readouterr()
    assert cli.main(["book", "--workers", "1"]) == 0  # the HTML changed and no PDF can be printed
    said = [line for line in capsys.readouterr().out.splitlines() if "PDF" in line]
    assert said == [
        "skipped the PDF of the book: chromium not on the PATH",
        "removed the HTML's copy of an older PDF of the book and hid the link to it",
    ]
    assert not copy.exists() and not link_shown(book_command) and len(printer) == 1
    assert cli.main(["book", "--workers", "1", "--no-pdf"]) == 0  # still stale: nothing linked
    assert not copy.exists() and not link_shown(book_command)
    HTML_TEXT["alpha"] = "first version"  # the HTML the PDF was printed from, built again
    assert cli.main(["book", "--workers", "1", "--no-pdf"]) == 0
    assert copy.read_bytes() == pdf.default_output(book_command).read_bytes() and link_shown(book_command)


def test_the_html_key_follows_what_the_pdf_shows(tiny_book):
    write_toc(tiny_book.root, ["alpha"])
    page = write_page(tiny_book)
    pages = pdf.book_pages(tiny_book)
    key = pdf.html_key(pages)
    page.write_text(page.read_text().replace(pdf.LINK_HIDDEN, pdf.LINK_SHOWN))
    assert pdf.html_key(pages) == key  # the link is not printed
    assert pdf.html_key(pages, code=False) != key
    (page.parent / "figure.png").write_bytes(b"one image")
    page.write_text(page.read_text().replace("</article>", '<img src="figure.png" alt="a figure"></article>'))
    with_image = pdf.html_key(pages)
    assert with_image != key
    (page.parent / "figure.png").write_bytes(b"another image")
    assert pdf.html_key(pages) != with_image
    write_page(tiny_book, "another text")
    assert pdf.html_key(pages) != key


def test_a_pdf_without_a_key_or_without_its_html_is_not_current(tiny_book, tmp_path):
    write_toc(tiny_book.root, ["alpha"])
    output = tmp_path / "book.pdf"
    assert not pdf.is_current(output, tiny_book)  # no PDF
    write_page(tiny_book)
    output.write_bytes(tiny_pdf("book"))
    assert not pdf.is_current(output, tiny_book)  # no key
    output.write_bytes(b"not a PDF")
    assert not pdf.is_current(output, tiny_book)
    output.write_bytes(keyed_pdf(tiny_book))
    assert pdf.is_current(output, tiny_book) and not pdf.is_current(output, tiny_book, code=False)
    (tiny_book.html_dir / "book" / "alpha.html").unlink()
    assert not pdf.is_current(output, tiny_book)  # no HTML


class FakeDriver:
    """What build_pdf asks of a selenium session, without a browser: every page loads and prints as one tiny
    page, except pages whose URL contains ``times_out``, whose loading times out."""

    def __init__(self, times_out: str):
        self.times_out, self.loaded = times_out, []

    def get(self, url):
        from selenium.common.exceptions import TimeoutException

        self.loaded.append(url)
        if self.times_out in url:
            raise TimeoutException("timeout: Timed out receiving message from renderer: 120.000")

    def get_log(self, kind):
        return []

    def set_script_timeout(self, seconds):
        pass

    def execute_async_script(self, script):
        return {"problems": [], "title": "Alpha"}

    def execute_script(self, script, *args):
        pass

    def execute_cdp_cmd(self, command, options):
        import base64
        from urllib.request import url2pathname

        document = url2pathname(self.loaded[-1].removeprefix("file://"))
        pages = Path(document).read_text().count("break-after: page") + 1  # the page numbers: one per page
        return {"data": base64.b64encode(tiny_pdf(*["printed"] * pages)).decode()}


@pytest.mark.parametrize(
    ("times_out", "named"), [("alpha.html", "page book/alpha "), ("front.html", "the PDF's own page front.html")]
)
def test_a_page_that_does_not_load_in_time_stops_the_pdf_naming_it(tiny_book, monkeypatch, times_out, named):
    write_toc(tiny_book.root, ["alpha"])
    write_page(tiny_book)
    driver = FakeDriver(times_out)

    @contextlib.contextmanager
    def fake_browser(**kwargs):
        assert kwargs["page_load_timeout_s"] == pdf.PAGE_TIMEOUT_S
        yield driver

    monkeypatch.setattr(browser_module, "start_browser", fake_browser)
    with pytest.raises(pdf.PdfFailed, match="did not load within the page-load timeout") as failure:
        pdf.build_pdf(tiny_book, progress_bar=False)
    assert named in str(failure.value) and any(times_out in url for url in driver.loaded)
    assert not pdf.default_output(tiny_book).exists()


def test_a_fake_browser_prints_the_whole_book(tiny_book, monkeypatch):
    """The same fake session with no timeout makes a PDF that records its HTML (the test above fails for the
    reason it names)."""
    write_toc(tiny_book.root, ["alpha"])
    write_page(tiny_book)

    @contextlib.contextmanager
    def fake_browser(**kwargs):
        yield FakeDriver("never")

    monkeypatch.setattr(browser_module, "start_browser", fake_browser)
    report = pdf.build_pdf(tiny_book, progress_bar=False)
    assert pdf.is_current(report.path, tiny_book) and report.starts == {"book/alpha": 3}


def test_inspect_reads_every_page_once_in_its_session_before_the_print_style(tiny_book, monkeypatch):
    """``build_pdf(inspect=...)`` is called once per page of the book, with the session that loaded it, after the
    page loaded and before the print style is injected and the page printed; the PDF's own pages are not read."""
    names = ["alpha", "beta"]
    write_toc(tiny_book.root, names)
    for name in reversed(names):
        write_page(tiny_book).rename(tiny_book.html_dir / "book" / f"{name}.html")
    events = []

    class RecordingDriver(FakeDriver):
        def execute_script(self, script, *args):
            events.append(("style", self.loaded[-1].rsplit("/", 1)[1]))

        def execute_cdp_cmd(self, command, options):
            events.append(("print", self.loaded[-1].rsplit("/", 1)[1]))
            return super().execute_cdp_cmd(command, options)

    @contextlib.contextmanager
    def fake_browser(**kwargs):
        yield RecordingDriver("never")

    def inspect(driver, page):
        events.append(("read", page.docname, driver.loaded[-1].rsplit("/", 1)[1]))

    monkeypatch.setattr(browser_module, "start_browser", fake_browser)
    pdf.build_pdf(tiny_book, progress_bar=False, browsers=1, inspect=inspect)
    reads = [e for e in events if e[0] == "read"]
    assert sorted(reads) == [("read", f"book/{n}", f"{n}.html") for n in names]
    for name in names:
        read = events.index(("read", f"book/{name}", f"{name}.html"))
        assert read < events.index(("style", f"{name}.html")) < events.index(("print", f"{name}.html"))


def test_two_browsers_print_the_pages_in_the_tocs_order_and_a_failure_stops_both(tiny_book, monkeypatch):
    """Each session takes the next page not taken (the largest first); the joined file has the pages in the toc's
    order whichever session printed them, and one session's failure leaves the other's pages untaken."""
    names = ["alpha", "beta", "gamma", "delta"]
    write_toc(tiny_book.root, names)
    for k, name in reversed(list(enumerate(names))):  # written as alpha.html, then renamed; delta the largest
        page = write_page(tiny_book, text="x" * (100 * k))
        page.rename(page.with_name(f"{name}.html"))
    sessions, both_started, failed = [], threading.Barrier(2, timeout=10), threading.Event()

    class SlowDriver(FakeDriver):
        def get(self, url):
            if self.times_out in url:
                failed.set()
            elif self.times_out != "never":  # the other session's page ends well after the failure
                failed.wait(10)
                time.sleep(0.2)
            time.sleep(0.05)  # a page takes a while: the other session takes the next one meanwhile
            super().get(url)

    @contextlib.contextmanager
    def fake_browser(**kwargs):
        driver = SlowDriver(times_out)
        sessions.append(driver)
        if len(sessions) <= 2:  # the two printing sessions start before either takes a page
            both_started.wait()
        yield driver

    monkeypatch.setattr(browser_module, "start_browser", fake_browser)
    times_out = "never"
    report = pdf.build_pdf(tiny_book, progress_bar=False, browsers=2)
    assert len(sessions) == 3  # two print the pages, one the front matter and the numbers
    printed = [url.rsplit("/", 1)[1] for driver in sessions[:2] for url in driver.loaded]
    assert sorted(printed) == sorted(f"{n}.html" for n in names) and all(d.loaded for d in sessions[:2])
    assert list(report.starts) == [f"book/{n}" for n in names]
    assert list(report.starts.values()) == sorted(report.starts.values())

    sessions.clear()
    both_started.reset()
    times_out = "delta.html"  # the first page taken fails: the other session ends its page (gamma) and stops
    with pytest.raises(pdf.PdfFailed, match="page book/delta "):
        pdf.build_pdf(tiny_book, progress_bar=False, browsers=2)
    assert sorted(url.rsplit("/", 1)[1] for d in sessions for url in d.loaded) == ["delta.html", "gamma.html"]
    with pytest.raises(ValueError, match="browsers must be an integer >= 1, got 0"):
        pdf.build_pdf(tiny_book, progress_bar=False, browsers=0)


def test_the_browser_profile_is_removed_when_quitting_fails(monkeypatch):
    from selenium import webdriver

    started = []

    class FailingToQuit:
        def __init__(self, service, options):
            started.append(next(a for a in options.arguments if a.startswith("--user-data-dir=")).split("=", 1)[1])

        def set_page_load_timeout(self, seconds):
            pass

        def quit(self):
            raise RuntimeError("the browser did not quit")

    monkeypatch.setattr(browser_module, "missing_browser", lambda: None)
    monkeypatch.setattr(browser_module.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(webdriver, "Chrome", FailingToQuit)
    with pytest.raises(RuntimeError, match="did not quit"):
        with browser_module.start_browser():
            assert Path(started[0]).is_dir()
    assert started and not Path(started[0]).exists()


# --------------------------------------------------------------------------------------------------------
# the smoke book printed by headless Chromium


@pytest.fixture(scope="module")
def book_pdf(printed_book):
    """The report of the smoke book's PDF (``printed_book``, tests/book/conftest.py)."""
    return printed_book.report


@pytest.fixture(scope="module")
def book_reader(book_pdf):
    return PdfReader(book_pdf.path)


@pytest.fixture(scope="module")
def book_text(book_pdf) -> list[str]:
    """The text of every printed page, extracted once for the tests that read it, by PDFium (about 4 ms a page).
    PDFium marks a hyphen that ends a line as U+FFFE; it is written back as the hyphen it is."""
    import pypdfium2

    document = pypdfium2.PdfDocument(book_pdf.path)
    try:
        return [document[i].get_textpage().get_text_range().replace("\ufffe", "-") for i in range(len(document))]
    finally:
        document.close()


@pytest.fixture(scope="module")
def book_pages(built_book):
    return pdf.book_pages(built_book)


def page_ranges(book_pdf, book_reader, book_pages):
    """``{docname: range of page indices}`` of every printed page, from the starts the build reports."""
    starts = [book_pdf.starts[p.docname] - 1 for p in book_pages] + [len(book_reader.pages)]
    return {p.docname: range(starts[k], starts[k + 1]) for k, p in enumerate(book_pages)}


def html_title(path) -> str:
    """The text of the page's first heading in its HTML, without the heading's link mark."""
    text = path.read_text(encoding="utf-8")
    heading = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.S).group(1)
    heading = re.sub(r'<a class="headerlink".*?</a>', "", heading, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", heading)).strip()


def squeezed(text: str) -> str:
    """Text without whitespace and ligatures: a title wraps differently in print and in the HTML, and the
    printed text writes "fi" as one character."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def test_the_book_is_one_file_with_more_pages_than_chapters(book_pdf, book_reader, built_book):
    assert book_pdf.path == built_book.build_dir / "pdf" / pdf.PDF_NAME and book_pdf.path.is_file()
    assert len(book_reader.pages) == book_pdf.pages
    chapters = [p for p in pdf.book_pages(built_book) if p.level == 0]
    assert book_pdf.pages > len(chapters)
    assert book_reader.metadata.title == pdf.book_metadata(built_book)["title"]


def test_every_chapter_starts_with_its_title_under_a_bookmark(book_pdf, book_reader, book_text, book_pages):
    chapters = [p for p in book_pages if p.level == 0]
    top = [item for item in book_reader.outline if not isinstance(item, list)]
    assert [item.title for item in top] == [html_title(p.path) for p in chapters]
    for item, chapter in zip(top, chapters):
        first = book_reader.get_destination_page_number(item)
        assert first == book_pdf.starts[chapter.docname] - 1
        assert squeezed(html_title(chapter.path)) in squeezed(book_text[first]), chapter.docname


def test_the_table_of_contents_lists_every_page_with_its_first_page(book_pdf, book_text, book_pages):
    first_chapter = book_pdf.starts[book_pages[0].docname] - 1
    contents = squeezed("".join(book_text[i] for i in range(1, first_chapter)))
    for page in book_pages:
        entry = squeezed(html_title(page.path)) + str(book_pdf.starts[page.docname])
        assert entry in contents, page.docname


def image_objects(page) -> set[int]:
    """The image XObjects a PDF page draws (also inside form XObjects), by object number."""
    found = set()

    def walk(resources):
        resources = resources.get_object() if resources is not None else None
        for reference in (resources or {}).get("/XObject", {}).values():
            obj = reference.get_object()
            if obj.get("/Subtype") == "/Image":
                found.add(reference.idnum)
            elif obj.get("/Subtype") == "/Form":
                walk(obj.get("/Resources"))

    walk(page.get("/Resources"))
    return found


def test_every_image_of_the_html_is_in_the_pdf(book_pdf, book_reader, book_pages):
    """Per printed page: as many distinct images in its PDF pages as distinct image files its article shows (a
    file shown twice on one page is embedded once)."""
    ranges = page_ranges(book_pdf, book_reader, book_pages)
    total = 0
    for page in book_pages:
        text = page.path.read_text(encoding="utf-8")
        article = text[text.find("<article") : text.rfind("</article>")]
        sources = set(re.findall(r'<img\b[^>]*\bsrc="([^"]+)"', article))
        drawn = set().union(*(image_objects(book_reader.pages[i]) for i in ranges[page.docname]))
        assert len(drawn) == len(sources), f"{page.docname}: {len(sources)} images in the HTML, {len(drawn)} in the PDF"
        total += len(sources)
    assert total > 0


def column_headers(page_html: str) -> list[str]:
    """The text of every column header (``<th>``) of every table in a page's article, without those holding
    mathematics (typeset by MathJax, their printed text differs from the source)."""
    headers = []
    for cell in re.findall(r"<th\b[^>]*>(.*?)</th>", pdf._article(page_html), re.S):
        if 'class="math' not in cell:
            text = html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            headers += [text] if text else []
    return headers


def test_every_column_header_of_every_table_is_printed_whole(book_pdf, book_reader, book_text, book_pages):
    """A table wider than the page prints cut at its right margin (its scrolling container clips it): the text of
    its last columns is missing from the PDF. Every header of every table of the HTML must be in the text of its
    page's printed pages."""
    ranges = page_ranges(book_pdf, book_reader, book_pages)
    missing, total = [], 0
    for page in book_pages:
        headers = column_headers(page.path.read_text(encoding="utf-8"))
        if not headers:
            continue
        printed = squeezed("".join(book_text[i] for i in ranges[page.docname]))
        missing += [(page.docname, header) for header in headers if squeezed(header) not in printed]
        total += len(headers)
    assert total > 20  # the smoke book's tables: reproducibility, the scorecard, the claims of each chapter
    assert not missing, f"{len(missing)} of {total} column headers not printed (page, header): {missing[:10]}"


def test_no_raw_tex_in_the_text(book_text):
    raw = []
    for number, text in enumerate(book_text, start=1):
        raw += [(number, m) for m in re.findall(r"\\\(|\$\$|\\begin\{", text)]
    assert not raw, f"untypeset TeX (page, text): {raw[:10]}"


def test_every_link_leads_to_a_page_of_the_book_or_to_the_web(book_reader):
    """No link is left by name (two pages may name an anchor alike) or to a file of the machine that printed it."""
    explicit, left = 0, []
    for number, page in enumerate(book_reader.pages, start=1):
        for annotation in (a.get_object() for a in page.get("/Annots", [])):
            if annotation.get("/Subtype") != "/Link":
                continue
            destination = annotation.get("/Dest")
            if destination is not None and not isinstance(destination, str):
                assert 0 <= book_reader.get_page_number(destination[0].get_object()) < len(book_reader.pages)
                explicit += 1
                continue
            action = annotation.get("/A", {})
            uri = str(action.get("/URI", ""))
            if destination is not None or not uri.startswith(("http://", "https://", "mailto:")):
                left.append((number, destination, uri[:80]))
    assert not left, f"links by name or to local files (page, name, URL): {left[:10]}"
    assert explicit > 0


def test_page_numbers_run_through_the_book(book_pdf, book_reader):
    total = len(book_reader.pages)
    for index in (1, book_pdf.pages // 2, total - 1):
        assert f"{index + 1} / {total}" in book_reader.pages[index].extract_text(), index + 1
    assert f"1 / {total}" not in book_reader.pages[0].extract_text()  # the title page has no number


def test_the_books_first_page_links_the_pdf(book_pdf, built_book, book_pages):
    intro = book_pages[0].path
    text = intro.read_text(encoding="utf-8")
    assert pdf.LINK_SHOWN in text and pdf.LINK_HIDDEN not in text, "the link to the current PDF is hidden"
    links = re.findall(r'<a href="([^"]+\.pdf)"', text)
    assert links, f"{intro} has no link to the PDF"
    for link in links:
        target = (intro.parent / link).resolve()
        assert target == pdf.html_copy(built_book.html_dir).resolve()
        assert target.read_bytes() == book_pdf.path.read_bytes()


@pytest.fixture(scope="module")
def browser():
    require_browser()
    with start_browser(logs=True) as session:
        yield session


FAULTY_PAGES = {
    "missing-image": ('<img src="missing.png">', "missing.png"),
    "foreign-script": ('<script src="https://example.org/script.js"></script>', "example.org"),
    "console-error": ("<script>throw new Error('a broken script')</script>", "a broken script"),
    "math-not-typeset": ('<span class="math notranslate">\\(x^2\\)</span>', "MathJax did not start"),
}


@pytest.mark.parametrize("fault", FAULTY_PAGES)
def test_a_faulty_page_stops_the_pdf_naming_the_page(browser, tmp_path, fault):
    markup, expected = FAULTY_PAGES[fault]
    path = tmp_path / f"{fault}.html"
    path.write_text(f"<!DOCTYPE html><html><head></head><body><article><h1>Faulty</h1>{markup}</article></body></html>")
    with pytest.raises(pdf.PdfFailed, match=f"page book/{fault} ") as failure:
        pdf.print_page(browser, pdf.BookPage(f"book/{fault}", path))
    assert expected in str(failure.value)


def test_a_sound_page_prints(browser, tmp_path):
    path = tmp_path / "sound.html"
    path.write_text(
        "<!DOCTYPE html><html><head></head><body><article><h1>Sound</h1><p>text</p></article></body></html>"
    )
    printed = pdf.print_page(browser, pdf.BookPage("book/sound", path))
    assert printed.title == "Sound" and printed.url == path.as_uri()
    assert "text" in PdfReader(io.BytesIO(printed.pdf)).pages[0].extract_text()


def test_code_cells_fold_to_their_outputs_on_request(browser, tmp_path):
    path = tmp_path / "cells.html"
    path.write_text(
        "<!DOCTYPE html><html><head></head><body><article><h1>Cells</h1><div class='cell'>"
        "<div class='cell_input'>the code of the cell</div><div class='cell_output'>what it printed</div>"
        "</div></article></body></html>"
    )
    page = pdf.BookPage("book/cells", path)
    shown = PdfReader(io.BytesIO(pdf.print_page(browser, page).pdf)).pages[0].extract_text()
    folded = PdfReader(io.BytesIO(pdf.print_page(browser, page, code=False).pdf)).pages[0].extract_text()
    assert "the code of the cell" in shown and "what it printed" in shown
    assert "the code of the cell" not in folded and "what it printed" in folded
