"""The package's command line: ``attnpaths COMMAND`` (the console script) or ``python -m attnpaths_book COMMAND``.

- ``book --profile {smoke,paper}``: execute the stale chapters (in toc order), build ``_build/html`` and, where
  Chromium is installed, the whole book as one PDF (``_build/pdf/attnpaths.pdf``, printed again only when the
  HTML changed, and copied into the HTML, whose first page links it only while it matches the HTML);
- ``pdf [--html DIR] [--output FILE]``: print the built HTML book into one PDF with headless Chromium, offline;
- ``run CHAPTER [--profile P] [--set NAME=VALUE ...]``: execute one chapter, overrides checked first;
- ``status --profile P``: list the chapters that ``book`` would execute (without waiting while a run holds the
  build lock: it names the run and shows the chapters as they are);
- ``refresh-baselines [--accept]``: run the smoke profile, show how each chapter's nbval baseline in
  ``tests/baselines`` would change, and write the changed ones with ``--accept``;
- ``record-paper [CHAPTER ...] [--accept] [--no-execute]``: execute the stale chapters' paper profile, show how
  each chapter's paper record in ``tests/paper_records`` would change, and write it (a record whose numbers
  changed only with ``--accept``; a chapter whose run fails gets none, the others still do);
- ``ship-weights CHAPTER [...] --profile P``: run the chapters that train models with ``retrain=True`` and ship
  the weights they trained in ``src/attnpaths_book/trained`` (with their SHA-256, command and machine);
- ``bench NAME [ARGS ...]``: run ``attnpaths_book.benchmarks.NAME.main(ARGS)``.

The commands that execute chapters send the chapters' tasks to an engine (:mod:`attnpaths.engine`): by
default an embedded Dask ``LocalCluster`` with one single-threaded worker process per CPU (and as many
chapters at a time); ``--scheduler ADDRESS`` (or the environment variable ``ATTNPATHS_SCHEDULER``) uses an
existing Dask cluster instead; ``--workers 1`` runs everything in the chapters' own processes, one chapter
after the other. The numbers do not depend on the choice. The engine is printed once.

Progress goes to standard output, one line per chapter with its wall time; errors to standard error with
exit status 1 (a chapter or the build failed, a file read back is damaged (named), or baselines or records
changed and were not accepted),
2 (bad arguments) or 130 (interrupted).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import pkgutil
import sys
import time
from importlib.util import find_spec
from pathlib import Path

from attnpaths import engine as engine_
from attnpaths.json_files import DamagedFile
from attnpaths_book import baselines, browser, paper_records, pdf, runner, site, tolerances
from attnpaths_book.chapters import PROFILES, ChapterError, book_chapters, find_chapter, parse_assignments
from attnpaths_book.executor import ChapterFailed
from attnpaths_book.layout import BookLayout, book_lock, find_root, suite_book


def _say(message: str) -> None:
    print(message, flush=True)


def _progress() -> dict:
    """The progress options of a command that executes: lines to standard output, bars where it is a terminal."""
    return dict(progress=_say, progress_bar=sys.stderr.isatty())


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _engine_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("engine (where the chapters' tasks run; the numbers do not depend on it)")
    where = group.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help=f"address of an existing Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: "
        f"${engine_.SCHEDULER_ENV}, else an embedded LocalCluster)",
    )
    where.add_argument(
        "--workers",
        type=_positive_int,
        metavar="K",
        help="worker processes of the embedded cluster (default: one per CPU); 1 runs every "
        "task in the chapter's own process, one chapter at a time",
    )


MODULE_PROG = "python -m attnpaths_book"
SCRIPT_PROG = "attnpaths"
"""How the command line is called, as a module or as the console script that ``pyproject.toml`` declares
(``[project.scripts]``)."""


def _prog() -> str:
    """The name this process was called by: the console script when ``sys.argv[0]`` is it, else the module."""
    return SCRIPT_PROG if Path(sys.argv[0]).name == SCRIPT_PROG else MODULE_PROG


def _parser(prog: str = MODULE_PROG) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    book = commands.add_parser("book", help="execute what is stale and build the HTML book into _build/html")
    book.add_argument("--profile", choices=PROFILES, default="smoke", help="execution profile (default: smoke)")
    book.add_argument("--force", action="store_true", help="re-execute every chapter")
    book.add_argument("--no-html", action="store_true", help="execute the chapters but do not build the HTML")
    book.add_argument("--no-pdf", action="store_true", help="build the HTML but not the PDF of the whole book")

    printing = commands.add_parser(
        "pdf", help="print the built HTML book into one PDF (headless Chromium, offline): _build/pdf/attnpaths.pdf"
    )
    printing.add_argument("--html", metavar="DIR", type=Path, help="the built HTML book (default: _build/html)")
    printing.add_argument(
        "--output", metavar="FILE", type=Path, help="the PDF to write (default: _build/pdf/attnpaths.pdf)"
    )
    printing.add_argument("--no-code", action="store_true", help="fold the code cells to their outputs")

    run = commands.add_parser("run", help="execute one chapter, optionally with other parameter values")
    run.add_argument("chapter", help="chapter name, e.g. theory")
    run.add_argument("--profile", choices=PROFILES, default="smoke", help="execution profile (default: smoke)")
    run.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a parameter of the chapter's parameters cell (a Python literal); repeatable",
    )
    run.add_argument("--force", action="store_true", help="execute even if the cached execution is current")

    status = commands.add_parser("status", help="list the chapters that `book` would execute")
    status.add_argument("--profile", choices=PROFILES, default="smoke")

    refresh = commands.add_parser(
        "refresh-baselines",
        help="run the smoke profile and show how the nbval baselines in "
        "tests/baselines would change; --accept writes them",
    )
    refresh.add_argument("--accept", action="store_true", help="write the changed baselines")

    record = commands.add_parser(
        "record-paper",
        help="execute the stale chapters' paper profile and show how their "
        "records in tests/paper_records would change; --accept writes changed numbers",
    )
    record.add_argument("chapters", nargs="*", metavar="CHAPTER", help="chapters to record (default: every chapter)")
    record.add_argument("--accept", action="store_true", help="also write the records whose numbers changed")
    record.add_argument(
        "--no-execute", action="store_true", help="record the results files as they are, executing nothing"
    )

    ship = commands.add_parser(
        "ship-weights",
        help="train the models of chapters afresh (retrain=True) and ship their weights in src/attnpaths_book/trained",
    )
    ship.add_argument("chapters", nargs="+", metavar="CHAPTER", help="chapters that train models (oneshot, pruning)")
    ship.add_argument("--profile", choices=PROFILES, default="smoke", help="execution profile (default: smoke)")

    for executing in (book, run, refresh, record, ship):
        _engine_options(executing)

    bench = commands.add_parser("bench", help="run the benchmark attnpaths_book.benchmarks.NAME")
    bench.add_argument("name", help="benchmark module name")
    bench.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the benchmark's main()")
    return parser


def available_benchmarks() -> list[str]:
    """Names of the modules in ``attnpaths_book.benchmarks`` (empty if the package does not exist)."""
    try:
        package = importlib.import_module("attnpaths_book.benchmarks")
    except ModuleNotFoundError:
        return []
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def run_benchmark(name: str, argv: list[str]):
    """Call ``attnpaths_book.benchmarks.<name>.main(argv)``; ``ValueError`` listing the benchmarks if there is none."""
    available = available_benchmarks()
    if not name.isidentifier() or name not in available or find_spec(f"attnpaths_book.benchmarks.{name}") is None:
        listing = ", ".join(available) if available else "none: the package attnpaths_book.benchmarks has no modules"
        raise ValueError(f"name must be one of the benchmarks in attnpaths_book.benchmarks ({listing}), got {name!r}")
    module = importlib.import_module(f"attnpaths_book.benchmarks.{name}")
    if not callable(getattr(module, "main", None)):
        raise ValueError(f"attnpaths_book.benchmarks.{name} has no main(argv) function")
    return module.main(argv)


def _pdf(layout: BookLayout, html_dir: Path | None, output: Path | None, code: bool) -> Path:
    """Print the built HTML into one PDF, holding the build lock so that no build changes the HTML meanwhile."""
    html_dir = layout.html_dir if html_dir is None else html_dir
    _say("printing the book into one PDF (headless Chromium, offline) ...")
    with book_lock(layout, _say):
        report = pdf.build_pdf(
            layout,
            html_dir,
            output,
            code=code,
            **_progress(),
            profile=site.stamp_profile(html_dir),
        )
    return report.path


def _book(layout: BookLayout, profile: str, force: bool, html: bool, engine, make_pdf: bool = True) -> None:
    start = time.perf_counter()
    _say(f"attnpaths book, {profile} profile: executing stale chapters in {layout.relative(layout.executed_dir)}/")
    outcomes = runner.run_book(layout, profile, force=force, **_progress(), engine=engine)
    executed = sum(o.executed for o in outcomes)
    _say(f"chapters: {executed} executed, {len(outcomes) - executed} up to date ({time.perf_counter() - start:.1f} s)")
    if html:
        _say("building the HTML book (Sphinx, warnings are errors) ...")
        build_start = time.perf_counter()
        index = site.build_html(layout, book_chapters(layout), profile)
        _say(
            f"built {layout.relative(index)} in {time.perf_counter() - build_start:.1f} s "
            f"(total {time.perf_counter() - start:.1f} s)"
        )
        _publish_pdf(layout, _book_pdf(layout) if make_pdf else None, start)


def _book_pdf(layout: BookLayout) -> Path | None:
    """The book's PDF, printed again only when the HTML changed since it was printed (``None``: skipped, no
    browser)."""
    output = pdf.default_output(layout)
    if pdf.is_current(output, layout):
        _say(f"the PDF of the book is current: {layout.relative(output)} was printed from this HTML")
        return output
    missing = browser.missing_browser()
    if missing:
        _say(f"skipped the PDF of the book: {missing}")
        return None
    return _pdf(layout, None, None, True)


def _publish_pdf(layout: BookLayout, path: Path | None, start: float) -> None:
    """Give the HTML its copy of the PDF and show the link to it, only if the PDF was printed from this HTML;
    otherwise remove a stale copy and hide the link."""
    stale = pdf.html_copy(layout.html_dir).is_file()
    if pdf.publish(layout, layout.html_dir, path if path is not None else pdf.default_output(layout)):
        copy = layout.relative(pdf.html_copy(layout.html_dir))
        _say(f"the HTML links its copy {copy} (total {time.perf_counter() - start:.1f} s)")
    elif stale:
        _say("removed the HTML's copy of an older PDF of the book and hid the link to it")


def _refresh_baselines(layout: BookLayout, accept: bool, engine) -> int:
    runner.run_book(layout, "smoke", **_progress(), engine=engine)
    changed = []
    for chapter in runner.notebook_chapters(layout):
        update = baselines.baseline_update(layout, chapter)
        _say(f"baseline of {chapter.name}: " + ("CHANGED" if update.changed else "unchanged"))
        for line in update.report:
            _say("  " + line)
        if update.changed:
            changed.append((chapter, update))
    if not changed:
        _say("every baseline is up to date")
        return 0
    if not accept:
        print(
            f"the baselines of {', '.join(c.name for c, _ in changed)} changed (see above) and were not written: "
            "rerun with --accept to write them",
            file=sys.stderr,
        )
        return 1
    for chapter, update in changed:
        for path in baselines.write_baseline(layout, chapter, update):
            _say(f"baseline {layout.relative(path)} written")
    return 0


def _record_paper(layout: BookLayout, names: list[str], accept: bool, execute: bool, command: str, engine) -> int:
    chapters = runner.notebook_chapters(layout)
    wanted = {find_chapter(chapters, name).name for name in names} if names else {c.name for c in chapters}
    selected = [c for c in chapters if c.name in wanted]
    held, failed = [], []
    for chapter in selected:  # toc order: a report chapter comes after the chapters it reports on
        if execute:
            try:
                runner.run_chapter(layout, chapter.name, "paper", **_progress(), engine=engine)
            except ChapterFailed as err:
                print(f"error: {err}", file=sys.stderr)
                failed.append(chapter.name)
                continue
        record = paper_records.make_record(layout, chapter, command)
        path = paper_records.record_path(layout, chapter)
        if not record["execution"]["current"]:
            _say(
                f"note: the paper run of {chapter.name} predates changes to its sources, the package or the "
                "library versions (recorded with execution.current = false)"
            )
        if path.is_file():
            previous = paper_records.read_record(path)
            comparison = paper_records.compare_records(previous, record)
            for line in comparison.report(f"{chapter.name}, against {layout.relative(path)}"):
                _say(line)
            beyond = tolerances.compare_results(chapter.name, previous["results"], record["results"])
            _say(
                "  by reproducibility class: "
                + (f"{len(beyond)} numbers moved beyond their class" if beyond else "every number within its class")
            )
            for disagreement in beyond[:12]:
                _say("    " + disagreement.describe())
            if comparison.changed and not accept:
                held.append(chapter.name)
                continue
        else:
            _say(f"{chapter.name}: new record")
        paper_records.write_record(layout, chapter, record)
        _say(f"record {layout.relative(path)} written")
    if failed:
        print(f"the paper runs of {', '.join(failed)} failed (see above): their records were not made", file=sys.stderr)
    if held:
        print(
            f"the numbers of {', '.join(held)} changed (see above): their records were not written; rerun with "
            "--accept to write them",
            file=sys.stderr,
        )
    return 1 if failed or held else 0


def _ship_weights(layout: BookLayout, names: list[str], profile: str, command: str, engine) -> int:
    from attnpaths_book import provenance, trained
    from attnpaths_book.store import verify_results

    chapters = runner.notebook_chapters(layout)
    selected = [find_chapter(chapters, name) for name in names]
    for chapter in selected:
        if "retrain" not in chapter.defaults:
            raise ValueError(
                f"chapters must be chapters that train models (a 'retrain' parameter), {chapter.name!r} has none"
            )
    for chapter in selected:
        runner.run_chapter(
            layout,
            chapter.name,
            profile,
            {"retrain": True},
            force=True,
            **_progress(),
            engine=engine,
        )
        results = verify_results(layout.results_dir, chapter.name)
        sources = results["values"]["trained_models"]
        sources = list(sources.values()) if isinstance(sources, dict) else sources
        block = {**provenance.collect(layout.root), "trained_utc": provenance.utc_now(), "engine": engine.describe()}
        entries = trained.ship(
            sources,
            chapter=chapter.name,
            profile=profile,
            command=command,
            parameters=results["parameters"],
            provenance=block,
        )
        for entry in entries:
            _say(f"shipped {entry.label} of {chapter.name} ({profile}): {entry.name}, SHA-256 {entry.sha256}")
    return 0


def main(argv=None) -> int:
    """Entry point of the console script ``attnpaths`` and of ``python -m attnpaths_book``: runs the command in
    ``argv`` (default: ``sys.argv[1:]``, named after how the process was called) and returns the exit status."""
    prog = _prog() if argv is None else MODULE_PROG
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(prog).parse_args(argv)
    try:
        if args.command == "bench":
            result = run_benchmark(args.name, args.args)
            return result if isinstance(result, int) else 0
        layout = BookLayout(find_root())
        if args.command == "pdf":
            path = _pdf(layout, args.html, args.output, not args.no_code)
            if args.html is None and args.output is None and not args.no_code:  # the PDF the HTML links
                _publish_pdf(layout, path, time.perf_counter())
            return 0
        if args.command == "status":
            states = runner.status(layout, args.profile, progress=_say)  # says who holds the lock, never waits
            stale = [(name, reason) for name, reason in states if reason is not None]
            _say(
                f"{args.profile} profile: "
                + (f"stale: {', '.join(n for n, _ in stale)}" if stale else "every chapter is up to date")
            )
            for name, reason in stale:
                _say(f"  {name}: {reason}")
            return 0
        if args.command == "run":
            chapter = find_chapter(runner.notebook_chapters(layout), args.chapter)
            overrides = parse_assignments(chapter, args.assignments)  # validated before anything runs
        executes = not (args.command == "record-paper" and args.no_execute)
        with (
            engine_.start_engine(args.scheduler, args.workers)
            if executes
            else contextlib.nullcontext(engine_.Engine(engine_.IN_PROCESS, None, 1, None))
        ) as engine:
            if executes:  # a command that executes nothing starts no cluster
                _say(engine.describe())
            if args.command == "book":
                _book(layout, args.profile, args.force, not args.no_html, engine, not args.no_pdf)
            elif args.command == "run":
                outcome = runner.run_chapter(
                    layout,
                    chapter.name,
                    args.profile,
                    overrides,
                    force=args.force,
                    **_progress(),
                    engine=engine,
                )
                _say(
                    f"results: {layout.relative(layout.results_file(outcome.chapter))}, executed notebook: "
                    f"{layout.relative(layout.executed_notebook(chapter.docname))}"
                )
            elif args.command == "refresh-baselines":  # the test suite's own book, never the reader's _build
                return _refresh_baselines(suite_book(layout.root), args.accept, engine)
            elif args.command == "record-paper":
                command = " ".join([prog, *argv])
                return _record_paper(layout, args.chapters, args.accept, not args.no_execute, command, engine)
            elif args.command == "ship-weights":
                return _ship_weights(layout, args.chapters, args.profile, " ".join([prog, *argv]), engine)
    except (ChapterFailed, site.BuildFailed, pdf.PdfFailed, DamagedFile) as err:  # DamagedFile names its file
        print(f"error: {err}", file=sys.stderr)
        return 1
    except (ValueError, ChapterError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished chapters are kept; the same command finishes the rest", file=sys.stderr)
        return 130
    return 0
