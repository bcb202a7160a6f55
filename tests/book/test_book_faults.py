"""Faults of the book's files: a chapter's outputs commit as one unit, damage and edits are detected and named,
and every JSON file read back names itself in its error.

The tests of :mod:`attnpaths_book.store` need no kernel (fast tier); the last ones execute a tiny chapter and
make its notebook folder immutable between the two writes (``chattr +i``, as root on ext4), as a reader's full or
read-only disk would."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest
from book_helpers import commit, tiny_book_at, unit_files, write_chapter, write_stand_in_packages, write_toc
from helpers import ROOT

from attnpaths.json_files import DamagedFile, read_json
from attnpaths_book import runner, store
from attnpaths_book.cli import main
from attnpaths_book.layout import BookLayout


@pytest.fixture
def committed(tmp_path) -> BookLayout:
    """A checkout whose chapter ``theory`` has one committed unit (value 1.0, key ``key-1``)."""
    layout = BookLayout(tmp_path)
    commit(layout, "theory", 1.0)
    return layout


def test_a_committed_unit_is_fresh_for_its_key_only(committed):
    assert store.unit_state(committed.root, committed.results_dir, "theory", "key-1").fresh
    state = store.unit_state(committed.root, committed.results_dir, "theory", "key-2")
    assert not state.fresh and "changed" in state.reason
    assert store.verify_results(committed.results_dir, "theory")["values"] == {"value": 1.0}
    assert store.read_timings(committed.results_dir)["smoke"]["theory"]["cache_key"] == "key-1"
    assert not list((committed.results_dir / store.MANIFEST_FOLDER).glob("*.journal"))


@pytest.mark.parametrize("failing", ["notebook", "timings", "manifest"])
def test_a_file_that_cannot_be_written_leaves_the_previous_unit(committed, monkeypatch, failing):
    """The chattr +i case of the results file written, the notebook's temporary file refused: nothing changes."""
    before = unit_files(committed, "theory")
    write = store._temporary_beside

    def refuse(target, text):
        if (
            failing == "notebook"
            and target.suffix == ".ipynb"
            or failing == "timings"
            and target.name == "_timings.json"
            or failing == "manifest"
            and target.parent.name == store.MANIFEST_FOLDER
        ):
            raise store.CommitFailed(f"cannot write {target}: Operation not permitted")
        return write(target, text)

    monkeypatch.setattr(store, "_temporary_beside", refuse)
    with pytest.raises(store.CommitFailed, match="Operation not permitted"):
        commit(committed, "theory", 2.0, key="key-2")
    assert unit_files(committed, "theory") == before
    assert store.unit_state(committed.root, committed.results_dir, "theory", "key-1").fresh
    assert sorted(p.name for p in committed.results_dir.iterdir()) == [".manifests", "_timings.json", "theory.json"]


def test_a_rename_that_fails_after_the_first_puts_the_previous_files_back(committed, monkeypatch):
    before = unit_files(committed, "theory")
    replace, calls = os.replace, []

    def second_fails(source, target):
        calls.append(target)
        if len(calls) == 2:  # the results file is already in place
            raise PermissionError(1, "Operation not permitted")
        return replace(source, target)

    monkeypatch.setattr(store.os, "replace", second_fails)
    with pytest.raises(store.CommitFailed, match="previous results, notebook and timings are unchanged"):
        commit(committed, "theory", 2.0, key="key-2")
    monkeypatch.setattr(store.os, "replace", replace)
    assert unit_files(committed, "theory") == before
    assert store.unit_state(committed.root, committed.results_dir, "theory", "key-1").fresh


KILLED_COMMIT = """
import os, signal, sys
from pathlib import Path
sys.path[:0] = [{src!r}, {tests!r}, {library_tests!r}]
from book_helpers import commit
from attnpaths_book import store
from attnpaths_book.layout import BookLayout
replace, calls = os.replace, []
def killed_after(source, target):
    replace(source, target)
    calls.append(target)
    if len(calls) == {renames}:
        os.kill(os.getpid(), signal.SIGKILL)
store.os.replace = killed_after
commit(BookLayout(Path({root!r})), "theory", 2.0, key="key-2")
"""


