"""Weight files with a checksum: written atomically, read only after their SHA-256 is checked.

A trained model's numbers are reproducible on another machine only through its weights: float32 training
takes other rounding paths on another CPU (or in another process) and ends at another model. The book
therefore ships the weights it uses, each with its SHA-256, and loads them through :func:`load_checkpoint`,
which refuses a file whose digest is not the expected one. A file of this machine's cache is checked as well:
:func:`save_checkpoint` writes its SHA-256 beside it (``<file>.sha256``, the format of ``sha256sum``), and a
file without that checksum, or whose bytes no longer match it (one flipped bit turns a weight of 101.0 into
101.125 and loads without complaint), is refused; a cache reader (:func:`read_cache`) then treats the file as
absent, so that what it held is computed again and rewritten. Files hold plain tensors, numbers, strings, lists
and dicts, read with ``torch.load(weights_only=True)`` (no code is unpickled).
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import warnings
from pathlib import Path

import torch

from .json_files import DamagedFile

_CHUNK = 1 << 20
_HEX = frozenset("0123456789abcdef")


class DamagedCacheWarning(UserWarning):
    """A file of this machine's cache was damaged (a checksum that does not match, none, or bytes that cannot be
    read): what it held is computed again and the file rewritten."""


def file_sha256(path) -> str:
    """The SHA-256 of the file at ``path``, as 64 lowercase hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def checksum_path(path) -> Path:
    """The file beside ``path`` that holds its SHA-256 (``<path>.sha256``)."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def is_sha256(value) -> bool:
    """Whether ``value`` is a SHA-256 as this package writes it: a string of 64 lowercase hexadecimal digits."""
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def _write_atomically(path: Path, write) -> None:
    """``write(tmp)`` into a temporary file in ``path``'s folder, then renamed to ``path`` (a reader never sees
    half a file)."""
    handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(handle)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_checked(data: bytes, path) -> str:
    """Write ``data`` to ``path`` and its SHA-256 to :func:`checksum_path` (each atomically: a temporary file in
    the same folder, then renamed); returns the SHA-256. The file is written first: a run stopped between the two
    leaves a checksum that does not match, and the file is refused by :func:`read_checked`, never read with a
    checksum of other bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sha256 = hashlib.sha256(data).hexdigest()
    _write_atomically(path, lambda tmp: Path(tmp).write_bytes(data))
    _write_atomically(checksum_path(path), lambda tmp: Path(tmp).write_text(f"{sha256}  {path.name}\n"))
    return sha256


def read_checked(path, sha256: str | None = None) -> bytes:
    """The bytes of ``path`` after checking their SHA-256 against ``sha256`` or, when it is ``None``, against the
    one :func:`write_checked` wrote beside the file; ``attnpaths.json_files.DamagedFile`` naming the file
    when there is no checksum or the bytes do not match it."""
    path = Path(path)
    if sha256 is not None and not is_sha256(sha256):
        raise ValueError(f"sha256 must be 64 lowercase hex digits, got {sha256!r}")
    data = path.read_bytes()  # checked and then used from the same bytes
    expected = _recorded_sha256(path) if sha256 is None else sha256
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        source = "the expected" if sha256 is not None else f"the one recorded in {checksum_path(path).name}"
        raise DamagedFile(
            path,
            f"SHA-256 {found} differs from {source} {expected}: the file is not the one it claims to be "
            "(damaged, or replaced without updating its checksum)",
        )
    return data


def save_checkpoint(payload: dict, path) -> str:
    """Write ``payload`` with ``torch.save`` to ``path`` with its SHA-256 beside it (:func:`write_checked`);
    returns the SHA-256. The same payload gives the same bytes (it is serialised in memory, so no temporary file
    name enters the archive)."""
    if not isinstance(payload, dict):
        raise ValueError(f"payload must be a dict, got {type(payload).__name__}")
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return write_checked(buffer.getvalue(), path)


def _recorded_sha256(path: Path) -> str:
    """The SHA-256 that :func:`save_checkpoint` wrote beside ``path``; ``DamagedFile`` naming ``path`` when
    there is none or it is not one."""
    beside = checksum_path(path)
    try:
        text = beside.read_text(encoding="ascii")
    except FileNotFoundError:
        raise DamagedFile(
            path,
            f"path must be a file written by save_checkpoint or write_checked, with its SHA-256 in {beside.name} beside it; "
            "there is none, so its bytes cannot be checked",
        ) from None
    except (UnicodeDecodeError, OSError):  # unreadable (a folder, no permission): no checksum to trust
        text = ""
    fields = text.split()
    if len(fields) != 2 or not is_sha256(fields[0]) or fields[1] != path.name:
        raise DamagedFile(
            path, f"its checksum file {beside.name} is damaged: it must hold '<64 hex digits>  {path.name}'"
        )
    return fields[0]


def load_checkpoint(path, sha256: str | None = None, *, format: str | None = None) -> dict:
    """Read a file written by :func:`save_checkpoint`, after checking its SHA-256.

    Args:
        path: the file.
        sha256: its expected SHA-256 (64 hex digits, e.g. from the manifest of shipped files); ``None``: the one
            :func:`save_checkpoint` wrote beside it (a file of this machine's cache).
        format: the expected value of the payload's ``"format"`` entry, or ``None`` for any.

    Raises:
        ValueError: ``attnpaths.json_files.DamagedFile`` (a subclass, naming the file) when the file's digest
            differs from the expected one, ``sha256`` is ``None`` and no checksum lies beside the file, or
            ``torch.load`` cannot read it; a plain ``ValueError`` when ``sha256`` is not 64 hex digits or the
            payload's format is not ``format``.
        FileNotFoundError: no file at ``path``.
    """
    path = Path(path)
    data = read_checked(path, sha256)
    try:
        payload = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as err:  # a damaged archive fails in many ways (zip, pickle, storage): one message for all
        raise DamagedFile(path, f"torch.load cannot read it ({type(err).__name__}: {err})") from err
    if format is not None and (not isinstance(payload, dict) or payload.get("format") != format):
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(f"{path}: format must be {format!r}, got {found!r}")
    return payload


def read_cache(load, path, what: str):
    """``load(path)`` for a file of this machine's cache, or ``None`` when there is no such file or it is damaged
    (``attnpaths.json_files.DamagedFile``: see :func:`load_checkpoint`), so that the caller computes what it held
    again and rewrites it. A damaged file is reported once, as a :class:`DamagedCacheWarning` naming the file,
    what is wrong with it and ``what`` it held (e.g. ``"one-shot model"``).

    Args:
        load: reads the file (e.g. :func:`load_checkpoint` or a reader built on it), raising
            ``attnpaths.json_files.DamagedFile`` for a damaged one; its other errors pass through.
        path: the cache file.
        what: what the file holds, in words.
    """
    if not Path(path).is_file():
        return None
    try:
        return load(path)
    except DamagedFile as err:
        warnings.warn(
            f"{err}. The cached {what} is not used: it is made again and the file rewritten.",
            DamagedCacheWarning,
            stacklevel=2,
        )
        return None


__all__ = [
    "DamagedCacheWarning",
    "checksum_path",
    "file_sha256",
    "is_sha256",
    "load_checkpoint",
    "read_cache",
    "read_checked",
    "save_checkpoint",
    "write_checked",
]
