"""Numeric differences, ``refresh-baselines`` and ``record-paper``: what they show and when they write.

Tiny books in temporary folders with hand-made executed notebooks and results files: no chapter executes.
"""

import json

import nbformat
import pytest
from book_helpers import write_chapter, write_toc

from attnpaths import __version__
from attnpaths_book import cli, paper_records, provenance, runner
from attnpaths_book.baselines import CHECK_TAG, baseline_path, results_baseline_path
from attnpaths_book.cache import EXECUTION_METADATA
from attnpaths_book.executor import ChapterFailed
from attnpaths_book.layout import suite_book
from attnpaths_book.numeric_diff import compare_json, compare_lines, is_volatile
from attnpaths_book.results import write_results
from attnpaths_book.store import commit_unit

ONE_WORKER = ("--workers", "1")
"""Where the engine is not under test, chapters run in-process: no cluster to start (seconds per call)."""

# --------------------------------------------------------------------------------------------------------
# numeric_diff


def test_compare_json_reports_relative_changes_and_ignores_volatile_keys():
    old = {
        "values": {
            "U": [[1.0, -0.5], [-0.5, 2.0]],
            "label": "g",
            "n": 3,
            "wall_s": 1.0,
            "timings": {"a": 2.0},
            "gone": 1,
        }
    }
    new = {
        "values": {
            "U": [[1.0, -0.5], [-0.5, 2.2]],
            "label": "g",
            "n": 3.0,
            "wall_s": 9.0,
            "timings": {"a": 5.0},
            "added": [1, 2],
        }
    }
    comparison = compare_json(old, new)
    assert comparison.changed
    by_path = {c.path: c for c in comparison.changes}
    assert set(by_path) == {"values.U[1][1]", "values.gone", "values.added[0]", "values.added[1]"}
    assert by_path["values.U[1][1]"].relative == pytest.approx(0.1)
    assert {c.path for c in comparison.volatile} == {"values.wall_s", "values.timings.a"}
    assert comparison.compared == 6  # 4 entries of U, label, n (volatile and one-sided leaves left out)
    report = comparison.report("hmc")
    assert report[0].startswith("hmc: 1 of 6 values changed, 2 added, 1 removed, the largest at")
    assert any("values.U[1][1]: 2.0 -> 2.2 (relative change +0.1)" in line for line in report)
    assert "2 run-time or environment values differ (not compared)" in report[0]


def test_compare_json_unchanged_and_type_changes():
    same = compare_json({"a": [1, 2.5], "t": {"solve_seconds": [1]}}, {"a": [1.0, 2.5], "t": {"solve_seconds": [2]}})
    assert not same.changed and same.report("x") == [
        "x: unchanged (2 values compared; 1 run-time or environment values differ (not compared))"
    ]
    assert compare_json({"flag": True}, {"flag": 1}).changed  # a bool is not a number
    assert compare_json({"a": float("nan")}, {"a": float("nan")}).changes == []
    assert compare_json({"a": 0.0}, {"a": 1e-3}).report("x")[1].endswith("(was 0)")


def test_volatile_keys():
    assert all(
        is_volatile(k)
        for k in (
            "wall_s",
            "solve_seconds",
            "run_cpu_seconds",
            "recorded_utc",
            "peak_rss_mib",
            "cache_key",
            "versions",
            "machine",
            "timings",
        )
    )
    assert not any(is_volatile(k) for k in ("U", "accuracy", "sampled_accuracy", "gp", "mc_samples", "U_sampled"))


def test_compare_lines_shows_number_changes():
    old = ["theory accuracy: {10: 0.912, 100: 0.9}", "GP: 0.85", "same line"]
    new = ["theory accuracy: {10: 0.915, 100: 0.9}", "GP: 0.85", "same line", "a new line"]
    lines = compare_lines(old, new)
    assert lines[:3] == [
        "  - theory accuracy: {10: 0.912, 100: 0.9}",
        "  + theory accuracy: {10: 0.915, 100: 0.9}",
        "      0.912 -> 0.915 (relative change +0.00329)",
    ]
    assert lines[3:] == ["  + a new line"]
    assert compare_lines(old, old) == []
    text = compare_lines(["x = 1"], ["y = 1 and more"])
    assert text == ["  - x = 1", "  + y = 1 and more"]  # the text changed: no per-number lines