@pytest.mark.parametrize("renames, survivor", [(2, "key-1"), (4, "key-1"), (5, "key-2")])
@pytest.mark.usefixtures("process_environment")
def test_a_commit_killed_at_any_rename_leaves_one_whole_unit(committed, renames, survivor):
    """Renames: the journal (1), the results file (2), the notebook (3), the timings (4), the manifest (5, the
    commit). Killed after the results file, after the timings or after the manifest, the next command's recovery
    leaves the previous unit, or the new one when its manifest was in place."""
    before = unit_files(committed, "theory")
    script = KILLED_COMMIT.format(
        src=str(ROOT / "src"),
        tests=str(ROOT / "tests" / "book"),
        library_tests=str(ROOT / "tests" / "library"),
        renames=renames,
        root=str(committed.root),
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    if renames < 5:
        assert unit_files(committed, "theory")["results"] != before["results"]  # a half-made unit on disk
        assert not store.unit_state(committed.root, committed.results_dir, "theory", "key-1").fresh
    assert store.recover(committed.results_dir) == (["theory"] if renames < 5 else [])
    assert store.unit_state(committed.root, committed.results_dir, "theory", survivor).fresh
    if survivor == "key-1":
        assert unit_files(committed, "theory") == before
    assert not list((committed.results_dir / store.MANIFEST_FOLDER).glob("*.journal"))
    assert not list(committed.build_dir.rglob("*.tmp"))  # the killed commit's temporary files are removed


def test_a_truncated_results_file_is_stale_and_named(committed):
    path = committed.results_file("theory")
    os.truncate(path, 20)
    state = store.unit_state(committed.root, committed.results_dir, "theory", "key-1")
    assert not state.fresh and "_build/results/theory.json" in state.reason and "edited or damaged" in state.reason
    with pytest.raises(DamagedFile, match=r"theory\.json: this results file does not match"):
        store.verify_results(committed.results_dir, "theory")


def test_one_edited_number_in_valid_json_is_detected(committed):
    path = committed.results_file("theory")
    path.write_text(path.read_text().replace("1.0", "1.5"))
    assert json.loads(path.read_text())["values"]["value"] == 1.5  # still valid JSON
    assert not store.unit_state(committed.root, committed.results_dir, "theory", "key-1").fresh
    with pytest.raises(DamagedFile, match="edited or damaged"):
        store.verify_results(committed.results_dir, "theory")


def test_an_edited_notebook_is_detected(committed):
    path = committed.executed_notebook("book/theory")
    path.write_text(path.read_text().replace("1.0", "3.0"))
    state = store.unit_state(committed.root, committed.results_dir, "theory", "key-1")
    assert not state.fresh and "notebook file _build/executed/book/theory.ipynb" in state.reason


def test_a_damaged_manifest_makes_the_chapter_stale_and_is_named(committed):
    path = store.manifest_path(committed.results_dir, "theory")
    os.truncate(path, 30)
    state = store.unit_state(committed.root, committed.results_dir, "theory", "key-1")
    assert not state.fresh and str(path) in state.reason and "not valid JSON" in state.reason
    path.write_text("[]")
    assert "must hold a JSON object" in store.unit_state(committed.root, committed.results_dir, "theory").reason


def test_results_without_a_manifest_are_not_taken_for_a_run(committed):
    store.manifest_path(committed.results_dir, "theory").unlink()
    with pytest.raises(DamagedFile, match="has no manifest"):
        store.verify_results(committed.results_dir, "theory")
    assert store.unit_state(committed.root, committed.results_dir, "theory").reason == "never executed (no manifest)"


def test_a_damaged_timings_file_is_named_before_anything_runs(committed):
    before = unit_files(committed, "theory")
    committed.timings.write_text('{\n "smoke": {\n')
    with pytest.raises(
        DamagedFile,
        match=r"_timings\.json: this record of run times is damaged: not valid JSON "
        r"\(Expecting .*line 3 column 1.*delete it and run again",
    ):
        runner._prepare(committed)
    with pytest.raises(DamagedFile, match=r"_timings\.json"):  # a commit refuses it before it changes anything
        commit(committed, "theory", 2.0, key="key-2")
    assert unit_files(committed, "theory")["results"] == before["results"]
    assert store.unit_state(committed.root, committed.results_dir, "theory", "key-1").fresh


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"a": 1,', r"not valid JSON \(Expecting property name enclosed in double quotes: line 1 column 9"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b"[1, 2]", "must hold a JSON object, found list"),
    ],
)
def test_every_json_file_read_back_names_itself(tmp_path, content, message):
    path = tmp_path / "record.json"
    path.write_bytes(content)
    with pytest.raises(DamagedFile, match=message) as caught:
        read_json(path, "record")
    assert caught.value.path == path and str(path) in str(caught.value)
    with pytest.raises(FileNotFoundError, match="missing.json does not exist"):
        read_json(tmp_path / "missing.json", "record")


