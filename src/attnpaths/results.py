"""Machine-readable results of a book chapter: ``<results_dir>/<chapter>.json``.

Schema: ``{"chapter", "profile", "parameters", "package_version", "values": {name: number | list | nested}}``.
Files are written to a temporary file and renamed, so a half-written file is never taken for a result.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import torch

from . import __version__


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


def write_results(chapter: str, profile: str, parameters: dict, values: dict, results_dir="_build/results") -> Path:
    """Write a chapter's results file and return its path."""
    record = {
        "chapter": chapter,
        "profile": profile,
        "parameters": to_jsonable(parameters),
        "package_version": __version__,
        "values": to_jsonable(values),
    }
    return atomic_write_text(Path(results_dir) / f"{chapter}.json", json.dumps(record, indent=1, sort_keys=True) + "\n")


def read_results(chapter: str, results_dir="_build/results") -> dict:
    """Read a chapter's results file (raises ``FileNotFoundError`` naming the chapter if it is missing)."""
    path = Path(results_dir) / f"{chapter}.json"
    if not path.exists():
        raise FileNotFoundError(f"no results for chapter {chapter!r} at {path}: run `python -m attnpaths run {chapter}`")
    return json.loads(path.read_text())
