"""The runner on tiny throw-away books: caching, failures, interruption, timings (each execution starts a
kernel, so the books are small and executed books are copied rather than executed again)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from attnpaths.book import runner
from attnpaths.book.cli import main
from attnpaths.book.executor import ChapterFailed
from attnpaths.book.layout import BookLayout
from attnpaths.results import read_results
from conftest import write_chapter, write_toc

ALLOCATED_MIB = 400


@pytest.fixture(scope="module")
def executed_book(tmp_path_factory):
    """A two-chapter book executed once (smoke profile); ``alpha`` briefly holds ALLOCATED_MIB of memory."""
    root = tmp_path_factory.mktemp("executed_book")
    (root / "_config.yml").write_text("title: tiny\n")
    (root / "src" / "attnpaths").mkdir(parents=True)
    (root / "src" / "attnpaths" / "__init__.py").write_text("# stand-in package sources\n")
    write_chapter(root, "alpha", "n = 3", f"""
        import numpy as np
        block = np.ones({ALLOCATED_MIB} * 2**20 // 8)
        values = {{"n": n, "total": float(block.sum() / block.size) * n}}
        del block
        """)
    write_chapter(root, "beta", "m = 2", "values = {'m': m}\nprint('beta ran with', m)",
                  profiles={"smoke": {}, "paper": {"m": 5}})
    write_toc(root, ["alpha", "beta"])
    layout = BookLayout(root)
    outcomes = runner.run_book(layout, "smoke")
    assert [o.executed for o in outcomes] == [True, True]
    return layout


@pytest.fixture
def book(executed_book, tmp_path):
    """A private copy of the executed book (the cache stays valid: keys hold no absolute paths)."""
    shutil.copytree(executed_book.root, tmp_path / "book_copy")
    return BookLayout(tmp_path / "book_copy")


def executed(outcomes):
    return [o.chapter for o in outcomes if o.executed]


def test_results_notebooks_and_parameter_record(executed_book):
    assert read_results("alpha", executed_book.results_dir)["values"] == {"n": 3, "total": 3.0}
    notebook = nbformat.read(executed_book.executed_notebook("book/beta"), as_version=4)
    assert notebook.metadata["papermill"]["parameters"] == {"m": 2, "profile": "smoke", "results_dir": "_build/results"}
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("beta ran with 2" in o.get("text", "") for o in outputs)


def test_timings_record_wall_time_and_peak_memory(executed_book):
    timings = runner.read_timings(executed_book.results_dir)["smoke"]
    assert set(timings) == {"alpha", "beta"}
    assert all(entry["wall_s"] > 0 for entry in timings.values())
    assert timings["alpha"]["peak_rss_mib"] >= ALLOCATED_MIB
    assert timings["beta"]["peak_rss_mib"] < timings["alpha"]["peak_rss_mib"]


def test_second_run_executes_nothing(book):
    assert executed(runner.run_book(book, "smoke")) == []
    assert runner.stale_chapters(book, "smoke") == []


def test_changing_one_parameter_reexecutes_only_that_chapter(book):
    source = book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("paper: {m: 5}", "paper: {m: 7}").replace("smoke: {}", "smoke: {m: 4}"))
    assert runner.stale_chapters(book, "smoke") == ["beta"]
    assert executed(runner.run_book(book, "smoke")) == ["beta"]
    assert read_results("beta", book.results_dir)["values"] == {"m": 4}


def test_package_change_makes_every_chapter_stale(book):
    (book.package_dir / "new_module.py").write_text("VALUE = 1\n")
    assert runner.stale_chapters(book, "smoke") == ["alpha", "beta"]


def test_run_one_chapter_with_an_override(book, capsys, monkeypatch):
    monkeypatch.chdir(book.root)
    assert main(["run", "beta", "--set", "m=11"]) == 0
    assert "beta: done in" in capsys.readouterr().out
    assert read_results("beta", book.results_dir)["values"] == {"m": 11}
    notebook = nbformat.read(book.executed_notebook("book/beta"), as_version=4)
    assert notebook.metadata["papermill"]["parameters"]["m"] == 11
    # runs with overrides are not a profile's timing, and the profile run redoes the chapter
    assert runner.read_timings(book.results_dir)["smoke"]["beta"]["peak_rss_mib"] > 0
    assert runner.stale_chapters(book, "smoke") == ["beta"]


def test_bad_override_is_refused_before_anything_runs(book, capsys, monkeypatch):
    monkeypatch.chdir(book.root)
    before = book.executed_notebook("book/beta").stat().st_mtime_ns
    assert main(["run", "beta", "--set", "m=two"]) == 2
    error = capsys.readouterr().err
    assert "m='two' (str)" in error and "m: int = 2" in error and "parameters of chapter 'beta'" in error
    assert main(["run", "beta", "--set", "k=1"]) == 2
    assert "unknown parameter 'k'" in capsys.readouterr().err
    assert book.executed_notebook("book/beta").stat().st_mtime_ns == before
    assert not any(book.build_dir.glob(".run-*"))


def test_unknown_chapter_is_refused(book, capsys, monkeypatch):
    monkeypatch.chdir(book.root)
    assert main(["run", "gamma"]) == 2
    assert "alpha, beta" in capsys.readouterr().err


def test_failing_chapter_names_itself_shows_the_error_and_leaves_no_result(book):
    write_chapter(book.root, "gamma", "k = 1", "values = {'k': k}\nraise ValueError('k is too small: ' + str(k))")
    write_toc(book.root, ["alpha", "beta", "gamma"])
    with pytest.raises(ChapterFailed) as info:
        runner.run_book(book, "smoke")
    message = str(info.value)
    assert info.value.chapter == "gamma"
    assert "chapter 'gamma' (book/gamma.md) failed in the cell [" in message
    assert "raise ValueError('k is too small: ' + str(k))" in message  # the failing cell's code
    assert "ValueError: k is too small: 1" in message and message.count("k is too small: 1") == 1
    assert "# Parameters" not in message  # the failing cell, not another one
    assert not (book.results_dir / "gamma.json").exists()
    assert not book.executed_notebook("book/gamma").exists()
    assert (book.failed_dir / "gamma.ipynb").is_file()
    assert not any(book.build_dir.glob(".run-*"))
    # fixed, the run resumes: finished chapters are not executed again
    write_chapter(book.root, "gamma", "k = 1", "values = {'k': k}")
    assert executed(runner.run_book(book, "smoke")) == ["gamma"]


def test_chapter_without_results_file_fails(book):
    source = book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("write_results('beta', profile, {}, values, results_dir)", "pass"))
    with pytest.raises(ChapterFailed, match="wrote no results file _build/results/beta.json"):
        runner.run_book(book, "smoke")
    assert not (book.results_dir / "beta.json").exists()


def test_interrupted_run_resumes_without_redoing_finished_chapters(book):
    write_chapter(book.root, "slow", "", "import time\nvalues = {}\ntime.sleep(120)")
    write_toc(book.root, ["alpha", "slow", "beta"])
    source = book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("smoke: {}", "smoke: {m: 3}"))  # beta is stale too
    process = subprocess.Popen([sys.executable, "-m", "attnpaths", "book", "--no-html"], cwd=book.root,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not any(book.build_dir.glob(".run-slow-*/output.ipynb")):  # papermill has started the cells
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.5)
    time.sleep(2)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the whole process group
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    assert "alpha: up to date" in out and "slow: executing" in out and "beta: executing" not in out
    assert "interrupted" in err
    assert not (book.results_dir / "slow.json").exists()
    assert not book.executed_notebook("book/slow").exists()
    assert not any(book.build_dir.glob(".run-*"))
    write_chapter(book.root, "slow", "", "values = {}")
    assert executed(runner.run_book(book, "smoke")) == ["slow", "beta"]
    assert json.loads((book.results_dir / "beta.json").read_text())["values"] == {"m": 3}
