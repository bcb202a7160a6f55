"""Cache keys of executed chapters.

A chapter is re-executed only when its key changes. The key hashes

- the chapter's source file,
- every file of the package sources (``src/attnpaths``; Jupyter Book's own cache would not see them),
- the complete parameters of the execution (profile values, overrides, ``profile``, ``results_dir``),
- the versions of Python and of the numerical libraries (a new numpy may change the numbers),
- for a report chapter, the keys of the chapters before it (it shows their results and run times).

The key is stored in the executed notebook's metadata (``metadata.attnpaths_execution.cache_key``).
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path

NUMERIC_LIBRARIES = ("numpy", "scipy", "torch", "matplotlib")
EXECUTION_METADATA = "attnpaths_execution"
"""Notebook metadata key of the execution record (cache key, profile, overrides, wall time, peak memory)."""


def package_digest(package_dir) -> str:
    """SHA-256 of every file under ``package_dir`` (relative paths and contents; caches and bytecode left out)."""
    package_dir = Path(package_dir)
    digest = hashlib.sha256()
    files = sorted(p for p in package_dir.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"))
    for path in files:
        digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def environment(packages=NUMERIC_LIBRARIES) -> dict:
    """Versions of Python and of ``packages`` (``None`` for one not installed); by default the numerical
    libraries, whose versions enter every key."""
    versions = {"python": platform.python_version()}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def chapter_key(source, parameters: dict, package: str, upstream: tuple = (), env: dict | None = None) -> str:
    """The cache key of one execution.

    Args:
        source: path of the chapter's MyST source.
        parameters: the complete injected parameters (JSON-serialisable).
        package: :func:`package_digest` of the package sources.
        upstream: keys of the chapters a report chapter reads (empty for the others).
        env: :func:`environment` (computed when ``None``).
    """
    record = {
        "source": hashlib.sha256(Path(source).read_bytes()).hexdigest(),
        "package": package,
        "parameters": parameters,
        "upstream": list(upstream),
        "environment": environment() if env is None else env,
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def stored_key(notebook_path) -> str | None:
    """The key recorded in an executed notebook (``None`` if the notebook is missing or carries none)."""
    path = Path(notebook_path)
    if not path.is_file():
        return None
    try:
        notebook = json.loads(path.read_text())
        return notebook["metadata"][EXECUTION_METADATA]["cache_key"]
    except (ValueError, KeyError, TypeError):  # unreadable or foreign: not a cached result
        return None
