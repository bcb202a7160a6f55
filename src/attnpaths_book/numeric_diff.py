"""Numeric differences between two versions of a chapter's outputs, for people to read before accepting them.

Two kinds of output are compared:

- JSON values (a results file, a paper record): :func:`compare_json` walks both, leaf by leaf, and reports
  every number whose value changed with its relative change, every other leaf (string, bool, ``None``) that
  changed, and the leaves present on one side only. Leaves under a *volatile* key (:func:`is_volatile`: run
  times, memory, timestamps, cache keys, the machine and package versions) differ from one run to the next;
  they are counted apart and never make a comparison "changed".
- printed lines (the ``nbval-check-output`` cells): :func:`compare_lines` shows removed and added lines and,
  where a line keeps its text but not its numbers, each number's old and new value and relative change.

Nothing here prints: the functions return lines of text, which the command line shows.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field

MISSING = object()
"""Stands for the side of a :class:`Change` on which the leaf does not exist."""

VOLATILE_KEYS = frozenset({"cache_key", "finished", "machine", "versions", "timings"})
"""Keys whose whole subtree differs between identical runs (besides the suffixes of :data:`VOLATILE_SUFFIXES`)."""

VOLATILE_SUFFIXES = ("seconds", "_s", "_ms", "_utc", "rss_mib")
"""Key endings of run times (``wall_s``, ``solve_seconds``, ``median_ms``), timestamps and memory use."""

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf)\b")


def is_volatile(key: str) -> bool:
    """Whether a JSON key names a value that changes between identical runs (run time, memory, timestamp,
    cache key, machine, versions)."""
    return key in VOLATILE_KEYS or key.endswith(VOLATILE_SUFFIXES)


def is_number(value) -> bool:
    """Whether a JSON leaf is a number (an int or a float, not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Change:
    """One leaf that differs: its ``path`` (``values.U.10[0][1]``), the ``old`` and ``new`` value
    (:data:`MISSING` on the side where it does not exist)."""

    path: str
    old: object
    new: object

    @property
    def relative(self) -> float | None:
        """``(new - old) / |old|`` for two numbers (``inf`` when ``old`` is 0); ``None`` otherwise."""
        if not (is_number(self.old) and is_number(self.new)):
            return None
        if self.old == 0:
            return math.inf if self.new != 0 else 0.0
        return (self.new - self.old) / abs(self.old)

    def describe(self) -> str:
        """One line: ``path: old -> new (relative change)``."""
        if self.old is MISSING:
            return f"{self.path}: added ({_show(self.new)})"
        if self.new is MISSING:
            return f"{self.path}: removed (was {_show(self.old)})"
        relative = self.relative
        note = "" if relative is None else f" ({_relative_text(relative)})"
        return f"{self.path}: {_show(self.old)} -> {_show(self.new)}{note}"


def _show(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _relative_text(relative: float) -> str:
    if math.isinf(relative):
        return "was 0"
    return f"relative change {relative:+.3g}"


def _sort_key(change: Change) -> float:
    relative = change.relative
    return math.inf if relative is None else abs(relative)


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare_json`.

    Attributes:
        compared: number of leaves present on both sides outside volatile keys.
        changes: the differing leaves outside volatile keys (added and removed ones included).
        volatile: the differing leaves under volatile keys (run times, timestamps, ...).
    """

    compared: int
    changes: list[Change] = field(default_factory=list)
    volatile: list[Change] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether anything but volatile leaves differs."""
        return bool(self.changes)

    def report(self, label: str, max_changes: int = 12) -> list[str]:
        """Lines describing the comparison: a summary, then the ``max_changes`` largest changes (numbers by
        their relative change; other leaves, added and removed ones first)."""
        volatile = (
            f"; {len(self.volatile)} run-time or environment values differ (not compared)" if self.volatile else ""
        )
        if not self.changes:
            return [f"{label}: unchanged ({self.compared} values compared{volatile})"]
        numbers = [c for c in self.changes if c.relative is not None]
        added = sum(c.old is MISSING for c in self.changes)
        removed = sum(c.new is MISSING for c in self.changes)
        head = f"{label}: {len(self.changes) - added - removed} of {self.compared} values changed"
        if added or removed:
            head += f", {added} added, {removed} removed"
        if numbers:
            worst = max(numbers, key=_sort_key)
            head += f", the largest at {worst.path} ({_relative_text(worst.relative)})"
        lines = [head + volatile]
        shown = sorted(self.changes, key=_sort_key, reverse=True)[:max_changes]
        lines += [f"  {change.describe()}" for change in shown]
        if len(self.changes) > len(shown):
            lines.append(f"  ... and {len(self.changes) - len(shown)} more")
        return lines


def flatten(value, prefix: str = "") -> dict[str, object]:
    """The leaves of a JSON value by path: dict keys joined by ``.``, list positions as ``[i]``.

    An empty dict or list is a leaf of its own (so that it still compares with a non-empty one).
    """
    if isinstance(value, dict) and value:
        out = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def _volatile_path(path: str) -> bool:
    keys = re.sub(r"\[\d+\]", "", path).split(".")
    return any(is_volatile(key) for key in keys)


def _same(old, new) -> bool:
    if is_number(old) and is_number(new):
        return old == new or (isinstance(old, float) and isinstance(new, float) and math.isnan(old) and math.isnan(new))
    return type(old) is type(new) and old == new


def compare_json(old, new) -> Comparison:
    """Compare two JSON values leaf by leaf (see :func:`flatten`); numbers compare by value (``1 == 1.0``),
    other leaves by type and value. Leaves under volatile keys (:func:`is_volatile`) are reported apart."""
    a, b = flatten(old), flatten(new)
    compared, changes, volatile = 0, [], []
    for path in list(a) + [p for p in b if p not in a]:
        before, after = a.get(path, MISSING), b.get(path, MISSING)
        is_volatile_leaf = _volatile_path(path)
        if before is not MISSING and after is not MISSING:
            compared += not is_volatile_leaf
            if _same(before, after):
                continue
        (volatile if is_volatile_leaf else changes).append(Change(path, before, after))
    return Comparison(compared=compared, changes=changes, volatile=volatile)


def _numbers(line: str) -> tuple[list[str], list[str]]:
    """``(text pieces, number strings)`` of a line: the pieces are what lies between the numbers."""
    return NUMBER.split(line), NUMBER.findall(line)


def _line_pair(old: str, new: str) -> list[str]:
    """Lines showing how ``old`` became ``new``: the two lines, and when only numbers changed, each changed
    number with its relative change."""
    lines = [f"  - {old}", f"  + {new}"]
    old_text, old_numbers = _numbers(old)
    new_text, new_numbers = _numbers(new)
    if old_text == new_text and len(old_numbers) == len(new_numbers):
        for before, after in zip(old_numbers, new_numbers):
            if before != after:
                change = Change("", float(before), float(after))
                lines.append(f"      {before} -> {after} ({_relative_text(change.relative)})")
    return lines


def compare_lines(old_lines: list[str], new_lines: list[str]) -> list[str]:
    """Lines describing how the printed lines ``old_lines`` became ``new_lines`` (empty when equal).

    Unchanged lines are left out; a replaced line is shown as ``- old`` / ``+ new``, followed, when only its
    numbers changed, by each changed number's old and new value and relative change.
    """
    out = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        olds, news = old_lines[i1:i2], new_lines[j1:j2]
        paired = min(len(olds), len(news)) if op == "replace" else 0
        for old, new in zip(olds[:paired], news[:paired]):
            out += _line_pair(old, new)
        out += [f"  - {line}" for line in olds[paired:]]
        out += [f"  + {line}" for line in news[paired:]]
    return out