# --------------------------------------------------------------------------------------------------------
# a tiny book with hand-made executions


def _book(tiny_book, names=("alpha",)):
    for name in names:
        write_chapter(tiny_book.root, name, "n = 1", "values = {'x': n}", profiles={"smoke": {}, "paper": {"n": 5}})
    write_toc(tiny_book.root, list(names))
    (tiny_book.root / "tests").mkdir(exist_ok=True)  # a checkout has one: the tests' own book links to it
    return {c.name: c for c in runner.notebook_chapters(tiny_book)}


def _execute(layout, chapter, profile, printed, values, overrides=None):
    """Stand in for an execution: the executed notebook (one checked cell printing ``printed``) and the
    results file, both for ``profile``."""
    from attnpaths_book.chapters import resolve_parameters

    parameters = resolve_parameters(chapter, profile, overrides, results_dir=layout.relative(layout.results_dir))
    cells = [
        nbformat.v4.new_code_cell(c.source, metadata={"tags": list(c.metadata.get("tags", []))})
        for c in chapter.notebook.cells
        if c.cell_type == "code"
    ]
    cells.append(
        nbformat.v4.new_code_cell(
            "print(values)", metadata={"tags": [CHECK_TAG]}, outputs=[nbformat.v4.new_output("stream", text=printed)]
        )
    )
    notebook = nbformat.v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
            "papermill": {"parameters": parameters},
            EXECUTION_METADATA: {
                "chapter": chapter.name,
                "profile": profile,
                "parameters": parameters,
                "overrides": dict(overrides or {}),
                "cache_key": "k",
                "wall_s": 1.5,
                "peak_rss_mib": 100.0,
            },
        },
    )
    results = write_results(chapter.name, profile, {"n": parameters["n"]}, values, layout.results_dir)
    commit_unit(
        layout.root,
        layout.results_dir,
        chapter.name,
        {
            "results": (results, results.read_text()),
            "notebook": (layout.executed_notebook(chapter.docname), nbformat.writes(notebook)),
        },
        {"cache_key": "k", "profile": profile, "execution": notebook.metadata[EXECUTION_METADATA]},
    )


@pytest.fixture
def no_execution(monkeypatch):
    """Record the runner's calls instead of executing anything."""
    calls = []
    monkeypatch.setattr(runner, "run_book", lambda layout, profile, **kw: calls.append(("book", profile)) or [])
    monkeypatch.setattr(runner, "run_chapter", lambda layout, name, profile, **kw: calls.append((name, profile)))
    return calls


# --------------------------------------------------------------------------------------------------------
# refresh-baselines


def test_refresh_baselines_shows_the_diff_and_writes_only_with_accept(tiny_book, no_execution, monkeypatch, capsys):
    chapter = _book(tiny_book)["alpha"]
    monkeypatch.chdir(tiny_book.root)
    _execute(suite_book(tiny_book.root), chapter, "smoke", "acc = 0.912\n", {"acc": 0.912, "wall_s": 3.0})

    assert cli.main(["refresh-baselines", *ONE_WORKER]) == 1  # no baseline yet: new ones need --accept
    out, err = capsys.readouterr()
    assert no_execution == [("book", "smoke")]
    assert "new baseline" in out and "rerun with --accept" in err
    assert not baseline_path(tiny_book, chapter).exists() and not results_baseline_path(tiny_book, chapter).exists()

    assert cli.main(["refresh-baselines", "--accept", *ONE_WORKER]) == 0
    assert baseline_path(tiny_book, chapter).is_file()
    assert json.loads(results_baseline_path(tiny_book, chapter).read_text())["values"]["acc"] == 0.912
    capsys.readouterr()

    _execute(
        suite_book(tiny_book.root), chapter, "smoke", "acc = 0.912\n", {"acc": 0.912, "wall_s": 7.0}
    )  # only a run time
    assert cli.main(["refresh-baselines", *ONE_WORKER]) == 0
    assert "every baseline is up to date" in capsys.readouterr().out

    before = baseline_path(tiny_book, chapter).read_text()
    _execute(suite_book(tiny_book.root), chapter, "smoke", "acc = 0.915\n", {"acc": 0.915, "wall_s": 7.0})
    assert cli.main(["refresh-baselines", *ONE_WORKER]) == 1
    out = capsys.readouterr().out
    assert "  - acc = 0.912" in out and "  + acc = 0.915" in out
    assert "0.912 -> 0.915 (relative change +0.00329)" in out
    assert "values.acc: 0.912 -> 0.915 (relative change +0.00329)" in out
    assert baseline_path(tiny_book, chapter).read_text() == before  # not written
    assert cli.main(["refresh-baselines", "--accept", *ONE_WORKER]) == 0
    assert "0.915" in baseline_path(tiny_book, chapter).read_text()
    capsys.readouterr()

    write_chapter(tiny_book.root, "alpha", "n = 2", "values = {'x': n + 1}", profiles={"smoke": {}, "paper": {}})
    chapter = runner.notebook_chapters(tiny_book)[0]
    _execute(suite_book(tiny_book.root), chapter, "smoke", "acc = 0.915\n", {"acc": 0.915, "wall_s": 7.0})
    assert cli.main(["refresh-baselines", *ONE_WORKER]) == 1
    out = capsys.readouterr().out
    assert "code: code cells [0, 1] changed" in out
    assert "parameters: 1 of 3 values changed, the largest at n (relative change +1)" in out


