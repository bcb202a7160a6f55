"""The command line: benchmark dispatch and status (no kernels)."""

import sys
import types

import pytest

from attnpaths.cli import main, run_benchmark
from helpers import write_chapter, write_toc


@pytest.fixture
def benchmarks(tmp_path, monkeypatch):
    """A stand-in ``attnpaths.benchmarks`` package holding one benchmark, ``demo``."""
    (tmp_path / "demo.py").write_text("def main(argv):\n    return len(argv)\n")
    (tmp_path / "helper_without_main.py").write_text("VALUE = 1\n")
    package = types.ModuleType("attnpaths.benchmarks")
    package.__path__ = [str(tmp_path)]
    monkeypatch.setitem(sys.modules, "attnpaths.benchmarks", package)
    for name in ("demo", "helper_without_main"):
        monkeypatch.delitem(sys.modules, f"attnpaths.benchmarks.{name}", raising=False)
    return tmp_path


def test_bench_calls_the_module_main_with_the_arguments(benchmarks):
    assert run_benchmark("demo", ["--size", "3"]) == 2
    assert main(["bench", "demo", "--size", "3", "--quick"]) == 3


def test_unknown_benchmark_is_a_clear_error(benchmarks, capsys):
    with pytest.raises(ValueError, match=r"benchmarks in attnpaths.benchmarks \(demo, helper_without_main\), got 'nope'"):
        run_benchmark("nope", [])
    assert main(["bench", "nope"]) == 2
    assert "got 'nope'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="has no main"):
        run_benchmark("helper_without_main", [])


def test_status_lists_what_would_run(tiny_book, capsys, monkeypatch):
    write_chapter(tiny_book.root, "alpha", "n = 1", "values = {}")
    write_chapter(tiny_book.root, "beta", "n = 1", "values = {}")
    write_toc(tiny_book.root, ["alpha", "beta"])
    monkeypatch.chdir(tiny_book.root / "book")  # the root is found from a subfolder too
    assert main(["status", "--profile", "paper"]) == 0
    assert "paper profile: stale: alpha, beta" in capsys.readouterr().out


def test_outside_a_book_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["status"]) == 2
    assert "_toc.yml" in capsys.readouterr().err
