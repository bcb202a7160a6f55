"""What the book's test modules share beyond ``helpers`` (the library's tests' helpers, which they import too): the
API reference's module list, headless Chromium or a skip, the sampler benchmarks' tiny sizes, tiny throw-away books,
the one-shot and pruning chapters' data set and models from their parameters, and the comparisons of the
paper-record tests."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest
import yaml
from helpers import ROOT

from attnpaths_book import runner, store, tolerances
from attnpaths_book.layout import BookLayout
from attnpaths_book.results import to_jsonable

API_INDEX = "book/api/index"
"""The API reference's page of the library, floor by floor."""

API_COMPANION = "book/api/companion"
"""The API reference's page of the book's companion (``attnpaths_book``)."""

API_INDEX_PAGES = (API_INDEX, API_COMPANION)
"""The API reference's pages: their autosummary lists name the modules that have an API page."""

API_PAGES_DIR = "book/api/generated"
"""Where the build puts the API pages (``<module>.html``), relative to the HTML root."""

_AUTOSUMMARY_ENTRY = re.compile(r"^ {3}(attnpaths(?:_book)?(?:\.\w+)*)[ \t]*$", re.M)


def api_modules(page: str | None = None) -> list[str]:
    """The modules listed in the autosummary lists of the API reference's pages (or of ``page``), in order."""
    pages = API_INDEX_PAGES if page is None else (page,)
    return [m for p in pages for m in _AUTOSUMMARY_ENTRY.findall((ROOT / f"{p}.md").read_text())]


TINY_SAMPLER_SIZES = ["--data", "random", "--width", "2", "--num-train", "6", "--num-test", "4", "--input-width", "5",
                      "--num-tokens", "3"]  # fmt: skip
"""The command-line sizes of a sampler benchmark (``bench sampler``, ``bench numpyro_nuts``) that runs in seconds:
random data, width 2, 6 training and 4 test examples of 3 tokens of 5 features."""


def require_browser() -> None:
    """Skip the calling test or fixture where headless Chromium cannot start (the reason says what is missing);
    on CI, which must run the browser checks, fail it instead."""
    from attnpaths_book.browser import missing_browser

    reason = missing_browser()
    if reason:
        if os.environ.get("CI") == "true":  # CI must run the browser checks, never skip them
            pytest.fail(reason)
        pytest.skip(reason)


@contextlib.contextmanager
def browser_or_skip(**options):
    """A headless Chromium session (:func:`attnpaths_book.browser.start_browser` with ``options``) after
    :func:`require_browser`: the calling test or fixture is skipped where none can start."""
    from attnpaths_book.browser import start_browser

    require_browser()
    with start_browser(**options) as session:
        yield session


# --------------------------------------------------------------------------------------------------------
# tiny throw-away books (the runner's, CLI's, cache's and engine's tests)

FRONT_MATTER = {
    "jupytext": {"text_representation": {"extension": ".md", "format_name": "myst", "format_version": 0.13}},
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
}


def write_chapter(
    root: Path, name: str, parameters: str, body: str, profiles: dict | None = None, report: bool = False
) -> Path:
    """Write ``book/<name>.md``: a MyST notebook with a parameters cell (``profile`` and ``results_dir`` are
    added), then ``body`` as one code cell, then a cell recording the results ``values`` defined by ``body``
    (:class:`attnpaths_book.recorder.ChapterRecorder`) and writing the results file."""
    meta = dict(FRONT_MATTER)
    settings = {"profiles": profiles or {"smoke": {}, "paper": {}}}
    if report:
        settings["report"] = True
    meta["attnpaths"] = settings
    parameters = textwrap.dedent(parameters).strip()
    parameters = (parameters + "\n" if parameters else "") + 'profile = "smoke"\nresults_dir = "_build/results"'
    text = (
        f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n\n# Chapter {name}\n\n"
        f"```{{code-cell}} ipython3\n:tags: [parameters]\n\n{parameters}\n```\n\n"
        f"```{{code-cell}} ipython3\n{textwrap.dedent(body).strip()}\n```\n\n"
        "```{code-cell} ipython3\nfrom attnpaths_book.recorder import ChapterRecorder\n"
        f"recorder = ChapterRecorder({name!r}, globals())\n"
        "for key, value in values.items():\n    recorder.record(key, value)\nrecorder.write()\n```\n"
    )
    path = root / "book" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_toc(root: Path, names: list[str]) -> None:
    """A ``_toc.yml`` listing ``book/<name>`` in order (the first is the root)."""
    toc = {"format": "jb-book", "root": f"book/{names[0]}", "chapters": [{"file": f"book/{n}"} for n in names[1:]]}
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))


