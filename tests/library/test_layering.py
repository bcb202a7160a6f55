"""The library's layers import downwards only, and the library never imports the book's companion (read from the
sources with ast: imports inside functions and under ``TYPE_CHECKING`` included, and the lazy imports of
modules named by a string).

Floors of ``src/attnpaths``, lowest first:

* the theory core: the modules directly in the package and the ``theory`` and ``claims`` packages (attention,
  paths, kernels, action, solver, network, sampler, claims type, engine, statistics, checkpoints, ...);
* the experiment layer: ``experiments`` (task-agnostic: path data, sweeps over widths, sampling, kernel PCs,
  head orders, the finite-width and retraining claims);
* the subjects: ``hmc`` (with the depth study in ``hmc.depth``), ``oneshot``, ``pruning``, ``exchangeability``,
  ``related``: each imports the floors below it and no sibling.

``src/attnpaths_book`` (runner, recorder, reports, benchmarks, command line) imports the library; the library
never imports it. Every subpackage of the library must be placed on a floor here, so a new one cannot slip past.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
from helpers import BOOK_MODULES

import attnpaths

PACKAGE = Path(attnpaths.__file__).parent
LIBRARY, COMPANION = "attnpaths", "attnpaths_book"
CORE_PACKAGES = ("theory", "claims")
LAYER = "experiments"
SUBJECTS = ("hmc", "oneshot", "pruning", "exchangeability", "related", "pretrained")


def _module_name(path: Path, package_dir: Path) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULE_NAME = re.compile(r"attnpaths(_book)?(\.[A-Za-z_]\w*)*")
"""A string that names a module of the library or the companion: one that ``importlib.import_module`` (the face's
lazy exports) would load."""


def imported_modules(path: Path, package_dir: Path = PACKAGE, *, strings: bool = True) -> set[str]:
    """Absolute names of the modules (and of the names imported from them) that ``path`` imports: import
    statements anywhere (inside functions and under ``if TYPE_CHECKING:`` too), and the strings that name a module
    for a lazy import (``importlib.import_module("attnpaths.x")``, the face's table of exports)."""
    module = _module_name(path, package_dir)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module
            found.add(origin)
            found.update(f"{origin}.{alias.name}" for alias in node.names)
        elif (
            strings
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and MODULE_NAME.fullmatch(node.value)
        ):
            found.add(node.value)
    return found


def floor_of(module: str) -> str:
    """``"core"``, ``"experiments"`` or the subject that the library module ``module`` belongs to."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in CORE_PACKAGES or not (PACKAGE / parts[1] / "__init__.py").is_file():
        return "core"  # a module of the package itself, or a name defined in its __init__
    return parts[1]


def _inside(name: str, top: str) -> bool:
    return name == top or name.startswith(top + ".")


def layering_violations(package_dir: Path = PACKAGE) -> list[str]:
    """Every import of the library at ``package_dir`` that breaks a rule of the module docstring (one line per
    module and floor it reaches)."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        module = _module_name(path, package_dir)
        here = floor_of(module)
        reached = {}
        for name in sorted(imported_modules(path, package_dir), key=len):
            top = COMPANION if _inside(name, COMPANION) else floor_of(name)
            reached.setdefault(top, name)  # the shortest name imported from that floor
        for name in reached.values():
            where = f"{path.relative_to(package_dir)} imports {name}"
            if _inside(name, COMPANION):
                found.append(f"{where}: the library never imports the companion")
            elif not _inside(name, LIBRARY) or name == LIBRARY:
                continue
            elif floor_of(name) == here:
                continue
            elif here == "core":
                found.append(f"{where}: the theory core imports no layer above it")
            elif here == LAYER and floor_of(name) != "core":
                found.append(f"{where}: the experiment layer imports no subject")
            elif here in SUBJECTS and floor_of(name) in SUBJECTS:
                found.append(f"{where}: a subject imports no sibling")
    return found


def test_every_subpackage_sits_on_a_floor():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(CORE_PACKAGES) | {LAYER} | set(SUBJECTS)


def test_the_import_reader_resolves_relative_imports():
    names = imported_modules(PACKAGE / "hmc" / "bands.py")
    assert "attnpaths.experiments.sweep" in names and "attnpaths.hmc.data" in names
    assert "attnpaths.engine.map_tasks" in names
    assert "attnpaths.hmc.anatomy" in imported_modules(PACKAGE / "hmc" / "depth" / "networks.py")


def test_the_library_imports_downwards_only_and_never_the_companion():
    assert layering_violations() == []


@pytest.mark.parametrize(
    "module, planted, rule",
    [
        ("engine.py", "import attnpaths_book.recorder\n", "never imports the companion"),
        ("pruning/sweep.py", "from ..oneshot import episodes\n", "no sibling"),
        ("related/measures.py", "from ..exchangeability.estimators import prefix_softmax_averages\n", "no sibling"),
        ("experiments/sweep.py", "def f():\n    from ..hmc import data\n", "imports no subject"),
        ("kernels.py", "from .experiments import path_data\n", "no layer above it"),
        (
            "paths.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .pruning import sweep\n",
            "no layer above it",
        ),
        (
            "theory/__init__.py",
            "def f():\n    import importlib\n    return importlib.import_module('attnpaths_book.cli')\n",
            "never imports the companion",
        ),
        ("__init__.py", "_EXPORTS['gradient_head_importance'] = 'attnpaths.pruning.sweep'\n", "no layer above it"),
    ],
)
def test_a_planted_import_is_caught(tmp_path, module, planted, rule):
    copy = tmp_path / "attnpaths"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / module).write_text((copy / module).read_text() + "\n" + planted)
    found = layering_violations(copy)
    assert len(found) == 1 and module in found[0] and rule in found[0], found


BOOK_ONLY_MODULES = (*BOOK_MODULES, "book_helpers")
"""What ``pip install .`` (without the book extra) does not install, and the book's tests' own helpers."""


def test_the_library_tests_import_nothing_of_the_book():
    tests = Path(__file__).resolve().parent
    found = []
    for path in [*sorted(tests.glob("*.py")), tests.parent / "conftest.py"]:
        names = imported_modules(path, tests, strings=False)  # the tests name the book's modules to hide them
        found += [f"{path.name} imports {name}" for name in sorted(names) if name.split(".")[0] in BOOK_ONLY_MODULES]
    assert found == []
