"""No module of the package calls another module's private methods: what one module needs of another's objects
is public and documented (e.g. the staged interface of attnpaths.head_models.LayeredHeadModel)."""

import ast
from pathlib import Path

import attnpaths

PACKAGE = Path(attnpaths.__file__).parent


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_methods(tree: ast.Module) -> set[str]:
    """The private method names defined in the classes of a module."""
    return {
        item.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_private(item.name)
    }


def _is_own_object(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: a class calling its own (or its bases') methods."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def foreign_private_calls(sources: dict[str, str]) -> list[str]:
    """``module:line obj._name(...)`` for every call, in ``sources`` (``{module name: source}``), of a private
    method that another module defines and the calling module does not, on an object other than its own."""
    trees = {name: ast.parse(source) for name, source in sources.items()}
    defined = {name: _private_methods(tree) for name, tree in trees.items()}
    found = []
    for name, tree in trees.items():
        elsewhere = set().union(*(methods for other, methods in defined.items() if other != name))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            attr = node.func.attr
            if _is_private(attr) and attr in elsewhere - defined[name] and not _is_own_object(node.func.value):
                found.append(f"{name}:{node.lineno} {ast.unparse(node.func)}(...)")
    return found


def package_sources() -> dict[str, str]:
    return {str(path.relative_to(PACKAGE)): path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


def test_no_module_calls_another_modules_private_methods():
    # the check sees a planted call, and only that one (a class's own and its bases' methods are its own)
    sources = {
        "model.py": "class Model:\n    def _stage(self):\n        return 1\n    def run(self):\n        return self._stage()\n",
        "user.py": "def use(model):\n    return model._stage()\n",
        "own.py": "class Sub(Base):\n    def _stage(self):\n        return super()._stage()\n",
    }
    assert foreign_private_calls(sources) == ["user.py:2 model._stage(...)"]
    assert foreign_private_calls(package_sources()) == []
