"""Chapter list, profiles, parameters cell and the validation of parameter overrides (no kernels)."""

import pytest
from book_helpers import write_chapter, write_toc
from helpers import ROOT

from attnpaths_book.chapters import (
    ChapterError,
    ParameterError,
    book_chapters,
    parse_assignments,
    read_notebook,
    resolve_parameters,
    toc_docnames,
)

PARAMETERS = """
num_samples = 10
temperature = 0.01
widths = [10, 30]
solver = "adam"
verbose = False
"""


@pytest.fixture
def chapter(tiny_book):
    write_chapter(
        tiny_book.root, "alpha", PARAMETERS, "values = {}", profiles={"smoke": {}, "paper": {"num_samples": 1000}}
    )
    write_toc(tiny_book.root, ["alpha"])
    return book_chapters(tiny_book)[0]


def test_repository_toc_lists_the_chapters_in_order():
    docnames = toc_docnames(ROOT / "_toc.yml")
    assert docnames[:3] == ["book/intro", "book/model", "book/theory"]
    assert docnames[-4:] == ["book/reproducibility", "book/api/index", "book/api/companion", "book/references"]


def test_toc_order_and_pages(tiny_book):
    write_chapter(tiny_book.root, "first", "", "values = {}")
    write_chapter(tiny_book.root, "second", "", "values = {}")
    (tiny_book.root / "book" / "notes.md").write_text("# Notes\n\nA page without code.\n")
    write_toc(tiny_book.root, ["second", "notes", "first"])
    chapters = book_chapters(tiny_book)
    assert [c.name for c in chapters] == ["second", "notes", "first"]
    assert [c.is_notebook for c in chapters] == [True, False, True]
    assert chapters[1].title == "Notes"


def test_parameters_cell_and_profiles(chapter):
    assert chapter.defaults == {
        "num_samples": 10,
        "temperature": 0.01,
        "widths": [10, 30],
        "solver": "adam",
        "verbose": False,
        "profile": "smoke",
        "results_dir": "_build/results",
    }
    assert resolve_parameters(chapter, "smoke")["num_samples"] == 10
    paper = resolve_parameters(chapter, "paper", {"widths": [5]})
    assert (paper["num_samples"], paper["widths"], paper["profile"]) == (1000, [5], "paper")


def test_overrides_are_parsed_as_literals(chapter):
    overrides = parse_assignments(
        chapter, ["num_samples=20", "temperature=1", "widths=[1, 2, 3]", "solver=sgd", "verbose=True"]
    )
    assert overrides == {"num_samples": 20, "temperature": 1.0, "widths": [1, 2, 3], "solver": "sgd", "verbose": True}
    assert isinstance(overrides["temperature"], float)


@pytest.mark.parametrize(
    "item, message",
    [
        ("nope=1", "unknown parameter 'nope'"),
        ("num_samples=0.5", "num_samples must be of type int"),
        ("num_samples=True", "num_samples must be of type int"),
        ("temperature=cold", "temperature must be of type float"),
        ("widths=10", "widths must be of type list"),
        ("widths=[1, 'a']", "widths must be of type list"),
        ("verbose=1", "verbose must be of type bool"),
        ("profile=paper", "cannot set 'profile'"),
        ("results_dir=/tmp", "cannot set 'results_dir'"),
        ("num_samples", "expects NAME=VALUE"),
    ],
)
def test_bad_overrides_name_the_problem_and_list_the_parameters(chapter, item, message):
    with pytest.raises(ParameterError) as info:
        parse_assignments(chapter, [item])
    text = str(info.value)
    assert message in text
    assert "parameters of chapter 'alpha'" in text
    for name in ("num_samples: int = 10", "widths: list = [10, 30]", "solver: str = 'adam'"):
        assert name in text


def test_profile_with_unknown_parameter_is_refused(tiny_book):
    write_chapter(tiny_book.root, "alpha", "num_samples = 10", "values = {}", profiles={"paper": {"num_sample": 5}})
    write_toc(tiny_book.root, ["alpha"])
    with pytest.raises(ParameterError, match="profile 'paper' names an unknown parameter 'num_sample'"):
        book_chapters(tiny_book)


def test_profile_names_are_checked(tiny_book):
    write_chapter(tiny_book.root, "alpha", "", "values = {}", profiles={"fast": {}})
    write_toc(tiny_book.root, ["alpha"])
    with pytest.raises(ChapterError, match="profile names among"):
        book_chapters(tiny_book)


def test_parameters_cell_must_hold_literal_assignments(tiny_book):
    write_chapter(tiny_book.root, "alpha", "n = 2 * 5", "values = {}")
    write_toc(tiny_book.root, ["alpha"])
    with pytest.raises(ChapterError, match="parameter 'n' must be a literal"):
        book_chapters(tiny_book)


def test_toc_entry_without_source_is_an_error(tiny_book):
    write_toc(tiny_book.root, ["missing"])
    with pytest.raises(ChapterError, match="lists 'book/missing'"):
        book_chapters(tiny_book)


def test_a_chapter_read_again_is_a_copy_of_its_own_and_follows_an_edit_of_its_source(chapter, tiny_book):
    """Chapters are parsed once per version of their file (``read_notebook``): a caller that changes what it got
    changes nothing for the next, and an edited source is read anew."""
    first = read_notebook(chapter.source)
    first.cells[0].source = "changed by a caller"
    assert read_notebook(chapter.source).cells[0].source != "changed by a caller"
    chapter.source.write_text(chapter.source.read_text().replace("num_samples = 10", "num_samples = 12"))
    assert "num_samples = 12" in "".join(cell.source for cell in read_notebook(chapter.source).cells)
    assert book_chapters(tiny_book)[0].defaults["num_samples"] == 12
