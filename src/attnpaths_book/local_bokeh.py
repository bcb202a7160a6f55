"""Sphinx extension: serve BokehJS from the built book, for the explorable figures (:mod:`attnpaths_book.explorable`).

BokehJS comes with the installed ``bokeh`` package (its ``server/static/js``). After an HTML build the core and
widget bundles are copied to ``_static/bokeh/`` (named with the version, ``bokeh-<version>.min.js``), and the pages
that hold an explorable figure (an element of class :data:`attnpaths_book.explorable.MARKER`) load them from there,
so the figures work offline; the other pages load nothing more. Enable it in ``_config.yml`` under ``sphinx:
extra_extensions``.
"""

from __future__ import annotations

from pathlib import Path

from attnpaths_book.explorable import MARKER
from attnpaths_book.local_mathjax import copy_if_changed

BUNDLES = ("bokeh", "bokeh-widgets")
"""The BokehJS bundles the figures need, the core (plots, data sources, callbacks) and the widgets (sliders,
selectors, checkboxes)."""

FOLDER = "bokeh"
"""The folder under ``_static`` that holds them."""


def bokehjs_files() -> dict[str, Path]:
    """``{name under _static/bokeh: installed file}`` of :data:`BUNDLES` (``FileNotFoundError`` if one is missing)."""
    import bokeh
    from bokeh.util.paths import bokehjs_path

    files = {}
    for bundle in BUNDLES:
        path = Path(bokehjs_path()) / "js" / f"{bundle}.min.js"
        if not path.is_file():
            raise FileNotFoundError(f"BokehJS bundle {path} is missing: reinstall bokeh (listed in requirements.txt)")
        files[f"{bundle}-{bokeh.__version__}.min.js"] = path
    return files


def copy_bokehjs(destination) -> int:
    """Copy the bundles to ``destination`` (files already identical are left alone); returns the number written."""
    destination = Path(destination)
    return sum(copy_if_changed(path, destination / name) for name, path in bokehjs_files().items())


def _configure(app, config) -> None:
    bokehjs_files()  # fail early, with the reason, rather than build pages whose figures stay blank


def _add_scripts(app, pagename, templatename, context, doctree) -> None:
    if MARKER in context.get("body", ""):
        for name in bokehjs_files():  # in order: the widgets bundle extends the core
            app.add_js_file(f"{FOLDER}/{name}")


def _copy(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        copy_bokehjs(Path(app.outdir) / "_static" / FOLDER)


def setup(app):
    """Sphinx entry point."""
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _add_scripts)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
