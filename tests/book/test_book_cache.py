"""Cache keys: what changes them and what does not (no kernels)."""

import ast
import textwrap

import nbformat
import pytest
from book_helpers import copy_repository, write_chapter, write_toc
from helpers import ROOT

from attnpaths_book import runner
from attnpaths_book.cache import EXECUTION_METADATA, PackageCode, chapter_key, imported_names
from attnpaths_book.chapters import book_chapters, resolve_parameters
from attnpaths_book.layout import BookLayout
from attnpaths_book.provenance import versions
from attnpaths_book.store import commit_unit


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
    code, env = PackageCode(*layout.package_dirs), versions()
    return {
        c.name: runner.current_key(layout, c, resolve_parameters(c, "smoke"), chapters, code, env)
        for c in chapters
        if c.is_notebook
    }


def store(layout, name, key):
    """Pretend that chapter ``name`` was executed (smoke profile) with ``key``: a whole unit, committed."""
    notebook = nbformat.v4.new_notebook(metadata={EXECUTION_METADATA: {"cache_key": key}})
    commit_unit(
        layout.root,
        layout.results_dir,
        name,
        {
            "results": (layout.results_file(name), "{}\n"),
            "notebook": (layout.executed_notebook(f"book/{name}"), nbformat.writes(notebook)),
        },
        {"cache_key": key, "profile": "smoke", "execution": {"wall_s": 0.0}},
    )


def test_keys_are_stable(book):
    assert keys(book) == keys(book)


def test_chapter_source_changes_only_its_key(book):
    before = keys(book)
    source = book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("values = {'m': m}", "values = {'m': m + 1}"))
    after = keys(book)
    assert after["beta"] != before["beta"]
    assert after["alpha"] == before["alpha"]


def test_package_init_changes_every_key(book):
    before = keys(book)  # every chapter imports attnpaths_book.recorder, whose package imports attnpaths
    (book.package_dir / "__init__.py").write_text("VERSION = 2\n")
    after = keys(book)
    assert all(after[name] != before[name] for name in before)


def write_package(package_dir, files):
    for name, text in files.items():
        path = package_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def importing_book(tiny_book):
    """alpha imports attnpaths.tasks.runs (which imports attnpaths.helper, relatively, inside a function),
    beta imports nothing but attnpaths_book.recorder; the package also holds modules nobody imports and data files."""
    write_package(
        tiny_book.package_dir,
        {
            "helper.py": "X = 1\n",
            "unused.py": "from . import helper\n",
            "cli.py": "from .tasks import runs\n",
            "tasks/__init__.py": "",
            "tasks/runs.py": "def run():\n    from ..helper import X\n    return X\n",
            "tasks/table.json": "[1]\n",
            "tasks/records/a.json": "{}\n",
            "tasks/inner/__init__.py": "",
            "tasks/inner/other.json": "[2]\n",
        },
    )
    write_chapter(tiny_book.root, "alpha", "n = 3", "%matplotlib inline\nfrom attnpaths.tasks import runs\nvalues = {}")
    write_chapter(tiny_book.root, "beta", "m = 1", "values = {'m': m}")
    write_toc(tiny_book.root, ["alpha", "beta"])
    return tiny_book


@pytest.mark.parametrize(
    "edited, stale",
    [
        ("helper.py", {"alpha"}),  # imported by runs.py, relatively, inside a function
        ("tasks/runs.py", {"alpha"}),
        ("tasks/__init__.py", {"alpha"}),  # a package on the way
        ("tasks/table.json", {"alpha"}),  # data beside a module alpha executes
        ("tasks/records/a.json", {"alpha"}),  # in a data folder (no __init__.py) below it
        ("tasks/inner/other.json", set()),  # in a subpackage nobody imports
        ("unused.py", set()),
        ("cli.py", set()),  # imports what alpha imports, but no chapter imports it
        ("../attnpaths_book/recorder.py", {"alpha", "beta"}),  # a companion module every chapter imports, created
    ],
)
def test_a_key_follows_the_package_code_its_chapter_imports(importing_book, edited, stale):
    before = keys(importing_book)
    path = importing_book.package_dir / edited
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((path.read_text() if path.is_file() else "") + "\n# edited\n")
    after = keys(importing_book)
    assert {name for name in before if after[name] != before[name]} == stale


