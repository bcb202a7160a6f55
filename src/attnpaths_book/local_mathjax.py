"""Sphinx extension: serve MathJax 3 from the built book instead of a CDN.

MathJax comes from the PyPI package ``django-static-mathjax`` (MathJax 3.2.2 as static files, importable as
``mathjax``; it has no dependencies). After an HTML build the parts that the ``tex-chtml`` component loads
(the component, TeX extensions, CHTML fonts, menu, accessibility and speech files) are copied to
``_static/mathjax/`` and ``mathjax_path`` points there, so the pages typeset mathematics without network.
Enable it in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

import filecmp
import shutil
from importlib.util import find_spec
from pathlib import Path

MATHJAX_PATH = "mathjax/tex-chtml.js"
PARTS = ("tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2", "ui", "a11y", "sre")


def mathjax_es5_dir() -> Path:
    """The ``es5`` folder of the installed MathJax distribution (``FileNotFoundError`` if it is missing)."""
    spec = find_spec("mathjax")
    folder = Path(spec.origin).parent / "static" / "mathjax" / "es5" if spec and spec.origin else None
    if folder is None or not (folder / "tex-chtml.js").is_file():
        raise FileNotFoundError(
            "MathJax 3 is not installed: `pip install django-static-mathjax==3.2.2.1` "
            "(listed in requirements.txt) provides it"
        )
    return folder


def copy_mathjax(destination) -> int:
    """Copy the needed MathJax files to ``destination`` (files already identical are left alone); returns
    the number of files written."""
    source, destination = mathjax_es5_dir(), Path(destination)
    written = 0
    for part in PARTS:
        files = (
            [source / part]
            if (source / part).is_file()
            else sorted(p for p in (source / part).rglob("*") if p.is_file())
        )
        written += sum(copy_if_changed(path, destination / path.relative_to(source)) for path in files)
    return written


def copy_if_changed(path: Path, target: Path) -> bool:
    """Copy the file ``path`` to ``target`` unless ``target`` already holds the same bytes; whether it copied. The
    book's builds copy packaged JavaScript (MathJax here, BokehJS in :mod:`attnpaths_book.local_bokeh`) this way, so
    an unchanged ``_static`` is not rewritten."""
    if target.is_file() and filecmp.cmp(path, target, shallow=False):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, target)
    return True


def _configure(app, config) -> None:
    mathjax_es5_dir()  # fail early, with the install hint, rather than build pages without mathematics
    config.mathjax_path = MATHJAX_PATH


def _copy(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        copy_mathjax(Path(app.outdir) / "_static" / Path(MATHJAX_PATH).parent)


def setup(app):
    """Sphinx entry point."""
    app.connect("config-inited", _configure)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
