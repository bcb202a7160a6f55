"""Cache keys: what changes them and what does not (no kernels)."""

import json

import nbformat
import pytest

from attnpaths.book import runner
from attnpaths.book.cache import EXECUTION_METADATA, chapter_key, environment, package_digest, stored_key
from attnpaths.book.chapters import book_chapters, resolve_parameters
from helpers import write_chapter, write_toc


@pytest.fixture
def book(tiny_book):
    write_chapter(tiny_book.root, "alpha", "n = 3", "values = {'n': n}")
    write_chapter(tiny_book.root, "beta", "m = 1", "values = {'m': m}")
    write_chapter(tiny_book.root, "report", "", "values = {}", report=True)
    write_toc(tiny_book.root, ["alpha", "beta", "report"])
    return tiny_book


def keys(layout):
    """Current keys of every chapter, smoke profile."""
    chapters = book_chapters(layout)
    package, env = package_digest(layout.package_dir), environment()
    return {c.name: runner.current_key(layout, c, resolve_parameters(c, "smoke"), chapters, package, env)
            for c in chapters}


def store(layout, name, key):
    """Pretend that chapter ``name`` was executed with ``key``."""
    notebook = nbformat.v4.new_notebook(metadata={EXECUTION_METADATA: {"cache_key": key}})
    path = layout.executed_notebook(f"book/{name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def test_keys_are_stable(book):
    assert keys(book) == keys(book)


def test_chapter_source_changes_only_its_key(book):
    before = keys(book)
    source = book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("values = {'m': m}", "values = {'m': m + 1}"))
    after = keys(book)
    assert after["beta"] != before["beta"]
    assert after["alpha"] == before["alpha"]


def test_package_source_changes_every_key(book):
    before = keys(book)
    (book.package_dir / "theory.py").write_text("X = 1\n")
    after = keys(book)
    assert all(after[name] != before[name] for name in before)
    (book.package_dir / "theory.py").write_text("X = 2\n")
    assert keys(book)["alpha"] not in (before["alpha"], after["alpha"])


def test_bytecode_caches_do_not_change_keys(book):
    before = keys(book)
    (book.package_dir / "__pycache__").mkdir()
    (book.package_dir / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert keys(book) == before


def test_parameters_change_the_key():
    env = environment()
    base = {"n": 3, "profile": "smoke", "results_dir": "_build/results"}
    reference = chapter_key(__file__, base, "digest", env=env)
    assert chapter_key(__file__, {**base, "n": 4}, "digest", env=env) != reference
    assert chapter_key(__file__, {**base, "profile": "paper"}, "digest", env=env) != reference
    assert chapter_key(__file__, dict(reversed(list(base.items()))), "digest", env=env) == reference
    assert chapter_key(__file__, base, "digest", env={**env, "numpy": "0.0"}) != reference


def test_report_key_follows_the_executed_chapters_before_it(book):
    before = keys(book)
    store(book, "alpha", "key-1")
    after_alpha = keys(book)
    assert after_alpha["report"] != before["report"]
    assert after_alpha["alpha"] == before["alpha"] and after_alpha["beta"] == before["beta"]
    store(book, "alpha", "key-2")
    assert keys(book)["report"] != after_alpha["report"]


def test_stored_key_ignores_unreadable_notebooks(tmp_path):
    assert stored_key(tmp_path / "missing.ipynb") is None
    (tmp_path / "broken.ipynb").write_text("{not json")
    assert stored_key(tmp_path / "broken.ipynb") is None
    (tmp_path / "foreign.ipynb").write_text(json.dumps({"metadata": {}}))
    assert stored_key(tmp_path / "foreign.ipynb") is None
