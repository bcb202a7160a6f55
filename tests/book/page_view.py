"""What a reader's screen shows of a page of the built book, read in headless Chromium: the facts that
``test_book_browser.py`` checks on every page (headings, typeset mathematics, images and their alt text, error
markers, requests to other hosts, content wider than its column at two window widths).

The suite reads every page in the session that prints it into the book's PDF (:func:`attnpaths_book.pdf.build_pdf`
calls a :class:`ScreenReader` once the page is loaded and typeset, before the print style applies), so each of the
book's ~200 pages is loaded once for both checks. A reading stores plain data (:class:`PageView`), never the
browser's elements, and a page that could not be read stores why, so that its test names it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from selenium.webdriver.support.ui import WebDriverWait

VISIBLE_TEXT = """
const root = document.querySelector('article') || document.body;
const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {acceptNode: node =>
    node.parentElement.closest('pre, code, script, style, mjx-container, mjx-assistive-mml')
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
let text = '';
while (walker.nextNode()) text += walker.currentNode.textContent;
return text;
"""

WIDE_CONTENT = """
// Typeset display equations, tables and images that do not fit their column. An element's column is
// every ancestor up to the article: sticking out of one by more than a pixel is a problem, unless an
// ancestor in between scrolls horizontally with a visible scrollbar (then that container is checked in its
// turn). A display equation is measured by its typeset formula (mjx-math), and its own container scrolling
// does not count: a reader sees the formula cut off at the column's edge.
const root = document.querySelector('article') || document.body;
const px = value => parseFloat(value) || 0;
function contentBox(el) {
    const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    return {left: r.left + px(cs.borderLeftWidth) + px(cs.paddingLeft),
            right: r.right - px(cs.borderRightWidth) - px(cs.paddingRight)};
}
function scrollsVisibly(el) {
    const cs = getComputedStyle(el);
    const scrollbar = el.offsetHeight - el.clientHeight - px(cs.borderTopWidth) - px(cs.borderBottomWidth);
    return ['auto', 'scroll'].includes(cs.overflowX) && el.scrollWidth > el.clientWidth && scrollbar > 0;
}
function describe(el) {
    return el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + [...el.classList].map(c => '.' + c).join('');
}
const items = [];
for (const c of root.querySelectorAll('mjx-container[display="true"]'))
    items.push(['equation', c.querySelector('mjx-math') || c, c, (c.closest('.math') || c).id + ' ' + c.textContent]);
for (const t of root.querySelectorAll('table')) items.push(['table', t, t, t.textContent]);
for (const i of root.querySelectorAll('img')) items.push(['image', i, i, i.getAttribute('src')]);
const problems = [];
for (const [kind, measured, outer, text] of items) {
    if (!measured.getClientRects().length) continue;  // not displayed (a collapsed block)
    let el = measured;
    for (let a = kind === 'equation' ? outer : outer.parentElement; a && a !== root.parentElement;
         a = a.parentElement) {
        if (a !== outer && scrollsVisibly(a)) { el = a; continue; }
        const r = el.getBoundingClientRect(), box = contentBox(a);
        const over = Math.max(r.right - box.right, box.left - r.left);
        if (over > 1) {
            problems.push({kind, width: Math.round(r.width), column: Math.round(box.right - box.left),
                           column_element: describe(a), text: text.replace(/\\s+/g, ' ').trim().slice(0, 70)});
            break;
        }
    }
}
return {checked: items.length, problems, window: window.innerWidth};
"""

IMAGES_WITHOUT_ALT = """
// Every image of the page (its header and sidebars too) whose alt text is empty or only repeats its file name.
return [...document.images].filter(image => {
    const alt = (image.getAttribute('alt') || '').trim(), src = image.getAttribute('src') || '';
    return !alt || alt === src || src.endsWith(alt);
}).map(image => image.getAttribute('src'));
"""

READ_PAGE = """
// What the page shows, in one call: its heading, its visible text (VISIBLE_TEXT), the formulas MathJax did not
// typeset or typeset as an error, images that did not load or show no size, figures without an image, Sphinx's
// and docutils' error markers, every resource requested, images without alt text (IMAGES_WITHOUT_ALT) and the
// images of figures that have one.
const article = document.querySelector('article');
const all = selector => article ? [...article.querySelectorAll(selector)] : [];
const heading = all('h1')[0];
return {
    heading: heading ? heading.innerText : '',
    text: (() => { %s })(),
    untypeset: all('.math').filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80)),
    tex_errors: document.querySelectorAll('mjx-merror').length,
    images: all('img').map(image => [image.getAttribute('src') || '', image.complete, image.naturalWidth,
                                     image.naturalHeight, image.getBoundingClientRect().width]),
    figures_without_image: all('figure').filter(f => !f.querySelector('img')).length,
    error_markers: [...document.querySelectorAll('.problematic, .system-message, .xref.missing')]
        .map(m => m.innerText.slice(0, 80)),
    resources: performance.getEntriesByType('resource').map(e => e.name),
    images_without_alt: (() => { %s })(),
    figure_images_with_alt: all('figure img[alt]').length,
};
""" % (VISIBLE_TEXT, IMAGES_WITHOUT_ALT)

COLUMN_WIDTHS = (1400, 800)
"""Window widths of the column check: a desktop window, and one narrow enough to hide the sidebars."""

RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\$[^$\s][^$]*\$")
"""TeX delimiters in a page's visible text: mathematics that MathJax left as source."""


