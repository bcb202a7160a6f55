"""The command line: benchmark dispatch, status, the console script and ``python -m attnpaths_book`` (no kernels)."""

import importlib
import importlib.util
import subprocess
import sys
import textwrap
import types

import pytest
from book_helpers import write_chapter, write_toc
from helpers import ROOT, hiding_modules

from attnpaths_book import launcher
from attnpaths_book.cli import main, run_benchmark


@pytest.fixture
def benchmarks(tmp_path, monkeypatch):
    """A stand-in ``attnpaths_book.benchmarks`` package holding one benchmark, ``demo``."""
    (tmp_path / "demo.py").write_text("def main(argv):\n    return len(argv)\n")
    (tmp_path / "helper_without_main.py").write_text("VALUE = 1\n")
    package = types.ModuleType("attnpaths_book.benchmarks")
    package.__path__ = [str(tmp_path)]
    monkeypatch.setitem(sys.modules, "attnpaths_book.benchmarks", package)
    for name in ("demo", "helper_without_main"):
        monkeypatch.delitem(sys.modules, f"attnpaths_book.benchmarks.{name}", raising=False)
    return tmp_path


def test_bench_calls_the_module_main_with_the_arguments(benchmarks):
    assert run_benchmark("demo", ["--size", "3"]) == 2
    assert main(["bench", "demo", "--size", "3", "--quick"]) == 3


def test_unknown_benchmark_is_a_clear_error(benchmarks, capsys):
    with pytest.raises(
        ValueError, match=r"benchmarks in attnpaths_book.benchmarks \(demo, helper_without_main\), got 'nope'"
    ):
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


# --------------------------------------------------------------------------------------------------------
# the console script `attnpaths` and `python -m attnpaths_book`

# what pip writes as the console script of an entry point "attnpaths_book.cli:main" (its module and function are
# filled in from pyproject.toml below)
CONSOLE_SCRIPT = """import re
import sys
from {module} import {function}
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit({function}())
"""


def project() -> dict:
    """The ``[project]`` table of ``pyproject.toml``."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]


def test_pyproject_declares_the_console_script_and_the_lab_extra():
    entry = project()["scripts"]["attnpaths"]
    module, _, function = entry.partition(":")
    assert getattr(importlib.import_module(module), function) is launcher.main  # which calls cli.main
    assert {"jupyterlab", "jupytext"} <= set(project()["optional-dependencies"]["lab"])


def test_without_the_book_extra_the_console_script_says_what_to_install_in_one_line():
    module, _, function = project()["scripts"]["attnpaths"].partition(":")
    hidden = ("yaml", "papermill")  # what `pip install .` without the book extra leaves out
    script = hiding_modules(hidden) + textwrap.dedent(f"""
        from {module} import {function}
        sys.exit({function}(["status"]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr  # one line, no traceback
    assert "missing: yaml, papermill" in done.stderr and "pip install 'attnpaths[book]'" in done.stderr
    assert launcher.missing_book_modules() == []  # here the extra is installed


def test_the_command_line_lives_in_the_companion_not_in_the_library():
    assert importlib.util.find_spec("attnpaths.cli") is None
    assert importlib.util.find_spec("attnpaths.__main__") is None
    assert importlib.util.find_spec("attnpaths_book.__main__") is not None


@pytest.fixture
def two_chapter_book(tiny_book):
    write_chapter(tiny_book.root, "alpha", "n = 1", "values = {}")
    write_chapter(tiny_book.root, "beta", "n = 1", "values = {}")
    write_toc(tiny_book.root, ["alpha", "beta"])
    return tiny_book


def _python(*arguments, cwd=None) -> subprocess.CompletedProcess:
    """This interpreter run with ``arguments`` in ``cwd``, its output captured as text."""
    return subprocess.run([sys.executable, *arguments], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.usefixtures("process_environment")
def test_the_console_script_runs_the_commands(two_chapter_book, tmp_path):
    module, _, function = project()["scripts"]["attnpaths"].partition(":")
    script = tmp_path / "bin" / "attnpaths"
    script.parent.mkdir()
    script.write_text(CONSOLE_SCRIPT.format(module=module, function=function))
    done = _python(str(script), "status", "--profile", "paper", cwd=two_chapter_book.root)
    assert done.returncode == 0, done.stderr
    assert "paper profile: stale: alpha, beta" in done.stdout
    usage = _python(str(script), "run", "--help")
    assert usage.returncode == 0 and usage.stdout.startswith("usage: attnpaths run ")


@pytest.mark.usefixtures("process_environment")
def test_python_dash_m_runs_the_same_commands(two_chapter_book):
    done = _python("-m", "attnpaths_book", "status", cwd=two_chapter_book.root)
    assert done.returncode == 0, done.stderr
    assert "smoke profile: stale: alpha, beta" in done.stdout
    usage = _python("-m", "attnpaths_book", "--help")
    assert usage.stdout.startswith("usage: python -m attnpaths_book ")
    for command in ("book", "run", "status", "refresh-baselines", "record-paper", "bench"):
        assert command in usage.stdout
