"""Execute one chapter with papermill.

The chapter runs in a worker process (:mod:`attnpaths_book.worker`) with the repository root as working
directory, in a private working folder ``_build/.run-<chapter>-*``. Nothing half-written is ever taken for a
result, and the last good result survives a failed, interrupted or killed run: the chapter writes its results
file into the working folder (:data:`attnpaths_book.results.STAGING_ENV`), and only when every cell succeeded and
the results file exists do the results file, the executed notebook (stamped with its cache key), the run time
and the manifest that checksums them become current, as one unit (:mod:`attnpaths_book.store`). The worker ends when the executor's process
dies, and its kernel with it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from attnpaths.engine import THREAD_VARIABLES
from attnpaths_book import worker
from attnpaths_book.cache import EXECUTION_METADATA
from attnpaths_book.chapters import INJECTED, Chapter
from attnpaths_book.layout import RUN_FOLDER_PREFIX, BookLayout, new_run_folder, run_folder_in_use
from attnpaths_book.results import STAGING_ENV, to_jsonable
from attnpaths_book.store import CommitFailed, DamagedFile, commit_unit, read_json

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
KERNEL_ENVIRONMENT = {
    "TQDM_DISABLE": "1",  # progress bars would land in the notebooks' stderr; the executor reports progress
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # silences the debugger's frozen-modules notice of ipykernel
    # One thread in every pool of the kernel, as in every engine task and in a chapter that calls
    # attnpaths.engine.use_one_thread: how a reduction is split between threads changes its last bits (the
    # theory chapter's solutions differed by 1e-13 between --workers 1 and 2 before).
    **{name: "1" for name in THREAD_VARIABLES},
}


class ChapterFailed(RuntimeError):
    """A chapter raised an error; the message names the chapter and its parameters and shows the failing cell
    and its traceback. ``parameters`` holds the complete parameters of the failed execution."""

    def __init__(self, chapter: str, message: str, parameters: dict | None = None):
        super().__init__(message)
        self.chapter = chapter
        self.parameters = dict(parameters or {})


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
    command: str = ""

    def as_dict(self) -> dict:
        """The record as a plain dict of its fields."""
        return dict(self.__dict__)


def process_command() -> str:
    """The command line of this process as a reader would type it (``python -m attnpaths_book ...``,
    ``attnpaths ...``, or the program's name and its arguments, e.g. a test run), so that a record names the run
    that executed a chapter and not only the one that recorded it."""
    program = Path(sys.argv[0])
    if program.name == "__main__.py" and program.parent.name == "attnpaths_book":
        prog = "python -m attnpaths_book"
    else:
        prog = program.name or "python"
    return " ".join([prog, *sys.argv[1:]])


def execute_chapter(
    layout: BookLayout,
    chapter: Chapter,
    parameters: dict,
    cache_key: str,
    overrides: dict | None = None,
    progress_bar: bool = False,
    environment: dict | None = None,
    timing: dict | None = None,
) -> Execution:
    """Execute ``chapter`` with the complete ``parameters`` (see :func:`~attnpaths_book.chapters.resolve_parameters`).

    On success, makes the chapter's new unit current in one commit (:func:`attnpaths_book.store.commit_unit`):
    its results file in ``parameters["results_dir"]`` (which the chapter writes, staged in the working folder),
    ``layout.executed_notebook(chapter.docname)``, its manifest and, when ``timing`` is given (the engine's
    ``{"engine", "workers"}``; runs with overrides give none), its entry in the run times. Raises
    :class:`ChapterFailed` when a cell fails, the worker fails, or the chapter writes no results file, and
    :class:`~attnpaths_book.store.CommitFailed` when the new files cannot be written; a failed, interrupted or
    killed run leaves the previous unit as it was (a failed one leaves its partly executed notebook in
    ``layout.failed_dir``). ``environment`` is added to the environment of the chapter's kernel (e.g.
    :attr:`attnpaths.engine.Engine.environment`, which sends its tasks to a Dask cluster).
    """
    if not chapter.is_notebook:
        raise ValueError(f"chapter must be a notebook chapter, got the page {chapter.name!r}")
    results = layout.root / parameters["results_dir"] / f"{chapter.name}.json"
    layout.build_dir.mkdir(parents=True, exist_ok=True)
    workdir = new_run_folder(layout, chapter.name)
    try:
        spec, output_path, error_path, usage_path = _write_spec(workdir, chapter, parameters, layout, progress_bar)
        staging_dir = workdir / "results"
        staging = {
            STAGING_ENV: json.dumps(
                {"results_dir": str(results.parent.resolve()), "staging_dir": str(staging_dir.resolve())}
            )
        }
        status, wall_s, printed_errors = _run_worker(spec, layout.root, {**(environment or {}), **staging})
        if status != 0:
            raise ChapterFailed(
                chapter.name,
                _failure_message(layout, chapter, parameters, status, output_path, error_path, results),
                parameters,
            )
        notebook = nbformat.read(output_path, as_version=4)
        staged = _check_outputs(layout, chapter, parameters, results, notebook, printed_errors, staging_dir)
        peak_rss_mib = read_json(usage_path, "worker's usage report")["peak_rss_kib"] / 1024.0
        _check_recorded_parameters(layout, chapter, parameters, staged, results)
        execution = Execution(
            chapter=chapter.name,
            profile=parameters["profile"],
            parameters=parameters,
            overrides=dict(overrides or {}),
            cache_key=cache_key,
            wall_s=round(wall_s, 3),
            peak_rss_mib=round(peak_rss_mib, 1),
            command=process_command(),
        )
        _show_injected_like_parameters(notebook)
        notebook.metadata[EXECUTION_METADATA] = execution.as_dict()
        notebook_text = nbformat.writes(notebook)
        try:
            commit_unit(
                layout.root,
                results.parent,
                chapter.name,
                {
                    "results": (results, staged.read_text()),
                    "notebook": (layout.executed_notebook(chapter.docname), notebook_text),
                },
                {"cache_key": cache_key, "profile": execution.profile, "execution": execution.as_dict()},
                timing=None
                if timing is None
                else {
                    "wall_s": execution.wall_s,
                    "peak_rss_mib": execution.peak_rss_mib,
                    "cache_key": cache_key,
                    "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    **timing,
                },
            )
        except CommitFailed as err:  # the store's message says whether the last unit is back
            raise _failure(
                layout, chapter, parameters, f"ran without error, but its outputs could not be made current: {err}."
            ) from err
        return execution
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _write_spec(workdir: Path, chapter: Chapter, parameters: dict, layout: BookLayout, progress_bar: bool):
    """The worker's spec file, with the chapter's notebook and an empty staging folder beside it: ``(spec,
    output notebook, error file, usage file)``."""
    input_path, output_path, error_path, usage_path = (
        workdir / n for n in ("input.ipynb", "output.ipynb", "error.json", "usage.json")
    )
    staging_dir = workdir / "results"
    staging_dir.mkdir()
    nbformat.write(chapter.notebook, input_path)
    spec = workdir / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "input": str(input_path),
                "output": str(output_path),
                "parameters": parameters,
                "cwd": str(layout.root),
                "progress_bar": progress_bar,
                "error_file": str(error_path),
                "usage_file": str(usage_path),
                "parent_pid": os.getpid(),
            }
        )
    )
    return spec, output_path, error_path, usage_path


def _check_outputs(
    layout: BookLayout, chapter: Chapter, parameters: dict, results: Path, notebook, printed_errors, staging_dir: Path
) -> Path:
    """The staged results file of a run that ended well; :class:`ChapterFailed` when the run printed errors or
    staged no results file or another chapter's."""
    printed_errors = {"its kernel or worker": printed_errors, "its cells": _cell_error_lines(notebook)}
    for who, lines in printed_errors.items():
        if lines:
            printed = "\n".join(f"    {line}" for line in lines[:20])
            what = f"ran its cells without error but {who} printed errors on standard error:\n{printed}"
            raise _failure(layout, chapter, parameters, what, results)
    staged = staging_dir / results.name
    if not staged.is_file():
        what = (
            f"ran without error but wrote no results file {layout.relative(results)}: it must end with "
            "attnpaths_book.results.write_results(...)."
        )
        raise _failure(layout, chapter, parameters, what, results)
    others = sorted(p.name for p in staging_dir.iterdir() if p != staged)
    if others:
        what = (
            f"wrote results files of other chapters into {layout.relative(results.parent)}: {', '.join(others)}; "
            f"a chapter writes only its own, {results.name}."
        )
        raise _failure(layout, chapter, parameters, what, results)
    return staged


