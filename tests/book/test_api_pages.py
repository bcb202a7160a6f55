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
from book_helpers import API_COMPANION, API_INDEX, API_INDEX_PAGES, API_PAGES_DIR, api_modules
from bs4 import BeautifulSoup
from helpers import ROOT

from attnpaths_book import site
from attnpaths_book.chapters import book_chapters, toc_docnames
from attnpaths_book.layout import BookLayout

PY_ROLE = re.compile(r"\{(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc)\}`~?([\w.]+)`")

CORE_PACKAGES = ("theory", "claims")
"""The core's packages; the library's other packages are the experiment layer and the subjects."""


def _in_core(parts: list[str]) -> bool:
    return parts[1] in CORE_PACKAGES or (ROOT / "src" / "attnpaths" / f"{parts[1]}.py").is_file()


FLOORS = (
    ("The core", _in_core),
    ("The experiment layer", lambda parts: parts[1] == "experiments"),
    ("The subjects", lambda parts: not _in_core(parts) and parts[1] != "experiments"),
)
"""The library's floors (CONTRIBUTING.md, ``tests/library/test_layering.py``): the heading that starts each
section of the library's API page, and which modules (``attnpaths.a.b`` split on dots) belong to it."""


def public_modules(package: str) -> list[str]:
    """Every public module of ``package`` (``attnpaths`` or ``attnpaths_book``) by its source files: a module
    none of whose dotted parts is private, packages by their ``__init__``; the library's package itself is its
    face (``attnpaths.__all__``), whose names are documented on the pages of the modules that define them."""
    root = ROOT / "src" / package
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(part.startswith("_") for part in parts) or parts == ("attnpaths",):
            continue
        found.append(".".join(parts))
    return found


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
    assert MODULES, f"no autosummary entries found in {API_INDEX_PAGES}"
    assert len(set(MODULES)) == len(MODULES), f"a module listed twice in {API_INDEX_PAGES}: {MODULES}"
    for package, page in (("attnpaths", API_INDEX), ("attnpaths_book", API_COMPANION)):
        listed = api_modules(page)
        missing = [m for m in public_modules(package) if m not in listed]
        assert not missing, f"{page}.md does not list the public modules {missing}"
        stale = [m for m in listed if m not in public_modules(package)]
        assert not stale, f"{page}.md lists modules that do not exist or are not public: {stale}"
    docnames = toc_docnames(ROOT / "_toc.yml")
    assert API_INDEX in docnames and API_COMPANION in docnames, "_toc.yml does not list the API reference"
    assert docnames.index(API_INDEX) + 1 == docnames.index(API_COMPANION) == docnames.index("book/references") - 1, (
        "the API reference (library, then companion) comes after the chapters, right before the references"
    )


def test_the_library_page_lists_its_modules_floor_by_floor():
    """Each module of the library's page stands under a heading of its floor, the floors in order."""
    floor = None
    seen = []
    for line in (ROOT / f"{API_INDEX}.md").read_text().splitlines():
        if line.startswith("## "):
            floor = next((name for name, _ in FLOORS if line[3:].startswith(name)), None)
            assert floor is not None, f"{API_INDEX}.md: the section {line!r} names no floor"
            if not seen or seen[-1] != floor:
                seen.append(floor)
        elif line.startswith("   attnpaths."):
            module = line.strip()
            belongs = dict(FLOORS)[floor] if floor else None
            assert belongs is not None and belongs(module.split(".")), (
                f"{API_INDEX}.md lists {module} under {floor!r}, not under its floor"
            )
    assert seen == [name for name, _ in FLOORS], f"the floors stand in the order {seen}"


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


def test_the_index_pages_link_every_module_page(built_book):
    for page in API_INDEX_PAGES:
        index = built_book.html_dir / f"{page}.html"
        assert index.is_file(), f"{index} was not built"
        targets = {a["href"].split("#")[0] for a in soup(index).select("article a.reference.internal[href]")}
        missing = [m for m in api_modules(page) if f"generated/{m}.html" not in targets]
        assert not missing, f"{page} does not link the pages of {missing}"


@pytest.mark.parametrize("module_name", MODULES)
def test_module_page_documents_every_public_object(built_book, module_name):
    path = built_book.html_dir / API_PAGES_DIR / f"{module_name}.html"
    assert path.is_file(), f"no API page for {module_name} ({path})"
    page = soup(path)
    assert page.select_one("article h1").get_text(strip=True).rstrip("#") == module_name
    found = descriptions(page)
    expected = public_objects(module_name)
    module = importlib.import_module(module_name)
    # a package that only describes its modules (its docstring) has a page of that text and nothing else to list
    assert expected or (hasattr(module, "__path__") and module.__doc__), (
        f"{module_name} defines no public function or class"
    )
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


@pytest.mark.usefixtures("long_computation")
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
