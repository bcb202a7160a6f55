"""The tables and texts of the reproducibility chapter's report on the committed benchmark records (sampler,
engine, numpyro, solver and sampler-growth benchmarks), the tolerances and the shipped weights, re-exported by
:mod:`attnpaths_book.report`."""

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


def tolerance_table(rules) -> str:
    """The Markdown table of the tolerance ``rules`` (``attnpaths_book.tolerances.TABLE``): per rule, the results
    keys it matches, its class, its relative and absolute tolerances and why."""
    return markdown_table(
        ["results key", "class", "relative", "absolute", "why"],
        [(f"`{rule.pattern}`", rule.cls, f"{rule.rtol:g}", f"{rule.atol:g}", rule.reason) for rule in rules],
    )


def shipped_weights(shipped: dict) -> dict:
    """What the results file keeps of the ``shipped`` weights (``attnpaths_book.trained.read_manifest()``, file
    name -> entry): per file its ``sha256``, ``kind``, ``label``, ``chapter``, ``profile``, ``command`` and the
    ``machine`` it was trained on."""
    keys = ("sha256", "kind", "label", "chapter", "profile", "command")
    return {
        name: {key: getattr(e, key) for key in keys} | {"machine": e.provenance.get("machine", {})}
        for name, e in shipped.items()
    }


def shipped_table(shipped: dict) -> str:
    """The Markdown table of the ``shipped`` weights (file name -> manifest entry): file, chapter, profile, what it
    holds, the start of its SHA-256 and the CPU and day it was trained on; a sentence when none is shipped."""
    if not shipped:
        return "*No weights are shipped yet.*"
    rows = []
    for name, e in shipped.items():
        machine = e.provenance.get("machine", {})
        trained_on = (
            f"{machine.get('cpu_model')} ({machine.get('cpu_capability')}), {e.provenance.get('trained_utc', '')[:10]}"
        )
        rows.append((f"`{name}`", e.chapter, e.profile, e.label, f"`{e.sha256[:16]}...`", trained_on))
    return markdown_table(["file", "chapter", "profile", "holds", "SHA-256", "trained on"], rows)


def predictor_agreement(z: float, z_limit: float) -> str:
    """How the sampler benchmark's two mean predictors compare, for the prose: ``"they agree"`` when their
    largest difference, ``z`` combined Monte-Carlo standard errors, is at most the family-wise bound
    ``z_limit``, else a bold statement that they differ."""
    if z <= z_limit:
        return "they agree"
    return (
        "**they differ by more than their Monte-Carlo errors allow** (with so few effective NUTS draws the "
        "NUTS error estimate itself is rough)"
    )


@dataclass(frozen=True)
class Prose:
    """What the chapter quotes from one benchmark record, by glue name: ``numbers`` (numbers and words, kept in the
    results file) and ``markdown`` (tables, commands and sentences, glued as Markdown)."""

    numbers: dict
    markdown: dict

    def glue(self, recorder) -> None:
        """Glue ``numbers`` (kept in the results file) and ``markdown`` with ``recorder`` (a
        :class:`~attnpaths_book.recorder.ChapterRecorder`)."""
        recorder.glue_all(self.numbers)
        for name, text in self.markdown.items():
            recorder.markdown(name, text)


def _prose(prefix: str, record: dict, numbers: dict, markdown: dict) -> Prose:
    """``numbers`` and ``markdown`` with the record's provenance (date, commit, loads, CPU cores, command), every
    name prefixed by ``<prefix>_``."""
    machine = record["machine"]
    provenance = {"date": record["finished_utc"][:10], "commit": commit_label(record["commit"], record["commit_dirty"])}
    if "load_average_1min_start" in machine:
        provenance["load_start"] = machine["load_average_1min_start"]
    provenance |= {"load": machine["load_average_1min"], "cpus": machine["cpu_count"]}
    return Prose(
        numbers={f"{prefix}_{name}": value for name, value in (provenance | numbers).items()},
        markdown={
            f"{prefix}_{name}": text for name, text in (markdown | {"command": inline_code(record["command"])}).items()
        },
    )


def _words(met: bool) -> str:
    return "meets" if met else "misses"


def solver_prose(bench: dict) -> Prose:
    """What the chapter quotes from the solver benchmark record ``bench`` (names ``solver_*``): its provenance,
    Adam's settings, the solver's median time, iterations and ratio to Adam on each problem, the goals and whether
    they are met (``"meets"``, ``"misses"``), and per growth series the fitted exponents and the crossover of the
    two-term fit; the table of :func:`solver_rows` and the command."""
    bench_report = bench["report"]
    targets, hmc, image = bench_report["targets"], bench_report["problems"]["hmc"], bench_report["problems"]["image"]
    numbers = {
        "adam_lr": hmc["adam"]["lr"],
        "adam_tolerance": hmc["adam"]["gradient_tolerance"],
        "hmc_ms": hmc["solver"]["ms"],
        "hmc_iterations": hmc["solver"]["iterations"],
        "hmc_ratio": hmc["speedup"],
        "image_ms": image["solver"]["ms"],
        "image_ratio": image["speedup"],
        "image_ratio_bound": "at least " if image["speedup_is_lower_bound"] else "",
        "goal_hmc_ms": targets["hmc_ms"],
        "goal_hmc_ratio": targets["hmc_speedup"],
        "goal_image_ms": targets["image_ms"],
        "verdict_hmc_ms": _words(hmc["solver"]["ms"] <= targets["hmc_ms"]),
        "verdict_hmc_ratio": _words(hmc["speedup"] >= targets["hmc_speedup"]),
        "verdict_image_ms": _words(image["solver"]["ms"] <= targets["image_ms"]),
    }
    markdown = {"table": markdown_table(["", *SOLVER_PROBLEMS.values()], solver_rows(bench_report))}
    for series, unit in (("examples", "training examples"), ("paths", "paths")):
        fit = bench_report["growth"][series]
        numbers[f"{series}_exponent"] = fit["exponent_per_iteration"]
        numbers[f"{series}_exponent_last"] = fit["exponent_per_iteration_largest_two"]
        markdown[f"{series}_crossover"] = crossover_text(fit["two_terms"], unit)
    return _prose("solver", bench, numbers, markdown)


