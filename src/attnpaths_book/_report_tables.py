"""The tables and texts of the reproducibility chapter's report on the committed benchmark records (sampler,
engine, numpyro, solver and sampler-growth benchmarks), re-exported by :mod:`attnpaths_book.report`."""

from __future__ import annotations

import re
from dataclasses import dataclass


def markdown_table(header, rows) -> str:
    """A MyST pipe table: ``header`` (cells) then one line per row of ``rows`` (each cell through ``str``)."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        row = list(row)
        if len(row) != len(header):
            raise ValueError(f"rows must have {len(header)} cells like the header, got {row!r}")
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(lines)


def commit_label(commit, dirty) -> str:
    """A record's commit for the prose: its first ten characters (``"unknown"`` without one), marked when the
    checkout had local changes."""
    return (commit or "unknown")[:10] + (" (with local changes)" if dirty else "")


def inline_code(text: str) -> str:
    """``text`` as Markdown inline code, fenced by one backtick more than its longest run of backticks."""
    text = str(text)
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def sampler_rows(bench_report: dict) -> list[list[str]]:
    """The rows of the sampler benchmark's table (blocked Gibbs against NUTS): wall time, chains and draws, ESS
    of the predictor (smallest, median, per second), split R-hat, ESS of the sampled order parameter and,
    when recorded, the test accuracy of the mean predictor. ``bench_report`` is the record's ``report``."""
    runs = (bench_report["gibbs"], bench_report["nuts"])

    def row(label, key, spec, mark=""):
        return [f"{mark}{label}{mark}", *(f"{mark}{run[key]:{spec}}{mark}" for run in runs)]

    rows = [
        row("wall time (s)", "wall_time_s", ".1f"),
        ["chains x stored draws", *(f"{run['num_chains']} x {run['num_samples']}" for run in runs)],
        row("smallest ESS of f over the test points", "min_predictor_ess", ".3g"),
        row("median ESS of f", "median_predictor_ess", ".3g"),
        row("largest split R-hat of f", "max_predictor_rhat", ".3f"),
        row("smallest ESS of f per second", "min_predictor_ess_per_s", ".3g", "**"),
        row("smallest ESS of the sampled U entries", "min_order_parameter_ess", ".3g"),
    ]
    if "test_accuracy" in runs[0]:
        rows.append(row("test accuracy of the mean predictor", "test_accuracy", ".3f"))
    return rows


PROVENANCE = ("command", "finished_utc", "commit", "commit_dirty", "machine")
"""What the results file keeps of a benchmark record's provenance."""


def sampler_summary(bench: dict, goal: float) -> dict:
    """What the results file keeps of the sampler benchmark record ``bench``: its provenance (``command``,
    ``finished_utc``, ``commit``, ``commit_dirty``, ``machine``), the ESS-per-second ratio and the ``goal``,
    the largest z of the mean predictors, and the Gibbs and NUTS summaries without the sampled draws."""
    bench_report = bench["report"]
    return {key: bench[key] for key in PROVENANCE} | {
        "ess_per_s_ratio": bench_report["ess_per_s_ratio"],
        "goal": goal,
        "max_mean_predictor_z": bench_report["max_mean_predictor_z"],
        **{
            name: {key: value for key, value in bench_report[name].items() if key != "sampled_order_parameter"}
            for name in ("gibbs", "nuts")
        },
    }


def _workers(workers: int) -> list[str]:
    """The cells of a run's worker count and engine."""
    return [str(workers), "in-process" if workers == 1 else "embedded LocalCluster"]


def _run_note(what: str, record: dict) -> str:
    """``what``: the record's command, commit, date and CPU cores."""
    return (
        f"{what}: {inline_code(record['command'])}, commit {commit_label(record['commit'], record['commit_dirty'])}, "
        f"{record['finished_utc'][:10]}, {record['machine']['cpu_count']} CPU cores"
    )


@dataclass(frozen=True)
class EngineBenchmarks:
    """The engine benchmarks' table (:func:`engine_benchmarks`): ``rows`` (what, workers, engine, wall time),
    ``notes`` (one Markdown sentence per record: command, commit, date, and what the reader should know) and
    ``summary`` (what the results file keeps: per record, its commit, date and times)."""

    rows: list[list[str]]
    notes: list[str]
    summary: dict

    def markdown(self) -> str:
        """The table (when a record has runs) followed by the notes, as one MyST paragraph."""
        table = markdown_table(["what", "workers", "engine", "wall time"], self.rows) + "\n\n" if self.rows else ""
        return table + " ".join(self.notes)