def test_a_new_module_changes_no_key(importing_book):
    before = keys(importing_book)
    (importing_book.package_dir / "new_module.py").write_text("from . import helper\n")
    assert keys(importing_book) == before


def test_a_cell_that_is_not_python_makes_the_chapter_depend_on_every_file(importing_book):
    source = importing_book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("values = {'m': m}", "values = {'m': m\nthis is not python"))
    before = keys(importing_book)
    (importing_book.package_dir / "unused.py").write_text("# edited\n")
    after = keys(importing_book)
    assert after["beta"] != before["beta"] and after["alpha"] == before["alpha"]


def test_imported_names_resolve_relative_imports():
    tree = ast.parse(
        "import a.b\nfrom .c import d\nfrom .. import e\nfrom ... import f\n"
        "def g():\n    from x import (y,\n                   z)\n"
    )
    assert imported_names(tree, "pkg.sub") == {"a.b", "pkg.sub.c", "pkg.sub.c.d", "pkg", "pkg.e", "x", "x.y", "x.z"}
    assert imported_names(tree) == {"a.b", "x", "x.y", "x.z"}  # relative ones need the package


# --------------------------------------------------------------------------------------------------------
# the repository's chapters, on a copy of the sources (nothing executes: a chapter is fresh when its stored key
# is the current one)


@pytest.fixture
def repository(tmp_path):
    """A copy of the repository's book and package sources, each chapter stored as executed with its current
    key (smoke profile), so that ``runner.stale_chapters`` lists none."""
    layout = BookLayout(copy_repository(tmp_path / "repository"))
    chapters = runner.notebook_chapters(layout)
    code, env = PackageCode(*layout.package_dirs), versions()
    for chapter in chapters:  # in toc order: the report chapter's key holds the stored keys before it
        parameters = resolve_parameters(chapter, "smoke")
        store(layout, chapter.name, runner.current_key(layout, chapter, parameters, chapters, code, env))
    assert runner.stale_chapters(layout, "smoke") == []
    return layout


def edit(path):
    path.write_text(path.read_text() + ("\n# edited\n" if path.suffix == ".py" else "\n"))


def test_editing_the_command_line_leaves_every_chapter_fresh(repository):
    edit(repository.package_dirs[1] / "cli.py")
    assert runner.stale_chapters(repository, "smoke") == []


def test_a_benchmark_record_makes_stale_only_the_chapters_that_read_records(repository):
    edit(repository.package_dirs[1] / "benchmarks" / "records" / "sampler.json")  # the reproducibility chapter shows it
    stale = runner.stale_chapters(repository, "smoke")
    assert "reproducibility" in stale and "hmc" not in stale
    # oneshot reads the training records of the same folder; the report chapters (the introduction's answers to the
    # paper's claims, reproducibility) execute again after any chapter they read
    assert set(stale) <= {"oneshot", "intro", "reproducibility"}


def test_a_module_that_hmc_imports_transitively_makes_hmc_stale(repository):
    chapter = next(c for c in book_chapters(repository) if c.name == "hmc")
    code = PackageCode(*repository.package_dirs)
    direct = {f for name in code.chapter_imports(chapter.notebook) for f in code.module_files(name)}
    kernels = repository.package_dir / "kernels.py"
    assert kernels not in direct and kernels in code.closure(code.chapter_imports(chapter.notebook))
    edit(kernels)
    stale = runner.stale_chapters(repository, "smoke")
    assert "hmc" in stale and "model" not in stale  # the model chapter does not execute the kernels


def test_bytecode_caches_do_not_change_keys(book):
    before = keys(book)
    (book.package_dir / "__pycache__").mkdir()
    (book.package_dir / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert keys(book) == before


def test_parameters_change_the_key():
    env = versions()
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


def test_a_name_of_the_face_leads_to_the_module_that_defines_it():
    """``from attnpaths import solve`` executes attnpaths/theory (the face loads it on first use)."""
    layout = BookLayout(ROOT)
    code = PackageCode(*layout.package_dirs)
    files = code.module_files("attnpaths.solve")
    assert layout.package_dir / "__init__.py" in files and layout.package_dir / "theory" / "__init__.py" in files
    ranking = code.module_files("attnpaths.rank_heads")
    assert layout.package_dir / "frozen_attention.py" in ranking
    # the face's imports for type checkers never execute: importing the package alone executes none of them
    assert [p for p in code.closure(["attnpaths"]) if p.suffix == ".py"] == [layout.package_dir / "__init__.py"]
