"""The nbval regression baselines: smoke-profile executed notebooks under ``tests/baselines/``.

``python -m attnpaths_book refresh-baselines`` runs the smoke profile and compares each executed chapter with its
baseline: ``tests/baselines/<chapter>.ipynb``, the notebook stripped to what nbval needs (the code, the tags,
and the outputs of the cells tagged ``nbval-check-output``: the rounded key numbers that ``pytest`` compares
in ``--nbval-lax`` mode), and ``tests/baselines/<chapter>.json``, the chapter's smoke results file. It shows
what changed (:func:`baseline_update`) and writes the new baselines only when told to accept them
(:func:`write_baseline`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from attnpaths.json_files import read_json
from attnpaths_book.cache import EXECUTION_METADATA
from attnpaths_book.chapters import Chapter, resolve_parameters
from attnpaths_book.layout import BookLayout
from attnpaths_book.numeric_diff import compare_json, compare_lines
from attnpaths_book.results import atomic_write_text
from attnpaths_book.store import verify_results

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
    """The chapter's nbval baseline notebook, ``tests/baselines/<chapter>.ipynb``."""
    return layout.baselines_dir / f"{chapter.name}.ipynb"


def results_baseline_path(layout: BookLayout, chapter: Chapter) -> Path:
    """The chapter's smoke results at its last accepted baseline, ``tests/baselines/<chapter>.json``."""
    return layout.baselines_dir / f"{chapter.name}.json"


def checked_output_lines(notebook) -> list[list[str]]:
    """The text printed by each cell tagged ``nbval-check-output`` (streams and plain-text results), one
    list of lines per cell, in order."""
    cells = [c for c in notebook.cells if c.cell_type == "code" and CHECK_TAG in c.metadata.get("tags", [])]
    out = []
    for cell in cells:
        text = ""
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                text += output.get("text", "")
            elif "data" in output:
                text += output["data"].get("text/plain", "") + "\n"
            elif output.get("output_type") == "error":
                text += f"{output.get('ename')}: {output.get('evalue')}\n"
        out.append(text.splitlines())
    return out


@dataclass(frozen=True)
class BaselineUpdate:
    """A chapter's new baseline, compared with the stored one (see :func:`baseline_update`).

    Attributes:
        chapter: the chapter's name.
        notebook_text: the new baseline notebook (stripped, as written to ``<chapter>.ipynb``).
        results_text: the new smoke results file (as written to ``<chapter>.json``).
        changed: whether either differs from the stored baseline (run times and other volatile values of the
            results file left out) or a stored file is missing.
        report: lines of text saying what changed, for people to read before accepting.
    """

    chapter: str
    notebook_text: str
    results_text: str
    changed: bool
    report: list[str]


def _executed_smoke_notebook(layout: BookLayout, chapter: Chapter):
    path = layout.existing(layout.executed_notebook(chapter.docname), chapter.name, "executed notebook")
    notebook = nbformat.read(path, as_version=4)
    profile = notebook.metadata.get(EXECUTION_METADATA, {}).get("profile")
    if profile != "smoke":
        raise ValueError(
            f"chapter {chapter.name!r}: {layout.relative(path)} was executed with the {profile!r} "
            "profile; baselines hold the smoke profile"
        )
    return notebook


def _smoke_results_text(layout: BookLayout, chapter: Chapter) -> str:
    path = layout.existing(layout.results_file(chapter.name), chapter.name, "results file")
    profile = verify_results(layout.results_dir, chapter.name).get("profile")
    text = path.read_text()
    if profile != "smoke":
        raise ValueError(
            f"chapter {chapter.name!r}: {layout.relative(path)} holds the {profile!r} profile's "
            "results; baselines hold the smoke profile"
        )
    return text


