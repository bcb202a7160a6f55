"""JSON files read back with an error that names the file: every JSON file the project reads (results,
timings, records, manifests, shipped data) goes through :func:`~attnpaths.json_files.read_json`, so that a
damaged or truncated file is reported as that file, not as a bare ``JSONDecodeError`` at some character."""

from __future__ import annotations

import json
from pathlib import Path


class DamagedFile(ValueError):
    """A file read back is damaged, edited or of the wrong shape: the message names the file and
    says what is wrong. ``path`` is the file."""

    def __init__(self, path, reason: str):
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def read_json(path, what: str = "file", expect: type | tuple = dict):
    """Read the JSON file at ``path``; raise :class:`DamagedFile` naming the file when it is not valid UTF-8
    JSON or its top level is not of type ``expect`` (``dict`` by default; ``object`` accepts any), and
    ``FileNotFoundError`` naming it when it is missing. ``what`` says what the file is, for the message
    (e.g. ``"results file"``)."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {path} does not exist") from None
    try:
        value = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise DamagedFile(path, f"this {what} is damaged: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise DamagedFile(
            path,
            f"this {what} is damaged: not valid JSON ({err.msg}: line {err.lineno} column "
            f"{err.colno}, character {err.pos} of {len(text)})",
        ) from None
    if expect is not object and not isinstance(value, expect):
        names = " or ".join(t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,)))
        raise DamagedFile(
            path, f"this {what} must hold a JSON {'object' if expect is dict else names}, found {type(value).__name__}"
        )
    return value


TEXT = (lambda v: isinstance(v, str), "a string")
"""A kind of :func:`require_key`: a JSON string."""
NUMBER = (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number")
"""A kind of :func:`require_key`: a JSON number (not a boolean)."""
OBJECT = (lambda v: isinstance(v, dict), "a JSON object")
"""A kind of :func:`require_key`: a JSON object."""


def require_key(path, what: str, record, keys, kind):
    """``record``'s value at ``keys`` (a dotted string or a tuple of keys), read from the JSON file ``path`` (a
    ``what``, e.g. ``"manifest"``); :class:`DamagedFile` naming the file and the key when it is missing or not of
    ``kind``, a ``(check, description)`` pair such as :data:`TEXT`."""
    keys = tuple(keys.split(".")) if isinstance(keys, str) else tuple(keys)
    value = record
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise DamagedFile(path, f"this {what} lacks the key {'.'.join(keys)}")
        value = value[key]
    check, described = kind
    if not check(value):
        shown = json.dumps(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise DamagedFile(path, f"this {what} has {shown} at the key {'.'.join(keys)}, which must be {described}")
    return value
