"""The book's chapters: their order (from ``_toc.yml``), their profiles and their ``parameters`` cell.

A toc entry is a *chapter* when its source ``<docname>.md`` is a MyST notebook (its front matter has a
``kernelspec``); the executor runs it. Any other entry (e.g. the references page) is a *page*, copied into
the build as it is. A chapter's front matter may hold::

    attnpaths:
      profiles:
        smoke: {}                        # values that override the parameters cell's defaults
        paper: {num_samples: 1000}
        full: {num_samples: 100000}      # optional profile: only the chapters that list it have it
      report: true                       # optional: the chapter reads the results of the other chapters

Its ``parameters`` cell (a code cell tagged ``parameters``) holds plain literal assignments, among them
``profile`` and ``results_dir``, which the executor sets.
"""

from __future__ import annotations

import ast
import copy
import functools
import keyword
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import yaml

from attnpaths_book.cache import parse_python
from attnpaths_book.layout import BookLayout

PROFILES = ("smoke", "paper", "full")
"""The execution profiles, ``smoke`` (the whole book in minutes; tests and CI), ``paper`` (the paper's
settings, at sizes that two CPU cores manage) and ``full`` (the authors' model sizes where they exceed the
``paper`` profile's; for a cluster or GPU, never run by CI)."""

SHARED_PROFILES = ("smoke", "paper")
"""The profiles every chapter has (a chapter that does not list one runs it with its defaults). Any other
profile of :data:`PROFILES` exists only in the chapters whose front matter lists it: ``run CHAPTER --profile
full`` executes such a chapter, and ``book --profile full`` stops before executing anything, naming the first
chapter without it (:func:`resolve_parameters`)."""

SMOKE_BUDGET_S = 180
"""Time budget of the smoke profile, in seconds; the whole book executes within it on two CPU cores."""

INJECTED = ("profile", "results_dir")
"""Parameters that the executor always sets; ``--set`` cannot change them."""


class ChapterError(ValueError):
    """A chapter source, or the table of contents, does not follow the book's conventions."""


class ParameterError(ValueError):
    """A parameter override names no parameter of the chapter or has the wrong type."""


@dataclass
class Chapter:
    """One toc entry.

    Attributes:
        name: the file stem (``intro``), which also names its results file.
        docname: the toc path without suffix (``book/intro``).
        source: the MyST markdown file.
        notebook: the source read as a notebook (``None`` for a page).
        defaults: the ``parameters`` cell's assignments, in order.
        profiles: ``{profile: {name: value}}`` overrides from the front matter, one entry per profile.
        report: whether the chapter reads the results of the other chapters (it executes after every chapter
            that is not a report, wherever the toc places it: :func:`execution_order`).
    """

    name: str
    docname: str
    source: Path
    notebook: object = None
    defaults: dict = field(default_factory=dict)
    profiles: dict = field(default_factory=dict)
    report: bool = False

    @property
    def is_notebook(self) -> bool:
        """Whether the source is a notebook (its front matter declares a kernel), not a page."""
        return self.notebook is not None

    @property
    def title(self) -> str:
        """The first level-1 heading of the source (the file stem if there is none)."""
        for line in self.source.read_text().splitlines():
            if line.startswith("# "):
                return line[2:].strip()
        return self.name

    def describe_parameters(self) -> str:
        """One line per parameter: ``name: type = default`` (the injected ones marked)."""
        lines = [f"parameters of chapter {self.name!r} ({self.source.name}):"]
        for name, value in self.defaults.items():
            note = "  [set by the executor]" if name in INJECTED else ""
            lines.append(f"  {name}: {type(value).__name__} = {value!r}{note}")
        return "\n".join(lines)


def toc_docnames(toc_path) -> list[str]:
    """The documents of a Jupyter Book ``_toc.yml``, in reading order (root first)."""
    toc_path = Path(toc_path)
    data = yaml.safe_load(toc_path.read_text())
    if not isinstance(data, dict) or "root" not in data:
        raise ChapterError(f"{toc_path}: a Jupyter Book table of contents needs a 'root' entry")
    docnames: list[str] = []

    def walk(node):
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if "glob" in node:
                raise ChapterError(f"{toc_path}: 'glob' entries are not supported; list every chapter")
            for key in ("root", "file"):
                if key in node:
                    docnames.append(str(node[key]).removesuffix(".md").removesuffix(".ipynb"))
            for key in ("parts", "chapters", "sections"):
                if key in node:
                    walk(node[key])

    walk(data)
    return docnames


