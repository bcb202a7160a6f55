"""Every reference resolves inside the repository: the book's MyST labels are defined once, each label that
the package, the tests and the docs cite (``(eq-action)``, ``(sec-hmc-task)``, ...) is defined in a chapter,
the chapters' ``{eq}``, ``{ref}`` and ``{numref}`` roles name labels that exist, and nothing cites numbered
sections or equations of a document that is not in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT

CHAPTERS = sorted((ROOT / "book").glob("*.md"))
THIS_FILE = Path(__file__).resolve()  # its examples of bad citations are strings of the scanners' own test
BAD_ON_PURPOSE = {ROOT / "tests" / "library" / "test_equations.py"}  # cites an unknown label to test the refusal
CITING_FILES = sorted(
    path
    for path in [
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        ROOT / "CONTRIBUTING.md",
        ROOT / "README.md",
        *CHAPTERS,
    ]
    if path.resolve() != THIS_FILE and path not in BAD_ON_PURPOSE
)
CHECKED_FILES = sorted({*CITING_FILES, ROOT / "_config.yml", ROOT / "_toc.yml", ROOT / "pyproject.toml"})

LABEL_PREFIXES = ("eq", "ex", "rel", "sec", "th")
"""The prefixes of the book's labels (CONTRIBUTING.md, "Rules"): equations ``eq-`` (the paper's chapters),
``ex-`` (exchangeability) and ``rel-`` (related results); section targets ``sec-`` and the claims tables'
``th-claims``, ``ex-claims``, ``rel-claims``."""

EQUATION_LABEL = re.compile(r"^:label:[ \t]*(\S+)[ \t]*$|^\$\$[ \t]*\((\S+)\)[ \t]*$", re.M)
SECTION_TARGET = re.compile(r"^\(([^()\s]+)\)=[ \t]*$", re.M)
FIGURE_NAME = re.compile(r"^:name:[ \t]*(\S+)[ \t]*$", re.M)
ROLE = re.compile(r"\{(eq|ref|numref)\}`(?:[^`<]*<)?([^`<>]+)>?`")
CITED_LABEL = re.compile(r"(?<![\w./-])((?:%s)-[a-z0-9]+(?:-[a-z0-9]+)*)(?![\w-])" % "|".join(LABEL_PREFIXES))
FOREIGN_CITATION = re.compile(
    r"(?i:\bspec(?:ification)?\b[ \t]*(?:§|S\d|section|sec\.|item|fig|table|\d))"  # "spec §3a"
    r"|§"  # any numbered section
    r"|\(S\d+[a-z]?\)"  # "(S6)"
    r"|(?<![\w-])S\d{1,2}(?:[-–]S?\d{1,2})?(?![\w-])"  # "S8", "S1-S11", "S6-9"
    r"|\(E\d\)"
)  # "(E1)": E1 names an experiment
"""Citations of a document outside the repository (numbered sections and labels such as "spec §3a item 8",
"(S11)" or "S1-S11"), and a parenthesised experiment name used as an equation label."""


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def definitions(text: str) -> dict[str, list[str]]:
    """Labels a chapter defines, by kind: ``equation`` (``:label:`` of a math directive, ``$$ ... $$ (label)``),
    ``section`` (MyST targets ``(label)=``) and ``figure`` (``:name:`` of a figure or glue figure)."""
    return {
        "equation": [a or b for a, b in EQUATION_LABEL.findall(text)],
        "section": SECTION_TARGET.findall(text),
        "figure": FIGURE_NAME.findall(text),
    }


def defined_labels() -> dict[str, list[tuple[str, str]]]:
    """Every label of the book: ``label -> [(kind, chapter file), ...]``."""
    found: dict[str, list[tuple[str, str]]] = {}
    for chapter in CHAPTERS:
        for kind, labels in definitions(chapter.read_text()).items():
            for label in labels:
                found.setdefault(label, []).append((kind, relative(chapter)))
    return found


def cited_labels(text: str) -> set[str]:
    """Book labels named in free text (docstrings, comments, docs), e.g. ``(eq-action)``."""
    return set(CITED_LABEL.findall(text))


def foreign_citations(text: str) -> list[tuple[int, str]]:
    """``(line number, match)`` of every citation of a document that is not in the repository."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in FOREIGN_CITATION.finditer(text)]