def test_refresh_baselines_refuses_a_paper_execution(tiny_book, no_execution, monkeypatch, capsys):
    chapter = _book(tiny_book)["alpha"]
    monkeypatch.chdir(tiny_book.root)
    _execute(suite_book(tiny_book.root), chapter, "paper", "acc = 0.9\n", {"acc": 0.9})
    assert cli.main(["refresh-baselines", "--accept", *ONE_WORKER]) == 2
    assert "executed with the 'paper' profile; baselines hold the smoke profile" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------------
# record-paper


def test_record_paper_writes_new_records_with_provenance(tiny_book, no_execution, monkeypatch, capsys):
    chapters = _book(tiny_book, ("alpha", "beta"))
    monkeypatch.chdir(tiny_book.root)
    for chapter in chapters.values():
        _execute(tiny_book, chapter, "paper", "x\n", {"acc": 0.9, "U": [[1.0, 0.1], [0.1, 1.0]]})
    assert cli.main(["record-paper", *ONE_WORKER]) == 0
    assert no_execution == [("alpha", "paper"), ("beta", "paper")]  # in toc order
    out = capsys.readouterr().out
    assert "alpha: new record" in out and "record tests/paper_records/beta.json written" in out
    record = paper_records.read_record(paper_records.record_path(tiny_book, chapters["alpha"]))
    assert record["command"] == "python -m attnpaths_book record-paper --workers 1"
    assert record["commit"] is None and record["commit_dirty"] is None  # not a git checkout
    assert set(record["versions"]) >= {"python", "numpy", "torch"} and record["recorded_utc"].endswith("+00:00")
    assert record["machine"] == provenance.machine(load=False) and record["package_version"] == __version__
    assert record["results"]["profile"] == "paper" and record["results"]["values"]["acc"] == 0.9
    assert record["execution"]["parameters"]["n"] == 5 and record["execution"]["overrides"] == {}
    assert paper_records.record_problems(tiny_book, chapters["alpha"], record) == []

    assert cli.main(["record-paper", "beta", *ONE_WORKER]) == 0  # one chapter: executes that one only
    assert no_execution[-1] == ("beta", "paper")
    assert "beta, against tests/paper_records/beta.json: unchanged" in capsys.readouterr().out


def test_record_paper_records_the_chapters_whose_run_succeeds(tiny_book, monkeypatch, capsys):
    chapters = _book(tiny_book, ("alpha", "beta"))
    monkeypatch.chdir(tiny_book.root)
    for chapter in chapters.values():
        _execute(tiny_book, chapter, "paper", "x\n", {"acc": 0.9})

    def run_chapter(layout, name, profile, **kw):
        if name == "alpha":
            raise ChapterFailed(name, "chapter 'alpha' failed: ClaimViolation")

    monkeypatch.setattr(runner, "run_chapter", run_chapter)
    assert cli.main(["record-paper", *ONE_WORKER]) == 1
    err = capsys.readouterr().err
    assert "error: chapter 'alpha' failed: ClaimViolation" in err
    assert "the paper runs of alpha failed (see above): their records were not made" in err
    assert not paper_records.record_path(tiny_book, chapters["alpha"]).exists()
    assert paper_records.record_path(tiny_book, chapters["beta"]).is_file()


