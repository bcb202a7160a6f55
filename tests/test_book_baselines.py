"""nbval regression tests: every chapter's smoke baseline (``tests/baselines``) must match the chapter's code,
and re-executing it must reproduce what its ``nbval-check-output`` cells print and the numbers of its results
file.

Printed text is compared by nbval with every number masked (``tests/baselines/nbval_sanitize.cfg``): words,
labels and verdict outcomes must be equal. The numbers are compared through the results file the execution
writes, leaf by leaf, each within the tolerance of its reproducibility class
(:mod:`attnpaths_book.tolerances`), since the last digits of a number computed on another CPU can move.

Refresh the baselines after a deliberate change with ``python -m attnpaths_book refresh-baselines``, which shows
what changed, then the same command with ``--accept``, which writes them.
"""

import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from attnpaths_book.baselines import (CHECK_TAG, baseline_differences, baseline_path, results_baseline_path,
                                      strip_for_baseline)
from attnpaths_book.executor import KERNEL_ENVIRONMENT
from attnpaths_book.layout import BookLayout
from attnpaths_book.runner import notebook_chapters
from attnpaths_book.tolerances import compare_results
from helpers import ROOT

LAYOUT = BookLayout(ROOT)
CHAPTERS = notebook_chapters(LAYOUT)
REFRESH = "see what changed with: python -m attnpaths_book refresh-baselines; write it with: ... --accept"
NOT_LINKED = {"_build", ".git", "tests", ".pytest_cache"}
SANITIZE = ROOT / "tests" / "baselines" / "nbval_sanitize.cfg"

pytestmark = pytest.mark.cross_machine


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_baseline_matches_its_chapter(chapter):
    problems = baseline_differences(LAYOUT, chapter)
    assert not problems, "\n".join(problems) + "\n" + REFRESH


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A folder that looks like the repository root (its entries linked) but has its own ``_build``: the
    baselines run there, since nbval starts each kernel in the notebook's folder."""
    folder = tmp_path_factory.mktemp("nbval")
    for entry in ROOT.iterdir():
        if entry.name not in NOT_LINKED:
            (folder / entry.name).symlink_to(entry)
    (folder / "nbval.ini").write_text("[pytest]\n")  # no project options in the inner pytest
    return folder


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_baseline_reproduces(chapter, workspace):
    baseline = baseline_path(LAYOUT, chapter)
    if not baseline.is_file():
        pytest.fail(f"{baseline} is missing; {REFRESH}")
    copy = workspace / baseline.name
    shutil.copyfile(baseline, copy)
    command = [sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider", "-c", "nbval.ini",
               "--nbval-lax", "--nbval-sanitize-with", str(SANITIZE), copy.name]
    done = subprocess.run(command, cwd=workspace, env={**os.environ, **KERNEL_ENVIRONMENT},
                          capture_output=True, text=True)
    assert done.returncode == 0, f"nbval found a difference in {chapter.name}:\n{done.stdout[-6000:]}\n{REFRESH}"
    assert " passed" in done.stdout
    executed = json.loads((workspace / "_build" / "results" / f"{chapter.name}.json").read_text())
    recorded = json.loads(results_baseline_path(LAYOUT, chapter).read_text())
    disagreements = compare_results(chapter.name, {"values": recorded["values"]}, {"values": executed["values"]})
    assert not disagreements, (f"{chapter.name}: {len(disagreements)} numbers of the results file moved beyond their "
                               "reproducibility class:\n" + "\n".join(d.describe() for d in disagreements[:20])
                               + f"\n{REFRESH}")


def test_nbval_compares_words_and_leaves_numbers_to_the_results_file():
    text = SANITIZE.read_text()
    assert "[numbers]" in text
    import re

    pattern = re.search(r"regex: (.*)", text).group(1)
    masked = re.sub(pattern, "#", "verdicts: {'1': 'holds', '2 (N=100)': 'not significant'} GD 0.875 1e-3 -2.5E+01")
    assert masked == "verdicts: {'#': 'holds', '# (N=#)': 'not significant'} GD # # #"


def test_stripping_keeps_only_checked_outputs():
    cells = [nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output("stream", text="1\n")],
                                       metadata={"tags": [CHECK_TAG], "papermill": {"duration": 1.0}}),
             nbformat.v4.new_code_cell("print(2)", outputs=[nbformat.v4.new_output("stream", text="2\n")],
                                       execution_count=2)]
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={"papermill": {"parameters": {"n": 1}, "duration": 3},
                                                               "kernelspec": {"name": "python3", "display_name": "Python 3"}})
    stripped = strip_for_baseline(notebook)
    assert stripped.cells[0].outputs == cells[0].outputs and stripped.cells[0].metadata == {"tags": [CHECK_TAG]}
    assert stripped.cells[1].outputs == [] and stripped.cells[1].execution_count is None
    assert stripped.metadata == {"papermill": {"parameters": {"n": 1}},
                                 "kernelspec": {"name": "python3", "display_name": "Python 3"}}
    assert notebook.cells[1].outputs  # the original is left alone