@dataclass(frozen=True)
class PageView:
    """What a reader's screen shows of one page.

    ``heading``: the text of the article's first ``h1``; ``text``: the article's visible text outside code and
    typeset mathematics; ``untypeset``: the first characters of every ``.math`` element without a typeset formula;
    ``tex_errors``: how many formulas show a TeX error; ``broken_images``: ``(source, state)`` of every image that
    did not load or shows no size; ``figures_without_image``; ``error_markers``: the text of Sphinx's and docutils'
    error markers; ``foreign_resources``: requests outside the built book's folder; ``columns``: the column check
    (:data:`WIDE_CONTENT`) by window width; ``images_without_alt``: sources of images without a real alt text;
    ``figure_images_with_alt``: images inside figures that have one; ``failure``: why the page could not be read
    (then the rest is empty)."""

    heading: str = ""
    text: str = ""
    untypeset: tuple[str, ...] = ()
    tex_errors: int = 0
    broken_images: tuple = ()
    figures_without_image: int = 0
    error_markers: tuple[str, ...] = ()
    foreign_resources: tuple[str, ...] = ()
    columns: dict | None = None
    images_without_alt: tuple[str, ...] = ()
    figure_images_with_alt: int = 0
    failure: str = ""

    @property
    def raw_tex(self) -> list[str]:
        return RAW_TEX.findall(self.text)


def read_page(driver, own_prefix: str) -> PageView:
    """The loaded page as a reader's screen shows it. ``own_prefix``: the address every resource of the built book
    starts with (its folder's ``file://`` URI); the column check resizes the window to each of
    :data:`COLUMN_WIDTHS` and restores its size."""
    shown = driver.execute_script(READ_PAGE)
    original, inner = driver.get_window_size(), driver.execute_script("return window.innerWidth")
    columns = {}
    try:
        for width in COLUMN_WIDTHS:
            driver.set_window_size(width, 1600)
            # the resize reaches the page asynchronously (seen late on a loaded machine): measure once it has
            WebDriverWait(driver, 30).until(lambda d: d.execute_script("return window.innerWidth") == width)
            columns[width] = driver.execute_script(WIDE_CONTENT)
    finally:
        driver.set_window_size(original["width"], original["height"])
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return window.innerWidth") == inner)
    return PageView(
        heading=shown["heading"],
        text=shown["text"],
        untypeset=tuple(shown["untypeset"]),
        tex_errors=shown["tex_errors"],
        broken_images=tuple(
            (src[-60:], state) for src, *state in shown["images"] if not (state[0] and all(v > 0 for v in state[1:]))
        ),
        figures_without_image=shown["figures_without_image"],
        error_markers=tuple(shown["error_markers"]),
        foreign_resources=tuple(r for r in shown["resources"] if not r.startswith(own_prefix)),
        columns=columns,
        images_without_alt=tuple(shown["images_without_alt"]),
        figure_images_with_alt=shown["figure_images_with_alt"],
    )


class ScreenReader:
    """The ``inspect`` of :func:`attnpaths_book.pdf.build_pdf`: reads each printed page (:func:`read_page`) into
    ``views[docname]``; a page that cannot be read gets a :class:`PageView` whose ``failure`` says why (the
    printing goes on, the page's test fails). Called from the printing threads: each writes its own page's entry."""

    def __init__(self, html_dir):
        self.own_prefix = html_dir.resolve().as_uri()
        self.views: dict[str, PageView] = {}

    def __call__(self, driver, page) -> None:
        try:
            self.views[page.docname] = read_page(driver, self.own_prefix)
        except Exception as failure:  # noqa: BLE001 - reported by the page's test, which names it
            self.views[page.docname] = PageView(failure=f"{type(failure).__name__}: {failure}")
