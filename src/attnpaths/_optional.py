"""The library's optional dependencies: which extra of ``pip install 'attnpaths[...]'`` brings each one.

The core (theory, kernels, networks, the sampler, streaming) needs numpy, scipy, torch, tqdm and threadpoolctl
only; a module that needs more imports it through :func:`require`, so that its absence is an ``ImportError``
naming the extra to install rather than a bare ``ModuleNotFoundError``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

EXTRAS = {
    "engine": "Dask clusters for the sweeps",
    "diagnostics": "the samplers' split R-hat",
    "plots": "the figures",
    "tasks": "the paper's task data: scikit-learn's digits, glyphs rendered with matplotlib and pillow",
    "pretrained": "a pretrained BERT's weights read from a safetensors file",
}
"""The extras of ``pyproject.toml`` that hold optional dependencies of the library, and what each serves."""

MODULES = {
    "engine": ("dask", "distributed"),
    "diagnostics": ("arviz",),
    "plots": ("matplotlib",),
    "tasks": ("sklearn", "PIL", "matplotlib"),
    "pretrained": ("safetensors",),
}
"""The top-level modules each extra installs."""

DISTRIBUTIONS = {"sklearn": "scikit-learn", "PIL": "pillow", "distributed": "dask[distributed]"}
"""The name ``pip`` installs an optional module under, where it differs from the module's."""


def _check_extra(extra: str) -> None:
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {sorted(EXTRAS)}, got {extra!r}")


def missing(extra: str) -> tuple[str, ...]:
    """The modules of ``extra`` (:data:`MODULES`) that are not installed; empty when the extra is.

    Raises ``ValueError`` when ``extra`` is not one of :data:`EXTRAS`."""
    _check_extra(extra)
    return tuple(name for name in MODULES[extra] if importlib.util.find_spec(name) is None)


def require(module_name: str, extra: str) -> ModuleType:
    """Import ``module_name`` (dotted, e.g. ``"matplotlib.pyplot"``) and return it.

    Raises ``ImportError`` naming the module that needs it, the missing package and the command that installs
    it, ``pip install 'attnpaths[extra]'``, when it is not installed; ``ValueError`` when ``extra`` is not one
    of :data:`EXTRAS`."""
    _check_extra(extra)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        top = module_name.split(".")[0]
        if err.name is None or err.name.split(".")[0] != top:
            raise  # the package is there but one of its own imports is missing: its error says which
        # the calling module is the part of attnpaths that needs the package: read from the caller's frame
        # rather than passed, so that no call site can name the wrong one
        user = sys._getframe(1).f_globals.get("__name__", "attnpaths")
        raise ImportError(
            f"{user} needs the optional dependency {DISTRIBUTIONS.get(top, top)} ({EXTRAS[extra]}): "
            f"pip install 'attnpaths[{extra}]'",
            name=module_name,
        ) from err
