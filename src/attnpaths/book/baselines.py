"""The nbval regression baselines: smoke-profile executed notebooks under ``tests/baselines/``.

``python -m attnpaths refresh-baselines`` runs the smoke profile and stores each executed chapter stripped
to what nbval needs: the code, the tags, and the outputs of the cells tagged ``nbval-check-output`` (the
rounded key numbers that ``pytest`` compares in ``--nbval-lax`` mode).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat

from ..results import atomic_write_text
from .chapters import Chapter, resolve_parameters
from .layout import BookLayout

CHECK_TAG = "nbval-check-output"
INJECTED_TAG = "injected-parameters"


def strip_for_baseline(notebook):
    """A copy of an executed notebook holding only the code, the tags, papermill's parameter record and
    the outputs of the cells tagged ``nbval-check-output``."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        tags = cell.metadata.get("tags", [])
        cell.metadata = nbformat.NotebookNode({"tags": tags} if tags else {})
        cell.pop("id", None)
        if cell.cell_type == "code" and CHECK_TAG not in tags:
            cell.outputs = []
            cell.execution_count = None
    kept = {key: notebook.metadata[key] for key in ("kernelspec", "language_info") if key in notebook.metadata}
    if "papermill" in notebook.metadata:
        kept["papermill"] = {"parameters": notebook.metadata["papermill"].get("parameters", {})}
    notebook.metadata = nbformat.NotebookNode(kept)
    notebook.nbformat_minor = 4  # no cell ids: stable diffs
    return notebook


def baseline_path(layout: BookLayout, chapter: Chapter) -> Path:
    return layout.baselines_dir / f"{chapter.name}.ipynb"


def write_baseline(layout: BookLayout, chapter: Chapter) -> Path:
    """Store the chapter's executed notebook (which must be a smoke run) as its baseline."""
    notebook = nbformat.read(layout.executed_notebook(chapter.docname), as_version=4)
    return atomic_write_text(baseline_path(layout, chapter), nbformat.writes(strip_for_baseline(notebook)))


def code_cells(notebook) -> list[str]:
    """Sources of the code cells, papermill's injected-parameters cell left out."""
    return [c.source for c in notebook.cells
            if c.cell_type == "code" and INJECTED_TAG not in c.metadata.get("tags", [])]


def baseline_differences(layout: BookLayout, chapter: Chapter) -> list[str]:
    """Why the chapter's baseline no longer matches the chapter (empty list: it matches).

    Checks that the baseline exists, that its code cells equal the chapter's, that it was executed with
    the chapter's smoke parameters, and that it has at least one ``nbval-check-output`` cell with output.
    """
    path = baseline_path(layout, chapter)
    if not path.is_file():
        return [f"{layout.relative(path)} is missing"]
    baseline = nbformat.read(path, as_version=4)
    problems = []
    ours, theirs = code_cells(chapter.notebook), code_cells(baseline)
    if ours != theirs:
        changed = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
        where = f"code cells {changed}" if changed else f"{len(ours)} code cells in the chapter, {len(theirs)} in the baseline"
        problems.append(f"the code of {layout.relative(chapter.source)} differs from its baseline ({where})")
    recorded = baseline.metadata.get("papermill", {}).get("parameters")
    expected = json.loads(json.dumps(resolve_parameters(chapter, "smoke", results_dir=layout.relative(layout.results_dir))))
    if recorded != expected:
        problems.append(f"the baseline was executed with parameters {recorded}, the smoke profile now gives {expected}")
    checked = [c for c in baseline.cells if c.cell_type == "code" and CHECK_TAG in c.metadata.get("tags", [])]
    if not any(c.outputs for c in checked):
        problems.append(f"no cell tagged {CHECK_TAG!r} with output: the chapter must print its key numbers in one")
    return problems
