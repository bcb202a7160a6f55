"""Times in the README are measurements: every duration it states must be one that a committed benchmark record
holds (a whole book run's, one chapter's, a test tier's wall time, a row of the solver's scaling benchmark, or the
library's install), to the precision the README prints it with."""

from __future__ import annotations

import json
import re

import pytest
from helpers import ROOT

from attnpaths_book.benchmarks.record import RECORDS_DIR

DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(minutes?|min|seconds?|s|hours?)\b")
SECONDS = {
    "minute": 60.0,
    "minutes": 60.0,
    "min": 60.0,
    "second": 1.0,
    "seconds": 1.0,
    "s": 1.0,
    "hour": 3600.0,
    "hours": 3600.0,
}


def stated_durations(text: str) -> list[tuple[str, float, float]]:
    """``(as written, seconds, half of the last printed digit in seconds)`` of every duration in ``text``
    outside code (inline code and fenced blocks are commands, not statements)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"`[^`]*`", "", prose)
    found = []
    for match in DURATION.finditer(prose):
        number, unit = match.groups()
        decimals = len(number.partition(".")[2])
        scale = SECONDS[unit]
        found.append((match.group(0), float(number) * scale, 0.5 * 10**-decimals * scale))
    return found


def recorded_durations() -> list[float]:
    """Every wall time (seconds) in the committed records of the book benchmark (each run's, each chapter's, the
    HTML build's and the last run's with it), of the test-suite benchmark (each tier's: only passing runs are
    recorded) and of the install benchmark (the library's ``pip install .``)."""
    record = json.loads((RECORDS_DIR / "book.json").read_text())
    found = []
    for run in record["report"]["runs"]:
        found.append(float(run["wall_s"]))
        found.extend(float(chapter["wall_s"]) for chapter in run["chapters"].values())
    found.extend(float(record["report"][key]) for key in ("html_wall_s", "book_wall_s") if key in record["report"])
    # the solver's scaling with the number of examples (bench scale), and its run at a million examples
    for scale in (
        RECORDS_DIR / "scale.json",
        RECORDS_DIR / "scale_million.json",
        RECORDS_DIR / "scale_million_one_process.json",
        RECORDS_DIR / "scale_image.json",
    ):
        if scale.is_file():
            report = json.loads(scale.read_text())["report"]
            for row in report["rows"] + report.get("threaded_rows", []):
                found.extend(float(row[key]) for key in ("wall_s", "solve_s"))
    tests = RECORDS_DIR / "tests.json"
    if tests.is_file():
        found.extend(float(run["wall_s"]) for run in json.loads(tests.read_text())["report"]["runs"])
    # the library's `pip install .` into a fresh virtual environment (bench install)
    install = RECORDS_DIR / "install.json"
    if install.is_file():
        found.append(float(json.loads(install.read_text())["report"]["wall_s"]))
    # printing the built book into one PDF (bench pdf)
    printed = RECORDS_DIR / "pdf.json"
    if printed.is_file():
        found.append(float(json.loads(printed.read_text())["report"]["wall_s"]))
    return found


PAGES = re.compile(r"(\d[\d,]*)\s+pages\b")


def test_the_readme_states_the_pages_of_the_pdf_as_recorded():
    """The page count of the book's PDF in the README is the one of the committed record of ``bench pdf``."""
    record = json.loads((RECORDS_DIR / "pdf.json").read_text())["report"]
    prose = re.sub(r"`[^`]*`", "", re.sub(r"```.*?```", "", (ROOT / "README.md").read_text(), flags=re.S))
    stated = [int(number.replace(",", "")) for number in PAGES.findall(prose)]
    assert stated, "the README states no page count of the PDF"
    assert set(stated) == {record["pages"]}, f"README: {stated} pages, record: {record['pages']}"


def test_every_time_the_readme_states_is_a_recorded_one():
    recorded = recorded_durations()
    unsupported = [
        written
        for written, seconds, half in stated_durations((ROOT / "README.md").read_text())
        if not any(abs(seconds - r) <= half for r in recorded)
    ]
    assert not unsupported, (
        f"README.md states times that no committed record holds: {unsupported} "
        f"(records: {sorted(round(r) for r in recorded)} s)"
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("took about 12 minutes", [("12 minutes", 720.0, 30.0)]),
        ("hmc 3.5 min, `run 5 s`", [("3.5 min", 210.0, 3.0)]),
        ("```\nsleep 4 s\n```\nin 40 s", [("40 s", 40.0, 0.5)]),
    ],
)
def test_durations_are_read_with_their_precision(text, expected):
    assert stated_durations(text) == expected
