"""nbval regression tests: every chapter's smoke baseline (``tests/baselines``) must match the chapter's code,
and re-executing it must reproduce the key numbers printed by its ``nbval-check-output`` cells.

Refresh the baselines after a deliberate change with ``python -m attnpaths refresh-baselines``, which shows
what changed, then the same command with ``--accept``, which writes them.
"""

import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from attnpaths.book.baselines import CHECK_TAG, baseline_differences, baseline_path, strip_for_baseline
from attnpaths.book.executor import KERNEL_ENVIRONMENT
from attnpaths.book.layout import BookLayout
from attnpaths.book.runner import notebook_chapters
from helpers import ROOT

LAYOUT = BookLayout(ROOT)
CHAPTERS = notebook_chapters(LAYOUT)
REFRESH = "see what changed with: python -m attnpaths refresh-baselines; write it with: ... --accept"
NOT_LINKED = {"_build", ".git", "tests", ".pytest_cache"}


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
               "--nbval-lax", copy.name]
    done = subprocess.run(command, cwd=workspace, env={**os.environ, **KERNEL_ENVIRONMENT},
                          capture_output=True, text=True)
    assert done.returncode == 0, f"nbval found a difference in {chapter.name}:\n{done.stdout[-6000:]}\n{REFRESH}"
    assert " passed" in done.stdout


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