def engine_benchmarks(
    book_record: dict | None, sweep_record: dict | None, tests_record: dict | None = None
) -> EngineBenchmarks:
    """The book benchmark (the paper-profile book on each engine it was run with, and the HTML build after it),
    the sweep benchmark (the hmc chapter's largest sweep on 1 and 2 workers, with its projected speed-up) and the
    test-suite benchmark (the wall time of each tier); a record that is ``None`` (not recorded yet) is named as
    such in the notes."""
    rows, notes, summary = [], [], {}
    for record, add, what in (
        (book_record, _book_benchmark, "book"),
        (sweep_record, _sweep_benchmark, "sweep"),
        (tests_record, _tests_benchmark, "test-suite"),
    ):
        if record is None:
            notes.append(f"The {what} benchmark has not been recorded yet.")
        else:
            add(record, rows, notes, summary)
    return EngineBenchmarks(rows=rows, notes=notes, summary=summary)


def _book_benchmark(book_record: dict, rows: list, notes: list, summary: dict) -> None:
    report = book_record["report"]
    for run in report["runs"]:
        rows.append([f"book, {report['profile']} profile", *_workers(run["workers"]), f"{run['wall_s'] / 60:.1f} min"])
    if "html_wall_s" in report:
        took = f"{report['html_wall_s']:.0f} s (book and HTML {report['book_wall_s'] / 60:.1f} min)"
        rows.append(["HTML build after it", "-", "-", took])
    notes.append(_run_note("Book", book_record) + ".")
    if len({r["model_cache_warm_at_start"] for r in report["runs"]}) > 1:
        notes.append(
            "The runs did not start with the same one-shot model cache: the run without it "
            "includes the training of the model."
        )
    summary["book"] = {
        "commit": book_record["commit"],
        "finished_utc": book_record["finished_utc"],
        "wall_s": {str(r["workers"]): r["wall_s"] for r in report["runs"]},
        **{k: report[k] for k in ("html_wall_s", "book_wall_s") if k in report},
    }


def _sweep_benchmark(sweep_record: dict, rows: list, notes: list, summary: dict) -> None:
    report = sweep_record["report"]
    for run in report["runs"]:
        took = f"{run['wall_s']:.1f} s (speed-up {report['speedup'][str(run['workers'])]:.2f})"
        rows.append([f"sweep, {report['num_tasks']} tasks", *_workers(run["workers"]), took])
    projection = ", ".join(f"{k} workers {v['speedup']:.1f}" for k, v in report["projection"].items())
    identical = "yes" if all(r["identical_to_first_run"] for r in report["runs"]) else "**no**"
    commit = (sweep_record["commit"] or "unknown")[:10]
    notes.append(
        f"Sweep: {inline_code(sweep_record['command'])}, commit {commit}, "
        f"{sweep_record['finished_utc'][:10]}; every run gave the same numbers as the first: {identical}. "
        "Projected speed-up from the measured task times (longest task first on each free worker, no "
        f"communication): {projection}."
    )
    summary["sweep"] = {
        "commit": sweep_record["commit"],
        "finished_utc": sweep_record["finished_utc"],
        "speedup": report["speedup"],
        "projection": report["projection"],
    }


def _tests_benchmark(tests_record: dict, rows: list, notes: list, summary: dict) -> None:
    runs = tests_record["report"]["runs"]
    for run in runs:
        took = f"{run['wall_s'] / 60:.1f} min ({run['summary']})"
        rows.append([f"tests, {run['tier']} tier: {inline_code(run['command'])}", "-", "-", took])
    built = any(r["tier"] == "full" and not r["book_html_at_start"] for r in runs)
    notes.append(_run_note("Tests", tests_record) + ("; the full tier built the smoke book itself." if built else "."))
    summary["tests"] = {
        "commit": tests_record["commit"],
        "finished_utc": tests_record["finished_utc"],
        "wall_s": {r["tier"]: r["wall_s"] for r in runs},
    }


NUMPYRO_RUNS = ("gibbs", "nuts_float64", "nuts_float32")
STOP_REASONS = {
    "rhat": "R-hat target {target} reached",
    "time_budget": "time budget (R-hat target {target})",
    "max_samples": "draw limit (R-hat target {target})",
}


