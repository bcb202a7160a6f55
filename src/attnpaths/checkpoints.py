"""Weight files with a checksum: written atomically, read only after their SHA-256 is checked.

A trained model's numbers are reproducible on another machine only through its weights: float32 training
takes other rounding paths on another CPU (or in another process) and ends at another model. The book
therefore ships the weights it uses, each with its SHA-256, and loads them through :func:`load_checkpoint`,
which refuses a file whose digest is not the expected one. Files hold plain tensors, numbers, strings,
lists and dicts, read with ``torch.load(weights_only=True)`` (no code is unpickled).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import torch

_CHUNK = 1 << 20


def file_sha256(path) -> str:
    """The SHA-256 of the file at ``path``, as 64 lowercase hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def save_checkpoint(payload: dict, path) -> str:
    """Write ``payload`` with ``torch.save`` to ``path`` atomically (a temporary file in the same folder,
    then renamed; a reader never sees half a file); returns the file's SHA-256."""
    if not isinstance(payload, dict):
        raise ValueError(f"payload must be a dict, got {type(payload).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=".pt")
    os.close(handle)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return file_sha256(path)


def load_checkpoint(path, sha256: str | None = None, *, format: str | None = None) -> dict:
    """Read a file written by :func:`save_checkpoint`.

    Args:
        path: the file.
        sha256: its expected SHA-256 (64 hex digits); ``None`` skips the check (a cache file this machine
            wrote itself).
        format: the expected value of the payload's ``"format"`` entry, or ``None`` for any.

    Raises:
        ValueError: ``sha256`` is not 64 hex digits, the file's digest differs from it, or the payload's
            format is not ``format``.
        FileNotFoundError: no file at ``path``.
    """
    path = Path(path)
    if sha256 is not None:
        if not (isinstance(sha256, str) and len(sha256) == 64 and all(c in "0123456789abcdef" for c in sha256)):
            raise ValueError(f"sha256 must be 64 lowercase hex digits, got {sha256!r}")
        found = file_sha256(path)
        if found != sha256:
            raise ValueError(
                f"{path}: SHA-256 {found} differs from the expected {sha256}: the file is not the "
                "one it claims to be (damaged, or replaced without updating its checksum)"
            )
    payload = torch.load(path, weights_only=True)
    if format is not None and (not isinstance(payload, dict) or payload.get("format") != format):
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(f"{path}: format must be {format!r}, got {found!r}")
    return payload


__all__ = ["file_sha256", "load_checkpoint", "save_checkpoint"]
