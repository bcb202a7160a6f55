"""Execute one chapter with papermill.

The chapter runs in a worker process (:mod:`attnpaths.book.worker`) with the repository root as working
directory. Nothing half-written is ever taken for a result: the chapter's old results file is removed before
it starts and again if it fails, and the executed notebook is written to a temporary file, stamped with its
cache key and renamed into place only when every cell succeeded and the results file exists.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..results import atomic_write_text
from . import worker
from .cache import EXECUTION_METADATA
from .chapters import Chapter
from .layout import BookLayout

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
KERNEL_ENVIRONMENT = {
    "TQDM_DISABLE": "1",  # progress bars would land in the notebooks' stderr; the executor reports progress
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # silences the debugger's frozen-modules notice of ipykernel
}


class ChapterFailed(RuntimeError):
    """A chapter raised an error; the message names the chapter and shows the failing cell and its error."""

    def __init__(self, chapter: str, message: str):
        super().__init__(message)
        self.chapter = chapter


@dataclass(frozen=True)
class Execution:
    """The record of one successful execution (also stored in the executed notebook's metadata)."""

    chapter: str
    profile: str
    parameters: dict
    overrides: dict
    cache_key: str
    wall_s: float
    peak_rss_mib: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def execute_chapter(layout: BookLayout, chapter: Chapter, parameters: dict, cache_key: str,
                    overrides: dict | None = None, progress_bar: bool = False) -> Execution:
    """Execute ``chapter`` with the complete ``parameters`` (see :func:`~attnpaths.book.chapters.resolve_parameters`).

    Writes ``layout.executed_notebook(chapter.docname)`` and expects the chapter to write its results file in
    ``parameters["results_dir"]``. Raises :class:`ChapterFailed` when a cell fails, the worker fails, or the
    chapter writes no results file; a failed run leaves its partly executed notebook in
    ``layout.failed_dir`` and no results file.
    """
    if not chapter.is_notebook:
        raise ValueError(f"chapter must be a notebook chapter, got the page {chapter.name!r}")
    results = layout.root / parameters["results_dir"] / f"{chapter.name}.json"
    results.unlink(missing_ok=True)
    layout.build_dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(dir=layout.build_dir, prefix=f".run-{chapter.name}-"))
    try:
        input_path, output_path, error_path = (workdir / n for n in ("input.ipynb", "output.ipynb", "error.json"))
        nbformat.write(chapter.notebook, input_path)
        spec = workdir / "spec.json"
        spec.write_text(json.dumps({"input": str(input_path), "output": str(output_path), "parameters": parameters,
                                    "cwd": str(layout.root), "progress_bar": progress_bar,
                                    "error_file": str(error_path)}))
        status, wall_s, peak_rss_mib = _run_worker(spec, layout.root)
        if status != 0:
            results.unlink(missing_ok=True)
            raise ChapterFailed(chapter.name, _failure_message(layout, chapter, status, output_path, error_path))
        if not results.is_file():
            raise ChapterFailed(chapter.name, f"chapter {chapter.name!r} ({layout.relative(chapter.source)}) ran "
                                f"without error but wrote no results file {layout.relative(results)}: it must end "
                                "with attnpaths.results.write_results(...)")
        execution = Execution(chapter=chapter.name, profile=parameters["profile"], parameters=parameters,
                              overrides=dict(overrides or {}), cache_key=cache_key,
                              wall_s=round(wall_s, 3), peak_rss_mib=round(peak_rss_mib, 1))
        notebook = nbformat.read(output_path, as_version=4)
        _show_injected_like_parameters(notebook)
        notebook.metadata[EXECUTION_METADATA] = execution.as_dict()
        atomic_write_text(layout.executed_notebook(chapter.docname), nbformat.writes(notebook))
        return execution
    except BaseException:
        results.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


DISPLAY_TAGS = ("remove-cell", "remove-input", "remove-output", "hide-cell", "hide-input", "hide-output")


def _show_injected_like_parameters(notebook) -> None:
    """Give papermill's injected-parameters cell the display tags (``remove-cell``, ``hide-input``, ...) of
    the chapter's own parameters cell, so the chapter decides how its parameters appear in the book."""
    cells = {tag: [c for c in notebook.cells if tag in c.metadata.get("tags", [])]
             for tag in ("parameters", "injected-parameters")}
    if cells["parameters"] and cells["injected-parameters"]:
        shown = [t for t in cells["parameters"][0].metadata["tags"] if t in DISPLAY_TAGS]
        injected = cells["injected-parameters"][0].metadata
        injected["tags"] = [*injected["tags"], *(t for t in shown if t not in injected["tags"])]


def _run_worker(spec: Path, cwd: Path) -> tuple[int, float, float]:
    """Run the worker; returns (exit status, wall time in s, peak resident memory of worker and kernel in MiB)."""
    env = {**os.environ, **KERNEL_ENVIRONMENT}
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", worker.__name__, str(spec)], cwd=cwd, env=env)
    try:
        # wait4 reports the peak RSS of the worker and of the processes it reaped (the kernel).
        _, wait_status, usage = os.wait4(process.pid, 0)
    except BaseException:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise
    process.returncode = os.waitstatus_to_exitcode(wait_status)
    return process.returncode, time.perf_counter() - start, usage.ru_maxrss / 1024.0


def _failure_message(layout: BookLayout, chapter: Chapter, status: int, output_path: Path, error_path: Path) -> str:
    """Name the chapter, show the failing cell and its error, and keep the partly executed notebook."""
    head = f"chapter {chapter.name!r} ({layout.relative(chapter.source)}) failed"
    kept = ""
    if output_path.is_file():
        failed = layout.failed_dir / f"{chapter.name}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(output_path, failed)
        kept = f"\nThe partly executed notebook is {layout.relative(failed)}."
    if not error_path.is_file():
        return f"{head}: the worker process ended with status {status} before reporting an error.{kept}"
    record = json.loads(error_path.read_text())
    if record["kind"] != "cell":
        return f"{head}: the executor itself failed:\n" + "\n".join(record["traceback"]) + kept
    cell = _error_cell(layout.failed_dir / f"{chapter.name}.ipynb")
    where = f" in the cell [{cell.execution_count}]:\n" + textwrap.indent(cell.source, "    ") if cell else ":"
    traceback_text = ANSI_ESCAPE.sub("", "\n".join(record["traceback"])).strip()
    last_line = f"{record['ename']}: {record['evalue']}"
    if not traceback_text.endswith(last_line):
        traceback_text += "\n" + last_line
    return f"{head}{where}\n\n{traceback_text}{kept}"


def _error_cell(notebook_path: Path):
    """The code cell of a partly executed notebook whose outputs hold the error (``None`` if none does)."""
    if not notebook_path.is_file():
        return None
    for cell in nbformat.read(notebook_path, as_version=4).cells:
        if cell.cell_type == "code" and any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return cell
    return None