def _check_recorded_parameters(
    layout: BookLayout, chapter: Chapter, parameters: dict, staged: Path, results: Path
) -> None:
    """Raise :class:`ChapterFailed` unless the staged results file records exactly the parameters the chapter
    ran with (all of them but the run parameters ``profile`` and ``results_dir``), and the profile."""
    try:
        record = read_json(staged, "results file")
    except DamagedFile as err:
        raise _failure(layout, chapter, parameters, f"wrote an unreadable results file: {err}.", results) from err
    expected = to_jsonable({k: v for k, v in parameters.items() if k not in INJECTED})
    recorded = record.get("parameters")
    if record.get("profile") != parameters["profile"] or recorded != expected:
        recorded = recorded if isinstance(recorded, dict) else {}
        differ = sorted(k for k in expected.keys() | recorded.keys() if expected.get(k, ...) != recorded.get(k, ...))
        what = (
            f"recorded other parameters than it ran with (profile {record.get('profile')!r}; differing: "
            f"{', '.join(differ) or 'none'}): write the results with attnpaths_book.recorder.ChapterRecorder, "
            "which reads them from the parameters cell."
        )
        raise _failure(layout, chapter, parameters, what, results)


def remove_stale_run_folders(layout: BookLayout) -> list[Path]:
    """Remove the working folders of killed runs from ``layout.build_dir``: those whose owner (recorded in the
    name, :func:`~attnpaths_book.layout.new_run_folder`) has ended; returns their paths. A living run's folder
    stays, even when its run no longer holds the build lock, or another process took it."""
    if not layout.build_dir.is_dir():
        return []
    stale = sorted(p for p in layout.build_dir.glob(f"{RUN_FOLDER_PREFIX}*") if p.is_dir() and not run_folder_in_use(p))
    for folder in stale:
        shutil.rmtree(folder, ignore_errors=True)
    return stale


