"""What the library's tests (``tests/library``) and the book's (``tests/book``) share: the slow tier's marking and
the fixtures that start processes or clusters. It imports nothing of the book's companion, so that the library's
tests run after ``pip install .`` alone. Shared functions and constants are in ``tests/library/helpers.py``.

The fast tier (``python -m pytest -m "not slow"``) is every test that needs no book, cluster, browser or long
chain. The marker ``slow`` is not written on tests: the expensive fixtures in :data:`SLOW_FIXTURES` apply it to
every test that uses them, directly or through another fixture, so a new test of an expensive thing cannot
slip into the fast tier."""

from __future__ import annotations

import os

import pytest

SLOW_FIXTURES = {
    "built_book": "executes the smoke book and builds its HTML",
    "paper_workspace": "executes chapters' paper profiles",
    "executed_book": "executes chapters in Jupyter kernels",
    "browser": "drives headless Chromium",
    "printed_book": "prints the smoke book into one PDF with headless Chromium, reading every page as a screen "
    "shows it",
    "two_workers": "starts a Dask cluster",
    "cluster_client": "starts a Dask cluster",
    "process_environment": "starts Dask clusters, Jupyter kernels, the command line or Python in new processes",
    "recorded": "recomputes a paper record's numbers from its recorded parameters",
    "nuts_problem": "runs NUTS (pyro) on a two- or three-layer network's posterior, a long chain",
    "sampled_small_problem": "samples a network's posterior and its exact density, long chains",
    "deep_small_problem": "samples a three-layer network's posterior and its exact density, long chains",
    "long_chain": "runs a long Markov chain in the test itself",
    "long_computation": "computes for seconds in the test itself: a benchmark's entry point, a power check by "
    "simulation, a pipeline end to end, a documentation build",
}
"""Fixtures that make a test slow, and why (see the module docstring)."""


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # each test process of pytest-xdist computes on one thread (and so do the processes it starts): two
        # processes with torch's and BLAS's default pools of one thread per core put twice as many busy threads
        # as cores on the machine (five paper-record recomputations under -n 2 on two cores: 137.6 s with the
        # default pools, 120.1 s with one thread each)
        from attnpaths.engine import use_one_thread

        use_one_thread()


BOOK_GROUP = "built_book"
"""The pytest-xdist group of every test that uses the suite's smoke book (``built_book``): one process builds the
book and runs them all while the other runs the rest, instead of both waiting for it (see :func:`run_order`)."""


def process_group(item) -> str | None:
    """The pytest-xdist group of a test under ``-n`` (``--dist loadgroup``, pyproject.toml's addopts):
    :data:`BOOK_GROUP` for the tests of the suite's smoke book; the test's module for the tests of a module that
    use a fixture outliving a test (module, class or session scope, defined in this tree), which go to one
    process that computes it once; ``None`` for every other test, which goes to whichever process is free."""
    if "built_book" in getattr(item, "fixturenames", ()):
        return BOOK_GROUP
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    if any(d.scope != "function" and d.baseid for defs in definitions.values() for d in defs):
        return item.nodeid.split("::")[0]
    return None


def run_order(items) -> list:
    """The tests in the order the run takes them: the smoke book's group first, then the slow tier, then the
    rest, each in collection order (a stable sort, so the tests of a group stay together). pytest-xdist hands
    out groups and single tests in this order (``--no-loadscope-reorder``, pyproject.toml's addopts): the
    longest piece of work, the book (its execution on two engine workers, its HTML, printing and browsing it),
    starts at once in one process while the other takes the slow tests, and the quick ones fill in at the end,
    so that neither process waits for the book or for a long test started last."""

    def rank(item) -> int:
        if process_group(item) == BOOK_GROUP:
            return 0
        return 1 if item.get_closest_marker("slow") else 2

    return sorted(items, key=rank)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        group = process_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items[:] = run_order(items)


@pytest.fixture
def process_environment(monkeypatch) -> dict:
    """The environment of the processes a test starts (Dask clusters, Jupyter kernels, the command line): this
    process's, without ``ATTNPATHS_SCHEDULER``, which is also removed here so that the test's own engine calls
    choose their engine by their arguments. Starting such processes takes seconds: the test is slow."""
    from attnpaths.engine import SCHEDULER_ENV

    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    return dict(os.environ)


@pytest.fixture(scope="session")
def cluster_client():
    """A client of an embedded Dask cluster with two single-threaded workers (the command line's engine on two
    CPUs), shared by the tests that recompute a chapter's parallel work: ``with use_client(cluster_client): ...``
    sends its sweeps there, so the test takes the chapter's time rather than twice that."""
    from attnpaths.engine import client_for, start_engine

    with start_engine(workers=2) as engine:
        yield client_for(engine.address)


@pytest.fixture
def long_chain():
    """Requested by a test that runs a long Markov chain itself, which puts it in the slow tier (SLOW_FIXTURES)."""


@pytest.fixture
def long_computation():
    """Requested (``@pytest.mark.usefixtures("long_computation")``) by a test that computes for seconds itself
    (about 2 s or more on two cores: a benchmark's entry point, a power check by simulation, a pipeline end to
    end, a documentation build), which puts it in the slow tier (SLOW_FIXTURES), so that the fast tier stays a
    quick check of work in progress."""
