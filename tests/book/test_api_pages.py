"""The API reference in the built book: one page per module listed in ``book/api/index.md``, made from the
docstrings, every public function, class, method and property on it with a description, the chapters' ``{func}``
roles linking into it, and a build that fails on a broken role or a public function without a docstring."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import shutil
import textwrap
from functools import cached_property
from pathlib import Path

import pytest
import yaml
from book_helpers import API_INDEX, API_PAGES_DIR, api_modules
from bs4 import BeautifulSoup
from helpers import ROOT

from attnpaths_book import site
from attnpaths_book.chapters import book_chapters, toc_docnames
from attnpaths_book.layout import BookLayout

PY_ROLE = re.compile(r"\{(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc)\}`~?([\w.]+)`")

REQUIRED_MODULES = (
    "attnpaths.attention",
    "attnpaths.paths",
    "attnpaths.kernels",
    "attnpaths.action",
    "attnpaths.theory",
    "attnpaths.network",
    "attnpaths.sampler",
    "attnpaths.order_parameter_posterior",
    "attnpaths.head_scoring",
    "attnpaths.claims",
    "attnpaths.engine",
    "attnpaths_book.recorder",
    "attnpaths.hmc.data",
    "attnpaths.hmc.heads",
    "attnpaths.hmc.networks",
    "attnpaths.oneshot.datasets",
    "attnpaths.transformer",
    "attnpaths.oneshot.training",
    "attnpaths.frozen_attention",
)
"""The public API that the book documents (more modules may be listed)."""


def test_every_name_of_the_face_has_the_page_of_its_module():
    import attnpaths

    defining = {attnpaths._EXPORTS[name].split(":")[0] for name in attnpaths.__all__ if name != "__version__"}
    assert sorted(defining - set(MODULES)) == []


MODULES = api_modules()


def public_objects(module_name: str) -> list[str]:
    """Qualified names (inside the module) of the public functions and classes that ``module_name`` defines, or
    lists in its ``__all__`` (a package that gathers its modules' names, as autodoc documents them), and of the
    public methods and properties those classes define themselves."""
    module = importlib.import_module(module_name)
    listed = set(getattr(module, "__all__", ()))
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_") or (getattr(obj, "__module__", None) != module_name and name not in listed):
            continue
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        names.append(name)
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if member.startswith("_"):
                    continue
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if inspect.isfunction(value) or isinstance(value, (property, cached_property)):
                    names.append(f"{name}.{member}")
    return names


def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(), "html.parser")


def descriptions(page: BeautifulSoup) -> dict[str, str]:
    """``{full name: text of its description}`` of every Python object documented on an HTML page."""
    found = {}
    for term in page.select("dl.py > dt[id]"):
        body = term.find_next_sibling("dd")
        found[term["id"]] = body.get_text(" ", strip=True) if body else ""
    return found


# --------------------------------------------------------------------------------------------------------
# the list of documented modules


def test_the_index_lists_the_public_api():
    assert MODULES, f"no autosummary entries found in {API_INDEX}.md"
    missing = [m for m in REQUIRED_MODULES if m not in MODULES]
    assert not missing, f"{API_INDEX}.md does not list {missing}"
    assert len(set(MODULES)) == len(MODULES), f"a module listed twice in {API_INDEX}.md: {MODULES}"
    docnames = toc_docnames(ROOT / "_toc.yml")
    assert API_INDEX in docnames, "_toc.yml does not list the API reference"
    assert docnames.index(API_INDEX) == docnames.index("book/references") - 1, (
        "the API reference comes after the chapters, right before the references"
    )


def test_public_objects_finds_functions_classes_methods_and_properties():
    names = public_objects("attnpaths.theory")
    for expected in (
        "solve",
        "TheorySolution",
        "TheorySolution.predict",
        "TheorySolution.heads",
        "CholeskyCoordinates.factors",
    ):
        assert expected in names
    assert not [n for n in names if n.split(".")[-1].startswith("_")]
    assert "Architecture" not in names  # imported from attnpaths.action: documented on that module's page


# --------------------------------------------------------------------------------------------------------
# the pages of the built book


def test_the_index_page_links_every_module_page(built_book):
    index = built_book.html_dir / f"{API_INDEX}.html"
    assert index.is_file(), f"{index} was not built"
    targets = {a["href"].split("#")[0] for a in soup(index).select("article a.reference.internal[href]")}
    missing = [m for m in MODULES if f"generated/{m}.html" not in targets]
    assert not missing, f"the API index does not link the pages of {missing}"


@pytest.mark.parametrize("module_name", MODULES)
def test_module_page_documents_every_public_object(built_book, module_name):
    path = built_book.html_dir / API_PAGES_DIR / f"{module_name}.html"
    assert path.is_file(), f"no API page for {module_name} ({path})"
    page = soup(path)
    assert page.select_one("article h1").get_text(strip=True).rstrip("#") == module_name
    found = descriptions(page)
    expected = public_objects(module_name)
    assert expected, f"{module_name} defines no public function or class"
    missing = [n for n in expected if f"{module_name}.{n}" not in found]
    assert not missing, f"{module_name}: not documented on its API page: {missing}"
    empty = [n for n in expected if not found[f"{module_name}.{n}"]]
    assert not empty, f"{module_name}: documented without a description: {empty}"
    assert not page.select(".problematic, .system-message, .xref.missing")


def test_chapter_roles_link_to_the_api_pages(built_book):
    """Every Python role of a chapter's text is a link to the object's entry on its module's API page."""
    checked = 0
    for docname in toc_docnames(ROOT / "_toc.yml"):
        source = ROOT / f"{docname}.md"
        targets = set(PY_ROLE.findall(source.read_text()))
        if not targets:
            continue
        html = built_book.html_dir / f"{docname}.html"
        links = {}
        for a in soup(html).select("article a.reference.internal[href]"):
            if a.find("code", class_="xref"):
                links.setdefault(a.get("title", ""), a["href"])
        for target in sorted(targets):
            assert target in links, f"{docname}: the role naming {target} is not a link"
            page, _, anchor = links[target].partition("#")
            resolved = (html.parent / page).resolve()
            assert resolved.parent == (built_book.html_dir / API_PAGES_DIR).resolve(), (
                f"{docname}: {target} links to {links[target]}, not to an API page"
            )
            if target in MODULES:  # a {mod} role: Sphinx links the module's own page at its module anchor
                assert resolved.name == f"{target}.html" and anchor == f"module-{target}", (
                    f"{docname}: the module {target} links to {links[target]}, not to its page"
                )
            else:
                assert anchor == target and target in descriptions(soup(resolved)), (
                    f"{docname}: {target} links to {links[target]}, which does not document it"
                )
            checked += 1
    assert checked, "no chapter names an attnpaths object with a {func} role"


# --------------------------------------------------------------------------------------------------------
# a broken role or a missing docstring fails the build


DEMO_MODULE = '''\
"""A stand-in module for the build test."""


def documented(x):
    """Return ``x``."""
    return x
'''


def tiny_api_book(root: Path, module: str, page_text: str) -> BookLayout:
    """A book with the repository's ``_config.yml`` and API template: a page ``book/intro.md`` holding
    ``page_text`` and an API index listing the module ``module`` (importable from ``root``)."""
    root.mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    (root / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", root / "book" / "references.bib")
    shutil.copytree(ROOT / "book" / "api" / "_templates", root / "book" / "api" / "_templates")
    (root / "book" / "intro.md").write_text(f"# Intro\n\n{page_text}\n")
    (root / "book" / "api" / "index.md").write_text(
        f"# API\n\n```{{eval-rst}}\n.. autosummary::\n   :toctree: generated\n\n   {module}\n```\n"
    )
    (root / "_toc.yml").write_text(
        yaml.safe_dump(
            {"format": "jb-book", "root": "book/intro", "chapters": [{"file": "book/api/index"}]}, sort_keys=False
        )
    )
    return BookLayout(root)


def test_a_broken_role_or_a_missing_docstring_fails_the_build(tmp_path, monkeypatch):
    # the Sphinx process imports the stand-in modules, and the package (its extensions) from this checkout
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(
            [str(tmp_path), str(ROOT / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        ),
    )
    (tmp_path / "api_demo_good.py").write_text(DEMO_MODULE)
    (tmp_path / "api_demo_bad.py").write_text(
        DEMO_MODULE
        + textwrap.dedent('''

        def undocumented(x):
            return x
        ''')
    )

    good = tiny_api_book(tmp_path / "good", "api_demo_good", "See {func}`api_demo_good.documented`.")
    index = site.build_html(good, book_chapters(good), "smoke")
    link = soup(good.html_dir / "book" / "intro.html").select_one("a.reference.internal[title]")
    assert link["href"] == "api/generated/api_demo_good.html#api_demo_good.documented", index

    bad = tiny_api_book(
        tmp_path / "bad", "api_demo_bad", "See {func}`api_demo_bad.documented` and {func}`api_demo_bad.renamed`."
    )
    with pytest.raises(site.BuildFailed) as failure:
        site.build_html(bad, book_chapters(bad), "smoke")
    message = str(failure.value)
    assert "py:func reference target not found: api_demo_bad.renamed" in message
    assert "api_demo_bad.undocumented has no docstring" in message
    warnings = [line for line in message.splitlines() if "WARNING" in line]
    assert len(warnings) == 2, warnings  # the role naming a documented function resolves


def test_the_build_reads_the_package_of_its_checkout(tiny_book):
    """Sphinx imports the package from the checkout's ``src`` (before any other copy on the path), and the
    HTML counts as out of date when a package source changes (its API pages are made from the docstrings)."""
    env = site.sphinx_environment(tiny_book, {"PYTHONPATH": "/elsewhere", "HOME": "/home"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tiny_book.root / "src"), "/elsewhere"]
    assert env["HOME"] == "/home"
    (tiny_book.root / "book").mkdir()
    (tiny_book.root / "book" / "notes.md").write_text("# Notes\n")
    (tiny_book.root / "_toc.yml").write_text("format: jb-book\nroot: book/notes\n")
    chapters = book_chapters(tiny_book)
    before = site.source_digest(tiny_book, chapters)
    module = tiny_book.package_dir / "module.py"
    module.write_text('"""A module."""\n')
    after_new = site.source_digest(tiny_book, chapters)
    module.write_text('"""A module, documented differently."""\n')
    edited = site.source_digest(tiny_book, chapters)
    assert len({before, after_new, edited}) == 3
    (tiny_book.package_dir / "__pycache__").mkdir()
    (tiny_book.package_dir / "__pycache__" / "stale.py").write_text("")  # bytecode folders do not count
    assert site.source_digest(tiny_book, chapters) == edited
