"""A chapter's bookkeeping in one object: numbers glued for the prose and kept in the results file.

A chapter creates one :class:`ChapterRecorder` right after its parameters cell::

    rec = ChapterRecorder("hmc", globals())
    rec.glue("P", num_train)                    # glue:text hmc_P in the prose, values["glued"]["P"]
    rec.record("band", band4)                    # a dataclass, dict, array ... in values["band"]
    rec.claims(*verdicts)                        # values["verdicts"], a glued sentence per claim (an agreement
                                                 # test without power for a correct result: values["diagnostics"])
    rec.write()                                  # <results_dir>/hmc.json

Its parameters are read, never listed by hand: the names assigned in the chapter's parameters cell (the
cell tagged ``parameters`` of ``book/<chapter>.md``), with the values they have when the recorder is created,
that is after papermill's injected overrides. The book's executor checks that the parameters in the results
file are exactly the ones it ran the chapter with.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import jupytext
import numpy as np
import torch
from IPython.display import Markdown
from myst_nb import glue as _glue

from attnpaths.claims import MIN_POWER, ClaimViolation, Outcome, Verdict, agreement_power, enforce, outcome_counts
from attnpaths_book.chapters import INJECTED, parameters_cell
from attnpaths_book.claims_markdown import (
    claims_table,
    diagnostic_words,
    diagnostics_table,
    markdown_claims_table,
    markdown_sentence,
    structural_table,
)
from attnpaths_book.results import to_jsonable, write_results


def glue_name(text: str) -> str:
    """A glue key made of ``text``: every character that is not a letter, digit or underscore becomes ``_``."""
    return re.sub(r"\W", "_", text)


def chapter_source(chapter: str, start=None) -> Path:
    """The MyST source of ``chapter``: ``book/<chapter>.md`` below the working directory (the executor runs
    chapters from the repository root), or ``<chapter>.md`` in it (a reader's notebook server started in
    ``book/``). Raises ``FileNotFoundError`` naming both places when there is neither."""
    start = Path.cwd() if start is None else Path(start)
    candidates = [start / "book" / f"{chapter}.md", start / f"{chapter}.md"]
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"no source of chapter {chapter!r} at {' or '.join(map(str, candidates))}: "
        "run the chapter from the repository root or from book/"
    )


def parameter_names(chapter: str, start=None) -> list[str]:
    """Names assigned in the parameters cell of ``chapter``'s source, in order."""
    source = chapter_source(chapter, start)
    return list(parameters_cell(jupytext.read(source), chapter))


def _jsonable(value):
    """:func:`~attnpaths_book.results.to_jsonable`, with dataclasses first turned into dicts of their fields and
    objects with a ``to_dict()`` method into its result."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = value.to_dict() if hasattr(value, "to_dict") else dataclasses.asdict(value)
    elif isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return to_jsonable(value)


def _plain(value):
    """A numpy or torch scalar as the Python number it holds (the prose's formats, e.g. ``:.2f``, are applied
    to the glued text representation, which for ``np.float64(0.5)`` is not a number); anything else as is."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    return value


