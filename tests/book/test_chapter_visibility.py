"""What a chapter shows of its code: the cells removed from the page are few and are plumbing only.

A code cell is removed from the page when its tags hold ``remove-cell`` or ``remove-input``; a folded cell
(``hide-input``, ``hide-output``, ``hide-cell``) can be opened by the reader and counts as shown. In every chapter
at most a third of the code cells are removed, and no removed cell computes a claim (a verdict, a statistical
test) or its power check: such a cell calls no statistical test and no function of the claim modules
(:mod:`attnpaths.claims`, every ``attnpaths.<subject>.claims`` and the modules that build verdicts with
:mod:`attnpaths.claims`) except the ones that only render or enforce verdicts, and it names no power check (an
identifier with the word ``power`` or ``detectable``). The chapters are read as text, without executing them.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

import jupytext
import pytest
from helpers import ROOT

from attnpaths_book.chapters import book_chapters
from attnpaths_book.layout import BookLayout

REMOVED_TAGS = {"remove-cell", "remove-input"}
"""Tags that take a code cell's input off the page."""

MAX_REMOVED = Fraction(1, 3)
"""The largest share of a chapter's code cells that may be removed."""

RENDERING = {
    "by_outcome",
    "claims_table",
    "escape_markdown",
    "markdown_sentence",
    "markdown_claims_table",
    "structural_table",
    "sanity_table",
    "outcome_counts",
    "enforce",
}
"""Functions of :mod:`attnpaths.claims` that render or enforce verdicts without computing one."""

TEST_NAME = re.compile(r"(?:^|_)tests?$")
"""A function that names a statistical test: ``spearman_permutation_test``, ``stratified_rank_test``, ..."""

POWER_NAME = re.compile(r"(?:^|_)(?:power|powers|detectable)(?:_(?!law)|$)")
"""An identifier that names a power check: ``power``, ``claim_2_power``, ``detectable_effect``, ... (not a
power law)."""

SOURCE = ROOT / "src" / "attnpaths"


def _imports_claims(tree: ast.Module, package: tuple[str, ...]) -> bool:
    """Whether a module of package ``package`` imports from :mod:`attnpaths.claims` or one of its modules."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            target = (*base, *(node.module or "").split("."))
            if target[:2] == ("attnpaths", "claims"):
                return True
    return False


def claim_functions() -> set[str]:
    """Names of the public functions that compute claims or their power checks: those defined at the top of every
    module called ``claims`` or inside a package called ``claims`` (:mod:`attnpaths.claims` and its private modules
    among them) and of every module that imports from :mod:`attnpaths.claims` (the packages' ``__init__`` aside,
    which only gather names), less :data:`RENDERING`; and ``Verdict``."""
    names = {"Verdict"}
    for path in SOURCE.rglob("*.py"):
        parts = ("attnpaths", *path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        if "claims" in parts or _imports_claims(tree, parts[:-1]):
            names |= {
                node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
            }
    return names - RENDERING


CLAIM_FUNCTIONS = claim_functions()


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def claim_computations(source: str) -> list[str]:
    """What in a code cell's ``source`` computes a claim or a power check: ``"call f"`` for each call of a
    function of :data:`CLAIM_FUNCTIONS` or of a statistical test (:data:`TEST_NAME`), ``"name x"`` for each
    identifier that names a power check (comments and strings are not read)."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    tree = ast.parse("\n".join(lines))
    found = []
    for node in ast.walk(tree):
        called = _called_name(node) if isinstance(node, ast.Call) else None
        if called and (called in CLAIM_FUNCTIONS or TEST_NAME.search(called)):
            found.append(f"call {called}")
        identifier = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else node.arg
            if isinstance(node, ast.keyword)
            else None
        )
        if identifier and POWER_NAME.search(identifier):
            found.append(f"name {identifier}")
    return sorted(set(found))


