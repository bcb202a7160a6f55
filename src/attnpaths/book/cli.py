"""Command line of the book: ``python -m attnpaths COMMAND``.

- ``book --profile {smoke,paper}``: execute the stale chapters (in toc order) and build ``_build/html``;
- ``run CHAPTER [--profile P] [--set NAME=VALUE ...]``: execute one chapter, overrides checked first;
- ``status --profile P``: list the chapters that ``book`` would execute;
- ``refresh-baselines``: run the smoke profile and store the nbval baselines in ``tests/baselines``;
- ``bench NAME [ARGS ...]``: run ``attnpaths.benchmarks.NAME.main(ARGS)``.

Progress goes to standard output, one line per chapter with its wall time; errors to standard error with
exit status 1 (a chapter or the build failed), 2 (bad arguments) or 130 (interrupted).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from importlib.util import find_spec

from . import baselines, runner, site
from .chapters import PROFILES, ChapterError, book_chapters, find_chapter, parse_assignments
from .executor import ChapterFailed
from .layout import BookLayout, find_root


def _say(message: str) -> None:
    print(message, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attnpaths", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    book = commands.add_parser("book", help="execute what is stale and build the HTML book into _build/html")
    book.add_argument("--profile", choices=PROFILES, default="smoke", help="execution profile (default: smoke)")
    book.add_argument("--force", action="store_true", help="re-execute every chapter")
    book.add_argument("--no-html", action="store_true", help="execute the chapters but do not build the HTML")

    run = commands.add_parser("run", help="execute one chapter, optionally with other parameter values")
    run.add_argument("chapter", help="chapter name, e.g. theory")
    run.add_argument("--profile", choices=PROFILES, default="smoke", help="execution profile (default: smoke)")
    run.add_argument("--set", dest="assignments", action="append", default=[], metavar="NAME=VALUE",
                     help="override a parameter of the chapter's parameters cell (a Python literal); repeatable")
    run.add_argument("--force", action="store_true", help="execute even if the cached execution is current")

    status = commands.add_parser("status", help="list the chapters that `book` would execute")
    status.add_argument("--profile", choices=PROFILES, default="smoke")

    commands.add_parser("refresh-baselines", help="run the smoke profile and store the nbval baselines in tests/baselines")

    bench = commands.add_parser("bench", help="run the benchmark attnpaths.benchmarks.NAME")
    bench.add_argument("name", help="benchmark module name")
    bench.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the benchmark's main()")
    return parser


def available_benchmarks() -> list[str]:
    """Names of the modules in ``attnpaths.benchmarks`` (empty if the package does not exist)."""
    try:
        package = importlib.import_module("attnpaths.benchmarks")
    except ModuleNotFoundError:
        return []
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def run_benchmark(name: str, argv: list[str]):
    """Call ``attnpaths.benchmarks.<name>.main(argv)``; ``ValueError`` listing the benchmarks if there is none."""
    available = available_benchmarks()
    if not name.isidentifier() or name not in available or find_spec(f"attnpaths.benchmarks.{name}") is None:
        listing = ", ".join(available) if available else "none: the package attnpaths.benchmarks has no modules"
        raise ValueError(f"name must be one of the benchmarks in attnpaths.benchmarks ({listing}), got {name!r}")
    module = importlib.import_module(f"attnpaths.benchmarks.{name}")
    if not callable(getattr(module, "main", None)):
        raise ValueError(f"attnpaths.benchmarks.{name} has no main(argv) function")
    return module.main(argv)


def _book(layout: BookLayout, profile: str, force: bool, html: bool) -> None:
    start = time.perf_counter()
    _say(f"attnpaths book, {profile} profile: executing stale chapters in {layout.relative(layout.executed_dir)}/")
    outcomes = runner.run_book(layout, profile, force=force, progress=_say, progress_bar=sys.stderr.isatty())
    executed = sum(o.executed for o in outcomes)
    _say(f"chapters: {executed} executed, {len(outcomes) - executed} up to date "
         f"({time.perf_counter() - start:.1f} s)")
    if html:
        _say("building the HTML book (Sphinx, warnings are errors) ...")
        build_start = time.perf_counter()
        index = site.build_html(layout, book_chapters(layout), profile)
        _say(f"built {layout.relative(index)} in {time.perf_counter() - build_start:.1f} s "
             f"(total {time.perf_counter() - start:.1f} s)")


def _refresh_baselines(layout: BookLayout) -> None:
    runner.run_book(layout, "smoke", progress=_say, progress_bar=sys.stderr.isatty())
    for chapter in runner.notebook_chapters(layout):
        path = baselines.write_baseline(layout, chapter)
        _say(f"baseline {layout.relative(path)} written")


def main(argv=None) -> int:
    """Entry point of ``python -m attnpaths``; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "bench":
            result = run_benchmark(args.name, args.args)
            return result if isinstance(result, int) else 0
        layout = BookLayout(find_root())
        if args.command == "book":
            _book(layout, args.profile, args.force, not args.no_html)
        elif args.command == "run":
            chapter = find_chapter(runner.notebook_chapters(layout), args.chapter)
            overrides = parse_assignments(chapter, args.assignments)  # validated before anything runs
            outcome = runner.run_chapter(layout, chapter.name, args.profile, overrides, force=args.force,
                                         progress=_say, progress_bar=sys.stderr.isatty())
            _say(f"results: {layout.relative(layout.results_file(outcome.chapter))}, executed notebook: "
                 f"{layout.relative(layout.executed_notebook(chapter.docname))}")
        elif args.command == "status":
            stale = runner.stale_chapters(layout, args.profile)
            _say(f"{args.profile} profile: " + (f"stale: {', '.join(stale)}" if stale else "every chapter is up to date"))
        elif args.command == "refresh-baselines":
            _refresh_baselines(layout)
    except ChapterFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except site.BuildFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except (ValueError, ChapterError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished chapters are kept; the same command finishes the rest", file=sys.stderr)
        return 130
    return 0
