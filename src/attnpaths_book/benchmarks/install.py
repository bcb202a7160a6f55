"""Benchmark: what ``pip install .`` costs, the library without extras, in a fresh virtual environment.

``python -m attnpaths_book bench install [--output PATH]`` makes a virtual environment of its own in a temporary
folder (no system packages), runs ``pip install -q -c CONSTRAINTS .`` in it from the checkout, as CI's library
step does (``.ci/library_only.sh``, which also installs pytest to run the library's tests there), and records the
install's wall time, the environment's size on disk, the distributions it holds with their versions, and whether
a module of the book or of the library's extras is there (none may be: the core must not pull them in). Then it
removes the environment. The time includes what pip fetches that its cache (and this machine's pip configuration)
does not already hold. When an extra's module is there, or pip fails, the benchmark writes no record. The record
(``records/install.json`` by default) carries the provenance of :mod:`attnpaths_book.benchmarks.record`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnpaths_book.benchmarks.record import committed_record_path, finish_record, run_command, start_record
from attnpaths_book.layout import find_root

ABSENT_MODULES = ("dask", "distributed", "arviz", "matplotlib", "sklearn", "PIL", "papermill", "jupytext")
"""Modules of the library's extras (pyproject.toml) and of the book that ``pip install .`` must not install."""

LARGEST = 5
"""Entries of the environment's site-packages that the record lists by size."""

MIB = 2.0**20

# Run by the environment's own Python: its distributions, site-packages folder and which modules it finds.
FACTS = """
import importlib.metadata, importlib.util, json, sys, sysconfig
print(json.dumps({
    "distributions": {d.metadata["Name"]: d.version for d in importlib.metadata.distributions()},
    "site_packages": sysconfig.get_paths()["purelib"],
    "present": {m: importlib.util.find_spec(m) is not None for m in sys.argv[1:]},
}))
"""


def constraints(requirements: str) -> str:
    """The pins of ``requirements`` (the text of requirements.txt) as pip's constraints take them: the line
    ``grep -v '^-e' requirements.txt | sed -e 's/#.*//' -e 's/\\[[^]]*\\]//'`` of ``.ci/library_only.sh``, which
    this follows line for line (no editable install, no comments, no extras)."""
    lines = [line for line in requirements.splitlines() if not line.startswith("-e")]
    return "".join(re.sub(r"\[[^]]*\]", "", line.partition("#")[0], count=1) + "\n" for line in lines)


def tree_mib(path: Path) -> float:
    """Size of the folder ``path`` in MiB: the sum of the sizes of the regular files under it, links neither
    followed nor counted (a virtual environment links its interpreter and, on Linux, ``lib64`` to ``lib``)."""
    total = 0
    for folder, _, files in os.walk(path, followlinks=False):
        for name in files:
            info = os.lstat(os.path.join(folder, name))
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
    return total / MIB


def clean_environment() -> dict:
    """This process's environment without what would put other packages on the new environment's path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def run(command: list, cwd: Path, what: str) -> subprocess.CompletedProcess:
    """``command`` in ``cwd`` with :func:`clean_environment`; ``RuntimeError`` with its output if it fails."""
    return run_command(command, cwd, what, env=clean_environment())


def measure(root: Path, work: Path) -> dict:
    """Install the checkout ``root`` into a new virtual environment in the folder ``work``; returns the report."""
    (work / "constraints.txt").write_text(constraints((root / "requirements.txt").read_text()))
    venv = work / "library-venv"
    run([sys.executable, "-m", "venv", str(venv)], work, "python -m venv")
    python = str(venv / "bin" / "python")
    start = time.perf_counter()
    run([python, "-m", "pip", "install", "-q", "-c", str(work / "constraints.txt"), "."], root, "pip install .")
    wall_s = time.perf_counter() - start
    facts = json.loads(run([python, "-c", FACTS, *ABSENT_MODULES], work, "reading the environment").stdout)
    distributions = dict(sorted(facts["distributions"].items(), key=lambda item: item[0].lower()))
    site_packages = Path(facts["site_packages"])
    entries = {entry.name: tree_mib(entry) if entry.is_dir() else 0.0 for entry in site_packages.iterdir()}
    largest = sorted(entries.items(), key=lambda item: -item[1])[:LARGEST]
    return {
        "command": "pip install -q -c CONSTRAINTS .",
        "wall_s": round(wall_s, 1),
        "venv_mib": round(tree_mib(venv), 1),
        "largest_site_packages_mib": {name: round(size, 1) for name, size in largest},
        "distribution_count": len(distributions),
        "distributions": distributions,
        "torch": distributions.get("torch"),
        "present": facts["present"],
    }


def main(argv=None) -> int:
    """Entry point of ``python -m attnpaths_book bench install``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog="python -m attnpaths_book bench install", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--output", type=Path, default=committed_record_path("install"))
    args = parser.parse_args(argv)
    started = start_record("install", argv)
    root = find_root()
    print("pip install . into a new virtual environment ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="attnpaths-install-") as work:
        report = measure(root, Path(work))
    print(
        f"  {report['wall_s']:.1f} s, {report['venv_mib']:.0f} MiB, {report['distribution_count']} distributions, "
        f"torch {report['torch']}",
        flush=True,
    )
    present = [module for module, found in report["present"].items() if found]
    if present:
        print(
            f"error: pip install . installed {present}, modules of an extra or of the book; no record is written",
            file=sys.stderr,
        )
        return 1
    finish_record(started, report, args.output)
    return 0