DISPLAY_TAGS = ("remove-cell", "remove-input", "remove-output", "hide-cell", "hide-input", "hide-output")


def _show_injected_like_parameters(notebook) -> None:
    """Give papermill's injected-parameters cell the display tags (``remove-cell``, ``hide-input``, ...) of
    the chapter's own parameters cell, so the chapter decides how its parameters appear in the book."""
    cells = {
        tag: [c for c in notebook.cells if tag in c.metadata.get("tags", [])]
        for tag in ("parameters", "injected-parameters")
    }
    if cells["parameters"] and cells["injected-parameters"]:
        shown = [t for t in cells["parameters"][0].metadata["tags"] if t in DISPLAY_TAGS]
        injected = cells["injected-parameters"][0].metadata
        injected["tags"] = [*injected["tags"], *(t for t in shown if t not in injected["tags"])]


_running: set = set()
_running_lock = threading.Lock()


ERROR_LINE = re.compile(r"^\[\w+\] (ERROR|CRITICAL) \||^\S+ - (ERROR|CRITICAL) - |^Traceback \(most recent call last\)")
"""A line of the worker's or kernel's standard error that reports an error, in the log format of Jupyter's
applications (``[IPKernelApp] ERROR | ...``), Python's default logging format (``distributed.client - ERROR -
...``) and a traceback. A chapter whose run prints one has failed, even when every cell succeeded.

:meta hide-value:
"""


SHUTDOWN_RACE_HEADER = "ERROR:tornado.general:Uncaught exception in ZMQStream callback"
SHUTDOWN_RACE_ERROR = "zmq.error.ZMQError: Socket operation on non-socket"
SHUTDOWN_RACE_FRAME = "_publish_status_and_flush"
"""The one traceback of standard error that is not the chapter's. ipykernel 7.4 (the pinned version) may publish
its last "idle" status on the control channel after its IO thread closed the socket, at shutdown, once every
cell has run; tornado then logs the ``ZMQError`` (ENOTSOCK) under this header. The race is fixed upstream
(ipython/ipykernel pull request 1518, which logs it at debug level). Only a block with this header, this frame and
this final line is skipped; any other traceback still fails the run."""


