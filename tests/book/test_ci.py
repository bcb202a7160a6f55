"""CI runs the README as a reader does: `.ci/run` takes the README's commands from the README itself
(`.ci/readme_commands.py`) and runs them in the README's order: install, tests, second CPU
dispatch (of the first command, its installation: the paper book is the reader's own check)."""

import importlib.util
import re
import subprocess
import sys

import pytest
from helpers import ROOT

CI_RUN = ROOT / ".ci" / "run"


def readme_commands():
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ci_runs_the_readmes_commands_in_the_readmes_order():
    text = CI_RUN.read_text()
    assigned = dict(re.findall(r"^(\w+_COMMAND)='(.*)'$", text, re.M))
    steps = re.findall(r'^step "[^"]+" "\$\{(\w+_COMMAND)\}"$', text, re.M)
    assert steps == ["STYLE_COMMAND", "INSTALL_COMMAND", "TEST_COMMAND", "SECOND_DISPATCH_COMMAND", "LIBRARY_COMMAND"]
    module = readme_commands()
    # the README's, in its order, after the style check; then the library alone. Of the first command, CI runs
    # the installation (the paper book is a reader's check of 30 to 45 minutes, .ci/run's header says why)
    book = module.command("book")
    assert book.startswith(assigned["INSTALL_COMMAND"] + " && python -m attnpaths_book book ")
    assert 'BOOK_COMMAND="${INSTALL_COMMAND} && python -m attnpaths_book book --profile paper"' in text
    assert [assigned[name] for name in steps[2:4]] == [module.command(n) for n in ("test", "second-dispatch")]
    assert assigned["LIBRARY_COMMAND"] == "bash .ci/library_only.sh"
    # the style check: ruff, pinned as in requirements.txt, formatter and linter in check mode
    assert "ruff format --check" in assigned["STYLE_COMMAND"] and "ruff check " in assigned["STYLE_COMMAND"]
    pinned = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("ruff==")]
    assert pinned and pinned[0] in assigned["STYLE_COMMAND"]
    # .ci/run itself stops when they differ, naming both
    assert re.search(r'readme="\$\(python3 \.ci/readme_commands\.py "\$\{name\}"\)"', text)
    # nothing else runs the book or the tests: every other line that would is a comment or an assignment above
    others = [
        line
        for line in text.splitlines()
        if re.search(r"\b(pytest|attnpaths_book|pip install)\b", line)
        and not line.lstrip().startswith("#")
        and not re.match(r"^\w+_COMMAND=", line)
    ]
    assert others == [], others


def test_the_library_step_installs_the_package_alone_and_runs_the_library_tests():
    script = (ROOT / ".ci" / "library_only.sh").read_text()
    assert re.search(r'python3 -m venv "\$\{venv\}"', script)  # no --system-site-packages: nothing of this machine
    assert '-m pip install -q -c "${constraints}" . pytest pytest-xdist' in script  # no extras, pinned
    assert '-m pytest -q -p no:cacheprovider -n 2 tests/library' in script
    assert "attnpaths\" status" in script and "pip install" in script
    assert (ROOT / "tests" / "library" / "conftest.py").is_file()


def test_the_commands_are_the_readmes_fenced_blocks():
    module = readme_commands()
    readme = (ROOT / "README.md").read_text()
    two = module.section(readme, "Two commands")
    blocks = re.findall(r"```bash\n(.*?)\n```", two, re.S)
    assert [module.command("book"), module.command("test")] == blocks[:2]
    assert (
        module.command("book")
        == "pip install -r requirements.txt && pip install --no-deps -r requirements-data.txt && python -m attnpaths_book book --profile paper"
    )
    assert module.command("test") == "python -m pytest -n 2"
    assert "python -m pytest -m cross_machine" in module.command("second-dispatch")
    assert module.command("second-dispatch").startswith('eval "$(python .ci/second_dispatch.py)"')


def test_a_readme_without_the_section_or_with_two_lines_is_refused():
    module = readme_commands()
    with pytest.raises(SystemExit, match="no section '## Two commands'"):
        module.command("book", "# title\n")
    with pytest.raises(SystemExit, match="must be one line"):
        module.command("test", "## Two commands\n```bash\na\n```\n```bash\nb\nc\n```\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "readme_commands.py"), "nothing"], capture_output=True, text=True
    )
    assert done.returncode != 0 and "name must be one of" in done.stderr


def shared_conftest():
    spec = importlib.util.spec_from_file_location("shared_conftest", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeItem:
    """What ``process_group`` and ``run_order`` read of a pytest item: its node id, fixtures and markers."""

    def __init__(self, nodeid, fixtures=(), slow=False, module_fixture=False):
        from types import SimpleNamespace

        self.nodeid, self.fixturenames, self.slow = nodeid, list(fixtures), slow
        scope = "module" if module_fixture else "function"
        self._fixtureinfo = SimpleNamespace(name2fixturedefs={"f": [SimpleNamespace(scope=scope, baseid="tests")]})

    def get_closest_marker(self, name):
        return name == "slow" and self.slow or None


def test_the_smoke_books_tests_are_one_group_run_first_then_the_slow_tier_in_collection_order():
    conftest = shared_conftest()
    items = [
        FakeItem("tests/library/test_a.py::quick"),
        FakeItem("tests/book/test_b.py::slow_one", slow=True),
        FakeItem("tests/book/test_c.py::page", ["built_book"], slow=True, module_fixture=True),
        FakeItem("tests/book/test_c.py::shared", slow=True, module_fixture=True),
        FakeItem("tests/book/test_d.py::pdf", ["book_pdf", "built_book"], slow=True, module_fixture=True),
        FakeItem("tests/library/test_e.py::slow_two", slow=True),
        FakeItem("tests/library/test_f.py::quick"),
    ]
    groups = [conftest.process_group(item) for item in items]
    # every test of the book in one group, whichever module it is in; a module fixture's tests in their module's
    assert groups == [None, None, conftest.BOOK_GROUP, "tests/book/test_c.py", conftest.BOOK_GROUP, None, None]
    order = [item.nodeid for item in conftest.run_order(items)]
    assert order == [
        "tests/book/test_c.py::page",
        "tests/book/test_d.py::pdf",
        "tests/book/test_b.py::slow_one",
        "tests/book/test_c.py::shared",
        "tests/library/test_e.py::slow_two",
        "tests/library/test_a.py::quick",
        "tests/library/test_f.py::quick",
    ]
    # pytest-xdist takes that order as it is (it would otherwise put the largest groups first)
    assert "--no-loadscope-reorder" in (ROOT / "pyproject.toml").read_text()