def _notebook_report(layout: BookLayout, path: Path, old, new) -> list[str]:
    """What differs between two stripped notebooks: code cells, parameters, printed check lines."""
    lines = []
    old_code, new_code = code_cells(old), code_cells(new)
    if old_code != new_code:
        changed = [i for i, (a, b) in enumerate(zip(old_code, new_code)) if a != b]
        if len(old_code) != len(new_code):
            lines.append(f"  code: {len(old_code)} code cells before, {len(new_code)} now")
        if changed:
            lines.append(f"  code: code cells {changed} changed")
    old_parameters = old.metadata.get("papermill", {}).get("parameters", {})
    new_parameters = new.metadata.get("papermill", {}).get("parameters", {})
    parameters = compare_json(old_parameters, new_parameters)
    if parameters.changed:
        lines += ["  " + line for line in parameters.report("parameters")]
    old_checked, new_checked = checked_output_lines(old), checked_output_lines(new)
    if len(old_checked) != len(new_checked):
        lines.append(f"  {CHECK_TAG} cells: {len(old_checked)} before, {len(new_checked)} now")
    for number, (before, after) in enumerate(zip(old_checked, new_checked), start=1):
        difference = compare_lines(before, after)
        if difference:
            lines.append(f"  printed by {CHECK_TAG} cell {number} of {len(new_checked)}:")
            lines += ["  " + line for line in difference]
    for number, after in enumerate(new_checked[len(old_checked) :], start=len(old_checked) + 1):
        lines.append(f"  printed by the new {CHECK_TAG} cell {number}:")
        lines += [f"    + {line}" for line in after]
    if not lines:
        lines.append("  the notebook's other content changed (metadata or non-checked cells)")
    return [f"{layout.relative(path)}:"] + lines


def baseline_update(layout: BookLayout, chapter: Chapter) -> BaselineUpdate:
    """Compare the chapter's executed smoke notebook and results file with its stored baseline.

    The report shows, for the notebook, the code cells and parameters that changed and the old and new lines
    printed by the ``nbval-check-output`` cells (with the relative change of each changed number), and for
    the results file every changed number with its relative change (see
    :func:`~attnpaths_book.numeric_diff.compare_json`). Raises ``FileNotFoundError`` when the chapter has no
    executed notebook or results file, ``ValueError`` when they are not from a smoke run.
    """
    notebook_text = nbformat.writes(strip_for_baseline(_executed_smoke_notebook(layout, chapter)))
    results_text = _smoke_results_text(layout, chapter)
    report, changed = [], False
    path, results_path = baseline_path(layout, chapter), results_baseline_path(layout, chapter)
    if not path.is_file():
        report.append(f"{layout.relative(path)}: new baseline")
        changed = True
    elif path.read_text() != notebook_text:
        report += _notebook_report(
            layout, path, nbformat.read(path, as_version=4), nbformat.reads(notebook_text, as_version=4)
        )
        changed = True
    if not results_path.is_file():
        report.append(f"{layout.relative(results_path)}: new baseline of the results file")
        changed = True
    else:
        comparison = compare_json(read_json(results_path, "baseline results file"), json.loads(results_text))
        report += comparison.report(f"{layout.relative(results_path)}")
        changed = changed or comparison.changed
    return BaselineUpdate(
        chapter=chapter.name, notebook_text=notebook_text, results_text=results_text, changed=changed, report=report
    )


def write_baseline(layout: BookLayout, chapter: Chapter, update: BaselineUpdate) -> list[Path]:
    """Write the chapter's new baseline notebook and results file from :func:`baseline_update`; returns the
    two paths."""
    if update.chapter != chapter.name:
        raise ValueError(f"update must be the baseline update of chapter {chapter.name!r}, got {update.chapter!r}'s")
    return [
        atomic_write_text(baseline_path(layout, chapter), update.notebook_text),
        atomic_write_text(results_baseline_path(layout, chapter), update.results_text),
    ]


def code_cells(notebook) -> list[str]:
    """Sources of the code cells, papermill's injected-parameters cell left out."""
    return [
        c.source for c in notebook.cells if c.cell_type == "code" and INJECTED_TAG not in c.metadata.get("tags", [])
    ]


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
        where = (
            f"code cells {changed}"
            if changed
            else f"{len(ours)} code cells in the chapter, {len(theirs)} in the baseline"
        )
        problems.append(f"the code of {layout.relative(chapter.source)} differs from its baseline ({where})")
    recorded = baseline.metadata.get("papermill", {}).get("parameters")
    expected = json.loads(
        json.dumps(resolve_parameters(chapter, "smoke", results_dir=layout.relative(layout.results_dir)))
    )
    if recorded != expected:
        problems.append(f"the baseline was executed with parameters {recorded}, the smoke profile now gives {expected}")
    checked = [c for c in baseline.cells if c.cell_type == "code" and CHECK_TAG in c.metadata.get("tags", [])]
    if not any(c.outputs for c in checked):
        problems.append(f"no cell tagged {CHECK_TAG!r} with output: the chapter must print its key numbers in one")
    return problems