def write_stand_in_packages(root: Path) -> Path:
    """Stand-in sources of the library and of its companion under ``root/src`` (their digest enters the cache
    key; the companion's ``__init__`` imports the library, as the real one does). Returns the library folder."""
    package = root / "src" / "attnpaths"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("# stand-in package sources: their digest enters the cache key\n")
    companion = root / "src" / "attnpaths_book"
    companion.mkdir()
    (companion / "__init__.py").write_text("import attnpaths  # the companion imports the library\n")
    return package


def copy_repository(destination: Path) -> Path:
    """Copy the repository's book (``_toc.yml``, ``_config.yml``, ``book/``) and package sources
    (``src/attnpaths``, ``src/attnpaths_book``, without bytecode) to ``destination``, without ``_build``: a checkout that a test may
    edit or execute. Returns ``destination``."""
    destination.mkdir(parents=True)
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, destination / name)
    shutil.copytree(ROOT / "book", destination / "book")
    for package in ("attnpaths", "attnpaths_book"):
        shutil.copytree(
            ROOT / "src" / package, destination / "src" / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    return destination


# --------------------------------------------------------------------------------------------------------
# the one-shot and pruning chapters' data set and models, from their parameters


def oneshot_dataset(p):
    """The glyph data set that the one-shot chapter loads with the parameters ``p`` (a profile's resolved
    parameters or a paper record's: ``p[name]``), without a progress bar."""
    from attnpaths.oneshot import DistortionConfig, GlyphDatasetConfig, load_image_dataset

    config = GlyphDatasetConfig(
        instances_per_class=p["instances_per_class"],
        alphabets=tuple(p["alphabets"]) or None,
        image_size=p["image_size"],
        distortion=DistortionConfig().scaled(p["distortion_scale"]),
        seed=p["data_seed"],
    )
    return load_image_dataset(config=config, progress=False)


def oneshot_training(p):
    """The :class:`~attnpaths.oneshot.TrainingConfig` of the one-shot chapter's model with the parameters ``p``
    (seed ``train_seed``)."""
    from attnpaths.oneshot import TrainingConfig

    return TrainingConfig(
        width=p["model_width"],
        qk_width=p["qk_width"],
        num_heads=p["num_heads"],
        channels=p["input_channels"],
        steps=p["train_steps"],
        batch_size=p["batch_size"],
        learning_rate=p["learning_rate"],
        validate_every=p["validate_every"],
        validation_sequences=p["validation_sequences"],
        seed=p["train_seed"],
    )


def pruning_training(p, architecture: str):
    """The :class:`~attnpaths.pruning.training.ModelTraining` of the pruning chapter's ``architecture`` with the
    parameters ``p`` (a profile's resolved parameters or a paper record's)."""
    from attnpaths.pruning.training import ModelTraining

    return ModelTraining(
        architecture=architecture,
        width=p["width"],
        qk_width=p["qk_width"],
        num_heads=p["num_heads"],
        num_layers=p["num_layers"],
        steps=p["train_steps"],
        batch_size=p["batch_size"],
        learning_rate=p["learning_rate"],
    )


# --------------------------------------------------------------------------------------------------------
# comparisons with the committed paper records (tests/book/test_paper_records.py)

MC_Z = tolerances.MC_Z
"""z threshold of a Monte-Carlo estimate compared with a recorded one (:data:`attnpaths_book.tolerances.MC_Z`)."""


def _numeric(value):
    """``value`` as a float64 array when it is a number or a (nested) list of numbers, else ``None``."""
    if isinstance(value, bool) or isinstance(value, str) or value is None:
        return None
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return array


def assert_matches_record(chapter, key, recomputed, recorded):
    """Assert that a recomputed value equals the one in ``chapter``'s paper record, within the tolerance that
    the reproducibility table gives its key (:func:`attnpaths_book.tolerances.rule_for`).

    Numbers and arrays (any nesting of lists) must satisfy ``|a - b| <= rtol |b| + atol + floor max|b|`` entry
    by entry, with the same shape; dicts must have the same keys and are compared entry by entry, each under
    its own key's rule; anything else (strings, bools) must be equal. The error names the chapter, the key
    (``key`` extended by the dict keys and the array index), both values and the rule's reason.

    Args:
        chapter: the chapter's name (it selects the rules).
        key: where the value lies in the record's ``values``, e.g. ``"U.10"``.
        recomputed: the value computed now (numpy and torch values are converted).
        recorded: the value read from the record.
    """
    recomputed = to_jsonable(recomputed)
    if isinstance(recorded, dict) or isinstance(recomputed, dict):
        assert isinstance(recorded, dict) and isinstance(recomputed, dict), (
            f"{chapter}: values.{key}: recomputed {type(recomputed).__name__}, recorded {type(recorded).__name__}"
        )
        assert set(recomputed) == set(recorded), (
            f"{chapter}: values.{key}: recomputed keys {sorted(recomputed)}, recorded keys {sorted(recorded)}"
        )
        for name in recorded:
            assert_matches_record(chapter, f"{key}.{name}", recomputed[name], recorded[name])
        return
    a, b = _numeric(recomputed), _numeric(recorded)
    if a is None or b is None:
        assert recomputed == recorded, f"{chapter}: values.{key}: recomputed {recomputed!r}, recorded {recorded!r}"
        return
    assert a.shape == b.shape, f"{chapter}: values.{key}: recomputed shape {a.shape}, recorded shape {b.shape}"
    if a.size == 0:
        return
    rule = tolerances.rule_for(chapter, f"values.{key}")
    assert rule.se is None and math.isfinite(rule.rtol), f"{chapter}: values.{key} is not a class b number ({rule.cls})"
    both_nan = np.isnan(a) & np.isnan(b)
    floor = rule.floor * np.nanmax(np.abs(b)) if np.any(np.isfinite(b)) else 0.0
    allowed = rule.rtol * np.abs(b) + rule.atol + floor
    error = np.where(both_nan, 0.0, np.abs(a - b))
    bad = ~(error <= allowed)
    if np.any(bad):
        excess = np.where(bad, np.nan_to_num(error / np.maximum(allowed, 1e-300), nan=np.inf), 0.0)
        worst = np.unravel_index(int(np.argmax(excess)), a.shape) if a.ndim else ()
        where = f"[{', '.join(str(int(i)) for i in worst)}]" if a.ndim else ""
        relative = abs(a[worst] - b[worst]) / abs(b[worst]) if b[worst] != 0 else float("inf")
        raise AssertionError(
            f"{chapter}: values.{key}{where} differs from the paper record: recomputed {a[worst].item()!r}, "
            f"recorded {b[worst].item()!r} (relative difference {relative:.3g}; {int(bad.sum())} of {a.size} entries "
            f"differ; class {rule.cls}, rtol={rule.rtol:g}, atol={rule.atol:g}, floor={rule.floor:g}: {rule.reason})"
        )


def assert_within_mc_error(chapter, key, estimate, estimate_se, recorded, recorded_se, *, z=MC_Z):
    """Assert that a Monte-Carlo estimate agrees with the recorded one within their combined standard error:
    ``|a - b| <= z sqrt(se_a^2 + se_b^2)`` entry by entry (``z`` defaults to :data:`MC_Z`). The error names
    the chapter, the key, the worst entry, both values and its z-score."""
    a, sa = np.asarray(estimate, dtype=np.float64), np.asarray(estimate_se, dtype=np.float64)
    b, sb = np.asarray(recorded, dtype=np.float64), np.asarray(recorded_se, dtype=np.float64)
    assert a.shape == b.shape, f"{chapter}: values.{key}: recomputed shape {a.shape}, recorded shape {b.shape}"
    scale = np.sqrt(sa**2 + sb**2)
    zscores = np.where(scale > 0, np.abs(a - b) / np.where(scale > 0, scale, 1.0), np.where(a == b, 0.0, np.inf))
    if np.all(zscores <= z):
        return
    worst = np.unravel_index(int(np.argmax(zscores)), a.shape) if a.ndim else ()
    where = f"[{', '.join(str(int(i)) for i in worst)}]" if a.ndim else ""
    raise AssertionError(
        f"{chapter}: values.{key}{where} differs from the paper record beyond its Monte-Carlo error: recomputed "
        f"{a[worst].item()!r} +- {sa[worst]:.3g}, recorded {b[worst].item()!r} +- {sb[worst]:.3g} "
        f"(z = {zscores[worst]:.2f} > {z:g}; {int((zscores > z).sum())} of {a.size} entries)"
    )


# ----------------------------------------------------------------------------------------------------------
# a chapter's committed unit, without a kernel (the store's and the runner's fault tests)


def unit_files(layout: BookLayout, chapter: str) -> dict:
    """The bytes of every file of a chapter's unit (``None`` for a missing one)."""
    paths = {
        "results": layout.results_file(chapter),
        "notebook": layout.executed_notebook(f"book/{chapter}"),
        "timings": layout.timings,
        "manifest": store.manifest_path(layout.results_dir, chapter),
    }
    return {role: path.read_bytes() if path.is_file() else None for role, path in paths.items()}


def commit(layout: BookLayout, chapter: str, value: float, key: str = "key-1"):
    notebook = nbformat.writes(nbformat.v4.new_notebook(metadata={"value": value}))
    results = json.dumps({"chapter": chapter, "profile": "smoke", "values": {"value": value}}) + "\n"
    return store.commit_unit(
        layout.root,
        layout.results_dir,
        chapter,
        {
            "results": (layout.results_file(chapter), results),
            "notebook": (layout.executed_notebook(f"book/{chapter}"), notebook),
        },
        {"cache_key": key, "profile": "smoke", "execution": {"wall_s": 1.0}},
        timing={"wall_s": 1.0, "peak_rss_mib": 10.0, "cache_key": key},
    )


def tiny_book_at(root) -> BookLayout:
    """A one-chapter book in ``root`` (``theory``, parameter ``temperature``) whose unit is committed as if
    executed now (no kernel): ``status`` calls it up to date."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "_config.yml").write_text("title: tiny\n")
    write_stand_in_packages(root)
    write_chapter(root, "theory", "temperature = 0.1", "values = {'t': temperature}")
    write_toc(root, ["theory"])
    layout = BookLayout(root)
    chapter = runner.notebook_chapters(layout)[0]
    from attnpaths_book.cache import PackageCode
    from attnpaths_book.chapters import resolve_parameters
    from attnpaths_book.provenance import versions

    key = runner.current_key(
        layout, chapter, resolve_parameters(chapter, "smoke"), [chapter], PackageCode(*layout.package_dirs), versions()
    )
    commit(layout, "theory", 0.1, key=key)
    return layout