class ChapterRecorder:
    """Glue and record a chapter's numbers, claims and run times; write its results file.

    Args:
        chapter: the chapter's name (its source is ``book/<chapter>.md``, its results file ``<chapter>.json``).
        namespace: the chapter's global namespace (``globals()``) after its parameters cell.
        prefix: prefix of every glue key (default ``"<chapter>_"``), so that keys are unique in the book.
    """

    def __init__(self, chapter: str, namespace: dict, *, prefix: str | None = None):
        names = parameter_names(chapter)
        missing = [name for name in (*INJECTED, *names) if name not in namespace]
        if missing:
            raise ValueError(f"namespace must hold the chapter's parameters; missing: {', '.join(missing)}")
        self.chapter = chapter
        self.prefix = f"{chapter}_" if prefix is None else prefix
        self.profile = namespace["profile"]
        self.results_dir = namespace["results_dir"]
        self.parameters = {name: _jsonable(namespace[name]) for name in names if name not in INJECTED}
        self.values: dict = {}
        self.verdicts: list[Verdict] = []
        self.structural: list[Verdict] = []
        self.diagnostics: list[tuple[Verdict, float]] = []
        self._sentences: dict[str, str] = {}
        self.run_seconds: dict[str, float] = {}
        self.run_cpu_seconds: dict[str, float] = {}

    def glue(self, name: str, value, *, record: bool = True):
        """Glue ``value`` as ``<prefix><name>`` for the prose and, unless ``record`` is false, keep it in
        ``values["glued"][name]``. Returns ``value``."""
        _glue(self.prefix + name, _plain(value), display=False)
        if record:
            self.values.setdefault("glued", {})[name] = _jsonable(value)
        return value

    def glue_all(self, values: dict, *, record: bool = True) -> dict:
        """:meth:`glue` every ``name: value`` of ``values`` (e.g. a result's ``summary()``, under the names the
        prose uses). Returns ``values``."""
        for name, value in values.items():
            self.glue(name, value, record=record)
        return values

    def markdown(self, name: str, text: str) -> str:
        """Glue Markdown ``text`` (a sentence or table built from computed numbers) as ``<prefix><name>``."""
        _glue(self.prefix + name, Markdown(text), display=False)
        return text

    def figure(self, name: str, figure) -> None:
        """Glue a matplotlib ``figure`` as ``<prefix><name>`` (placed by a ``{glue:figure}`` directive with its
        caption and text alternative) and close it, so it is not shown a second time where it was made: it
        returns nothing, so that a cell ending with this call has no output (an image there would have no
        caption and no text alternative)."""
        from matplotlib import pyplot as plt

        _glue(self.prefix + name, figure, display=False)
        plt.close(figure)

    def record(self, name: str, value, *, glue: bool | str = False):
        """Keep ``value`` (number, array, tensor, dict, list, dataclass) as ``values[name]`` and, if ``glue`` is
        true, glue it for the prose as ``<prefix><name>`` (or ``<prefix><glue>`` when ``glue`` is a string).
        Returns ``value``."""
        self.values[name] = _jsonable(value)
        if glue:
            _glue(self.prefix + (glue if isinstance(glue, str) else name), _plain(value), display=False)
        return value

    def claims(self, *verdicts: Verdict, sentences: bool = True) -> list[Verdict]:
        """Keep ``verdicts`` (written as ``values["verdicts"]``) and, if ``sentences``, glue each one's sentence
        as ``<prefix>claim_<claim>`` (non-identifier characters of the claim turned into ``_``).

        An agreement test whose power for a correct result is below ``attnpaths.claims.MIN_POWER``
        (:func:`attnpaths.claims.agreement_power`) and that is not contradicted is not a claim (it could hardly hold,
        so its "not significant" says little): it is kept as a diagnostic
        (``values["diagnostics"]``, with its power; its sentence says so) and left out of the claims, their
        table and their counts. A contradicted one stays a claim: a contradiction keeps its error rate at the level
        whatever the power, so it is evidence. Returns the verdicts kept as claims."""
        kept = []
        for verdict in verdicts:
            self._check_new(verdict, "claim")
            power = agreement_power(verdict)
            if power is not None and power < MIN_POWER and verdict.outcome is not Outcome.CONTRADICTED:
                self.diagnostics.append((verdict, power))
                sentence = f"{diagnostic_words(power)} {markdown_sentence(verdict)}"
            else:
                self.verdicts.append(verdict)
                kept.append(verdict)
                sentence = markdown_sentence(verdict)
            self._sentences[verdict.claim] = sentence
            if sentences:
                self.markdown(f"claim_{glue_name(verdict.claim)}", sentence)
        return kept

    def _check_new(self, verdict, what: str) -> None:
        if not isinstance(verdict, Verdict):
            raise ValueError(f"verdicts must be attnpaths.claims.Verdict objects, got {type(verdict).__name__}")
        if any(v.claim == verdict.claim for v in self.tested + self.structural):
            raise ValueError(f"{what} {verdict.claim!r} is recorded twice in chapter {self.chapter!r}")

    @property
    def tested(self) -> list[Verdict]:
        """Every verdict recorded so far, claims and diagnostics, in the order they were recorded."""
        diagnostics = {v.claim: v for v, _ in self.diagnostics}
        claims = {v.claim: v for v in self.verdicts}
        return [claims.get(c) or diagnostics[c] for c in self._sentences]

    def verdict(self, claim: str) -> Verdict:
        """The recorded verdict of ``claim``, a claim or a diagnostic (``KeyError`` naming the recorded ones)."""
        for v in self.tested:
            if v.claim == claim:
                return v
        raise KeyError(f"claim {claim!r} is not recorded; recorded: {[v.claim for v in self.tested]}")

    def sentences(self, prefix: str) -> str:
        """The Markdown sentences of the claims and diagnostics whose id starts with ``prefix``, in the order
        they were recorded, joined by spaces (a diagnostic's sentence says that it is one)."""
        return " ".join(s for claim, s in self._sentences.items() if claim.startswith(prefix))

    def structural_checks(self, *verdicts: Verdict, name: str = "structural_table") -> list[Verdict]:
        """Keep ``verdicts`` of structural checks (properties that follow from the theory's form once its solver
        has converged; :func:`attnpaths_book.claims_markdown.structural_table`), written as ``values["structural_checks"]``
        apart from the claims, glue their table as ``<prefix><name>``, and stop the run unless every one holds:
        a failing structural check means a broken solver or setup, not a finding."""
        if self.structural:
            raise ValueError(
                f"chapter {self.chapter!r} records its structural checks twice: their table is glued "
                "once, so pass them all in one call"
            )
        for verdict in verdicts:
            self._check_new(verdict, "check")
            self.structural.append(verdict)
        self.markdown(name, structural_table(self.structural))
        enforce(self.structural, [v.claim for v in verdicts])
        return list(verdicts)

    def claims_table(self, name: str = "claims_table", *, escape: bool = True) -> str:
        """Glue the Markdown table of every claim recorded so far as ``<prefix><name>``; with ``escape``
        false, the claims' words keep their Markdown and math (for claims written with ``$...$``)."""
        table = markdown_claims_table(self.verdicts) if escape else claims_table(self.verdicts)
        return self.markdown(name, table)

    def summarize_claims(self, enforced, *, escape: bool = True) -> dict[str, int]:
        """Glue the claims table (see :meth:`claims_table`), the number of claims with each outcome
        (``claims_holds``, ``claims_not_significant``, ``claims_contradicted``), their total
        (``claims_total``) and the number that the run's profile requires (``claims_enforced``), and record
        the required claims as ``values["enforced_claims"]``. Returns the counts by outcome."""
        unpowered = [v.claim for v, _ in self.diagnostics if v.claim in {str(k) for k in enforced}]
        if unpowered:
            raise ClaimViolation(
                f"the profile requires {unpowered}, whose tests lack the power to hold for a correct result in "
                f"this run (below {MIN_POWER:g}): they are diagnostics, not claims"
            )
        self.claims_table(escape=escape)
        self.markdown("diagnostics_table", diagnostics_table(self.diagnostics))
        self.glue("claims_diagnostics", len(self.diagnostics))
        self.glue("min_power", MIN_POWER, record=False)  # the rule, not a result
        counts = outcome_counts(self.verdicts)
        for outcome, count in counts.items():
            self.glue(f"claims_{glue_name(outcome)}", int(count))
        self.glue("claims_total", len(self.verdicts))
        self.glue("claims_enforced", len(enforced))
        self.record("enforced_claims", list(enforced))
        return counts

    def wait(self, name: str, **pending) -> dict:
        """Results of the submitted tasks ``pending`` (:func:`attnpaths.engine.submit`, keyword -> task), as a
        dict with the same keys; their wall-clock and CPU seconds, where they ran, summed under ``name``."""
        results = {key: task.result() for key, task in pending.items()}
        self.run_seconds[name] = sum(task.wall_s for task in pending.values())
        self.run_cpu_seconds[name] = sum(task.cpu_s for task in pending.values())
        return results

    def write(self) -> Path:
        """Write ``<results_dir>/<chapter>.json`` (see :func:`attnpaths_book.results.write_results`) with the
        parameters, the recorded values, the verdicts and the run times, and return its path."""
        values = dict(self.values)
        if self.verdicts:
            values["verdicts"] = [v.to_dict() for v in self.verdicts]
        if self.structural:
            values["structural_checks"] = [v.to_dict() for v in self.structural]
        if self.diagnostics:
            values["diagnostics"] = [{**v.to_dict(), "power": power} for v, power in self.diagnostics]
        if self.run_seconds:
            values["run_seconds"] = dict(self.run_seconds)
            values["run_cpu_seconds"] = dict(self.run_cpu_seconds)
        return write_results(self.chapter, self.profile, self.parameters, values, self.results_dir)
