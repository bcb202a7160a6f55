"""Where and with what a number was computed: the one source of version and environment provenance.

Three consumers record it:

- the chapter cache (``attnpaths_book.cache``): the versions of Python and of the numerical libraries
  (:data:`NUMERIC_LIBRARIES`) enter every chapter's cache key, since a new numpy may change the numbers;
- the benchmark records (``attnpaths_book.benchmarks.record``): commit, dirty flag, machine and versions of the
  run they measured;
- the paper records (``attnpaths_book.paper_records``): commit, dirty flag, versions and machine of the
  paper-profile results they hold.

:func:`collect` gathers the whole block::

    {"package_version": "0.1.0", "commit": "<40 hex digits>" | None, "commit_dirty": bool | None,
     "versions": {"python": "3.11.9", "numpy": "2.1.0", ...},
     "machine": {"platform", "processor", "cpu_model", "cpu_capability", "cpu_count", "load_average_1min"}}

Nothing here prints or raises for a missing piece: a library that is not installed has version ``None``, a
folder outside a git checkout has commit ``None``, a system without a load average reports ``None``.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from attnpaths import __version__

NUMERIC_LIBRARIES = ("numpy", "scipy", "torch", "matplotlib")
"""The libraries whose versions can change a chapter's numbers (they enter the chapter cache key)."""


def package_version() -> str:
    """The version of the ``attnpaths`` package whose code is running (``attnpaths.__version__``)."""
    return __version__


def versions(packages=NUMERIC_LIBRARIES) -> dict:
    """``{"python": version, name: version | None for name in packages}``: the version of Python and of
    each installed distribution in ``packages`` (``None`` for one that is not installed)."""
    found = {"python": platform.python_version()}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def git_commit(directory, ignore=()) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git checkout holding ``directory``: the ``HEAD`` commit and whether tracked
    files have uncommitted changes, those under the folders ``ignore`` (relative to the checkout's top) left
    out; ``(None, None)`` outside a checkout or without git."""
    excluded = [f":(top,exclude){folder}" for folder in ignore]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ":(top)", *excluded],
            cwd=directory,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return commit, bool(status.strip())


def load_average() -> float | None:
    """The 1-minute load average of the machine (``None`` where the system has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def cpu_model() -> str | None:
    """The CPU's model name (``model name`` in ``/proc/cpuinfo``; ``None`` where there is none)."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def cpu_capability() -> str | None:
    """The instruction set that torch's CPU kernels dispatch to in this process (e.g. ``"AVX512"``, ``"AVX2"``,
    ``"DEFAULT"``; the environment variable ``ATEN_CPU_CAPABILITY`` lowers it), or ``None`` without torch."""
    try:
        import torch
    except ImportError:
        return None
    return torch.backends.cpu.get_cpu_capability()


def machine(load: bool = True) -> dict:
    """The machine: ``{"platform", "processor", "cpu_model", "cpu_capability", "cpu_count"}`` (the CPU's model
    and torch's kernel dispatch, :func:`cpu_model`, :func:`cpu_capability`) and, with ``load``,
    ``"load_average_1min"`` (:func:`load_average`, taken now)."""
    found = {
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_capability": cpu_capability(),
        "cpu_count": os.cpu_count(),
    }
    if load:
        found["load_average_1min"] = load_average()
    return found


def utc_now() -> str:
    """The current UTC time in ISO 8601, to the second (e.g. ``2025-01-31T12:00:00+00:00``)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def collect(directory=None, packages=NUMERIC_LIBRARIES, load: bool = True, ignore=()) -> dict:
    """The provenance block (see the module docstring) of code in the git checkout holding ``directory``
    (default: this package's folder): package version, commit and dirty flag (changes under the folders
    ``ignore`` left out, :func:`git_commit`), :func:`versions` of ``packages``, and :func:`machine` (with the
    load average when ``load``)."""
    commit, dirty = git_commit(Path(__file__).parent if directory is None else directory, ignore)
    return {
        "package_version": package_version(),
        "commit": commit,
        "commit_dirty": dirty,
        "versions": versions(packages),
        "machine": machine(load),
    }