def front_matter(path) -> dict:
    """The YAML front matter of a markdown file (``{}`` if it has none)."""
    text = Path(path).read_text()
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---", 4)
    if end < 0:
        raise ChapterError(f"{path}: the front matter opened by '---' is never closed")
    return yaml.safe_load(text[4:end]) or {}


def parameters_cell(notebook, name: str) -> dict:
    """The assignments of the notebook's ``parameters`` cell as ``{name: literal value}``."""
    cells = [c for c in notebook.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ChapterError(f"chapter {name!r} must have exactly one code cell tagged 'parameters', found {len(cells)}")
    try:
        tree = parse_python(cells[0].source)
    except SyntaxError as err:
        raise ChapterError(f"chapter {name!r}: the parameters cell is not valid Python: {err}") from err
    defaults = {}
    for statement in tree.body:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            raise ChapterError(
                f"chapter {name!r}: the parameters cell may hold only assignments 'name = literal', "
                f"found: {ast.get_source_segment(cells[0].source, statement)}"
            )
        target = statement.targets[0].id
        try:
            defaults[target] = ast.literal_eval(statement.value)
        except ValueError as err:
            raise ChapterError(
                f"chapter {name!r}: parameter {target!r} must be a literal (number, string, list, "
                f"dict, bool, None), got: {ast.get_source_segment(cells[0].source, statement.value)}"
            ) from err
    missing = [p for p in INJECTED if p not in defaults]
    if missing:
        raise ChapterError(
            f"chapter {name!r}: the parameters cell must also assign {', '.join(missing)} "
            f"(e.g. profile = \"smoke\", results_dir = \"_build/results\")"
        )
    return defaults


@functools.lru_cache(maxsize=256)
def _parsed_notebook(source: str, version: tuple):
    """``jupytext.read`` of one version (``version``: inode, size, modification time in ns) of a chapter's source,
    kept for the process: a command and the test suite read the toc's chapters several times, 0.3 s each."""
    return jupytext.read(source)


def read_notebook(source: Path):
    """The chapter's MyST source as a notebook (``nbformat.NotebookNode``), a copy of its own for the caller."""
    stat = source.stat()
    return copy.deepcopy(_parsed_notebook(str(source), (stat.st_ino, stat.st_size, stat.st_mtime_ns)))


def load_chapter(layout: BookLayout, docname: str) -> Chapter:
    """Read the toc entry ``docname`` (its source is ``<root>/<docname>.md``)."""
    source = layout.root / f"{docname}.md"
    if not source.is_file():
        raise ChapterError(f"_toc.yml lists {docname!r} but {source} does not exist")
    name = Path(docname).name
    meta = front_matter(source)
    if "kernelspec" not in meta:
        return Chapter(name=name, docname=docname, source=source)
    notebook = read_notebook(source)
    chapter = Chapter(
        name=name, docname=docname, source=source, notebook=notebook, defaults=parameters_cell(notebook, name)
    )
    settings = meta.get("attnpaths") or {}
    unknown = set(settings) - {"profiles", "report"}
    if unknown:
        raise ChapterError(
            f"chapter {name!r}: unknown front-matter keys under 'attnpaths': {sorted(unknown)}; "
            "allowed: profiles, report"
        )
    profiles = settings.get("profiles") or {}
    if not isinstance(profiles, dict) or set(profiles) - set(PROFILES):
        raise ChapterError(
            f"chapter {name!r}: 'attnpaths.profiles' must map profile names among {PROFILES} to "
            f"parameter values, got {profiles!r}"
        )
    chapter.profiles = {
        p: check_overrides(chapter, profiles.get(p) or {}, origin=f"profile {p!r}")
        for p in PROFILES
        if p in SHARED_PROFILES or p in profiles
    }
    chapter.report = bool(settings.get("report", False))
    return chapter


def execution_order(chapters: list[Chapter]) -> list[Chapter]:
    """The executable chapters of ``chapters`` in the order they execute: every chapter that is not a report, in
    toc order, then the report chapters, in toc order. A report reads the results of every chapter executed
    before it, so a report may stand early in the book (the introduction's answers to the paper's claims) and
    still read what the later chapters found."""
    notebooks = [c for c in chapters if c.is_notebook]
    return [c for c in notebooks if not c.report] + [c for c in notebooks if c.report]


def book_chapters(layout: BookLayout) -> list[Chapter]:
    """Every toc entry, in order (pages and chapters)."""
    chapters = [load_chapter(layout, docname) for docname in toc_docnames(layout.toc)]
    names = [c.name for c in chapters]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ChapterError(f"_toc.yml: chapter names must be unique (they name the results files): {duplicates}")
    return chapters


def find_chapter(chapters: list[Chapter], name: str) -> Chapter:
    """The executable chapter called ``name`` (file stem or toc path)."""
    for chapter in chapters:
        if name in (chapter.name, chapter.docname) and chapter.is_notebook:
            return chapter
    names = ", ".join(c.name for c in chapters if c.is_notebook)
    raise ValueError(f"chapter must be one of the executable chapters in _toc.yml ({names}), got {name!r}")


def _same_kind(value, default) -> tuple[bool, object]:
    """Whether ``value`` has the type of ``default`` (an int is accepted for a float); returns the value to use."""
    if default is None:
        return True, value
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool), value
    if isinstance(default, float) and isinstance(value, int):
        return True, float(value)
    if isinstance(default, (list, tuple)):
        if not isinstance(value, (list, tuple)):
            return False, value
        if not default:
            return True, list(value)
        checked = [_same_kind(item, default[0]) for item in value]
        return all(ok for ok, _ in checked), [item for _, item in checked]
    return isinstance(value, type(default)), value