def test_a_truncated_manifest_of_the_shipped_weights_is_named(tmp_path):
    from attnpaths_book import trained

    shutil.copy(trained.SHIPPED_DIR / "manifest.json", tmp_path / "manifest.json")
    os.truncate(tmp_path / "manifest.json", 500)
    with pytest.raises(DamagedFile, match=r"manifest\.json: this manifest of the shipped weights is damaged"):
        trained.read_manifest(tmp_path)


def test_the_paper_records_and_benchmark_records_name_a_damaged_file(tmp_path):
    from attnpaths_book.paper_records import read_record
    from attnpaths_book.records import read_record as read_benchmark_record

    path = tmp_path / "theory.json"
    path.write_text('{"chapter": "theory", ')
    with pytest.raises(DamagedFile, match=r"theory\.json: this paper record is damaged"):
        read_record(path)
    with pytest.raises(DamagedFile, match=r"theory\.json: this benchmark record is damaged"):
        read_benchmark_record(path)


# --------------------------------------------------------------------------------------------------------
# the runner and the command line on a tiny book


@pytest.fixture
def tiny(tmp_path) -> BookLayout:
    """:func:`tiny_book_at` in ``tmp_path``."""
    return tiny_book_at(tmp_path)


def test_status_names_a_damaged_results_file_and_why(tiny, monkeypatch, capsys):
    monkeypatch.chdir(tiny.root)
    assert main(["status"]) == 0
    assert "every chapter is up to date" in capsys.readouterr().out
    os.truncate(tiny.results_file("theory"), 5)
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "stale: theory" in out and "_build/results/theory.json does not match the SHA-256" in out


def test_status_and_run_name_a_damaged_timings_file(tiny, monkeypatch, capsys):
    monkeypatch.chdir(tiny.root)
    tiny.timings.write_text('{\n\n')
    assert main(["run", "theory"]) == 1
    err = capsys.readouterr().err
    assert "_timings.json: this record of run times is damaged" in err and "delete it and run again" in err


@pytest.fixture
def executed_book(tmp_path):
    """A one-chapter book executed once by the runner (a kernel: slow tier)."""
    (tmp_path / "_config.yml").write_text("title: tiny\n")
    write_stand_in_packages(tmp_path)
    write_chapter(tmp_path, "theory", "temperature = 0.1", "values = {'t': temperature}")
    write_toc(tmp_path, ["theory"])
    layout = BookLayout(tmp_path)
    runner.run_chapter(layout, "theory", "smoke")
    return layout


def _chattr(flag: str, path) -> bool:
    done = subprocess.run(["chattr", flag, str(path)], capture_output=True)
    return done.returncode == 0


def test_a_run_whose_notebook_cannot_be_written_leaves_status_and_results_as_before(executed_book, capsys, monkeypatch):
    """``chattr +i _build/executed/book; run theory --set temperature=0.05``: exit 1 naming the notebook, and the
    results, timings, manifest and status exactly as before the run."""
    monkeypatch.chdir(executed_book.root)
    folder = executed_book.executed_dir / "book"
    before = unit_files(executed_book, "theory")
    assert main(["status"]) == 0 and "every chapter is up to date" in capsys.readouterr().out
    if shutil.which("chattr") is None or not _chattr("+i", folder):
        pytest.skip("chattr +i is not available here (it needs root and a file system that supports it)")
    try:
        status = main(["run", "theory", "--workers", "1", "--set", "temperature=0.05"])
    finally:
        _chattr("-i", folder)
    err = capsys.readouterr().err
    assert status == 1 and "cannot write" in err and "theory.ipynb" in err, err
    assert unit_files(executed_book, "theory") == before
    assert json.loads(before["results"])["values"]["t"] == 0.1
    assert main(["status"]) == 0 and "every chapter is up to date" in capsys.readouterr().out


def test_a_notebook_that_cannot_be_replaced_leaves_the_previous_unit_and_blocks_nothing(
    executed_book, capsys, monkeypatch
):
    """``chattr +i _build/executed/book/theory.ipynb; run theory --force``: the results file, already replaced, is
    put back and the notebook is not touched again; exit 1 naming the notebook, the unit exactly as before, no
    journal left, and the next command works."""
    monkeypatch.chdir(executed_book.root)
    notebook = executed_book.executed_notebook("book/theory")
    before = unit_files(executed_book, "theory")
    if shutil.which("chattr") is None or not _chattr("+i", notebook):
        pytest.skip("chattr +i is not available here (it needs root and a file system that supports it)")
    try:
        status = main(["run", "theory", "--force", "--workers", "1"])
    finally:
        _chattr("-i", notebook)
    err = capsys.readouterr().err
    assert status == 1 and "cannot replace" in err and "theory.ipynb" in err and "unchanged" in err, err
    assert unit_files(executed_book, "theory") == before
    assert not list((executed_book.results_dir / store.MANIFEST_FOLDER).glob("*.journal"))
    assert main(["status"]) == 0 and "every chapter is up to date" in capsys.readouterr().out


