"""The package's layers import downwards only: the tasks (hmc, oneshot) never import each other, the experiment
layer imports no task, and the theory core imports neither (read from the source with ast, imports inside
functions included)."""

import ast
from pathlib import Path

import pytest

import attnpaths

PACKAGE = Path(attnpaths.__file__).parent
TASKS = ("hmc", "oneshot")
SUBJECTS = ("hmc", "oneshot", "exchangeability", "related", "pruning")
CORE = ("attention", "paths", "kernels", "action", "theory", "head_scores", "network", "sampler",
        "order_parameter_posterior", "engine", "claims", "finite_width_claims", "_validation", "checks")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the modules (and of the names imported from them) that ``path`` imports."""
    module = _module_name(path)
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
    return found


def _modules_of(subpackage: str) -> list[Path]:
    folder = PACKAGE / subpackage
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{subpackage}.py"]


def _imports_of(paths, targets) -> list[str]:
    hits = []
    for path in paths:
        for name in sorted(imported_modules(path)):
            if any(name == f"attnpaths.{t}" or name.startswith(f"attnpaths.{t}.") for t in targets):
                hits.append(f"{path.relative_to(PACKAGE)} imports {name}")
    return hits


def test_the_import_reader_resolves_relative_imports():
    names = imported_modules(PACKAGE / "hmc" / "experiments.py")
    assert "attnpaths.experiments.sweep" in names and "attnpaths.hmc.data" in names
    assert "attnpaths.engine.map_tasks" in names
    # "from .. import hmc" in a module of a subpackage names the task
    assert "attnpaths.hmc" in imported_modules(PACKAGE / "benchmarks" / "sampler.py")


@pytest.mark.parametrize("task", TASKS)
def test_a_task_does_not_import_the_other(task):
    other = [t for t in TASKS if t != task]
    assert _imports_of(_modules_of(task), other) == []


def test_the_experiment_layer_imports_no_task_and_no_other_subject():
    paths = _modules_of("experiments")
    assert len(paths) >= 5
    assert _imports_of(paths, SUBJECTS) == []


def test_the_theory_core_imports_no_layer_above_it():
    paths = [path for name in CORE for path in _modules_of(name)]
    assert _imports_of(paths, SUBJECTS + ("experiments", "book", "benchmarks")) == []


def test_the_second_paper_does_not_import_the_related_results():
    assert _imports_of(_modules_of("exchangeability"), ("related",)) == []
