"""The built book in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``, which
``.ci/run`` installs) loads every page from a local HTTP server on 127.0.0.1, with every other host
unreachable, and checks what a reader would see."""

import functools
import re
import shutil
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from attnpaths.book.chapters import toc_docnames
from helpers import ROOT

DOCNAMES = toc_docnames(ROOT / "_toc.yml")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1280,1600",
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")  # no network but ours
VISIBLE_TEXT = """
const root = document.querySelector('article') || document.body;
const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {acceptNode: node =>
    node.parentElement.closest('pre, code, script, style, mjx-container, mjx-assistive-mml')
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
let text = '';
while (walker.nextNode()) text += walker.currentNode.textContent;
return text;
"""
WAIT_FOR_MATHJAX = """
const done = arguments[arguments.length - 1];
if (!window.MathJax || !MathJax.startup || !MathJax.startup.promise) { done('MathJax did not start'); }
else { MathJax.startup.promise.then(() => done('ok'), error => done('MathJax failed: ' + error)); }
"""


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
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "Debian's chromium and chromium-driver are needed (`bash .ci/run` installs them)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    session.set_page_load_timeout(60)
    yield session
    session.quit()
    shutil.rmtree(profile, ignore_errors=True)


def open_page(browser, url):
    browser.get(url)
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return document.readyState") == "complete")


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


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_renders(browser, site_url, docname):
    url = f"{site_url}/{docname}.html"
    open_page(browser, url)
    heading = browser.find_element(By.CSS_SELECTOR, "article h1")
    assert heading.text and "404" not in browser.title

    math = browser.find_elements(By.CSS_SELECTOR, "article .math")
    if math:
        browser.set_script_timeout(60)
        assert browser.execute_async_script(WAIT_FOR_MATHJAX) == "ok"
        untypeset = [m.get_attribute("textContent")[:80] for m in math
                     if not m.find_elements(By.TAG_NAME, "mjx-container")]
        assert not untypeset, f"{docname}: mathematics not typeset: {untypeset[:5]}"
        assert not browser.find_elements(By.CSS_SELECTOR, "mjx-merror"), f"{docname}: a TeX error"
    text = browser.execute_script(VISIBLE_TEXT)
    raw_math = re.findall(r"\\\(|\\\[|\$\$|\$[^$\s][^$]*\$", text)
    assert not raw_math, f"{docname}: raw TeX in the page: {raw_math[:5]}"

    images = browser.find_elements(By.CSS_SELECTOR, "article img")
    sizes = [browser.execute_script("return [arguments[0].complete, arguments[0].naturalWidth, "
                                    "arguments[0].naturalHeight, arguments[0].getBoundingClientRect().width]", img)
             for img in images]
    broken = [(img.get_attribute("src")[-60:], size) for img, size in zip(images, sizes)
              if not (size[0] and size[1] > 0 and size[2] > 0 and size[3] > 0)]
    assert not broken, f"{docname}: images that did not load or have no size: {broken}"
    for figure in browser.find_elements(By.CSS_SELECTOR, "article figure"):
        assert figure.find_elements(By.TAG_NAME, "img"), f"{docname}: a figure without an image"

    problems = browser.find_elements(By.CSS_SELECTOR, ".problematic, .system-message, .xref.missing")
    assert not problems, f"{docname}: {[p.text[:80] for p in problems]}"
    for marker in ("[?]", "??", "glue key", "Traceback"):
        assert marker not in text, f"{docname}: the page shows {marker!r}"

    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    foreign = [r for r in resources if not r.startswith(site_url)]
    assert not foreign, f"{docname}: resources requested from other hosts: {foreign}"


def test_intro_shows_its_figure(browser, site_url):
    open_page(browser, f"{site_url}/{DOCNAMES[0]}.html")
    assert browser.find_elements(By.CSS_SELECTOR, "article figure img")