def test_record_paper_needs_accept_when_numbers_change(tiny_book, no_execution, monkeypatch, capsys):
    chapter = _book(tiny_book)["alpha"]
    monkeypatch.chdir(tiny_book.root)
    path = paper_records.record_path(tiny_book, chapter)
    _execute(tiny_book, chapter, "paper", "x\n", {"acc": 0.9, "solve_seconds": [0.1]})
    assert cli.main(["record-paper", "--no-execute"]) == 0
    assert no_execution == []

    _execute(tiny_book, chapter, "paper", "x\n", {"acc": 0.9, "solve_seconds": [0.7]})  # a run time only
    assert cli.main(["record-paper", "--no-execute"]) == 0
    assert json.loads(path.read_text())["results"]["values"]["solve_seconds"] == [0.7]  # provenance refreshed
    capsys.readouterr()

    _execute(tiny_book, chapter, "paper", "x\n", {"acc": 0.93, "solve_seconds": [0.7]})
    assert cli.main(["record-paper", "--no-execute"]) == 1
    out, err = capsys.readouterr()
    assert (
        "alpha, against tests/paper_records/alpha.json: 1 of 5 values changed, the largest at values.acc "
        "(relative change +0.0333)" in out
    )
    assert "values.acc: 0.9 -> 0.93 (relative change +0.0333)" in out
    assert "rerun with --accept" in err
    assert json.loads(path.read_text())["results"]["values"]["acc"] == 0.9
    assert cli.main(["record-paper", "--no-execute", "--accept"]) == 0
    record = json.loads(path.read_text())
    assert record["results"]["values"]["acc"] == 0.93
    assert record["command"] == "python -m attnpaths_book record-paper --no-execute --accept"


def test_record_paper_refuses_other_profiles_and_overrides(tiny_book, no_execution, monkeypatch, capsys):
    chapter = _book(tiny_book)["alpha"]
    monkeypatch.chdir(tiny_book.root)
    _execute(tiny_book, chapter, "smoke", "x\n", {"acc": 0.9})
    assert cli.main(["record-paper", "alpha", "--no-execute"]) == 2
    err = capsys.readouterr().err
    assert "_build/results/alpha.json holds the 'smoke' profile's results, not the paper profile's" in err
    assert not paper_records.record_path(tiny_book, chapter).exists()

    _execute(tiny_book, chapter, "paper", "x\n", {"acc": 0.9}, overrides={"n": 7})
    with pytest.raises(ValueError, match=r"its paper run had the overrides \{'n': 7\}"):
        paper_records.make_record(tiny_book, chapter, "cmd")

    _execute(tiny_book, chapter, "paper", "x\n", {"acc": 0.9})
    write_results("alpha", "paper", {"n": 9}, {"acc": 0.8}, tiny_book.results_dir)  # written by hand, not by a run
    with pytest.raises(ValueError, match=r"alpha\.json: this results file does not match the SHA-256 its manifest"):
        paper_records.make_record(tiny_book, chapter, "cmd")

    tiny_book.results_file("alpha").unlink()
    with pytest.raises(FileNotFoundError, match="chapter 'alpha' has no results file"):
        paper_records.make_record(tiny_book, chapter, "cmd")
    assert cli.main(["record-paper", "nope", *ONE_WORKER]) == 2
    assert "got 'nope'" in capsys.readouterr().err


def test_record_problems_name_what_is_wrong(tiny_book, no_execution):
    chapter = _book(tiny_book)["alpha"]
    _execute(tiny_book, chapter, "paper", "x\n", {"acc": 0.9})
    record = paper_records.make_record(tiny_book, chapter, "cmd")
    assert paper_records.record_problems(tiny_book, chapter, record) == []
    record["execution"]["parameters"]["n"] = 6
    record["results"]["profile"] = "smoke"
    problems = paper_records.record_problems(tiny_book, chapter, record)
    assert any("'smoke' profile's results" in p for p in problems)
    assert any("other parameters than the chapter's paper profile now gives (differing: ['n'])" in p for p in problems)
    assert paper_records.record_problems(tiny_book, chapter, {"chapter": "alpha"})[0].startswith("the record lacks")
