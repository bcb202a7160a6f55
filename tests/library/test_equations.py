"""The book labels that the library's docstrings cite are explained by ``attnpaths.equations``: every ``eq-...``
and ``sec-...`` label in ``src/attnpaths`` has an entry, every entry is cited or defined in the book, every label
is defined in ``book/*.md`` (where the book is present) by the chapter that ``CHAPTERS`` records for it, whose page
the table of contents builds, and ``describe`` answers for a known label (its words, page and anchor) and refuses
an unknown one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import attnpaths
import attnpaths.equations as equations

PACKAGE = Path(attnpaths.__file__).parent
BOOK = Path(__file__).resolve().parents[2] / "book"

LABEL = re.compile(r"\b(?:eq|sec)-[a-z0-9-]+")
DEFINITION = re.compile(
    r":label:\s*((?:eq|sec)-[a-z0-9-]+)"  # a {math} block's label
    r"|^\(((?:eq|sec)-[a-z0-9-]+)\)=[ \t]*$"  # a MyST target before an equation or a heading
    r"|\$\$[ \t]*\(((?:eq|sec)-[a-z0-9-]+)\)",  # a dollar-math block's label
    re.MULTILINE,
)


def _labels_in(text: str) -> set[str]:
    return {match.rstrip("-.") for match in LABEL.findall(text)}


def cited_labels() -> dict[str, list[str]]:
    """Every label that the library's sources (``attnpaths.equations`` itself aside) cite, with the files that
    cite it."""
    cited: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == Path(equations.__file__):
            continue
        for label in _labels_in(path.read_text(encoding="utf-8")):
            cited.setdefault(label, []).append(str(path.relative_to(PACKAGE)))
    return cited


def defining_chapters() -> dict[str, set[str]]:
    """Every equation and section label that the chapters define, with the chapter files (the ``.md`` files of
    ``book/``) that define it."""
    found: dict[str, set[str]] = {}
    for chapter in BOOK.glob("*.md"):
        for groups in DEFINITION.findall(chapter.read_text(encoding="utf-8")):
            for label in filter(None, groups):
                found.setdefault(label, set()).add(f"book/{chapter.name}")
    return found


def book_labels() -> set[str]:
    """Every equation and section label that the chapters define."""
    return set(defining_chapters())


def toc_files() -> set[str]:
    """The documents of the table of contents (``_toc.yml``: the root and every ``file:`` entry)."""
    toc = (BOOK.parent / "_toc.yml").read_text(encoding="utf-8")
    return set(re.findall(r"^\s*(?:root|- file):\s*(\S+)\s*$", toc, re.MULTILINE))


ENTRIES = {**equations.EQUATIONS, **equations.SECTIONS}


def test_the_sources_cite_labels():
    cited = cited_labels()
    assert "eq-action" in cited and "sec-head-scores" in cited


def test_every_cited_label_has_an_entry():
    cited = cited_labels()
    missing = {label: files for label, files in cited.items() if label not in ENTRIES}
    assert missing == {}, f"labels cited without an entry in attnpaths.equations: {missing}"


def test_equations_and_sections_are_keyed_by_their_kind():
    assert all(label.startswith("eq-") for label in equations.EQUATIONS)
    assert all(label.startswith("sec-") for label in equations.SECTIONS)
    assert not set(equations.EQUATIONS) & set(equations.SECTIONS)


def test_every_entry_is_cited_or_defined_in_the_book():
    known = set(cited_labels()) | (book_labels() if BOOK.is_dir() else set())
    assert sorted(set(ENTRIES) - known) == []


def test_the_entries_cite_only_labels_that_have_entries():
    cited_in_entries = set().union(*(_labels_in(text) for text in ENTRIES.values()))
    assert sorted(cited_in_entries - set(ENTRIES)) == []


def test_sections_name_their_chapter_file():
    for label, text in equations.SECTIONS.items():
        chapter = re.match(r"(book/[a-z_]+\.md), '", text)
        assert chapter, f"{label}: {text!r} does not start with its chapter file and title"
        assert chapter.group(1) == equations.CHAPTERS[label], f"{label}: {text!r} names another chapter"
        if BOOK.is_dir():
            assert (BOOK.parent / chapter.group(1)).is_file(), f"{label}: no chapter {chapter.group(1)}"


def test_every_entry_records_a_chapter_file():
    assert set(equations.CHAPTERS) == set(ENTRIES)
    bad = {label: page for label, page in equations.CHAPTERS.items() if not re.fullmatch(r"book/[a-z_]+\.md", page)}
    assert bad == {}, f"recorded pages that are not a chapter file book/<name>.md: {bad}"


def test_every_recorded_chapter_is_the_one_that_defines_the_label():
    if not BOOK.is_dir():
        pytest.skip("the book's chapters are not present (an installation of the package alone)")
    defined = defining_chapters()
    wrong = {
        label: (page, sorted(defined.get(label, ())))
        for label, page in equations.CHAPTERS.items()
        if defined.get(label) != {page}
    }
    assert wrong == {}, f"labels whose recorded chapter is not the one chapter that defines them: {wrong}"


def test_location_gives_the_chapter_anchor_and_the_built_page():
    # Jupyter Book writes the page of the toc entry book/theory to _build/html/book/theory.html; Sphinx gives a
    # labelled equation the HTML id equation-<label> and a MyST target its label
    assert equations.location("eq-action") == (
        "book/theory.md#eq-action",
        "_build/html/book/theory.html#equation-eq-action",
    )
    assert equations.location("(eq-exact-density)") == (
        "book/hmc.md#eq-exact-density",
        "_build/html/book/hmc.html#equation-eq-exact-density",
    )
    assert equations.location("sec-head-scores") == (
        "book/theory.md#sec-head-scores",
        "_build/html/book/theory.html#sec-head-scores",
    )
    for label, page in equations.CHAPTERS.items():
        source, html = equations.location(label)
        assert source == f"{page}#{label}"
        assert html.startswith(f"_build/html/{page.removesuffix('.md')}.html#") and html.endswith(label)
    if BOOK.is_dir():
        pages = {page.removesuffix(".md") for page in equations.CHAPTERS.values()}
        assert sorted(pages - toc_files()) == [], "recorded chapters that the table of contents does not build"


def test_every_label_is_defined_in_the_book():
    if not BOOK.is_dir():
        pytest.skip("the book's chapters are not present (an installation of the package alone)")
    defined = book_labels()
    undefined = sorted((set(cited_labels()) | set(ENTRIES)) - defined)
    assert undefined == [], f"labels that no chapter of book/ defines: {undefined}"


def test_describe_gives_the_words_page_and_anchor_of_a_known_label():
    action = equations.describe("eq-action")
    assert action.startswith(equations.EQUATIONS["eq-action"])
    assert "book/theory.md#eq-action" in action and "_build/html/book/theory.html#equation-eq-action" in action
    head_scores = equations.describe("sec-head-scores")
    assert head_scores.startswith(equations.SECTIONS["sec-head-scores"])
    assert "book/theory.md#sec-head-scores" in head_scores
    assert "_build/html/book/theory.html#sec-head-scores" in head_scores
    assert equations.describe("(eq-kernel)") == equations.describe("eq-kernel")
    for label in ENTRIES:
        assert all(anchor in equations.describe(label) for anchor in equations.location(label))


@pytest.mark.parametrize("explain", ["describe", "location"])
def test_describe_and_location_refuse_an_unknown_label(explain):
    with pytest.raises(ValueError, match=r"eq-no-such-equation.*EQUATIONS.*SECTIONS"):
        getattr(equations, explain)("eq-no-such-equation")
