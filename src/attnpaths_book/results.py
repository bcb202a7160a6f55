"""Machine-readable results of a book chapter: ``<results_dir>/<chapter>.json``.

Schema: ``{"chapter", "profile", "parameters", "package_version", "values": {name: number | list | nested}}``.
Files are written to a temporary file and renamed, so a half-written file is never taken for a result.

While the book's executor runs a chapter, the kernel's environment holds :data:`STAGING_ENV`: results files
meant for the book's results folder then go to the run's staging folder, and the executor moves the chapter's
file into place only when every cell succeeded. A killed, interrupted or failed run thus leaves the previous
results file as it was.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import torch

from attnpaths import __version__
from attnpaths.json_files import read_json

STAGING_ENV = "ATTNPATHS_RESULTS_STAGING"
"""Environment variable that the book's executor sets for a chapter's kernel, holding the JSON object
``{"results_dir": ABSOLUTE PATH, "staging_dir": ABSOLUTE PATH}``. :func:`write_results` puts a results file
meant for ``results_dir`` into ``staging_dir`` instead, and :func:`read_results` reads a file staged there
before the one in ``results_dir``; other folders are used as given."""


def to_jsonable(value):
    """Convert numpy / torch scalars and arrays (nested in dicts, lists, tuples) to plain JSON values."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"cannot store a value of type {type(value).__name__} in a results file")


def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp creates owner-only files; results are for every reader
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _staging_dir(results_dir) -> Path | None:
    """The staging folder that replaces ``results_dir`` during an executor run (see :data:`STAGING_ENV`),
    else ``None``."""
    setting = os.environ.get(STAGING_ENV)
    if not setting:
        return None
    try:
        staging = json.loads(setting)
        published, staged = Path(staging["results_dir"]), Path(staging["staging_dir"])
    except (ValueError, TypeError, KeyError) as err:
        raise ValueError(
            f"the environment variable {STAGING_ENV} must hold a JSON object with the keys "
            f"'results_dir' and 'staging_dir', got {setting!r}"
        ) from err
    return staged if Path(results_dir).resolve() == published.resolve() else None


def write_results(chapter: str, profile: str, parameters: dict, values: dict, results_dir="_build/results") -> Path:
    """Write a chapter's results file and return its path (during an executor run, the staged file that the
    executor moves to ``results_dir`` when the chapter has succeeded: see :data:`STAGING_ENV`)."""
    record = {
        "chapter": chapter,
        "profile": profile,
        "parameters": to_jsonable(parameters),
        "package_version": __version__,
        "values": to_jsonable(values),
    }
    folder = _staging_dir(results_dir) or Path(results_dir)
    return atomic_write_text(folder / f"{chapter}.json", json.dumps(record, indent=1, sort_keys=True) + "\n")


def read_results(chapter: str, results_dir="_build/results") -> dict:
    """Read a chapter's results file (raises ``FileNotFoundError`` naming the chapter if it is missing).
    During an executor run, a file this run has staged for ``results_dir`` is read first (:data:`STAGING_ENV`)."""
    path = Path(results_dir) / f"{chapter}.json"
    staging = _staging_dir(results_dir)
    if staging is not None and (staging / f"{chapter}.json").is_file():
        path = staging / f"{chapter}.json"
    if not path.exists():
        raise FileNotFoundError(
            f"no results for chapter {chapter!r} at {path}: run `python -m attnpaths_book run {chapter}`"
        )
    return read_json(path, "results file")
