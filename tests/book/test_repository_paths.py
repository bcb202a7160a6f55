"""Every repository path that the written map names exists: the chapters and the API page (``book/*.md``,
``book/api/*.md``), ``README.md``, ``CONTRIBUTING.md``, the docstrings and comments of the package and of the
tests, and CI's scripts (``.ci/``). A path is a token that starts with one of the repository's top-level entries
(``src/``, ``tests/``, ``book/``, ``.ci/``, ``_config.yml``, ``pyproject.toml``, ...); it may name a file or a
folder, and ``FILE.py::name`` also requires ``name`` to be defined in the file. Patterns and placeholders
(``<name>``, ``*``, ``{...}``, ``...``, ``NAME``, ``CHAPTER``) and what the build writes (``_build/``,
:data:`GENERATED`) are not paths of the repository. A renamed or moved file thus fails here, naming every file
and line that still points to its old place."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from helpers import ROOT

SOURCES = ("book/*.md", "book/api/*.md", "README.md", "CONTRIBUTING.md", "src/**/*.py", "tests/**/*.py", ".ci/*")
"""The written map: its files, as globs relative to the repository root (of Python files only the docstrings
and comments are read; code builds paths of other folders, e.g. of a temporary book)."""

TOP_LEVEL_FILES = (
    "_config.yml",
    "_toc.yml",
    "requirements.txt",
    "requirements-data.txt",
    "pyproject.toml",
    "README.md",
    "CONTRIBUTING.md",
)
PATH = re.compile(
    r"(?<![\w/.-])(?P<path>(?:src|tests|book|\.ci)/[\w./-]+|"
    + "|".join(re.escape(name) for name in TOP_LEVEL_FILES)
    + r")(?P<names>(?:::\w+)+)?"
)
"""A repository path, optionally followed by ``::name`` (a test or class in a Python file); the look-behind keeps
out the tails of other paths and of URLs (``_build/executed/book/...``, ``https://.../tests/...``)."""

WORD = re.compile(r"[^\s`'\"()]*")
"""The whole token a path starts, to tell a path from a pattern (``tests/baselines/<name>.json``)."""

PLACEHOLDER = re.compile(r"[<*{$]|\.\.\.|NAME|CHAPTER")

GENERATED = {
    "book/api/generated/": "autosummary's pages, written by the build under _build/executed/ (CONTRIBUTING.md)",
}
"""Folders of the book's source tree that only the build writes, with where they are."""


def _map_texts(path: Path) -> Iterator[tuple[int, str]]:
    """The parts of ``path`` that belong to the map, each with the line it starts on: a Python file's docstrings
    (string statements: module, class, function and attribute docstrings) and comments, any other file whole."""
    text = path.read_text()
    if path.suffix != ".py":
        yield 1, text
        return
    if not PATH.search(text):  # most modules name no path: skip parsing them (the test stays fast)
        return
    docstrings = {
        (node.value.lineno, node.value.col_offset)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and token.start in docstrings):
            yield token.start[0], token.string


def named_paths(root: Path) -> Iterator[tuple[str, int, str, tuple[str, ...]]]:
    """Every repository path the map under ``root`` names: (the naming file, its line, the path, the names after
    ``::``), patterns, placeholders and generated paths left out, trailing full stops removed."""
    files = sorted({path for pattern in SOURCES for path in root.glob(pattern) if path.is_file()})
    for file in files:
        for first_line, text in _map_texts(file):
            for match in PATH.finditer(text):
                path = match["path"].rstrip(".")
                if PLACEHOLDER.search(WORD.match(text, match.start()).group()) or "_build/" in path:
                    continue
                if any(path.startswith(folder) for folder in GENERATED):
                    continue
                names = tuple(filter(None, (match["names"] or "").split("::")))
                line = first_line + text.count("\n", 0, match.start())
                yield file.relative_to(root).as_posix(), line, path, names


def _defined_names(file: Path) -> set[str]:
    return {
        node.name
        for node in ast.walk(ast.parse(file.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def missing_paths(root: Path) -> list[str]:
    """``file:line: path`` for every named path under ``root`` that does not exist (a book path without a suffix is
    a docname of ``_toc.yml``: its ``.md`` file counts), or whose ``::`` names the file does not define."""
    missing = []
    for file, line, path, names in named_paths(root):
        target = root / path
        docname = path.startswith("book/") and not target.suffix and target.with_suffix(".md").is_file()
        if not (target.exists() or docname):
            missing.append(f"{file}:{line}: {path}")
        elif names:
            absent = [name for name in names if not target.is_file() or name not in _defined_names(target)]
            if absent:
                missing.append(f"{file}:{line}: {path}::{'::'.join(names)} ({', '.join(absent)} not defined there)")
    return missing


def test_every_repository_path_the_map_names_exists():
    missing = missing_paths(ROOT)
    assert not missing, "repository paths named in the book, docs, docstrings, comments or CI that do not exist:\n" + (
        "\n".join(missing)
    )


def test_dead_paths_are_found_with_their_file_and_line_and_patterns_are_not(tmp_path):
    (tmp_path / "tests" / "book").mkdir(parents=True)
    (tmp_path / "book").mkdir()
    (tmp_path / "tests" / "book" / "test_kept.py").write_text(
        '"""Checked by tests/book/test_kept.py::test_here and tests/book/test_kept.py::test_gone, like every\n'
        'tests/<name>.py and tests/library/test_claims_*.py."""\n'
        "\n"
        "\n"
        "def test_here():\n"
        '    assert "tests/only_in_code.py"  # moved to tests/library/test_moved.py.\n'
    )
    (tmp_path / "book" / "a.md").write_text(
        "# A\nSee {doc}`book/a`, `book/b`, `book/_build/results/a.json`, `book/api/generated/a.b` and `src/...`.\n"
    )
    assert missing_paths(tmp_path) == [
        "book/a.md:2: book/b",
        "tests/book/test_kept.py:1: tests/book/test_kept.py::test_gone (test_gone not defined there)",
        "tests/book/test_kept.py:6: tests/library/test_moved.py",
    ]
