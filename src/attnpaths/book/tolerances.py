"""How far each number of a chapter may move on another machine: the reproducibility classes and their
tolerances, in one table (sec-repro-classes).

A number of the book belongs to one of four classes:

- **exact** (class a): integers, strings, verdict outcomes, choices among a few options, and on the same
  machine every number for any engine and worker count. On another machine exact numbers stay exact.
- **rounding** (class b): float64 computations from the same inputs (seeded data, shipped weights). Another CPU
  takes other summation orders and other vector kernels (BLAS, torch's ATen, numpy's SIMD loops), so the last
  bits move, amplified by the conditioning of the computation. Compared with a relative tolerance where the
  quantity is well conditioned, and with an absolute one on the scale of the terms where it is a difference of
  nearly equal numbers (which a relative tolerance would wrongly call a large change).
- **trained** (class c): a model trained on this machine is another model than the shipped one; with the shipped
  weights (the default) everything downstream is class b, except counts of float32 outputs near a decision
  boundary (an accuracy moves by whole test items when an output within float32 rounding of 0 changes sign).
- **monte carlo** (class d): posterior samples and simulations. A chain that differs in one bit diverges, so
  on another machine they agree within their Monte-Carlo error, not within rounding; a verdict computed from
  them keeps its outcome unless it sits at its threshold.

:data:`TABLE` lists, per chapter and results key, the class, the tolerance and the reason; the first rule
whose pattern matches a leaf decides. :func:`compare_results` compares two results files (or paper records)
by that table; the nbval test, the paper-record test and ``record-paper`` use it.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass

from .numeric_diff import MISSING, flatten, is_volatile

CLASSES = ("exact", "rounding", "trained", "monte carlo")
"""The reproducibility classes (see the module docstring)."""


@dataclass(frozen=True)
class Tolerance:
    """One rule of :data:`TABLE`.

    Attributes:
        pattern: ``"<chapter>:<path>"`` with shell wildcards (:mod:`fnmatch`), matched against a leaf's path
            in the results file with its list indices removed (``values.grid.accuracy.test``).
        cls: one of :data:`CLASSES`.
        rtol, atol: a number ``new`` agrees with ``old`` when ``|new - old| <= atol + rtol |old|``.
        reason: why the tolerance is what it is.
    """

    pattern: str
    cls: str
    rtol: float
    atol: float
    reason: str

    def __post_init__(self):
        if self.cls not in CLASSES:
            raise ValueError(f"cls must be one of {CLASSES}, got {self.cls!r}")
        if not (self.rtol >= 0 and self.atol >= 0):
            raise ValueError(f"rtol and atol must be >= 0, got {self.rtol!r}, {self.atol!r}")

    def agrees(self, old, new) -> bool:
        """Whether ``new`` agrees with ``old`` under this rule (non-numbers: equal)."""
        if _is_number(old) and _is_number(new):
            if math.isnan(old) or math.isnan(new):
                return math.isnan(old) and math.isnan(new)
            if math.isinf(old) or math.isinf(new):
                return old == new
            return abs(new - old) <= self.atol + self.rtol * abs(old)
        return type(old) is type(new) and old == new


ROUNDING_RTOL = 1e-9
"""Relative tolerance of class b: float64 results of Newton solves, Cholesky factors and kernel sums from the
same inputs. Rounding contributes ~1e-16 per operation; another summation order moves results by the condition
number times that, and the book's solves at the smallest temperatures have condition numbers up to ~1e6, so
1e-9 leaves a factor 100 above the worst measured change while a real change (a factor, a wrong sign, another
minimum) is many orders larger."""

ROUNDING_ATOL = 1e-12
"""Absolute floor of class b: values that are zero up to rounding (gradient norms at a minimum, ~1e-13;
permutation differences) have no relative scale."""

TABLE: tuple[Tolerance, ...] = (
    Tolerance("*:*gradient_norm*", "rounding", 0.0, 1e-8,
              "the gradient norm at a certified minimum is zero up to rounding (1e-13 .. 1e-9): only its size "
              "below the solver's tolerance (1e-8) means anything, its digits do not"),
    Tolerance("*:*iterations*", "exact", 0.0, 0.0, "counts"),
    Tolerance("*", "rounding", ROUNDING_RTOL, ROUNDING_ATOL, "float64 from the same inputs (ROUNDING_RTOL)"),
)
"""The rules, most specific first; the last one is the default of every number."""


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_INDEX = re.compile(r"\[\d+\]")


def rule_for(chapter: str, path: str, table=TABLE) -> Tolerance:
    """The first rule of ``table`` whose pattern matches ``<chapter>:<path>`` (list indices removed)."""
    key = f"{chapter}:{_INDEX.sub('', path)}"
    for rule in table:
        if fnmatch.fnmatchcase(key, rule.pattern):
            return rule
    raise ValueError(f"table has no rule for {key!r}: its last rule must match everything")


@dataclass(frozen=True)
class Disagreement:
    """A leaf that moved beyond its rule: its ``path``, the ``old`` and ``new`` values and the ``rule``."""

    path: str
    old: object
    new: object
    rule: Tolerance

    def describe(self) -> str:
        """One line: path, values, the class and tolerance, and its reason."""
        old = "missing" if self.old is MISSING else repr(self.old)
        new = "missing" if self.new is MISSING else repr(self.new)
        return (f"{self.path}: {old} -> {new} (class {self.rule.cls}, rtol {self.rule.rtol:g}, atol "
                f"{self.rule.atol:g}: {self.rule.reason})")


def compare_results(chapter: str, old: dict, new: dict, table=TABLE) -> list[Disagreement]:
    """The leaves of two versions of a chapter's results (``values`` and ``parameters`` of a results file or a
    paper record's ``results``) that disagree beyond their rule; run times, memory, timestamps and environment
    (volatile keys, :func:`attnpaths.book.numeric_diff.is_volatile`) are left out."""
    a, b = flatten(old), flatten(new)
    out = []
    for path in list(a) + [p for p in b if p not in a]:
        if any(is_volatile(part) for part in _INDEX.sub("", path).split(".")):
            continue
        before, after = a.get(path, MISSING), b.get(path, MISSING)
        rule = rule_for(chapter, path, table)
        if before is MISSING or after is MISSING or not rule.agrees(before, after):
            out.append(Disagreement(path, before, after, rule))
    return out


__all__ = ["CLASSES", "Disagreement", "ROUNDING_ATOL", "ROUNDING_RTOL", "TABLE", "Tolerance", "compare_results",
           "rule_for"]