def check_overrides(chapter: Chapter, overrides: dict, origin: str = "--set") -> dict:
    """Validate ``{name: value}`` against the chapter's parameters cell; returns the values to inject.

    Raises :class:`ParameterError` naming the parameter and listing the chapter's parameters when a name is
    unknown, is one of the injected names, or a value's type differs from its default's.
    """
    if not isinstance(overrides, dict):
        raise ParameterError(
            f"chapter {chapter.name!r}: {origin} must map parameter names to values, got {overrides!r}"
        )
    checked = {}
    for name, value in overrides.items():
        if name in INJECTED:
            raise ParameterError(
                f"chapter {chapter.name!r}: {origin} cannot set {name!r}, which the executor sets "
                "(choose the profile with --profile)\n" + chapter.describe_parameters()
            )
        if name not in chapter.defaults:
            raise ParameterError(
                f"chapter {chapter.name!r}: {origin} names an unknown parameter {name!r}\n"
                + chapter.describe_parameters()
            )
        default = chapter.defaults[name]
        ok, value = _same_kind(value, default)
        if not ok:
            raise ParameterError(
                f"chapter {chapter.name!r}: {origin} gives {name}={value!r} "
                f"({type(value).__name__}), but {name} must be of type {type(default).__name__} "
                f"like its default {default!r}\n" + chapter.describe_parameters()
            )
        checked[name] = value
    return checked


def parse_assignments(chapter: Chapter, items) -> dict:
    """Parse command-line ``NAME=VALUE`` strings and validate them (see :func:`check_overrides`).

    ``VALUE`` is a Python literal (``3``, ``0.5``, ``[10, 30]``, ``True``); for a string parameter the text
    itself is taken when it is not a quoted literal.
    """
    overrides = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier() or keyword.iskeyword(name):
            raise ParameterError(
                f"chapter {chapter.name!r}: --set expects NAME=VALUE, got {item!r}\n" + chapter.describe_parameters()
            )
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text
        if isinstance(chapter.defaults.get(name), str) and not isinstance(value, str):
            value = text
        overrides[name] = value
    return check_overrides(chapter, overrides)


def resolve_parameters(
    chapter: Chapter, profile: str, overrides: dict | None = None, results_dir: str = "_build/results"
) -> dict:
    """The complete parameters of one execution: defaults, then the profile's values, then the (validated)
    overrides, then ``profile`` and ``results_dir``."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    if profile not in chapter.profiles:
        raise ValueError(
            f"profile {profile!r} is defined only by some chapters, and chapter {chapter.name!r} does "
            f"not define it (its profiles: {', '.join(chapter.profiles)}); execute a chapter that "
            f"defines it with: python -m attnpaths_book run CHAPTER --profile {profile}"
        )
    parameters = dict(chapter.defaults)
    parameters.update(chapter.profiles.get(profile, {}))
    parameters.update(check_overrides(chapter, overrides or {}))
    parameters.update(profile=profile, results_dir=results_dir)
    return parameters