def code_cells(notebook) -> list:
    """The code cells of a chapter's ``notebook``."""
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def is_removed(cell) -> bool:
    return bool(REMOVED_TAGS & set(cell.metadata.get("tags", [])))


def too_many_removed(cells) -> str | None:
    """Why more than :data:`MAX_REMOVED` of the code ``cells`` are removed, or ``None``."""
    removed = sum(is_removed(cell) for cell in cells)
    if removed > MAX_REMOVED * len(cells):
        return f"{removed} of its {len(cells)} code cells are removed from the page (at most a third may be)"
    return None


def hidden_claims(cells) -> dict[str, list[str]]:
    """The removed code cells among ``cells`` that compute claims or power checks, with what they compute."""
    return {
        f"code cell {number} ({cell.source.splitlines()[0]!r})": claim_computations(cell.source)
        for number, cell in enumerate(cells, 1)
        if is_removed(cell) and claim_computations(cell.source)
    }


CHAPTERS = [c for c in book_chapters(BookLayout(ROOT)) if c.is_notebook]

HIDDEN_POWER_CHECK = """---
jupytext:
  text_representation: {extension: .md, format_name: myst}
---

```{code-cell} ipython3
:tags: [parameters, remove-cell]

level = 0.01
```

```{code-cell} ipython3
verdict = directional_z("1", "s", source="x", statistic="d", estimate=0.1, se=0.03, level=level)
```

```{code-cell} ipython3
:tags: [remove-cell]

detection_power = 0.8
recorder.markdown("claim_1_power", f"It detects {detectable_effect(0.03, level, detection_power):.2f}.")
```
"""
"""A chapter that removes two of its three code cells, one of them its claim's power check."""


def test_the_book_has_chapters_to_check():
    assert len(CHAPTERS) >= 10
    assert "Verdict" in CLAIM_FUNCTIONS and "directional_z" in CLAIM_FUNCTIONS
    assert "power_check" in CLAIM_FUNCTIONS and "by_outcome" not in CLAIM_FUNCTIONS
    assert {"positive_difference", "detectable_effect", "rederive", "sample_agreement"} <= CLAIM_FUNCTIONS


def test_claim_computations_are_found_in_code_not_in_words():
    assert claim_computations("v = directional_z('1', 's', source='x', statistic='d', estimate=1, se=1)") == [
        "call directional_z"
    ]
    assert claim_computations("checks = hmc_claims.power_checks(run4, run2)") == [
        "call power_checks",
        "name power_checks",
    ]
    assert "name claim_2_power" in claim_computations("claim_2_power = 0.9")
    assert claim_computations("recorder.record('x', 1)  # the power check of claim 2\nprint('power')") == []
    assert claim_computations("rank = spearman_permutation_test(a, b)") == ["call spearman_permutation_test"]
    assert claim_computations("fit = power_law(x)\nexact = {}\nexact[1] = 2\ntests = latest()") == []


def test_a_chapter_that_hides_its_power_check_fails_both_checks():
    cells = code_cells(jupytext.reads(HIDDEN_POWER_CHECK, fmt="md:myst"))
    assert len(cells) == 3 and too_many_removed(cells).startswith("2 of its 3 code cells")
    assert hidden_claims(cells) == {
        "code cell 3 ('detection_power = 0.8')": [
            "call detectable_effect",
            "name detectable_effect",
            "name detection_power",
        ]
    }
    cells[2].metadata["tags"] = ["hide-input"]  # folded: the reader can open it
    assert too_many_removed(cells) is None and hidden_claims(cells) == {}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_at_most_a_third_of_the_code_cells_are_removed(chapter):
    problem = too_many_removed(code_cells(chapter.notebook))
    assert problem is None, f"{chapter.name}: {problem}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_no_removed_cell_computes_a_claim_or_its_power_check(chapter):
    hidden = hidden_claims(code_cells(chapter.notebook))
    assert not hidden, f"{chapter.name}: removed cells compute claims or power checks: {hidden}"
