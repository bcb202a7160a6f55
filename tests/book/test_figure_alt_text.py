"""Every figure of the book carries a text alternative and a caption: read from the chapters' markdown, without
building the book (the browser test checks that the ``alt`` reaches every ``<img>`` of the built pages).

A figure is a ``{glue:figure}``, ``{figure}`` or ``{image}`` directive (its ``:alt:`` option is the alternative
and, for the first two, its body after the options the caption), a markdown image ``![alt](path)`` or a raw
``<img>``.
"""

from __future__ import annotations

import re

import pytest
from helpers import ROOT

CHAPTERS = sorted((ROOT / "book").glob("*.md"))
DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<kind>glue:figure|figure|image)\}(?P<argument>.*)$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):(?P<value>.*)$")
MARKDOWN_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\(")
RAW_IMAGE = re.compile(r"<img\b[^>]*>", re.I)
RAW_ALT = re.compile(r"""\balt\s*=\s*(["'])(?P<alt>.*?)\1""", re.I | re.S)


def figures(text: str) -> list[dict]:
    """The figure directives of a chapter's markdown: kind, argument, line (1-based), options and caption."""
    found, lines, k = [], text.split("\n"), 0
    while k < len(lines):
        match = DIRECTIVE.match(lines[k])
        if match is None:
            k += 1
            continue
        fence, start, options, body = match["fence"], k + 1, {}, []
        k += 1
        while k < len(lines) and (option := OPTION.match(lines[k])):
            options[option["key"]] = option["value"].strip()
            k += 1
        while k < len(lines) and lines[k].rstrip() != fence:
            body.append(lines[k])
            k += 1
        caption = " ".join(body).strip()
        found.append(
            {"kind": match["kind"], "argument": match["argument"].strip(), "line": start}
            | {"options": options, "caption": caption}
        )
        k += 1
    return found


def test_the_parser_sees_options_and_captions():
    text = "```{glue:figure} key\n:name: fig-a\n:alt: A line of y against x.\n\nThe caption.\n```\n"
    (figure,) = figures(text)
    assert figure["options"] == {"name": "fig-a", "alt": "A line of y against x."}
    assert figure["caption"] == "The caption."
    (bare,) = figures("```{glue:figure} key\n:name: fig-b\n```\n")
    assert "alt" not in bare["options"] and bare["caption"] == ""


def test_the_book_has_figures():
    assert sum(len(figures(path.read_text(encoding="utf-8"))) for path in CHAPTERS) >= 40


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_figure_has_alt_text_and_a_caption(path):
    problems = []
    for figure in figures(path.read_text(encoding="utf-8")):
        where = f"{path.name}:{figure['line']} {figure['kind']} {figure['argument']}"
        alt = figure["options"].get("alt", "")
        if len(alt.split()) < 5:  # a few words at least: what is plotted against what
            problems.append(f"{where}: no :alt: text that says what the figure shows")
        if figure["kind"] != "image" and not figure["caption"]:
            problems.append(f"{where}: no caption")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_inline_image_has_alt_text(path):
    text = path.read_text(encoding="utf-8")
    empty = [m.group(0) for m in MARKDOWN_IMAGE.finditer(text) if not m["alt"].strip()]
    empty += [tag for tag in RAW_IMAGE.findall(text) if not ((alt := RAW_ALT.search(tag)) and alt["alt"].strip())]
    assert not empty, f"{path.name}: images without alt text: {empty}"