def error_lines(lines) -> list[str]:
    """The :data:`ERROR_LINE` lines of a worker's standard error ``lines`` (stripped of ANSI colours), without
    the traceback of ipykernel's shutdown race (``SHUTDOWN_RACE_HEADER``)."""
    lines = [ANSI_ESCAPE.sub("", line).rstrip() for line in lines]
    skipped: set[int] = set()
    for i, line in enumerate(lines[:-1]):
        if line != SHUTDOWN_RACE_HEADER or not lines[i + 1].startswith("Traceback (most recent call last)"):
            continue
        end = i + 2
        while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end]):
            end += 1  # the frames, indented, up to the exception's own line
        block = lines[i : end + 1]
        if end < len(lines) and lines[end] == SHUTDOWN_RACE_ERROR and any(SHUTDOWN_RACE_FRAME in b for b in block):
            skipped.update(range(i, end + 1))
    return [line for k, line in enumerate(lines) if k not in skipped and ERROR_LINE.search(line)]


def _cell_error_lines(notebook) -> list[str]:
    """The :data:`ERROR_LINE` lines that the notebook's code cells printed to their standard error stream."""
    return [
        line
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stderr"
        for line in ANSI_ESCAPE.sub("", output.get("text", "")).splitlines()
        if ERROR_LINE.search(line)
    ]


def _run_worker(spec: Path, cwd: Path, environment: dict) -> tuple[int, float, list[str]]:
    """Run the worker with ``environment`` added to its environment (which its kernel inherits); returns (exit
    status, wall time in s, the error lines it printed). Its standard error is passed on line by line. The
    worker itself reports its peak memory (:func:`worker.peak_rss_kib`)."""
    env = {**os.environ, **KERNEL_ENVIRONMENT, **environment}
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", worker.__name__, str(spec)],
        cwd=cwd,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    printed: list[str] = []

    def pass_on():
        for line in process.stderr:
            sys.stderr.write(line)
            printed.append(line)

    reader = threading.Thread(target=pass_on, name="worker-stderr", daemon=True)
    reader.start()
    with _running_lock:
        _running.add(process)
    try:
        _, wait_status = os.waitpid(process.pid, 0)
    except BaseException:
        _stop(process)
        raise
    finally:
        with _running_lock:
            _running.discard(process)
    reader.join(timeout=10)
    process.returncode = os.waitstatus_to_exitcode(wait_status)
    return process.returncode, time.perf_counter() - start, error_lines(printed)


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def stop_running_chapters() -> None:
    """Terminate the workers of the chapters that other threads of this process are executing (their runs
    then fail and change no result): what an interrupted concurrent book run does before it ends."""
    with _running_lock:
        running = list(_running)
    for process in running:
        if process.poll() is None:
            process.terminate()


def _head(layout: BookLayout, chapter: Chapter, parameters: dict) -> str:
    """The first words of a failure message: the chapter, its source and the parameters it ran with."""
    values = ", ".join(f"{name}={value!r}" for name, value in parameters.items())
    return f"chapter {chapter.name!r} ({layout.relative(chapter.source)}) with the parameters {values}"


def _failure(layout: BookLayout, chapter: Chapter, parameters: dict, what: str, results: Path | None = None):
    """The :class:`ChapterFailed` of a run that ``what``, with what it left of the chapter's ``results``."""
    kept = "" if results is None else _kept_note(layout, results)
    return ChapterFailed(chapter.name, f"{_head(layout, chapter, parameters)} {what}{kept}", parameters)


def _kept_note(layout: BookLayout, results: Path) -> str:
    """What a failed run left of the chapter's results: the previous file, unchanged, or none."""
    if results.is_file():
        return f"\nThe previous results file {layout.relative(results)} is unchanged."
    return f"\nThere is no results file {layout.relative(results)}: none was written."


def _failure_message(
    layout: BookLayout,
    chapter: Chapter,
    parameters: dict,
    status: int,
    output_path: Path,
    error_path: Path,
    results: Path,
) -> str:
    """Name the chapter and its parameters, show the failing cell and its traceback, keep the partly executed
    notebook."""
    head = f"{_head(layout, chapter, parameters)} failed"
    kept = _kept_note(layout, results)
    if output_path.is_file():
        failed = layout.failed_dir / f"{chapter.name}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(output_path, failed)
        kept += f"\nThe partly executed notebook is {layout.relative(failed)}."
    if not error_path.is_file():
        return f"{head}: the worker process ended with status {status} before reporting an error.{kept}"
    record = read_json(error_path, "worker's error report")
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
