"""The console script ``attnpaths``: the book's command line (:mod:`attnpaths_book.cli`) where the book extra is
installed, and one line saying what to install where it is not.

``pip install .`` installs the library and this script; the command line itself executes chapters and builds the
book, which needs the packages of the ``book`` extra (``pip install '.[book]'``, or ``pip install -r
requirements.txt`` from a checkout). Without them, ``attnpaths`` prints that instead of an import traceback.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

BOOK_EXTRA_MODULES = (
    "yaml",
    "jupytext",
    "papermill",
    "nbformat",
    "nbclient",
    "myst_nb",
    "IPython",
    "jupyter_book",
    "sphinx",
    "selenium",
    "pypdf",
)
"""The modules of the ``book`` extra (pyproject.toml) that the companion imports beyond the library's own
dependencies."""


def missing_book_modules() -> list[str]:
    """The modules of :data:`BOOK_EXTRA_MODULES` that cannot be imported here."""
    missing = []
    for name in BOOK_EXTRA_MODULES:
        try:
            found = find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def main(argv: list[str] | None = None) -> int:
    """Run :func:`attnpaths_book.cli.main`, or print one line and return 1 where the book extra is missing."""
    missing = missing_book_modules()
    if missing:
        print(
            f"attnpaths: the book's command line needs the book extra, not installed here (missing: "
            f"{', '.join(missing)}): pip install 'attnpaths[book]' (from a checkout: pip install -r "
            "requirements.txt); the library itself is importable without it (import attnpaths)",
            file=sys.stderr,
        )
        return 1
    from attnpaths_book.cli import main as cli_main

    return cli_main(argv)