def sampler_prose(bench: dict, *, goal: float, z_limit: float) -> Prose:
    """What the chapter quotes from the sampler benchmark record ``bench`` (names ``bench_*``): its provenance, the
    ESS-per-second ratio against ``goal`` (``"meets"``, ``"misses"``), the largest z of the two mean predictors
    against ``z_limit`` (:func:`predictor_agreement`), the run's length and sizes, NUTS's smallest step and
    evaluations per iteration; the table of :func:`sampler_rows` and the command."""
    bench_report = bench["report"]
    gibbs, nuts, sizes = bench_report["gibbs"], bench_report["nuts"], bench_report["sizes"]
    ratio, z = bench_report["ess_per_s_ratio"], bench_report["max_mean_predictor_z"]
    numbers = {
        "ratio": ratio,
        "goal": goal,
        "verdict": _words(ratio >= goal),
        "z": z,
        "z_limit": z_limit,
        "minutes": (gibbs["wall_time_s"] + nuts["wall_time_s"]) / 60,
        "width": sizes["widths"][0],
        **{key: sizes[key] for key in ("temperature", "num_train", "num_test", "heads")},
        "threads": sizes["num_threads"],
        "step": min(nuts["step_sizes"]),
        "evals": nuts["potential_evaluations_per_iteration"],
    }
    markdown = {
        "agreement": predictor_agreement(z, z_limit),
        "table": markdown_table(["", "blocked Gibbs", "NUTS (pyro)"], sampler_rows(bench_report)),
    }
    return _prose("bench", bench, numbers, markdown)


def numpyro_prose(bench: dict) -> Prose:
    """What the chapter quotes from the benchmark record ``bench`` against numpyro's NUTS (names ``numpyro_*``): its
    provenance, the Gibbs/NUTS ratios and NUTS's largest R-hat in float64 and float32, and whether both NUTS runs
    reached their R-hat target (``"reached"``, ``"did not reach"``); the table of :func:`numpyro_rows` and the
    command."""
    bench_report = bench["report"]
    converged = all(bench_report[f"nuts_{precision}"]["converged"] for precision in ("float64", "float32"))
    numbers = {
        "ratio_64": bench_report["ess_per_s_ratio"]["float64"],
        "ratio_32": bench_report["ess_per_s_ratio"]["float32"],
        "rhat_64": bench_report["nuts_float64"]["max_predictor_rhat"],
        "rhat_32": bench_report["nuts_float32"]["max_predictor_rhat"],
        "converged": "reached" if converged else "did not reach",
    }
    header = ["", "blocked Gibbs", "NUTS (numpyro, float64)", "NUTS (numpyro, float32)"]
    return _prose("numpyro", bench, numbers, {"table": markdown_table(header, numpyro_rows(bench_report))})


def sampler_growth_prose(bench: dict, *, rhat_limit: float) -> Prose:
    """What the chapter quotes from the sampler-growth record ``bench`` (names ``sgrowth_*``): its provenance and
    settings, the fixed size of each series, per series the fitted exponents of the time per sweep, and the R-hat
    limit of convergence ``rhat_limit``; the table of :func:`sampler_growth_rows`, per series the crossover of the
    two-term fit and the mixing (:func:`sampler_mixing_text`), and the command."""
    bench_report = bench["report"]
    growth = bench_report["growth"]
    numbers = {key: bench_report[key] for key in ("temperature", "chains", "warmup", "samples", "threads")}
    numbers |= {
        "width_series_num_train": growth["width"]["rows"][0]["num_train"],
        "examples_series_width": growth["examples"]["rows"][0]["width"],
    }
    header = ["", "time per sweep", "smallest ESS of f", "ESS per second", "ESS per kept sweep", "largest R-hat"]
    markdown = {"table": markdown_table(header, sampler_growth_rows(bench_report))}
    for series, unit, symbol in (
        ("width", "(the width N)", ("N", "width")),
        ("examples", "training examples", ("P", "num_train")),
    ):
        fit = growth[series]
        numbers[f"{series}_exponent"] = fit["exponent_per_sweep"]
        numbers[f"{series}_exponent_last"] = fit["exponent_per_sweep_largest_two"]
        markdown[f"{series}_crossover"] = crossover_text(fit["two_terms"], unit)
        markdown[f"{series}_mixing"] = sampler_mixing_text(fit, *symbol)
    return _prose("sgrowth", bench, numbers | {"rhat_limit": rhat_limit}, markdown)
