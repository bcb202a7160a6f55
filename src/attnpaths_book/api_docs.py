"""Sphinx extension: the API pages document every public object, and an object without a docstring is an error.

The API pages (``book/api/``) are module pages that autosummary generates with ``automodule :members:
:undoc-members:``. With ``sphinx.ext.autodoc`` alone, a public function or class without a docstring would be
listed with an empty description (or, without ``:undoc-members:``, silently left out). This extension hooks
``autodoc-process-docstring`` and ``autodoc-skip-member`` and

- warns for a documented module without a docstring;
- warns (an error in the book's build, which runs with warnings as errors) for a public function, class, method
  or property of a documented module that has no docstring;
- leaves out data without a docstring of their own (dataclass fields and module constants, which the class's
  ``Attributes:`` section or the module docstring describe), so that they are not listed twice; the members
  of an enumeration are listed.

Members a module imports from elsewhere are left to the page of the module that defines them. Enable it in
``_config.yml`` under ``sphinx: extra_extensions``, after ``sphinx.ext.autodoc``.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from functools import cached_property

from sphinx.util import logging

logger = logging.getLogger(__name__)

_CURRENT = "attnpaths_api_current"
"""Key of the Sphinx environment's temporary data: ``(module, class)`` whose members autodoc documents next
(``class`` is the qualified name inside the module, ``""`` for the module's own members)."""


def needs_docstring(obj) -> bool:
    """Whether a public member ``obj`` must carry its own docstring: functions, classes, methods, properties."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    return inspect.isroutine(obj) or inspect.isclass(obj) or isinstance(obj, (property, cached_property))


def own_docstring(obj) -> str:
    """The docstring written for ``obj`` itself (not one inherited from a base class)."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, cached_property):
        obj = obj.func
    if not inspect.isclass(obj):
        return getattr(obj, "__doc__", None) or ""
    doc = obj.__dict__.get("__doc__") or ""
    if dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
        return ""  # the signature that @dataclass writes when the class has no docstring
    return doc


def source_location(obj) -> str | None:
    """``"file:line"`` where ``obj`` (a routine, class or property) is defined, if Python knows it."""
    for candidate in (getattr(obj, "fget", None), getattr(obj, "func", None), getattr(obj, "__func__", None), obj):
        if candidate is None:
            continue
        try:
            return f"{inspect.getsourcefile(candidate)}:{inspect.getsourcelines(candidate)[1]}"
        except (TypeError, OSError):
            continue
    return None


def attribute_docstrings(module: str) -> set[tuple[str, str]]:
    """``(scope, name)`` of the data of ``module`` that have a docstring of their own (a string literal after
    the assignment or a ``#:`` comment before it); ``scope`` is ``""`` at module level, else the class's
    qualified name."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        return set(ModuleAnalyzer.for_module(module).find_attr_docs())
    except Exception:  # noqa: BLE001 - no source to analyse: no data docstrings
        return set()


def _note_current(app, what, name, obj, options, lines) -> None:
    """``autodoc-process-docstring``: a module's or class's docstring is processed before its members are
    documented; remember whose members come next."""
    if what == "module":
        app.env.temp_data[_CURRENT] = (name, "")
        if not any(line.strip() for line in lines):
            logger.warning(
                "module %s has no docstring: every module on the API pages needs one",
                name,
                type="attnpaths",
                subtype="docstring",
                location=app.env.docname,
            )
    elif what in ("class", "exception"):
        module = getattr(obj, "__module__", "")
        app.env.temp_data[_CURRENT] = (module, name.removeprefix(module + "."))


def _check_member(app, what, name, obj, skip, options):
    """``autodoc-skip-member``: warn for a public routine or class without a docstring, leave out data without
    one. Returns ``None`` (autodoc decides) or ``True`` (leave the member out)."""
    if skip or name.startswith("_") or "docname" not in app.env.temp_data:
        return None  # private, or autosummary listing members while it writes the page stubs
    module, scope = app.env.temp_data.get(_CURRENT, ("", ""))
    if needs_docstring(obj):
        if what == "module" and getattr(obj, "__module__", module) != module:
            return None  # imported: autodoc leaves it to the page of the module that defines it
        if not own_docstring(obj).strip():
            owner = f"{module}.{scope}" if scope else module
            logger.warning(
                "%s.%s has no docstring: every public function, class, method and property on the API pages needs one",
                owner,
                name,
                type="attnpaths",
                subtype="docstring",
                location=source_location(obj) or app.env.docname,
            )
        return None
    if isinstance(obj, enum.Enum):
        return None  # an enumeration's members are listed (the class docstring describes them)
    if (scope if what != "module" else "", name) not in attribute_docstrings(module):
        return True
    return None


def _enum_signature(app, what, name, obj, options, signature, return_annotation):
    """``autodoc-process-signature``: an enumeration is shown without the call signature of ``Enum``."""
    if what == "class" and inspect.isclass(obj) and issubclass(obj, enum.Enum):
        return "", None
    return None


def setup(app):
    """Register the checks (the extension needs ``sphinx.ext.autodoc``)."""
    app.setup_extension("sphinx.ext.autodoc")
    app.connect("autodoc-process-docstring", _note_current)
    app.connect("autodoc-skip-member", _check_member)
    app.connect("autodoc-process-signature", _enum_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