def numpyro_rows(bench_report: dict) -> list[list[str]]:
    """The rows of the table of the benchmark against numpyro's NUTS (blocked Gibbs, NUTS in float64, NUTS in
    float32): chains and draws, wall time, the largest split R-hat of the predictor against the target, why
    NUTS stopped, acceptance and divergences, gradient evaluations per iteration, the smallest ESS of the
    predictor per second, and the Gibbs/NUTS ratio with its 68 % interval over chains. ``bench_report`` is the
    ``report`` of the ``numpyro_nuts`` record."""
    gibbs, f64, f32 = (bench_report[name] for name in NUMPYRO_RUNS)

    def nuts(key, fmt):  # a number, or one per chain
        return [
            ", ".join(format(v, fmt) for v in (r[key] if isinstance(r[key], list) else [r[key]])) for r in (f64, f32)
        ]

    def ratio(precision):
        repeats = bench_report["ess_per_s_ratio_repeats"][precision]
        low, high = repeats["interval_68"]
        return f"{bench_report['ess_per_s_ratio'][precision]:.3g} ({low:.3g} to {high:.3g})"

    return [
        ["chains x stored draws", *(f"{r['num_chains']} x {r['num_samples']}" for r in (gibbs, f64, f32))],
        ["wall time (s)", *(f"{r['wall_time_s']:.0f}" for r in (gibbs, f64, f32))],
        ["largest split R-hat of f", *(f"{r['max_predictor_rhat']:.3f}" for r in (gibbs, f64, f32))],
        [
            "stopped by",
            "fixed length",
            *(STOP_REASONS[r["stop_reason"]].format(target=r["rhat_target"]) for r in (f64, f32)),
        ],
        ["mean acceptance probability per chain (target 0.8)", "exact draws", *nuts("mean_accept_prob", ".2f")],
        ["divergent transitions per chain", "none", *nuts("divergences", "d")],
        ["gradient evaluations per iteration", "none", *nuts("potential_evaluations_per_iteration", ".0f")],
        ["**smallest ESS of f per second**", *(f"**{r['min_predictor_ess_per_s']:.3g}**" for r in (gibbs, f64, f32))],
        ["Gibbs / NUTS ratio (68 % interval over chains)", "", ratio("float64"), ratio("float32")],
    ]


SOLVER_PROBLEMS = {"hmc": "4-path network, hidden Markov chain", "image": "16-path network, image episodes"}


def solver_rows(bench_report: dict) -> list[list[str]]:
    """The rows of the solver benchmark's table, one column per problem of ``bench_report`` (the ``report`` of the
    ``solver`` record): sizes, Newton iterations, median solve time and time per iteration, the same for Adam
    (steps, whether it reached its stopping rule), the ratio (a lower bound when Adam was stopped by its time
    limit), and how far Adam's answer is from the solver's (action excess, largest difference of ``U``)."""
    problems = [bench_report["problems"][name] for name in SOLVER_PROBLEMS]

    def row(label, cell):
        return [label, *(cell(p) for p in problems)]

    def adam_time(p):
        stopped = "" if p["adam"]["converged"] else f" (stopped at the {p['adam']['time_limit_s']:.0f} s limit)"
        return f"{p['adam']['ms'] / 1e3:.3g} s{stopped}"

    return [
        row("heads per layer", lambda p: " x ".join(str(h) for h in p["heads"])),
        row("training examples P", lambda p: str(p["num_train"])),
        row("width N, temperature T", lambda p: f"{p['width']}, {p['temperature']:g}"),
        row("Newton iterations", lambda p: str(p["solver"]["iterations"])),
        row("**solver: median solve time**", lambda p: f"**{p['solver']['ms']:.3g} ms**"),
        row("solver: time per iteration", lambda p: f"{p['solver']['ms_per_iteration']:.3g} ms"),
        row("largest gradient at the solver's minimum", lambda p: f"{p['solver']['gradient_norm']:.1e}"),
        row("Adam: steps", lambda p: str(p["adam"]["steps"])),
        row("Adam: time", adam_time),
        row(
            "**Adam / solver time**", lambda p: f"**{'>= ' if p['speedup_is_lower_bound'] else ''}{p['speedup']:.3g}**"
        ),
        row("Adam's action above the solver's", lambda p: f"{p['adam']['action_excess']:.1e}"),
        row("largest difference of U (Adam - solver)", lambda p: f"{p['adam']['max_abs_difference_U']:.1e}"),
    ]


def solver_summary(bench: dict) -> dict:
    """What the results file keeps of the solver benchmark record ``bench``: its provenance (``command``,
    ``finished_utc``, ``commit``, ``commit_dirty``, ``machine``), the ``targets``, per problem the solver's
    median ms, iterations and ratio to Adam (``speedup``, ``speedup_is_lower_bound``), and per growth
    series the fitted exponents and the two-term fit (its crossover)."""
    bench_report = bench["report"]
    problems = {
        name: {
            "ms": p["solver"]["ms"],
            "iterations": p["solver"]["iterations"],
            "adam_ms": p["adam"]["ms"],
            "speedup": p["speedup"],
            "speedup_is_lower_bound": p["speedup_is_lower_bound"],
        }
        for name, p in bench_report["problems"].items()
    }
    keys = ("exponent_per_iteration", "exponent_per_iteration_largest_two", "exponent_per_solve", "expected_exponents")
    growth = {name: {key: g[key] for key in (*keys, "two_terms")} for name, g in bench_report["growth"].items()}
    return {key: bench[key] for key in PROVENANCE} | {
        "targets": bench_report["targets"],
        "problems": problems,
        "growth": growth,
    }


