"""The reproducibility chapter's report: the environment, the profiles, the chapters' run times and claims,
and the committed benchmark records, as Markdown tables and summaries.

Each function reads what the book has produced (the chapters' sources, ``_build/results/_timings.json``,
the results files, the benchmark records under ``attnpaths_book/benchmarks/records``) and returns plain data or
Markdown; the chapter glues them for its prose (:class:`~attnpaths_book.recorder.ChapterRecorder`).
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy.stats import norm

from attnpaths.claims import Verdict, outcome_counts
from attnpaths_book import provenance
from attnpaths_book._report_tables import (
    SOLVER_PROBLEMS,
    EngineBenchmarks,
    Prose,
    commit_label,
    crossover_text,
    engine_benchmarks,
    inline_code,
    markdown_table,
    numpyro_prose,
    numpyro_rows,
    predictor_agreement,
    sampler_growth_prose,
    sampler_growth_rows,
    sampler_growth_summary,
    sampler_mixing_text,
    sampler_prose,
    sampler_rows,
    sampler_summary,
    shipped_table,
    shipped_weights,
    solver_prose,
    solver_rows,
    solver_summary,
    tolerance_table,
)
from attnpaths_book.benchmarks.record import committed_record_path, read_record
from attnpaths_book.chapters import INJECTED, Chapter, book_chapters, execution_order
from attnpaths_book.layout import BookLayout
from attnpaths_book.store import verify_results

__all__ = [
    "reported_chapters",
    "package_versions",
    "machine_description",
    "profile_differences",
    "TimingTable",
    "timing_table",
    "total_text",
    "budget_verdict",
    "ChapterClaims",
    "read_claims",
    "claims_rows",
    "claim_outcomes",
    "family_z_limit",
    "predictor_agreement",
    "committed_record",
    "rerun_example",
    "EngineBenchmarks",
    "Prose",
    "SOLVER_PROBLEMS",
    "commit_label",
    "crossover_text",
    "engine_benchmarks",
    "inline_code",
    "markdown_table",
    "numpyro_prose",
    "numpyro_rows",
    "sampler_growth_prose",
    "sampler_growth_rows",
    "sampler_growth_summary",
    "sampler_mixing_text",
    "sampler_prose",
    "sampler_rows",
    "sampler_summary",
    "shipped_table",
    "shipped_weights",
    "solver_prose",
    "solver_rows",
    "solver_summary",
    "tolerance_table",
]


def reported_chapters(layout: BookLayout, this_chapter: str) -> list[Chapter]:
    """The chapters executed before the report chapter ``this_chapter`` (:func:`~attnpaths_book.chapters.execution_order`):
    every chapter that is not a report, in toc order, then the reports before it. Raises ``ValueError`` unless
    ``this_chapter`` is a report chapter of the book."""
    chapters = execution_order(book_chapters(layout))
    reports = [c.name for c in chapters if c.report]
    if this_chapter not in reports:
        raise ValueError(
            f"this_chapter must be a report chapter of the book ({', '.join(reports) or 'none'}), got {this_chapter!r}"
        )
    return chapters[: [c.name for c in chapters].index(this_chapter)]


def package_versions(packages) -> dict[str, str]:
    """``{"python": version, package: installed version, ...}`` for the distribution names ``packages``
    (:func:`attnpaths_book.provenance.versions`)."""
    return provenance.versions(packages)


def machine_description() -> dict:
    """The machine (:func:`attnpaths_book.provenance.machine`, without the load) and ``torch_threads`` (PyTorch's
    intra-op threads in this process)."""
    import torch

    return {**provenance.machine(load=False), "torch_threads": torch.get_num_threads()}


def profile_differences(chapters, profiles) -> list[list[str]]:
    """One row ``[chapter, `name`, `value in profiles[0]`, ...]`` per parameter (executor-set ones left out)
    whose value differs between the ``profiles`` (a profile a chapter does not list runs its defaults)."""
    rows = []
    for chapter in chapters:
        for name, default in chapter.defaults.items():
            if name in INJECTED:
                continue
            values = [chapter.profiles.get(p, {}).get(name, default) for p in profiles]
            if len({repr(v) for v in values}) > 1:
                rows.append([chapter.name, f"`{name}`", *(f"`{v!r}`" for v in values)])
    return rows


@dataclass(frozen=True)
class TimingTable:
    """The chapters' last run times per profile (see :func:`timing_table`).

    Attributes:
        header: the table's header cells: ``chapter``, then wall time and peak memory per profile.
        rows: one row per chapter (``"not run"`` where a chapter has no entry), then the totals.
        totals: ``{profile: seconds}``, the sum of the chapters' wall times, ``None`` unless every chapter ran.
        timings: ``{profile: {chapter: entry or None}}``, the entries the table shows.
    """

    header: list[str]
    rows: list[list[str]]
    totals: dict
    timings: dict

    def markdown(self) -> str:
        """The table as a MyST pipe table."""
        return markdown_table(self.header, self.rows)


def timing_table(chapters, timings: dict, profiles) -> TimingTable:
    """Wall time and peak memory of the last run of each chapter in each profile, and each profile's total.

    Args:
        chapters: the chapters to show, in order.
        timings: ``{profile: {chapter: {"wall_s", "peak_rss_mib", ...}}}`` (:func:`attnpaths_book.store.read_timings`).
        profiles: the profiles, one pair of columns each.
    """
    profiles = list(profiles)
    shown = {p: {c.name: timings.get(p, {}).get(c.name) for c in chapters} for p in profiles}
    rows = []
    for chapter in chapters:
        row = [chapter.name]
        for p in profiles:
            entry = shown[p][chapter.name]
            row += [f"{entry['wall_s']:.1f}", f"{entry['peak_rss_mib']:.0f}"] if entry else ["not run", "not run"]
        rows.append(row)
    totals = {}
    for p in profiles:
        entries = list(shown[p].values())
        totals[p] = sum(e["wall_s"] for e in entries) if all(entries) else None
    rows.append(
        [
            "**total**",
            *[cell for p in profiles for cell in ((f"**{totals[p]:.1f}**" if totals[p] is not None else "—"), "")],
        ]
    )
    header = ["chapter", *[f"{p}: {what}" for p in profiles for what in ("wall time (s)", "peak memory (MiB)")]]
    return TimingTable(header=header, rows=rows, totals=totals, timings=shown)


def total_text(total) -> str:
    """A profile's total run time for the prose: ``"95 s"``, or ``"not measured yet"`` for ``None``."""
    return "not measured yet" if total is None else f"{total:.0f} s"


