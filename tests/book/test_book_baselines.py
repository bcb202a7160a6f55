"""nbval regression tests: every chapter's smoke baseline (``tests/baselines``) must match the chapter's code,
and the test run's one execution of the book (``built_book``, smoke profile) must reproduce what the baseline's
``nbval-check-output`` cells print and the numbers of its results file. The book is executed once per run:
nbval's comparison is applied to that execution instead of nbval executing every baseline again.

Printed text is compared by nbval with every number masked (``tests/baselines/nbval_sanitize.cfg``): words,
labels and verdict outcomes must be equal. The numbers are compared through the results file the execution
writes, leaf by leaf, each within the tolerance of its reproducibility class
(:mod:`attnpaths_book.tolerances`), since the last digits of a number computed on another CPU can move.

Refresh the baselines after a deliberate change with ``python -m attnpaths_book refresh-baselines``, which shows
what changed, then the same command with ``--accept``, which writes them.
"""

import json
from types import SimpleNamespace

import nbformat
import pytest
from helpers import ROOT
from nbval.plugin import IPyNbCell, coalesce_streams, get_sanitize_patterns, nocolors

from attnpaths_book.baselines import (
    CHECK_TAG,
    baseline_differences,
    baseline_path,
    results_baseline_path,
    strip_for_baseline,
)
from attnpaths_book.layout import BookLayout
from attnpaths_book.runner import notebook_chapters
from attnpaths_book.store import verify_results
from attnpaths_book.tolerances import compare_results

LAYOUT = BookLayout(ROOT)
CHAPTERS = notebook_chapters(LAYOUT)
REFRESH = "see what changed with: python -m attnpaths_book refresh-baselines; write it with: ... --accept"
SANITIZE = ROOT / "tests" / "baselines" / "nbval_sanitize.cfg"

pytestmark = pytest.mark.cross_machine


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_baseline_matches_its_chapter(chapter):
    problems = baseline_differences(LAYOUT, chapter)
    assert not problems, "\n".join(problems) + "\n" + REFRESH


SKIP_COMPARE = (
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    "application/vnd.jupyter.widget-view+json",
    "image/png",
    "image/jpeg",
)
"""What nbval leaves out of a comparison (its defaults without nbdime)."""


def nbval_differences(executed, baseline, patterns) -> list[str]:
    """nbval's own comparison, as ``--nbval-lax`` applies it to a cell tagged ``nbval-check-output``, of the
    outputs of one executed cell against the baseline's, with the sanitizing ``patterns``; empty when they agree.
    (nbval compares while it executes; the book executes once per test run, in ``built_book``.)"""
    item = SimpleNamespace(
        parent=SimpleNamespace(skip_compare=SKIP_COMPARE, sanitize_patterns=patterns),
        colors=nocolors,
        comparison_traceback=[],
    )
    item.sanitize = lambda text: IPyNbCell.sanitize(item, text)
    item.format_output_compare = lambda key, left, right: item.comparison_traceback.append(
        f"{key}: the baseline has {left!r}, this run {right!r}"
    )
    agree = IPyNbCell.compare_outputs(item, coalesce_streams(executed), coalesce_streams(baseline))
    return [] if agree else [str(line) for line in item.comparison_traceback]


def checked_cells(notebook) -> list:
    return [c for c in notebook.cells if c.cell_type == "code" and CHECK_TAG in c.metadata.get("tags", [])]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_baseline_reproduces(chapter, built_book):
    """The test run's one execution of the chapter (smoke profile, ``built_book``) prints what the baseline's
    checked cells printed (nbval's comparison, numbers masked) and writes a results file that agrees with the
    baseline's number by number within each reproducibility class."""
    baseline = baseline_path(LAYOUT, chapter)
    if not baseline.is_file():
        pytest.fail(f"{baseline} is missing; {REFRESH}")
    executed_path = built_book.executed_notebook(chapter.docname)
    executed = nbformat.read(executed_path, as_version=4)
    patterns = dict(get_sanitize_patterns(SANITIZE.read_text()))
    ran, recorded = checked_cells(executed), checked_cells(nbformat.read(baseline, as_version=4))
    assert len(ran) == len(recorded), f"{chapter.name}: checked cells {len(recorded)} in the baseline, {len(ran)} run"
    for number, (cell, reference) in enumerate(zip(ran, recorded), start=1):
        differences = nbval_differences(cell.outputs, reference.outputs, patterns)
        assert not differences, (
            f"nbval found a difference in {chapter.name}, checked cell {number}:\n"
            + "\n".join(differences)
            + f"\n{REFRESH}"
        )
    results = verify_results(built_book.results_dir, chapter.name)
    stored = json.loads(results_baseline_path(LAYOUT, chapter).read_text())
    disagreements = compare_results(chapter.name, {"values": stored["values"]}, {"values": results["values"]})
    assert not disagreements, (
        f"{chapter.name}: {len(disagreements)} numbers of the results file moved beyond their "
        "reproducibility class:\n" + "\n".join(d.describe() for d in disagreements[:20]) + f"\n{REFRESH}"
    )


def test_nbval_comparison_sees_a_changed_word_and_not_a_changed_number():
    patterns = dict(get_sanitize_patterns(SANITIZE.read_text()))
    printed = [nbformat.v4.new_output("stream", text="claim 1 holds, p = 0.003\n")]
    assert (
        nbval_differences(printed, [nbformat.v4.new_output("stream", text="claim 1 holds, p = 0.004\n")], patterns)
        == []
    )
    assert nbval_differences(printed, [nbformat.v4.new_output("stream", text="claim 1 fails, p = 0.003\n")], patterns)


def test_nbval_compares_words_and_leaves_numbers_to_the_results_file():
    text = SANITIZE.read_text()
    assert "[numbers]" in text
    import re

    pattern = re.search(r"regex: (.*)", text).group(1)
    masked = re.sub(pattern, "#", "verdicts: {'1': 'holds', '2 (N=100)': 'not significant'} GD 0.875 1e-3 -2.5E+01")
    assert masked == "verdicts: {'#': 'holds', '# (N=#)': 'not significant'} GD # # #"


def test_stripping_keeps_only_checked_outputs():
    cells = [
        nbformat.v4.new_code_cell(
            "print(1)",
            outputs=[nbformat.v4.new_output("stream", text="1\n")],
            metadata={"tags": [CHECK_TAG], "papermill": {"duration": 1.0}},
        ),
        nbformat.v4.new_code_cell(
            "print(2)", outputs=[nbformat.v4.new_output("stream", text="2\n")], execution_count=2
        ),
    ]
    notebook = nbformat.v4.new_notebook(
        cells=cells,
        metadata={
            "papermill": {"parameters": {"n": 1}, "duration": 3},
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
        },
    )
    stripped = strip_for_baseline(notebook)
    assert stripped.cells[0].outputs == cells[0].outputs and stripped.cells[0].metadata == {"tags": [CHECK_TAG]}
    assert stripped.cells[1].outputs == [] and stripped.cells[1].execution_count is None
    assert stripped.metadata == {
        "papermill": {"parameters": {"n": 1}},
        "kernelspec": {"name": "python3", "display_name": "Python 3"},
    }
    assert notebook.cells[1].outputs  # the original is left alone