# --------------------------------------------------------------------------------------------------------
# the scanners find what they look for


def test_scanners_find_labels_citations_and_roles():
    chapter = (
        "```{math}\n:label: eq-one\nx = 1\n```\n\n$$\ny = 2\n$$ (eq-two)\n\n(sec-part)=\n## Part\n\n"
        "```{glue:figure} f\n:name: fig-f\n```\nSee {eq}`eq-one`, {ref}`the part <sec-part>`, {numref}`fig-f`.\n"
    )
    assert definitions(chapter) == {"equation": ["eq-one", "eq-two"], "section": ["sec-part"], "figure": ["fig-f"]}
    assert ROLE.findall(chapter) == [("eq", "eq-one"), ("ref", "sec-part"), ("numref", "fig-f")]
    assert cited_labels("the action (eq-action, eq-entropy); see (sec-hmc-task) and (ex-mse)") == {
        "eq-action",
        "eq-entropy",
        "sec-hmc-task",
        "ex-mse",
    }
    assert cited_labels("fig-hmc-shift, freq-x, path/eq-x.md, rel-tol") == {"rel-tol"}
    bad = "\n".join(
        [
            "(spec §3a item 8)",
            "spec S6",
            "the action (S6)",
            "labels S1-S11",
            "the S8 predictor",
            "density (E1)",
            "Gelman et al., §11.4",
        ]
    )
    assert [line for line, _ in foreign_citations(bad)] == [1, 2, 3, 4, 5, 6, 7]
    fine = (
        "spec = find_spec('mathjax'); spec.origin; run(spec, x); f(spec: Path); spec['input']; experiments E1-E4 and R1-R5; claim E1.2; "
        "eq. (eq-action); S_ent; S(U); PS1; U_S1; 0.5S"
    )
    assert foreign_citations(fine) == []


# --------------------------------------------------------------------------------------------------------
# the repository


def test_every_label_is_defined_once_with_a_known_prefix():
    labels = defined_labels()
    assert labels, "no labels found in book/*.md"
    twice = {label: where for label, where in labels.items() if len(where) > 1}
    assert not twice, f"labels defined more than once: {twice}"
    unknown = sorted(
        label
        for label, where in labels.items()
        if where[0][0] != "figure" and label.split("-")[0] not in LABEL_PREFIXES
    )
    assert not unknown, f"labels without one of the prefixes {LABEL_PREFIXES}: {unknown}"


def test_the_paper_chapters_number_their_equations_with_eq_labels():
    equations = [label for label, where in defined_labels().items() if where[0][0] == "equation"]
    for label in (
        "eq-forward",
        "eq-path-features",
        "eq-kernel",
        "eq-action",
        "eq-readout",
        "eq-predictor",
        "eq-gp",
        "eq-sampled-u",
        "eq-exact-density",
    ):
        assert label in equations


@pytest.mark.parametrize("path", CITING_FILES, ids=relative)
def test_cited_labels_are_defined(path):
    labels = defined_labels()
    text = path.read_text()
    missing = sorted(label for label in cited_labels(text) if label not in labels or labels[label][0][0] == "figure")
    assert not missing, f"{relative(path)} cites labels that no chapter defines: {missing}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=relative)
def test_roles_name_labels_of_their_kind(chapter):
    kinds = {label: where[0][0] for label, where in defined_labels().items()}
    expected = {"eq": {"equation"}, "ref": {"section", "figure"}, "numref": {"figure"}}
    wrong = [
        (role, label, kinds.get(label))
        for role, label in ROLE.findall(chapter.read_text())
        if kinds.get(label) not in expected[role]
    ]
    assert not wrong, f"{relative(chapter)}: roles whose label is missing or of another kind: {wrong}"


@pytest.mark.parametrize("path", CHECKED_FILES, ids=relative)
def test_nothing_cites_documents_outside_the_repository(path):
    found = foreign_citations(path.read_text())
    assert not found, (
        f"{relative(path)} cites sections or labels of a document that is not in the repository "
        f"(cite the book's labels instead, CONTRIBUTING.md): {found[:10]}"
    )
