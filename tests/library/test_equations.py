"""The book labels that the library's docstrings cite are explained by ``attnpaths.equations``: every ``eq-...``
and ``sec-...`` label in ``src/attnpaths`` has an entry, every entry is cited or defined in the book, every label
is defined in ``book/*.md`` (where the book is present), and ``describe`` answers for a known label and refuses
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


def book_labels() -> set[str]:
    """Every equation and section label that the chapters define."""
    found = set()
    for chapter in BOOK.glob("*.md"):
        for groups in DEFINITION.findall(chapter.read_text(encoding="utf-8")):
            found.update(group for group in groups if group)
    return found


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
        if BOOK.is_dir():
            assert (BOOK.parent / chapter.group(1)).is_file(), f"{label}: no chapter {chapter.group(1)}"


def test_every_label_is_defined_in_the_book():
    if not BOOK.is_dir():
        pytest.skip("the book's chapters are not present (an installation of the package alone)")
    defined = book_labels()
    undefined = sorted((set(cited_labels()) | set(ENTRIES)) - defined)
    assert undefined == [], f"labels that no chapter of book/ defines: {undefined}"


def test_describe_returns_the_entry_of_a_known_label():
    assert equations.describe("eq-action") == equations.EQUATIONS["eq-action"]
    assert equations.describe("sec-head-scores") == equations.SECTIONS["sec-head-scores"]
    assert equations.describe("(eq-kernel)") == equations.EQUATIONS["eq-kernel"]


def test_describe_refuses_an_unknown_label():
    with pytest.raises(ValueError, match=r"eq-no-such-equation.*EQUATIONS.*SECTIONS"):
        equations.describe("eq-no-such-equation")
