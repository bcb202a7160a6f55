"""JSON files read back with an error that names the file: every JSON file the project reads (results,
timings, records, manifests, shipped data) goes through :func:`read_json`, so that a damaged or truncated file
is reported as that file, not as a bare ``JSONDecodeError`` at some character."""

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