@pytest.mark.parametrize(
    "printing, where",
    [
        ('logging.getLogger("distributed.client").error("lost the scheduler")', "its cells printed errors"),
        ('os.write(2, b"[IPKernelApp] ERROR | lost the scheduler\\n")', "kernel or worker printed errors"),
    ],
)
def test_a_chapter_that_prints_an_error_has_failed(tmp_path, process_environment, printing, where):
    """A run that prints an error line on standard error (a cell's, or the kernel process's own) fails, even when
    every cell succeeded, and keeps no results."""
    (tmp_path / "_config.yml").write_text("title: tiny\n")
    write_stand_in_packages(tmp_path)
    write_chapter(
        tmp_path,
        "noisy",
        "",
        textwrap.dedent(f"""
        import logging, os
        logging.basicConfig(format="%(name)s - %(levelname)s - %(message)s")
        {printing}
        values = {{}}
        """),
    )
    write_toc(tmp_path, ["noisy"])
    layout = BookLayout(tmp_path)
    from attnpaths_book.executor import ChapterFailed

    with pytest.raises(ChapterFailed, match=f"{where}[^\n]*:\n    .*ERROR.* lost the scheduler"):
        runner.run_chapter(layout, "noisy", "smoke")
    assert not layout.results_file("noisy").exists()


def test_a_clean_run_prints_no_error_line(executed_book, capfd):
    """The kernel's shutdown is not an interrupt: no ``KeyboardInterrupt caught in kernel`` line."""
    runner.run_chapter(executed_book, "theory", "smoke", {"temperature": 0.2})
    err = capfd.readouterr().err
    assert "ERROR" not in err and "KeyboardInterrupt" not in err, err


def test_the_report_names_a_damaged_results_file_instead_of_a_bare_json_error(committed):
    """The reproducibility chapter's reader (``report.read_claims``): a results file truncated at 5000 characters
    was a ``JSONDecodeError: Expecting ',' delimiter: ... (char 5000)`` naming no file."""
    from types import SimpleNamespace

    from attnpaths_book import report

    os.truncate(committed.results_file("theory"), 30)
    with pytest.raises(DamagedFile, match=r"_build/results/theory\.json: this results file does not match the SHA-256"):
        report.read_claims([SimpleNamespace(name="theory")], committed.results_dir)


SHUTDOWN_RACE = """\
ERROR:tornado.general:Uncaught exception in ZMQStream callback
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/zmq/eventloop/zmqstream.py", line 585, in _log_error
    f.result()
  File "/venv/lib/python3.11/site-packages/ipykernel/kernelbase.py", line 409, in process_control
    self._publish_status_and_flush("idle", "control", self.control_stream)
  File "/venv/lib/python3.11/site-packages/ipykernel/kernelbase.py", line 718, in _publish_status_and_flush
    self._publish_status(status, channel, parent)
  File "zmq/backend/cython/_zmq.py", line 190, in zmq.backend.cython._zmq._check_rc
zmq.error.ZMQError: Socket operation on non-socket
"""
"""The traceback of ipykernel 7.4's shutdown race as a chapter's worker printed it (paths shortened)."""


def test_ipykernel_shutdown_race_is_not_an_error_but_every_other_traceback_is():
    from attnpaths_book.executor import error_lines

    race = SHUTDOWN_RACE.splitlines(keepends=True)
    assert error_lines(race) == []
    assert error_lines(["progress 3/4\n", *race, "done\n"]) == []
    # the same header over another exception, or a traceback of its own next to it, is reported
    other = SHUTDOWN_RACE.replace("zmq.error.ZMQError: Socket operation on non-socket", "ValueError: bad")
    assert error_lines(other.splitlines()) == ["Traceback (most recent call last):"]
    elsewhere = SHUTDOWN_RACE.replace("_publish_status_and_flush", "execute_request")
    assert error_lines(elsewhere.splitlines()) == ["Traceback (most recent call last):"]
    mixed = [*race, "Traceback (most recent call last):\n", '  File "x.py", line 1\n', "KeyError: 1\n"]
    assert error_lines(mixed) == ["Traceback (most recent call last):"]
    assert error_lines(["[IPKernelApp] ERROR | kernel died\n"]) == ["[IPKernelApp] ERROR | kernel died"]
