"""A chapter rerun by hand, the way a reader does in JupyterLab: its MyST source read with jupytext, its
parameters cell followed by one that sets other values, executed top to bottom by a kernel (nbclient) outside
the runner, from the repository root. Its results file must hold the numbers that the runner writes for the
same chapter and profile, executed in the kernel's own process as a reader's kernel runs it (two executions of
the theory chapter's smoke profile: about 30 s)."""

import json

import nbformat
import pytest
from book_helpers import copy_repository
from helpers import ROOT

from attnpaths_book import runner
from attnpaths_book.layout import BookLayout
from attnpaths_book.numeric_diff import is_volatile
from attnpaths_book.results import STAGING_ENV

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")

CHAPTER = "theory"


def without_run_times(value):
    """``value`` with every entry under a volatile key (run times, timestamps, memory, versions) left out."""
    if isinstance(value, dict):
        return {k: without_run_times(v) for k, v in value.items() if not is_volatile(str(k))}
    if isinstance(value, list):
        return [without_run_times(v) for v in value]
    return value


def run_by_hand(source, assignments: str, cwd, timeout_s=600):
    """Execute the MyST notebook ``source`` top to bottom in a fresh kernel started in ``cwd``, with a cell
    holding ``assignments`` inserted after the parameters cell (where papermill injects its parameters)."""
    notebook = jupytext.read(source)
    tagged = [i for i, cell in enumerate(notebook.cells) if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{source} must have one parameters cell"
    notebook.cells.insert(
        tagged[0] + 1, nbformat.v4.new_code_cell(assignments, metadata={"tags": ["injected-parameters"]})
    )
    client = nbclient.NotebookClient(
        notebook,
        timeout=timeout_s,
        kernel_name=notebook.metadata.kernelspec.name,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return notebook


def test_a_chapter_run_by_hand_gives_the_runners_results(tmp_path, monkeypatch, process_environment):
    # a reader's kernel: tasks in its own process (no scheduler: process_environment), results written where
    # results_dir says
    monkeypatch.delenv(STAGING_ENV, raising=False)
    # the runner, in-process too, in a copy of the checkout (the repository's cached run may come from a cluster)
    layout = BookLayout(copy_repository(tmp_path / "repository"))
    assert runner.run_chapter(layout, CHAPTER, "smoke").executed
    expected = json.loads(layout.results_file(CHAPTER).read_text())
    assert expected["profile"] == "smoke" and expected["values"]

    by_hand_dir = tmp_path / "by_hand"
    run_by_hand(ROOT / "book" / f"{CHAPTER}.md", f"results_dir = {str(by_hand_dir)!r}", cwd=ROOT)
    by_hand = json.loads((by_hand_dir / f"{CHAPTER}.json").read_text())

    assert without_run_times(by_hand) == without_run_times(expected)
    assert by_hand["values"].keys() == expected["values"].keys()  # nothing but run times left out


def test_run_times_are_all_that_is_left_out():
    results = {
        "values": {"U": [1.0, 2.0], "solve_seconds": 0.3, "nested": {"wall_s": 1.0, "n": 3}},
        "parameters": {"widths": [10]},
    }
    assert without_run_times(results) == {
        "values": {"U": [1.0, 2.0], "nested": {"n": 3}},
        "parameters": {"widths": [10]},
    }
