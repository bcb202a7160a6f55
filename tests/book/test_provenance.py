"""Version and environment provenance (``attnpaths_book.provenance``), and that the chapter cache, the benchmark
records and the paper records take it from there."""

import os
import platform
import re
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT

import attnpaths
from attnpaths_book import provenance
from attnpaths_book.benchmarks.record import make_record, read_record, start_record, write_record


def test_versions_of_python_and_the_libraries():
    found = provenance.versions(("numpy", "surely-not-an-installed-distribution"))
    assert found == {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "surely-not-an-installed-distribution": None,
    }
    assert set(provenance.versions()) == {"python", *provenance.NUMERIC_LIBRARIES}


def git(folder, *args):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_commit_and_dirty_flag(tmp_path):
    assert provenance.git_commit(tmp_path) == (None, None)  # not a checkout
    try:
        git(tmp_path, "init", "-q")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not available")
    (tmp_path / "a.txt").write_text("1\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "first")
    head = git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("not part of the commit\n")
    assert provenance.git_commit(tmp_path) == (head, False)  # untracked files do not make it dirty
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "r.json").write_text("{}\n")
    git(tmp_path, "add", "records/r.json")
    git(tmp_path, "commit", "-q", "-m", "a record")
    head = git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "records" / "r.json").write_text("{\"new\": 1}\n")
    assert provenance.git_commit(tmp_path / "records") == (head, True)
    assert provenance.git_commit(tmp_path / "records", ignore=["records"]) == (head, False)  # the folder left out
    (tmp_path / "a.txt").write_text("2\n")
    assert provenance.git_commit(tmp_path / ".") == (head, True)
    assert provenance.git_commit(tmp_path, ignore=["records"]) == (head, True)  # changes elsewhere still count


def test_machine_and_the_whole_block(tmp_path):
    machine = provenance.machine()
    assert machine["cpu_count"] == os.cpu_count() and machine["platform"] == platform.platform()
    assert machine["load_average_1min"] is None or machine["load_average_1min"] >= 0
    assert "load_average_1min" not in provenance.machine(load=False)
    block = provenance.collect(tmp_path, packages=("numpy",), load=False)
    assert block == {
        "package_version": attnpaths.__version__,
        "commit": None,
        "commit_dirty": None,
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "machine": provenance.machine(load=False),
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", provenance.utc_now())


def test_a_benchmark_record_carries_the_provenance(tmp_path):
    started = start_record("sampler", ["--quick"])
    assert started["command"] == "python -m attnpaths_book bench sampler --quick"
    assert started["versions"] == provenance.versions(("numpy", "scipy", "torch", "pyro-ppl"))
    assert started["machine"].pop("load_average_1min_start") is not None
    assert started["machine"] == provenance.machine(load=False)
    assert (started["commit"], started["commit_dirty"]) == provenance.git_commit(ROOT / "src" / "attnpaths_book")
    assert started["package_version"] == attnpaths.__version__
    record = make_record(started, {"ratio": 2.0})
    assert "load_average_1min" in record["machine"] and record["report"] == {"ratio": 2.0}
    assert read_record(write_record(record, tmp_path / "r.json")) == record


def test_provenance_is_gathered_in_one_module():
    """Git, the load average and library versions are read by ``attnpaths_book.provenance`` only."""
    readers = re.compile(r"rev-parse|getloadavg|metadata\.version\(|python_version\(\)")
    offenders = [
        path.relative_to(ROOT).as_posix()
        for package in ("attnpaths", "attnpaths_book")
        for path in (ROOT / "src" / package).rglob("*.py")
        if path.name != "provenance.py" and readers.search(path.read_text())
    ]
    assert offenders == []


def test_records_are_read_without_the_book_machinery():
    code = "import sys, attnpaths_book.records; print(sorted(m for m in sys.modules if m.startswith('attnpaths')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    modules = set(eval(loaded))  # a printed list of names
    # the records need the provenance and the library's JSON reader, nothing of the book's machinery
    assert "attnpaths_book.provenance" in modules and "attnpaths.json_files" in modules
    assert not modules & {
        "attnpaths_book.runner",
        "attnpaths_book.executor",
        "attnpaths_book.cli",
        "attnpaths_book.chapters",
        "attnpaths_book.site",
    }
