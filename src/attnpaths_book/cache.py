"""Cache keys of executed chapters.

A chapter is re-executed only when its key changes. The key hashes

- the chapter's source file,
- the package code the chapter can execute (:meth:`PackageCode.chapter_digest`; Jupyter Book's own cache
  would not see it): the package modules its code cells import, the package modules those import,
  transitively (with the ``__init__.py`` of every package on the way), and the data files beside them (the
  files of the folders holding those modules that are not Python sources, with their subfolders that are not
  packages: e.g. ``hmc/authors_code_reference.json`` for a chapter that imports ``attnpaths.hmc``,
  ``benchmarks/records/*.json`` for one that imports ``attnpaths_book.benchmarks.record``). The rest of the
  package (the command line, modules that only other chapters import) does not enter it,
- the complete parameters of the execution (profile values, overrides, ``profile``, ``results_dir``),
- the versions of Python and of the numerical libraries (:data:`attnpaths_book.provenance.NUMERIC_LIBRARIES`; a new
  numpy may change the numbers),
- for a report chapter, the keys of the chapters before it (it shows their results and run times),
- the CPU dispatch chosen by environment variables (:data:`DISPATCH_VARIABLES`), when any is set.

Imports are read from the sources with ``ast`` (anywhere in a module, also inside functions), never by
importing anything. A module loaded by a name computed at run time (``importlib.import_module(name)``) is not
seen; a code cell that is not valid Python even without its IPython magics makes the chapter depend on every
file of the package.

The key is stored in the executed notebook's metadata (``metadata.attnpaths_execution.cache_key``) and in the
chapter's manifest (:mod:`attnpaths_book.store`), which decides whether the chapter is current.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import threading
from pathlib import Path

from attnpaths_book.provenance import versions

EXECUTION_METADATA = "attnpaths_execution"
"""Notebook metadata key of the execution record (cache key, profile, overrides, wall time, peak memory)."""

SOURCE_SUFFIX = ".py"
EXPORTS_NAME = "_EXPORTS"
"""A package's lazily exported names (``attnpaths.__init__``): a chapter importing ``attnpaths.solve`` executes
the module that defines it, which the cache follows through this literal dict."""
IGNORED_SUFFIXES = (".pyc", ".pyo")
IGNORED_FOLDERS = ("__pycache__",)


def _is_package_file(path: Path) -> bool:
    return (
        path.is_file()
        and not any(part in IGNORED_FOLDERS for part in path.parts)
        and path.suffix not in IGNORED_SUFFIXES
    )


def _digest(source_root: Path, files, file_hash) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(source_root).as_posix().encode() + b"\0")
        digest.update(file_hash(path))
    return digest.hexdigest()


_PARSING = threading.Lock()


def parse_python(source, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source)`` under a lock: CPython 3.11's parser is not safe to run in several threads at once
    (the book's runner computes chapter keys in its worker threads; a race raises ``SystemError: AST
    constructor recursion depth mismatch``). Raises ``SyntaxError`` as ``ast.parse`` does."""
    with _PARSING:
        return ast.parse(source, filename=filename)


def _parse_cell(source: str):
    """The syntax tree of a code cell; lines that are IPython magics or shell escapes (``%``, ``!``) are
    blanked first. ``None`` if it is still not valid Python."""
    try:
        return parse_python(source)
    except SyntaxError:
        pass
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return parse_python("\n".join(lines))
    except SyntaxError:
        return None