def sampler_growth_rows(bench_report: dict) -> list[list[str]]:
    """The rows of the sampler-growth table, one per measured point of ``bench_report`` (the ``report`` of the
    ``sampler_growth`` record): the series and its size, the time per sweep, the smallest ESS of the predictor
    over the test points, that per second and per kept sweep, and the largest split R-hat (marked where the chains
    did not converge)."""
    rows = []
    for name, (label, key) in (("width", ("N", "width")), ("examples", ("P", "num_train"))):
        for row in bench_report["growth"][name]["rows"]:
            rows.append(
                [
                    f"{label} = {row[key]}",
                    f"{row['ms_per_sweep']:.3g} ms",
                    f"{row['min_predictor_ess']:.0f}",
                    f"{row['min_predictor_ess_per_s']:.3g}",
                    f"{row['min_predictor_ess_per_sweep']:.3g}",
                    f"{row['max_predictor_rhat']:.3f}" + ("" if row["converged"] else " (not converged)"),
                ]
            )
    return rows


def sampler_growth_summary(bench: dict) -> dict:
    """What the results file keeps of the sampler-growth record ``bench``: its provenance (``command``,
    ``finished_utc``, ``commit``, ``commit_dirty``, ``machine``), the run's settings and per series the sizes, the
    fitted exponents of the time per sweep (all sizes, the largest two), the two-term fit, and the exponents of
    the ESS per second and per sweep over the sizes whose chains converged (``ess_sizes``)."""
    bench_report = bench["report"]
    keys = ("sizes", "exponent_per_sweep", "exponent_per_sweep_largest_two", "expected_exponents", "two_terms")
    keys += ("ess_sizes", "exponent_ess_per_s", "exponent_ess_per_sweep")
    return (
        {key: bench[key] for key in PROVENANCE}
        | {key: bench_report[key] for key in ("temperature", "chains", "warmup", "samples", "threads")}
        | {"growth": {name: {key: g[key] for key in keys} for name, g in bench_report["growth"].items()}}
    )


def sampler_mixing_text(fit: dict, symbol: str, key: str) -> str:
    """How the ESS per kept sweep and per second scale with the size ``symbol`` (``"N"`` or ``"P"``; ``key`` names it
    in the rows) in one series of the ``sampler_growth`` record, in words: the fitted exponents over the sizes whose
    chains converged, and the sizes whose chains did not (their R-hat)."""
    unconverged = [row for row in fit["rows"] if not row["converged"]]
    left_out = "".join(
        f"; the chains at {symbol} = {row[key]} did not converge within their sweeps (R-hat "
        f"{row['max_predictor_rhat']:.3f}), so their ESS is not used"
        for row in unconverged
    )
    sizes = ", ".join(str(size) for size in fit["ess_sizes"])
    if fit["exponent_ess_per_s"] is None:
        return f"against {symbol} no exponent is fitted: fewer than two sizes converged ({sizes or 'none'}){left_out}"
    return (
        f"against {symbol} the ESS per kept sweep scales with the exponent {fit['exponent_ess_per_sweep']:.2f} and "
        f"the ESS per second with {fit['exponent_ess_per_s']:.2f} (fitted over {symbol} = {sizes}){left_out}"
    )


def _power(base: str, exponent: float) -> str:
    """``base`` with ``exponent`` in Unicode superscript digits (glued Markdown renders no TeX)."""
    digits = str.maketrans("0123456789.-", "⁰¹²³⁴⁵⁶⁷⁸⁹·⁻")
    return base + format(exponent, "g").translate(digits)


def crossover_text(two_terms: dict, unit: str) -> str:
    """Where the two growing terms of a fit of ``fit_two_terms`` (``attnpaths_book.benchmarks._fits``) are equal, in
    words (``unit`` names the size, e.g. ``"training examples"``)."""
    p, q = two_terms["exponents"]
    if two_terms["crossover"] is None:
        return (
            f"the fit needs no term in {_power('s', p)} over these sizes: the term in {_power('s', q)}"
            f"{' and the constant describe' if two_terms['constant'] else ' describes'} them, so the crossover lies beyond "
            "the largest size"
        )
    where = "within" if two_terms["crossover_within_sizes"] else "beyond"
    return (
        f"the terms in {_power('s', p)} and {_power('s', q)} are equal at about {two_terms['crossover']:.3g} "
        f"{unit}, {where} the measured sizes"
    )