def budget_verdict(total, budget_s: float) -> str:
    """``"within"`` or ``"over"`` the time budget ``budget_s``, ``"not measured yet"`` when ``total`` is ``None``."""
    if total is None:
        return "not measured yet"
    return "within" if total <= budget_s else "over"


@dataclass(frozen=True)
class ChapterClaims:
    """The verdicts in one chapter's results file and the profile that chapter last ran in."""

    chapter: str
    profile: str
    verdicts: list[Verdict]


def read_claims(chapters, results_dir, profile: str | None = None) -> list[ChapterClaims]:
    """The verdicts recorded in the results file of each of ``chapters`` (in order).

    Without ``profile``, a chapter without a results file is left out and each chapter reports the profile it
    last ran in. With ``profile`` (the paper profile's report), every chapter must have a results file of that
    profile: a ``ValueError`` names those that have none, or one of another profile, and the command that
    makes them.
    """
    claims, missing = [], []
    for chapter in chapters:
        try:
            record = verify_results(results_dir, chapter.name)
        except FileNotFoundError:
            missing.append(f"{chapter.name} (no results)")
            continue
        if profile is not None and record["profile"] != profile:
            missing.append(f"{chapter.name} ({record['profile']} profile)")
            continue
        verdicts = [Verdict.from_dict(v) for v in record["values"].get("verdicts", [])]
        claims.append(ChapterClaims(chapter.name, record["profile"], verdicts))
    if profile is not None and missing:
        raise ValueError(
            f"the {profile} profile's report needs every chapter's {profile}-profile results in "
            f"{results_dir}; missing: {', '.join(missing)}: run `python -m attnpaths_book run <chapter> "
            f"--profile {profile}` for each of them first"
        )
    return claims


def claims_rows(claims) -> list[list[str]]:
    """One row ``[{doc} link to the chapter, profile, claim, statement, level, **outcome**]`` per verdict of
    ``claims`` (:func:`read_claims`)."""
    return [
        [f"{{doc}}`{c.chapter}`", c.profile, v.claim, v.statement, v.level_text, f"**{v.outcome.value}**"]
        for c in claims
        for v in c.verdicts
    ]


def claim_outcomes(claims) -> tuple[dict, dict]:
    """``({chapter: {claim: outcome}}, {outcome: count over the book})`` of ``claims`` (:func:`read_claims`)."""
    by_chapter = {c.chapter: {v.claim: v.outcome.value for v in c.verdicts} for c in claims}
    return by_chapter, outcome_counts([v for c in claims for v in c.verdicts])


def family_z_limit(num_tests: int, level: float = 0.01) -> float:
    """The two-sided z bound of a Bonferroni test at family-wise ``level`` over ``num_tests`` comparisons:
    ``Phi^{-1}(1 - level / (2 num_tests))``."""
    if isinstance(num_tests, bool) or not isinstance(num_tests, int) or num_tests < 1:
        raise ValueError(f"num_tests must be an integer >= 1, got {num_tests!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return float(norm.ppf(1 - level / (2 * num_tests)))


def committed_record(name: str, *, required: bool = False) -> dict | None:
    """The benchmark record shipped with the package for benchmark ``name``
    (:func:`attnpaths_book.benchmarks.record.committed_record_path`), or ``None`` when it has not been recorded;
    a ``required`` record that is missing raises ``ValueError`` naming the file and how to make it."""
    path = committed_record_path(name)
    return read_record(path) if required or path.is_file() else None


def rerun_example(chapters) -> str | None:
    """A command that runs one chapter again with another value of a parameter: the first positive integer
    parameter (executor-set ones left out) of ``chapters``, doubled; ``None`` when no chapter has one."""
    for chapter in chapters:
        for name, value in chapter.defaults.items():
            if name not in INJECTED and type(value) is int and value > 0:
                return f"python -m attnpaths_book run {chapter.name} --profile smoke --set {name}={value * 2}"
    return None