def _only_for_type_checkers(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): a block that never executes."""
    test = getattr(node, "test", None) if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(node: ast.AST):
    """Every statement in ``node`` that can execute, at any depth (function and class bodies, branches,
    handlers, cases; not the body of ``if TYPE_CHECKING:``); expressions are not entered, which is where a
    syntax tree has most of its nodes."""
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        if name == "body" and isinstance(node, ast.stmt) and _only_for_type_checkers(node):
            continue
        for child in getattr(node, name, ()):
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                if isinstance(child, ast.stmt):
                    yield child
                yield from _statements(child)


def imported_names(tree: ast.AST, package: str | None = None) -> set[str]:
    """Dotted names that the imports in ``tree`` may load: for ``import a.b`` the name ``a.b``; for
    ``from a.b import c`` both ``a.b`` and ``a.b.c`` (``c`` may be a submodule or an attribute). A relative
    import is resolved against ``package``, the dotted name of the package holding the module (relative
    imports are left out when it is ``None``)."""
    names = set()
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None:
                    continue
                parts = package.split(".")
                if node.level - 1 > len(parts) - 1:
                    continue  # above the top-level package
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


_PARSED: dict[tuple, frozenset] = {}
"""The imports of the module sources this process has parsed, by (SHA-256 of the source, package): parsing is
most of the cost of a key, and an unchanged source is not parsed again."""


class PackageCode:
    """The sources of the packages under ``package_dirs`` (``src/attnpaths``, ``src/attnpaths_book``, side by
    side in one folder): which files a chapter can execute, and their digest.

    Files are hashed at most once per instance (a command computes every chapter's key from one instance) and
    parsed at most once per process while their contents stay the same (parsing the whole package takes about
    0.2 s).
    """

    def __init__(self, *package_dirs):
        if not package_dirs:
            raise ValueError("package_dirs must name at least one package folder")
        self.package_dirs = {Path(folder).name: Path(folder) for folder in package_dirs}
        self.source_root = Path(package_dirs[0]).parent
        if any(folder.parent != self.source_root for folder in self.package_dirs.values()):
            raise ValueError(f"package_dirs must lie in one folder, got {[str(f) for f in package_dirs]}")
        self._imports: dict[Path, frozenset[str]] = {}
        self._hashes: dict[Path, bytes] = {}
        self._data: dict[Path, list[Path]] = {}
        self._exports: dict[Path, dict[str, str]] = {}

    def module_files(self, dotted: str) -> list[Path]:
        """The files that importing the module ``dotted`` executes in this package: the ``__init__.py`` of
        each package on the way and the module itself (as far as they exist; empty for another package)."""
        parts = dotted.split(".")
        if parts[0] not in self.package_dirs:
            return []
        files, folder = [], self.package_dirs[parts[0]]
        for depth, part in enumerate([None, *parts[1:]]):  # None: the top-level package
            below = folder if part is None else folder / part
            if (below / "__init__.py").is_file():  # a package comes before a module of the same name
                files.append(below / "__init__.py")
                folder = below
            else:
                if part is not None and (folder / f"{part}{SOURCE_SUFFIX}").is_file():
                    files.append(folder / f"{part}{SOURCE_SUFFIX}")
                elif part is not None and depth == len(parts) - 1:
                    # a name the package exports lazily (its face): the module that defines it
                    target = self.exports(folder / "__init__.py").get(part)
                    if target is not None and target.split(":")[0] != dotted:
                        files.extend(self.module_files(target.split(":")[0]))
                break
        return files

    def exports(self, init_path: Path) -> dict[str, str]:
        """The lazy exports of a package, ``{name: "module" or "module:attribute"}``: the literal dict
        :data:`EXPORTS_NAME` of its ``__init__.py`` (empty when it has none)."""
        if init_path not in self._exports:
            found = {}
            if init_path.is_file():
                for node in parse_python(init_path.read_bytes(), filename=str(init_path)).body:
                    if isinstance(node, (ast.Assign, ast.AnnAssign)):
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        if any(isinstance(t, ast.Name) and t.id == EXPORTS_NAME for t in targets):
                            found = ast.literal_eval(node.value)
            self._exports[init_path] = found
        return self._exports[init_path]

    def _package_of(self, path: Path) -> str:
        return ".".join(path.parent.relative_to(self.source_root).parts)

    def imports(self, path: Path) -> frozenset[str]:
        """The dotted names imported by the module at ``path`` (:func:`imported_names`, relative imports
        resolved); a module that is not valid Python imports nothing (it fails when executed)."""
        if path not in self._imports:
            package = self._package_of(path)
            memo_key = (self._hash(path), package)
            if memo_key not in _PARSED:
                try:
                    tree = parse_python(path.read_bytes(), filename=str(path))
                except SyntaxError:
                    tree = ast.Module(body=[], type_ignores=[])
                _PARSED[memo_key] = frozenset(imported_names(tree, package))
            self._imports[path] = _PARSED[memo_key]
        return self._imports[path]

    def data_files(self, folder: Path) -> list[Path]:
        """The files in ``folder`` that are not Python sources, with those of its subfolders that are not
        packages (no ``__init__.py``), at any depth."""
        if folder not in self._data:
            found = []
            for path in sorted(folder.iterdir()):
                if path.is_dir():
                    if path.name not in IGNORED_FOLDERS and not (path / "__init__.py").is_file():
                        found.extend(self.data_files(path))
                elif _is_package_file(path) and path.suffix != SOURCE_SUFFIX:
                    found.append(path)
            self._data[folder] = found
        return self._data[folder]

    def closure(self, names) -> list[Path]:
        """Every file of the package that importing the dotted ``names`` can execute or read: the modules
        (:meth:`module_files`), transitively the package modules they import, and the :meth:`data_files` of
        the folders holding them. Sorted."""
        modules: set[Path] = set()
        pending = [f for name in names for f in self.module_files(name)]
        while pending:
            path = pending.pop()
            if path in modules:
                continue
            modules.add(path)
            pending.extend(f for name in self.imports(path) for f in self.module_files(name) if f not in modules)
        data = {f for folder in {m.parent for m in modules} for f in self.data_files(folder)}
        return sorted(modules | data)

    def _hash(self, path: Path) -> bytes:
        if path not in self._hashes:
            self._hashes[path] = hashlib.sha256(path.read_bytes()).digest()
        return self._hashes[path]

    def digest(self, names) -> str:
        """SHA-256 of the relative paths and contents of :meth:`closure` of ``names``."""
        return _digest(self.source_root, self.closure(names), self._hash)

    def digest_all(self) -> str:
        """SHA-256 of the relative paths and contents of every file of the package (bytecode left out)."""
        files = [p for folder in self.package_dirs.values() for p in folder.rglob("*") if _is_package_file(p)]
        return _digest(self.source_root, files, self._hash)

    def chapter_imports(self, notebook) -> set[str] | None:
        """The dotted names of this package that the notebook's code cells import (``None`` when a code cell
        is not valid Python even without its magics)."""
        names = set()
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            tree = _parse_cell(cell.source)
            if tree is None:
                return None
            names.update(n for n in imported_names(tree) if n.split(".")[0] in self.package_dirs)
        return names

    def chapter_digest(self, notebook) -> str:
        """The digest of the package code that the notebook can execute (:meth:`digest` of its
        :meth:`chapter_imports`; :meth:`digest_all` when those cannot be read)."""
        names = self.chapter_imports(notebook)
        return self.digest_all() if names is None else self.digest(names)


DISPATCH_VARIABLES = (
    "ATEN_CPU_CAPABILITY",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_CBWR",
    "MKL_DEBUG_CPU_TYPE",
    "OPENBLAS_CORETYPE",
    "NPY_DISABLE_CPU_FEATURES",
    "NPY_ENABLE_CPU_FEATURES",
)
"""Environment variables that choose the instruction set of torch's, MKL's, OpenBLAS's and NumPy's kernels:
each moves the last bits of float64 results and changes trained float32 models, so an execution under other
values is another execution (``.ci/second_dispatch.py`` sets them to imitate another CPU)."""


def cpu_dispatch(environ=None) -> dict[str, str]:
    """The :data:`DISPATCH_VARIABLES` set in ``environ`` (default ``os.environ``), ``{name: value}``."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in DISPATCH_VARIABLES if environ.get(name)}


def chapter_key(source, parameters: dict, package: str, upstream: tuple = (), env: dict | None = None) -> str:
    """The cache key of one execution.

    Args:
        source: path of the chapter's MyST source.
        parameters: the complete injected parameters (JSON-serialisable).
        package: digest of the package code the chapter can execute (:meth:`PackageCode.chapter_digest`).
        upstream: keys of the chapters a report chapter reads (empty for the others).
        env: :func:`attnpaths_book.provenance.versions` of the numerical libraries (computed when ``None``).
    """
    record = {
        "source": hashlib.sha256(Path(source).read_bytes()).hexdigest(),
        "package": package,
        "parameters": parameters,
        "upstream": list(upstream),
        "environment": versions() if env is None else env,
    }
    dispatch = cpu_dispatch()
    if dispatch:  # absent when none is set, so that keys made before it was part of them stay valid
        record["cpu_dispatch"] = dispatch
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()
